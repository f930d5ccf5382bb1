"""A game's record (docs/record.md, issue 46 point 1): exported for each reader, imported on a
fresh server (a fresh database) and replayed to the same final scores, refused with the line
and the reason when a move is not legal (and then nothing changes); no seat's record shows
another seat's hidden cards before the end. And "play on from here" (point 2): a practice game
from a finished game's history, with computer players in the other seats, unrated."""

from __future__ import annotations

import json
import random
import re

import pytest
from server import make_app
from sqlmodel import select, update

from pbem.games import rules_for
from pbem.ground.db import reading, writing
from pbem.ground.models import (
    FINISHED,
    ORIGIN_IMPORTED,
    ORIGIN_PRACTICE,
    SENT,
    Game,
    MoveRecord,
    OutboxMessage,
    Seat,
)
from pbem.services.creating import create_game
from pbem.services.moves import submit_move
from pbem.services.players import parse_player
from pbem.services.record import FULL, record_for, to_json, to_text

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

PLAYERS = {"kardinal-koenig": 3, "knights-castles": 2}


def play(app, game_id: int, seed: str, until=None, each=None) -> None:
    """Play game `game_id` with seeded random legal moves through `submit_move`, the path of
    every move, to its end (or until `until(state)`); after every move, `each(before, mover,
    notation, result)`."""
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
            notation = chooser.choice(rules.legal(state))
            result = submit_move(None, notation, game.turn, seat_id=seat.id)
            if each is not None:
                each(state, mover, notation, result)


def started(app, kind: str, seed: str) -> int:
    with app.app_context():
        return create_game([parse_player(f"P{i} <p{i}@example.org>")
                            for i in range(PLAYERS[kind])], seed, kind=kind).game_id


def final_scores(app, game_id: int) -> dict:
    with app.app_context(), reading() as db:
        game = db.get(Game, game_id)
        rules = rules_for(game.kind)
        return rules.scores(rules.loads(game.state_json))


def tokens_of(created) -> list[str]:
    return [link.rsplit("/", 1)[1] for _name, _colour, link in created.links]


@pytest.fixture(scope="module")
def finished(tmp_path_factory, database):
    """One finished game of each kind, played through the move path on one server: kind ->
    (its app, the game's id, its seats' tokens)."""
    app = make_app(tmp_path_factory.mktemp("finished") / "instance")
    games = {}
    for kind, players in PLAYERS.items():
        with app.app_context():
            created = create_game([parse_player(f"P{i} <p{i}@example.org>")
                                   for i in range(players)], f"record-{kind}", kind=kind)
        play(app, created.game_id, f"record-{kind}")
        games[kind] = (app, created.game_id, tokens_of(created))
    return games


@pytest.mark.parametrize("kind", list(PLAYERS))
def test_a_finished_game_exported_imports_on_a_fresh_server_to_the_same_scores(
        tmp_path, finished, kind):
    """Issue 46: exported (text and JSON), imported on a fresh database, replayed to the same
    final scores; its history pages work there."""
    old, game_id, _tokens = finished[kind]
    for form in ("text", "json"):
        exported = old.test_cli_runner().invoke(args=["export-game", str(game_id),
                                                      "--format", form])
        assert exported.exit_code == 0, exported.output
        path = tmp_path / f"game.{form}"
        path.write_text(exported.output, encoding="utf-8")
        new = make_app(tmp_path / f"new-{form}")
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


