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
