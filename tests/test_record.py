"""A game's record (docs/record.md, issue 46 point 1): exported for each reader, imported on a
fresh server (a fresh database) and replayed to the same final scores, refused with the line
and the reason when a move is not legal (and then nothing changes); no seat's record shows
another seat's hidden cards before the end. And "play on from here" (point 2): a practice game
from a finished game's history, with computer players in the other seats, unrated."""

from __future__ import annotations

import json
import random

import pytest
from server import make_app
from sqlmodel import select

from pbem.games import rules_for
from pbem.ground.db import reading
from pbem.ground.models import FINISHED, ORIGIN_IMPORTED, ORIGIN_PRACTICE, Game, MoveRecord, Seat
from pbem.services.games import create_game
from pbem.services.moves import submit_move
from pbem.services.players import parse_player
from pbem.services.record import FULL, record_for, to_json, to_text

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

PLAYERS = {"kardinal-koenig": 3, "knights-castles": 2}


def play(app, game_id: int, seed: str, until=None, each=None) -> None:
    """Play game `game_id` with seeded random legal moves through `submit_move`, the path of
    every move, to its end (or until `until(state)`); `each(state)` after every move."""
    chooser = random.Random(seed)
    with app.app_context():
        while True:
            with reading() as db:
                game = db.get(Game, game_id)
                rules = rules_for(game.kind)
                state = rules.loads(game.state_json)
                if game.status == FINISHED or (until is not None and until(state)):
                    return
                mover = rules.to_move(state)
                seat = db.exec(select(Seat).where(Seat.game_id == game_id,
                                                  Seat.number == mover)).one()
            submit_move(None, chooser.choice(rules.legal(state)), game.turn, seat_id=seat.id)
            if each is not None:
                each(state)


def started(app, kind: str, seed: str) -> int:
    with app.app_context():
        return create_game([parse_player(f"P{i} <p{i}@example.org>")
                            for i in range(PLAYERS[kind])], seed, kind=kind).game_id


def final_scores(app, game_id: int) -> dict:
    with app.app_context(), reading() as db:
        game = db.get(Game, game_id)
        rules = rules_for(game.kind)
        return rules.scores(rules.loads(game.state_json))


@pytest.mark.parametrize("kind", list(PLAYERS))
@pytest.mark.parametrize("form", ["text", "json"])
def test_a_finished_game_exported_imports_on_a_fresh_server_to_the_same_scores(
        tmp_path, kind, form):
    """Issue 46: exported, imported on a fresh database, replayed to the same final scores."""
    old = make_app(tmp_path / "old")
    game_id = started(old, kind, f"record-{kind}")
    play(old, game_id, f"record-{kind}")
    exported = old.test_cli_runner().invoke(args=["export-game", str(game_id), "--format", form])
    assert exported.exit_code == 0, exported.output
    path = tmp_path / f"game.{form}"
    path.write_text(exported.output, encoding="utf-8")
    new = make_app(tmp_path / "new")
    done = new.test_cli_runner().invoke(args=["import-game", str(path)])
    assert done.exit_code == 0, done.output
    with new.app_context(), reading() as db:
        (game,) = db.exec(select(Game)).all()
        assert (game.status, game.origin, game.kind) == (FINISHED, ORIGIN_IMPORTED, kind)
        moves = db.exec(select(MoveRecord).where(MoveRecord.game_id == game.id)).all()
        watch_id = game.watch_id
    assert final_scores(new, game.id) == final_scores(old, game_id)
    assert len(moves) == game.turn
    with old.app_context():
        before = record_for(game_id, FULL)
    with new.app_context():
        after = record_for(game.id, FULL)
    assert [(m.colour, m.notation, m.at) for m in after.moves] == \
        [(m.colour, m.notation, m.at.replace(microsecond=0)) for m in before.moves]
    # the imported game is browsed as any finished game: its history pages work
    client = new.test_client()
    assert client.get(f"/watch/{watch_id}?at={game.turn // 2}").status_code == 200
    assert client.get(f"/watch/{watch_id}").status_code == 200


def tokens_of(created) -> list[str]:
    return [link.rsplit("/", 1)[1] for _name, _colour, link in created.links]


def test_no_seats_record_shows_another_seats_hidden_cards_before_the_end(app):
    """Issue 46: every record a seat can get (its own and the spectator's, text and JSON),
    at each turn of a played game, shows another seat's secret (a kept card) only as
    'keep', and never the seed, until the end reveals all."""
    seed = "record-hidden"
    with app.app_context():
        created = create_game([parse_player(f"P{i} <p{i}@example.org>") for i in range(3)],
                              seed, kind="knights-castles")
    tokens, client = tokens_of(created), app.test_client()
    with app.app_context(), reading() as db:
        game = db.get(Game, created.game_id)
        rules, watch_id, stored_seed = rules_for(game.kind), game.watch_id, game.seed
    hidden = []  # (move number, mover, full notation) of each secret move so far
    checked = [0]

    def read_all(_state):
        with app.app_context():
            full = record_for(created.game_id, FULL)
        if full.status == FINISHED:
            return
        moves = {m.number: m for m in full.moves}
        last = full.moves[-1]
        state = rules.loads(_game_state(app, created.game_id))
        mover = [p.colour for p in full.players].index(last.colour)
        if any(rules.notation_for(state, last.notation, mover, r) != last.notation
               for r in (None, *range(3))):
            hidden.append((last.number, mover, last.notation))
        if rules.to_move(state) == mover:
            return  # the turn goes on: its records are read when another seat is to move
        readers = [(reader, f"/seat/{token}/record.{form}")
                   for reader, token in enumerate(tokens) for form in ("txt", "json")]
        readers += [(None, f"/watch/{watch_id}/record.{form}") for form in ("txt", "json")]
        for reader, address in readers:
            if True:
                answer = client.get(address)
                assert answer.status_code == 200, address
                text = answer.get_data(as_text=True)
                assert stored_seed not in text
                shown = _notations(text)
                assert len(shown) == len(moves)
                for number, owner, notation in hidden:
                    if owner != reader:
                        assert shown[number] != notation, (address, number)
                checked[0] += 1

    play(app, created.game_id, seed, each=read_all)
    assert hidden, "the game played no secret move: choose another seed"
    assert checked[0] > 50
    # once the game is over every record is the full one, seed and all: the end reveals all
    text = client.get(f"/seat/{tokens[0]}/record.txt").get_data(as_text=True)
    assert f"seed: {stored_seed}" in text
    assert all(_notations(text)[n] == notation for n, _owner, notation in hidden)


def _game_state(app, game_id: int) -> str:
    with app.app_context(), reading() as db:
        return db.get(Game, game_id).state_json


def _notations(text: str) -> dict[int, str]:
    """Each move's notation in a record, text or JSON, by its number."""
    if text.startswith("{"):
        return {m["number"]: m["notation"] for m in json.loads(text)["moves"]}
    moves = text.split("\nmoves:\n", 1)[1].splitlines()
    return {int(line.split(".", 1)[0]): line.split(" ", 3)[3] for line in moves}