def test_no_seats_record_shows_another_seats_hidden_cards_before_the_end(app):
    """Issue 46: every record a seat can get (its own and the spectator's, text and JSON; from
    the pages every fifth turn), at each turn of a played game, shows another seat's secret
    (a kept card) only as 'keep', and never the seed, until the end reveals all."""
    seed = "record-hidden"
    with app.app_context():
        created = create_game([parse_player(f"P{i} <p{i}@example.org>") for i in range(3)],
                              seed, kind="knights-castles")
    tokens, client = tokens_of(created), app.test_client()
    with app.app_context(), reading() as db:
        game = db.get(Game, created.game_id)
        rules, watch_id, stored_seed = rules_for(game.kind), game.watch_id, game.seed
    hidden = []  # (move number, mover, full notation) of each secret move so far
    checked, turns = [0], [0]

    def read_all(before, mover, notation, result):
        if result.finished:
            return
        notation = result.notation
        if any(rules.notation_for(before, notation, mover, r) != notation
               for r in (None, *range(3))):
            hidden.append((result.turn, mover, notation))
        if rules.to_move(rules.loads(_game_state(app, created.game_id))) == mover:
            return  # the turn goes on: its records are read when another seat is to move
        turns[0] += 1
        for reader in (None, *range(3)):
            with app.app_context():
                record = record_for(created.game_id, reader)
            texts = [(reader, "service", to_text(record)), (reader, "service", to_json(record))]
            if turns[0] % 5 == 1:  # and what the pages give, every fifth turn
                address = f"/watch/{watch_id}/record" if reader is None \
                    else f"/seat/{tokens[reader]}/record"
                for form in ("txt", "json"):
                    answer = client.get(f"{address}.{form}")
                    assert answer.status_code == 200, address
                    texts.append((reader, address, answer.get_data(as_text=True)))
            for reader, where, text in texts:
                assert stored_seed not in text
                shown = _notations(text)
                assert len(shown) == result.turn
                for number, owner, notation in hidden:
                    if owner != reader:
                        assert shown[number] != notation, (where, reader, number)
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


@pytest.fixture(scope="module")
def finished_kk(finished):
    """The finished Kardinal & König game, and its full record as text."""
    app, game_id, _tokens = finished["kardinal-koenig"]
    with app.app_context():
        return app, game_id, to_text(record_for(game_id, FULL))


def _import(tmp_path, text: str, *args: str):
    """`pbem import-game` of `text` on a fresh server: (its app, the command's result)."""
    app = make_app(tmp_path / "fresh")
    path = tmp_path / "game.txt"
    path.write_text(text, encoding="utf-8")
    return app, app.test_cli_runner().invoke(args=["import-game", str(path), *args])


def _games(app) -> int:
    with app.app_context(), reading() as db:
        return len(db.exec(select(Game)).all()) + len(db.exec(select(MoveRecord)).all())


def test_a_record_with_an_illegal_move_is_refused_with_its_line_and_reason(
        tmp_path, finished_kk):
    """Issue 46: a bad record is refused with the line and the reason, and changes nothing."""
    _app, _game_id, text = finished_kk
    lines = text.splitlines()
    where = lines.index("moves:") + 10  # move 10's line, counted from 0
    number, colour, at, _notation = lines[where].split(" ", 3)
    lines[where] = f"{number} {colour} {at} GG Franken: Nowhere"
    app, result = _import(tmp_path, "\n".join(lines) + "\n")
    assert result.exit_code == 1
    assert f"line {where + 1}: move 10 (GG Franken: Nowhere) is not legal here" in result.output
    assert "nothing was imported" in result.output
    assert _games(app) == 0


def test_a_seats_record_before_the_end_does_not_import_and_says_which_does(tmp_path, app):
    """docs/record.md: only a record with the seed (the full one) replays."""
    with app.app_context():
        created = create_game([parse_player(f"P{i} <p{i}@example.org>") for i in range(3)],
                              "record-partial")
    play(app, created.game_id, "record-partial", until=lambda state: state.ply >= 6)
    token = tokens_of(created)[1]
    text = app.test_client().get(f"/seat/{token}/record.txt").get_data(as_text=True)
    fresh, result = _import(tmp_path, text, "--as", "practice", "--player", "A <a@example.org>")
    assert result.exit_code == 1
    assert "does not carry the seed" in result.output and "full record" in result.output
    assert _games(fresh) == 0


