"""Moves racing for the same turn: real processes on one database (an SQLite file, and a
PostgreSQL database), and threads on one app.

Every racer quotes the same `turn` and uses the link of the seat to move. `submit_move` checks
the quoted turn before it asks whose move it is, so once the winner's move is in, every loser is
refused with StaleTurn, never NotYourTurn, even when the winner's move handed the turn to the
next seat: the quoted turn is already behind. A loser that sent exactly the winner's move is
told it "was already recorded"; the others that the game "has moved on". Nobody may see
"database is locked" or any other error.

After each race the database must show one move and nothing else: the turn counter up by one,
one MoveRecord for that number, the stored state equal to the engine applying the winner's move
to the position before, an intact file, and the outbox holding exactly the mails that the same
move makes when submitted alone (checked against a second, uncontended copy of the game).
"""

from __future__ import annotations

import queue
import random
import threading
import time
from pathlib import Path

import pytest
from server import assert_intact, database_url, fresh_processes, make_app
from sqlalchemy import func
from sqlmodel import select

import engine
from pbem.ground import schema
from pbem.ground.db import get_engine, reading
from pbem.ground.models import Game, MoveRecord, OutboxMessage, SeatKey
from pbem.services.creating import create_game
from pbem.services.errors import ServiceError
from pbem.services.moves import submit_move
from pbem.services.players import parse_player

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

SECRET = "concurrency-secret"
PROCESSES = 6
PROCESS_ROUNDS = 5
THREADS = 8
THREAD_ROUNDS = 4
PLAYERS = 4
BOARD = engine.default_board()
WAIT = 180  # seconds; a hung racer fails the test instead of hanging it (a busy machine is slow)

ALREADY = "was already recorded"
MOVED_ON = "the game has moved on"


# --- a game, a copy of it played without contention, and what the database holds --------------

def _players():
    return [parse_player(f"Racer {i} <racer{i}@example.org>") for i in range(PLAYERS)]


def _new_game(app, seed: str) -> list[str]:
    """A game on `app`; returns each seat's token (invitation links stay valid)."""
    with app.app_context():
        created = create_game(_players(), seed)
    return [link.rsplit("/", 1)[1] for _name, _colour, link in created.links]


class Snapshot:
    """What one game looks like in the database at one moment."""

    def __init__(self, app, game_id: int = 1):
        with reading(app) as session:
            game = session.get(Game, game_id)
            self.turn = game.turn
            self.state_json = game.state_json
            self.records = session.exec(select(func.count()).select_from(MoveRecord)
                                        .where(MoveRecord.game_id == game_id)).one()
            self.last_outbox = session.exec(select(func.max(OutboxMessage.id))).one() or 0
            self.keys = session.exec(select(func.count()).select_from(SeatKey)).one()
        self.state = engine.from_json(self.state_json)

    @property
    def mover(self) -> int:
        return self.state.current

    def legal(self) -> list[str]:
        return [str(m) for m in engine.legal_moves(self.state)]


def _mails_since(app, last_id: int) -> list[tuple]:
    with reading(app) as session:
        rows = session.exec(select(OutboxMessage).where(OutboxMessage.id > last_id)
                            .order_by(OutboxMessage.id)).all()
        return sorted((r.game_id, r.seat_id, r.kind, r.to_addr, r.subject) for r in rows)