@pytest.mark.parametrize("damage, says", [
    (lambda t: t.replace("pbem-game-record 1", "pgn"), "line 1: a game record begins"),
    (lambda t: t.replace("game: kardinal-koenig", "game: chess"), "unknown game 'chess'"),
    (lambda t: t.replace("\nmoves:\n1. ", "\nmoves:\n2. "), "move 1 is numbered 2"),
    (lambda t: t + f"{int(t.splitlines()[-1].split('.')[0]) + 1}. red - PP England: York\n",
     "after the game's end"),
    (lambda t: t.replace("scores: ", "scores: yellow 99, "), "the scores name 'yellow' twice"),
    (lambda t: re.sub(r"scores: (\w+) \d+", r"scores: \1 999", t), "the record says the scores"),
    (lambda t: t.replace("title: ", "title: \x1b[2J"), "line 3: the line holds a control"),
    (lambda t: "{\"format\": \"pbem-game-record\", \"version\": 1, \"moves\": 3}",
     "\"players\" must be a list"),
])
def test_a_damaged_record_is_refused_and_changes_nothing(tmp_path, finished_kk, damage, says):
    """Every input from outside is hostile: each damage is named, and nothing is stored."""
    app, result = _import(tmp_path, damage(finished_kk[2]))
    assert result.exit_code == 1 and says in result.output, result.output
    assert _games(app) == 0


def test_an_imported_record_plays_on_as_a_practice_game(tmp_path, finished_kk):
    """`import-game --as practice`: a record cut before the end becomes a game to play on,
    the player in their seat and computer players in the others."""
    text = finished_kk[2]
    head, moves = text.split("\nmoves:\n")
    cut = head.replace("status: finished", "status: running") + "\nmoves:\n" + \
        "\n".join(moves.splitlines()[:12]) + "\n"
    app, result = _import(tmp_path, cut, "--as", "practice", "--player", "Ada <ada@example.org>",
                          "--seat", "1", "--bot", "0=random", "--bot", "2=strong")
    assert result.exit_code == 0, result.output
    assert "Your seat: http://localhost/seat/" in result.output
    with app.app_context(), reading() as db:
        (game,) = db.exec(select(Game)).all()
        seats = db.exec(select(Seat).order_by(Seat.number)).all()
    assert (game.origin, game.status, game.turn, game.rated) == (ORIGIN_PRACTICE, "running",
                                                                12, False)
    assert [(s.bot, s.email) for s in seats] == [("random", ""), (None, "ada@example.org"),
                                                 ("strong", "")]


def test_a_player_plays_on_from_a_point_of_a_finished_games_history(finished):
    """Issue 46 point 2: from the history of a finished game a player starts a practice game
    at that point, with the computer players they chose in the other seats, unrated, outside
    tournaments; they get its link by mail and on the page it leads to."""
    from server import Mailbox, field, text_of

    app, game_id, tokens = finished["kardinal-koenig"]
    token, client = tokens[1], app.test_client()
    page = client.get(f"/seat/{token}/history?at=7").get_data(as_text=True)
    assert "Play on from here" in page
    mailbox = Mailbox(app)
    with app.app_context(), writing() as db:  # of the games' mail, only the final ones are read
        db.execute(update(OutboxMessage).where(OutboxMessage.kind != "final")
                   .values(status=SENT))
    answer = client.post(f"/seat/{token}/play-on", data={
        "csrf_token": field(page, "csrf_token"), "at": "7", "bot0": "strong", "bot2": "random"})
    assert answer.status_code == 303
    new_token = answer.headers["Location"].rsplit("/", 1)[1]
    assert client.get(f"/seat/{new_token}").status_code == 200
    with app.app_context(), reading() as db:
        game = db.exec(select(Game).where(Game.origin == ORIGIN_PRACTICE)).one()
        seats = db.exec(select(Seat).where(Seat.game_id == game.id)
                        .order_by(Seat.number)).all()
        moves = db.exec(select(MoveRecord.notation).where(MoveRecord.game_id == game.id)
                        .order_by(MoveRecord.number)).all()
        played = db.exec(select(MoveRecord.notation).where(MoveRecord.game_id ==
                                                           game_id)
                         .order_by(MoveRecord.number)).all()
        rules = rules_for(game.kind)
        state = rules.loads(game.state_json)
        first = rules.loads(db.get(Game, game_id).state_json)
    assert (game.origin, game.origin_game_id, game.rated, game.turn) == \
        (ORIGIN_PRACTICE, game_id, False, 7)
    assert [(s.bot, s.email) for s in seats] == [("strong", ""), (None, "p1@example.org"),
                                                 ("random", "")]
    assert list(moves) == list(played[:7])
    assert rules.dumps(state) == rules.dumps(rules.history_state(first, list(played[:7])))
    mails = [text_of(m) for m in mailbox.to("p1@example.org")]
    assert any(f"/seat/{new_token}" in text for text in mails)  # the practice game's link
    # ... and the finished game's final mail links the seat's record
    assert any("/record.txt" in text and "is over" in text for text in mails)
    # a bad choice of computer player, or a point past the end, is refused and changes nothing
    for data, status in (({"at": "7", "bot0": "nobody", "bot2": "random"}, 400),
                         ({"at": "999", "bot0": "random", "bot2": "random"}, 400)):
        refused = client.post(f"/seat/{token}/play-on",
                              data={"csrf_token": field(page, "csrf_token"), **data})
        assert refused.status_code == status
    with app.app_context(), reading() as db:
        assert len(db.exec(select(Game).where(Game.origin == ORIGIN_PRACTICE)).all()) == 1


def test_the_pages_link_each_readers_record_and_only_the_admin_gets_the_seed(app, tmp_path):
    """The seat page, the spectator page and the admin's game page link their reader's record;
    the admin's (full) record of a running game carries the seed, the others do not; the
    admin's imports as a practice game, a spectator's does not."""
    from server import field

    from pbem.services import stewardship

    with app.app_context():
        created = create_game([parse_player(f"P{i} <p{i}@example.org>") for i in range(3)],
                              "record-pages")
        stewardship.create_admin("boss@example.org", "a long enough password")
    play(app, created.game_id, "record-pages", until=lambda state: state.ply >= 5)
    client, token = app.test_client(), tokens_of(created)[0]
    with app.app_context(), reading() as db:
        game = db.get(Game, created.game_id)
    seat_page = client.get(f"/seat/{token}").get_data(as_text=True)
    assert f"/seat/{token}/record.txt" in seat_page and f"/seat/{token}/record.json" in seat_page
    watch_page = client.get(f"/watch/{game.watch_id}").get_data(as_text=True)
    assert f"/watch/{game.watch_id}/record.txt" in watch_page
    assert client.get(f"/admin/games/{game.id}/record.txt").status_code == 303  # log in first
    login = client.get("/admin/login").get_data(as_text=True)
    client.post("/admin/login", data={"csrf_token": field(login, "csrf_token"),
                                      "email": "boss@example.org",
                                      "password": "a long enough password"})
    assert f"/admin/games/{game.id}/record.txt" in \
        client.get(f"/admin/games/{game.id}").get_data(as_text=True)
    full = client.get(f"/admin/games/{game.id}/record.txt")
    assert full.headers["Content-Disposition"] == \
        f'attachment; filename="game-{game.id}-full.txt"'
    assert f"seed: {game.seed}" in full.get_data(as_text=True)
    spectator = client.get(f"/watch/{game.watch_id}/record.json").get_json()
    assert spectator["seed"] is None and len(spectator["moves"]) == game.turn
    assert client.get(f"/seat/{token}/record.pdf").status_code == 404
    fresh, refused = _import(tmp_path / "a", json.dumps(spectator), "--as", "practice",
                             "--player", "Ada <ada@example.org>")
    assert refused.exit_code == 1 and "does not carry the seed" in refused.output
    fresh, done = _import(tmp_path / "b", full.get_data(as_text=True), "--as", "practice",
                          "--player", "Ada <ada@example.org>")
    assert done.exit_code == 0, done.output
    with fresh.app_context(), reading() as db:
        (copy,) = db.exec(select(Game)).all()
    assert (copy.turn, copy.state_json) == (game.turn, game.state_json)