def _choose_moves(legal: list[str], racers: int, rng: random.Random) -> list[str]:
    """Half the racers send one move, the other half other legal moves (as many as there are)."""
    same = rng.choice(legal)
    others = [m for m in legal if m != same]
    rng.shuffle(others)
    return [same if i % 2 == 0 or not others else others[(i // 2) % len(others)]
            for i in range(racers)]


def _check_race(app, reference, reference_tokens, before: Snapshot, moves: list[str],
                outcomes: list[tuple[str, str]]) -> str:
    """Assert that the race left exactly one move; returns the winner's move."""
    winners = [i for i, (kind, _) in enumerate(outcomes) if kind == "ok"]
    assert len(winners) == 1, f"expected one success, got {outcomes}"
    winning = moves[winners[0]]
    for i, (kind, message) in enumerate(outcomes):
        if i == winners[0]:
            continue
        assert kind == "StaleTurn", f"racer {i} ({moves[i]!r}) got {kind}: {message}"
        assert "locked" not in message
        expected = ALREADY if moves[i] == winning else MOVED_ON
        assert expected in message, f"racer {i} ({moves[i]!r}), winner {winning!r}: {message}"

    after = Snapshot(app)
    assert after.turn == before.turn + 1
    assert after.records == before.records + 1
    with reading(app) as session:
        records = session.exec(select(MoveRecord).where(MoveRecord.game_id == 1,
                                                        MoveRecord.number == before.turn)).all()
    assert len(records) == 1
    assert records[0].notation == winning and records[0].seat == before.mover
    expected_state = engine.apply_move(before.state, engine.parse_move(winning, BOARD))
    assert after.state == expected_state
    assert after.state_json == engine.to_json(expected_state)
    assert_intact(app)

    # The same move, submitted alone on an uncontended copy of the game, makes the same mails.
    alone = Snapshot(reference)
    assert alone.state_json == before.state_json, "the copy of the game has drifted"
    with reference.app_context():
        submit_move(reference_tokens[alone.mover], winning, alone.turn, via="api")
    expected_mails = _mails_since(reference, alone.last_outbox)
    mails = _mails_since(app, before.last_outbox)
    assert mails == expected_mails
    turn_over = after.state.current != before.mover
    assert len(mails) == (PLAYERS - 1 if turn_over else 0)
    assert after.keys - before.keys == len(mails)  # one fresh link per mail, none lost
    assert Snapshot(reference).state_json == after.state_json
    return winning


# --- racing processes -----------------------------------------------------------------------

def _racer(instance: tuple[str, str], fresh: tuple[str, str], index: int, tasks, results,
           barrier) -> None:
    """One process: its own app on the shared database; submits what it is told when all are
    ready. `instance` and `fresh` are (instance folder, database URL).

    First all racers open a brand-new database together (and migrate it): switching a new file
    to WAL used to fail with "database is locked" for whoever connected meanwhile, and two
    migrations at once on PostgreSQL would both create the tables.
    """
    try:
        barrier.wait(WAIT)
        make_app(Path(fresh[0]), SECRET_KEY=SECRET, DATABASE_URL=fresh[1])
        app = make_app(Path(instance[0]), SECRET_KEY=SECRET, DATABASE_URL=instance[1])
        with reading(app) as session:  # connect before the race, not during it
            session.exec(select(Game)).first()
    except BaseException as exc:
        results.put((index, "setup", f"{type(exc).__name__}: {exc}"))
        return
    results.put((index, "ready", ""))
    while True:
        task = tasks.get()
        if task is None:
            return
        token, move, turn = task
        with app.app_context():
            try:
                barrier.wait(WAIT)
                submit_move(token, move, turn, via="api")
                outcome = ("ok", "")
            except ServiceError as exc:
                outcome = (type(exc).__name__, exc.message)
            except BaseException as exc:
                outcome = ("error", f"{type(exc).__name__}: {exc}")
        results.put((index, *outcome))


def _collect(results, count: int) -> list[tuple[str, str]]:
    got: dict[int, tuple[str, str]] = {}
    deadline = time.monotonic() + WAIT
    while len(got) < count:
        try:
            index, kind, message = results.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"racers did not answer in time; got {got}") from None
        got[index] = (kind, message)
    return [got[i] for i in range(count)]


def test_processes_racing_for_one_turn_make_exactly_one_move(tmp_path):
    instance = tmp_path / "instance"
    app = make_app(instance, SECRET_KEY=SECRET)  # the schema exists before any racer starts
    context = fresh_processes()
    barrier = context.Barrier(PROCESSES)
    results = context.Queue()
    tasks = [context.Queue() for _ in range(PROCESSES)]
    fresh = tmp_path / "fresh"
    urls = ((str(instance), database_url(instance)),
            (str(fresh), database_url(fresh, empty=True)))
    racers = [context.Process(target=_racer, daemon=True,
                              args=(*urls, i, tasks[i], results, barrier))
              for i in range(PROCESSES)]
    for racer in racers:
        racer.start()
    try:
        # Set up while the racers import: they touch no game before their first task.
        tokens = _new_game(app, "race-processes")
        reference = make_app(tmp_path / "reference", SECRET_KEY=SECRET)
        reference_tokens = _new_game(reference, "race-processes")
        ready = _collect(results, PROCESSES)
        assert all(kind == "ready" for kind, _ in ready), ready
        opened = make_app(fresh, SECRET_KEY=SECRET)
        with get_engine(opened).connect() as connection:
            if connection.dialect.name == "sqlite":
                assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert schema.problem(opened) is None
        rng = random.Random("race-processes")
        turn_changes = 0
        for _ in range(PROCESS_ROUNDS):
            before = Snapshot(app)
            moves = _choose_moves(before.legal(), PROCESSES, rng)
            for i in range(PROCESSES):
                tasks[i].put((tokens[before.mover], moves[i], before.turn))
            outcomes = _collect(results, PROCESSES)
            _check_race(app, reference, reference_tokens, before, moves, outcomes)
            turn_changes += Snapshot(app).mover != before.mover
        assert turn_changes >= 1, "no race ended a seat's turn, so no race wrote mail"
    finally:
        for task in tasks:
            task.put(None)
        for racer in racers:
            racer.join(60)  # a busy machine may take a while to end six interpreters
            if racer.is_alive():
                racer.terminate()
                racer.join()
        results.close()
        for task in tasks:
            task.close()
    assert all(racer.exitcode == 0 for racer in racers)


# --- racing threads through the JSON API -----------------------------------------------------

def _post_move(client, token: str, move: str, turn: int, barrier, outcomes: list,
               index: int) -> None:
    """One thread's move through the API; its (outcome kind, message) goes to outcomes[index]."""
    outcomes[index] = _api_outcome(client, token, move, turn, barrier)


def _api_outcome(client, token: str, move: str, turn: int, barrier) -> tuple[str, str]:
    barrier.wait(WAIT)
    try:
        response = client.post(f"/api/v1/seat/{token}/move", json={"move": move, "turn": turn})
        body = response.get_json() or {}
        if response.status_code == 200:
            assert body["applied"]["move"] == move
            assert body["turn"] == turn + 1
            return "ok", ""
        if response.status_code == 409:
            # The API answers every refusal with 409; only the wording tells StaleTurn apart.
            stale = ALREADY in body["error"] or MOVED_ON in body["error"]
            return ("StaleTurn" if stale else "409"), body["error"]
        return str(response.status_code), response.get_data(as_text=True)
    except BaseException as exc:
        return "error", f"{type(exc).__name__}: {exc}"


def test_threads_racing_through_the_api_make_exactly_one_move(tmp_path):
    """Threads of one server process, each with its own test client, on one app and engine."""
    app = make_app(tmp_path / "instance", SECRET_KEY=SECRET)
    tokens = _new_game(app, "race-threads")
    reference = make_app(tmp_path / "reference", SECRET_KEY=SECRET)
    reference_tokens = _new_game(reference, "race-threads")
    clients = [app.test_client() for _ in range(THREADS)]
    rng = random.Random("race-threads")

    for _ in range(THREAD_ROUNDS):
        before = Snapshot(app)
        token = tokens[before.mover]
        document = clients[0].get(f"/api/v1/seat/{token}").get_json()
        assert document["to_move"] and document["turn"] == before.turn
        assert sorted(document["legal"]) == sorted(before.legal())
        moves = _choose_moves(document["legal"], THREADS, rng)
        barrier = threading.Barrier(THREADS)
        outcomes: list[tuple[str, str]] = [("missing", "the thread did not finish")] * THREADS

        threads = [threading.Thread(target=_post_move, args=(
            clients[i], token, moves[i], document["turn"], barrier, outcomes, i))
            for i in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
        _check_race(app, reference, reference_tokens, before, moves, outcomes)
