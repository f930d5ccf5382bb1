"""What the move path keeps from one request to the next, and why it is never stale.

A page or an API answer is made again after every move, mostly from the same parts: the
position (parsed once per JSON text, and a position a move wrote is the one the next request
reads), a seat's view of it (once per position and seat), the log entries (once per record,
reader and language, keyed by the whole row) and the answer's items for them. Each part is
keyed by what it is made of, so a taken-back move made anew, a state stored over another or a
second seat never gets another's part.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import random
from datetime import timedelta

import pytest
from server import new_game
from sqlalchemy import event
from sqlmodel import select

import engine
import engine.knights_castles as kc
from pbem.games import ByState, MoveError, StateCache, rules_for
from pbem.ground import i18n
from pbem.ground.db import get_engine, reading, reading_rows, utcnow, writing
from pbem.ground.models import Game, MoveRecord
from pbem.services import errors, log, seats, stewardship, turns
from pbem.services import moves as services
from pbem.services.log import LogEntry
from pbem.services.moves import submit_move
from pbem.services.seats import load_seat
from pbem.web.api import API_LOG, _LogItems


@pytest.mark.parametrize("kind", ["kardinal-koenig", "knights-castles"])
def test_a_position_written_is_the_one_read_back_and_equal_to_a_fresh_parse(kind):
    rules = rules_for(kind)
    # A seed with what JSON escapes or leaves as it is (K&K keeps its seed in the state).
    state = (engine.new_game(("red", "green", "yellow"), 'Grüße "x" \\ \n\t\u2028 🂡')
             if kind == "kardinal-koenig" else kc.new_game(3, 7))
    chooser = random.Random(kind)
    for _ in range(12):
        state = rules.apply(state, rules.parse(state, chooser.choice(rules.legal(state))))
        text = rules.dumps(state)
        assert rules.loads(text) is state  # no parse for the next request
        fresh = (engine.from_json(text) if kind == "kardinal-koenig" else kc.from_json(text))
        assert fresh == state and rules.dumps(fresh) == text
        # The engine's own text, character for character (the adapter may write it faster).
        assert text == (engine.to_json(state) if kind == "kardinal-koenig"
                        else kc.to_json(state))
    assert rules.loads(text + " ") == state and rules.loads(text + " ") is not state


def test_a_kk_position_orjson_cannot_write_is_written_as_the_engine_writes_it():
    # A lone surrogate: json writes it as it is, orjson refuses it; the adapter gives the
    # engine's text, never an error (no game is dealt from such a seed, but the text is total).
    state = dataclasses.replace(engine.new_game(("red", "green", "yellow"), "cache"),
                                seed="a\ud800b")
    assert rules_for("kardinal-koenig").dumps(state) == engine.to_json(state)


def test_the_state_cache_keeps_the_latest_texts_and_parses_the_rest():
    parsed = []
    cache = StateCache(lambda text: parsed.append(text) or [text], size=2)
    first = cache.get("a")
    assert cache.get("a") is first and parsed == ["a"]
    cache.remember("b", ["b"])
    cache.get("a")  # the latest again: "b" is the oldest now
    cache.get("c")
    assert cache.get("a") is first and parsed == ["a", "c"]
    cache.get("b")
    assert parsed == ["a", "c", "b"]


def test_a_view_is_made_once_per_position_and_seat_and_is_that_seats_own():
    rules = rules_for("kardinal-koenig")
    state = engine.new_game(("red", "green", "yellow"), "views")
    again = engine.from_json(rules.dumps(state))  # equal, but another object
    assert rules.view_dict(state, 0) is rules.view_dict(state, 0)
    for seat in (0, 1, None):
        assert rules.view_dict(state, seat) == engine.view_for(state, seat).to_dict()
    assert rules.view_dict(state, 0)["hand"] != rules.view_dict(state, 1)["hand"]
    assert rules.view_dict(again, 0) is not rules.view_dict(state, 0)


def test_by_state_keeps_a_value_only_for_its_own_state_object():
    made = []
    views = ByState(lambda state, seat: made.append((state, seat)) or object(), size=2)
    one, two = [1], [1]  # equal, not the same
    first = views(one, 0)
    assert views(one, 0) is first and len(made) == 1
    assert views(two, 0) is not first and len(made) == 2
    assert views(one, 1) is not first and len(made) == 3  # (one, 0), the oldest, dropped
    assert views(one, 0) is not first and len(made) == 4


def test_an_answers_log_item_is_made_once_per_entry_and_as_the_reader_sees_the_move():
    items = _LogItems()
    entry = LogEntry(3, 1, "offer green: village for town", "player", "api",
                     utcnow(), ("Green offers a trade.",), 2)
    shown = items(entry, "offer green")
    assert items(entry, "offer green") is shown
    assert shown == {"move_number": 3, "turn": 3, "turn_number": 2, "seat": 1,
                     "lines": ("Green offers a trade.",), "move": "offer green",
                     "at": entry.created_at.isoformat()}
    assert items(entry, entry.notation)["move"] == entry.notation  # another reader
    assert items(LogEntry(*entry), "offer green") is not shown  # another entry, equal or not


@pytest.mark.usefixtures("database")
def test_a_move_taken_back_and_made_anew_at_the_same_moment_shows_its_own_log_entry(app):
    """The log's entries are kept by their whole row: a record taken back and written again
    with the same number, seat and time (a frozen clock) but another move is another entry."""
    _, tokens = new_game(app, 3, "anew")
    moment = utcnow().replace(microsecond=0) + timedelta(minutes=5)
    with app.test_request_context("/"):
        admin = stewardship.create_admin("admin@example.org", "a long enough password 42")
    with reading(app) as session:
        game = session.get(Game, 1)
        rules = rules_for(game.kind)
        state = rules.loads(game.state_json)
    first, other = rules.legal(state)[:2]
    mover = tokens[rules.to_move(state)]
    with app.test_request_context("/"):
        made = submit_move(mover, first, 0, now=moment, context_log=API_LOG)
        assert [e.notation for e in made.context.log] == [first]
        assert [e.notation for e in load_seat(tokens[1], API_LOG).log] == [first]
        stewardship.take_back(admin, 1, "a slip", now=moment)
        again = submit_move(mover, other, 0, now=moment, context_log=API_LOG)
    (entry,) = again.context.log
    assert (entry.number, entry.notation, entry.created_at) == (0, other, moment)
    assert entry.lines == tuple(again.lines) != made.context.log[0].lines
    with app.test_request_context("/"):
        assert [e.notation for e in load_seat(tokens[1], API_LOG).log] == [other]
    with reading(app) as session:
        assert [r.notation for r in session.exec(select(MoveRecord))] == [other]


def _log_from_the_database(app, game_id: int, reader: int, limit: int) -> list[dict]:
    """The latest `limit` log items as an answer shows them, made from the stored records
    alone (every move's turn counted over the whole log), without the server's caches."""
    with app.test_request_context("/"), reading(app) as session:
        game = session.get(Game, game_id)
        rules = rules_for(game.kind)
        records = list(session.exec(select(MoveRecord).where(MoveRecord.game_id == game_id)
                                    .order_by(MoveRecord.number)))
        numbers = turns.numbers(rules, [r.notation for r in records])
        state = rules.loads(game.state_json)
        return [{"move_number": r.number, "turn": r.number, "turn_number": numbers[r.number],
                 "seat": r.seat, "move": rules.notation_for(state, r.notation, r.seat, reader),
                 "lines": [i18n.render(line) for line in json.loads(r.lines_json)[str(reader)]],
                 "at": r.created_at.isoformat()} for r in reversed(records)][:limit]


@pytest.mark.usefixtures("database")
def test_every_answer_shows_the_log_the_database_holds(app):
    """A move's answer adds the move to the log its process kept; a GET reads it from there.
    Both must be what the stored records say, move after move, for every seat."""
    _, tokens = new_game(app, 4, "windows")
    client = app.test_client()
    chooser = random.Random("windows")
    for _ in range(API_LOG + 12):  # past the answer's fifty entries
        documents = [client.get(f"/api/v1/seat/{token}").get_json() for token in tokens]
        for seat, document in enumerate(documents):
            assert document["log"] == _log_from_the_database(app, 1, seat, API_LOG), seat
        mover = next(d for d in documents if d["to_move"])
        answer = client.post(f"/api/v1/seat/{tokens[mover['seat']]}/move", json={
            "move": chooser.choice(mover["legal"]), "turn": mover["turn"]}).get_json()
        assert answer["log"] == _log_from_the_database(app, 1, mover["seat"], API_LOG)
        assert answer["turn_number"] == client.get(
            f"/api/v1/seat/{tokens[0]}").get_json()["turn_number"]


@pytest.mark.usefixtures("database")
def test_a_window_is_kept_only_under_the_game_row_its_moves_were_read_with(app):
    _, tokens = new_game(app, 3, "stale")
    with reading(app) as session:
        rules = rules_for(session.get(Game, 1).kind)
    for turn in range(3):
        with reading(app) as session:
            game = session.get(Game, 1)
            state = rules.loads(game.state_json)
        with app.test_request_context("/"):
            submit_move(tokens[rules.to_move(state)], rules.legal(state)[0], turn)
    with app.test_request_context("/"), reading_rows() as connection:
        __, game, __ = seats.seat_rows(connection, tokens[0])
        stale = copy.copy(game)
        stale.turn, stale.updated_at = 2, game.updated_at - timedelta(seconds=1)
        window = log.window_of(connection, stale, API_LOG, rules)
        assert [row[0] for row in window.rows] == [2, 1, 0]  # what the database holds
        assert log.windows.get(log.window_key(stale), 1) is None
        assert log.window_of(connection, game, API_LOG, rules).rows == window.rows
        assert log.windows.get(log.window_key(game), API_LOG) is not None


@pytest.mark.usefixtures("database")
def test_a_move_that_fails_before_its_commit_leaves_no_log_behind(app, monkeypatch):
    _, tokens = new_game(app, 3, "failed")
    client = app.test_client()
    documents = [client.get(f"/api/v1/seat/{token}").get_json() for token in tokens]
    mover = next(d for d in documents if d["to_move"])
    kept = []
    monkeypatch.setattr(log.windows, "put", lambda *args: kept.append(args))

    def broken(*_args):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(services, "write_changes", broken)
    with pytest.raises(RuntimeError):
        client.post(f"/api/v1/seat/{tokens[mover['seat']]}/move",
                    json={"move": mover["legal"][0], "turn": mover["turn"]})
    assert kept == []
    monkeypatch.undo()
    assert client.get(f"/api/v1/seat/{tokens[0]}").get_json()["log"] == []


@pytest.mark.usefixtures("database")
def test_an_answer_reads_seat_game_and_seats_once_and_a_move_writes_in_one_transaction(app):
    """Statements a request sends (SQLite's BEGIN counted, COMMIT not; PostgreSQL's driver
    begins by itself), once the process has the log: a GET reads its seat, game and seats in
    one statement; a move that ends no turn adds its record and writes its game."""
    _, tokens = new_game(app, 3, "count")
    client = app.test_client()
    engine, sent = get_engine(app), []
    begin = ["BEGIN"] if engine.dialect.name == "sqlite" else []

    def seen(_conn, _cursor, statement, *_args):
        sent.append(statement.split()[0].upper())

    for _ in range(40):
        document = next(d for d in (client.get(f"/api/v1/seat/{t}").get_json() for t in tokens)
                        if d["to_move"])
        token = tokens[document["seat"]]
        client.get(f"/api/v1/seat/{token}")  # the log kept
        event.listen(engine, "before_cursor_execute", seen)
        try:
            sent.clear()
            client.get(f"/api/v1/seat/{token}")
            assert sent == [*begin, "SELECT"]
            sent.clear()
            answer = client.post(f"/api/v1/seat/{token}/move", json={
                "move": document["legal"][0], "turn": document["turn"]}).get_json()
        finally:
            event.remove(engine, "before_cursor_execute", seen)
        if answer["waiting_for"] == document["seat"]:  # the same seat goes on
            assert sorted(sent) == sorted([*begin, "SELECT", "INSERT", "UPDATE"]), sent
            break
    else:
        pytest.fail("no move in 40 let the same seat go on")


def test_the_games_tell_each_reader_what_the_engine_tells_it():
    """K&K's describe tells the mover and everyone else apart (the mover alone reads a drawn
    card) and gives other readers the same list; what each reader gets is the engine's."""
    rules = rules_for("kardinal-koenig")
    chooser = random.Random("told")
    state = engine.new_game(("red", "green", "yellow", "blue"), "told")
    drew = 0
    while rules.to_move(state) is not None:
        move = rules.parse(state, chooser.choice(rules.legal(state)))
        after = rules.apply(state, move)
        told = {r: rules.describe(state, move, after, r) for r in (None, 0, 1, 2, 3)}
        for reader, lines in told.items():
            assert lines == engine.describe(state, move, after, reader), (str(move), reader)
            assert [line.key for line in lines] == [
                line.key for line in engine.describe(state, move, after, reader)]
        others = [told[r] for r in (None, 0, 1, 2, 3) if r != state.current]
        assert all(lines is others[0] for lines in others)
        drew += told[state.current] != others[0]
        state = after
    assert drew  # the mover was told a card the others were not


def test_a_move_text_is_read_once_but_a_refusal_is_said_in_each_readers_language(app):
    rules = rules_for("kardinal-koenig")
    state = engine.new_game(("red", "green", "yellow"), "parse")
    assert rules.parse(state, "draw deck") is rules.parse(state, "draw deck")
    said = []
    for language in ("en", "de", "en"):
        with app.test_request_context("/"):
            i18n.use(language)
            with pytest.raises(MoveError) as refused:
                rules.parse(state, "fly to the moon")
            said.append(str(refused.value))
    assert said[0] == said[2] != said[1]


def test_the_intermediate_scoring_is_made_once_and_is_what_it_was():
    from engine.kardinal_koenig.scoring import intermediate_breakdown

    board = engine.default_board()
    monasteries = tuple([-1] * len(board.fields))
    first = intermediate_breakdown(board, ("red", "green", "yellow"), monasteries)
    assert intermediate_breakdown(board, ("red", "green", "yellow"), monasteries) is first
    assert intermediate_breakdown(board, ("red", "green", "blue"), monasteries) is not first
    # A view of a position after the deck's first run-out shows it, as it was made.
    from engine.kardinal_koenig.outcome import intermediate_of

    rules, chooser = rules_for("kardinal-koenig"), random.Random("scored")
    state = engine.new_game(("red", "green", "yellow"), "scored")
    while state.intermediate is None:
        state = rules.apply(state, rules.parse(state, chooser.choice(rules.legal(state))))
    views = [engine.view_for(state, seat) for seat in (0, 1, None)]
    assert views[0].intermediate == intermediate_of(state).to_dict()
    assert all(view.intermediate is views[0].intermediate for view in views)


def test_a_started_server_leaves_what_start_up_made_out_of_full_collections():
    import gc
    import weakref

    from pbem import started

    class Node:
        pass

    cycle = Node()
    cycle.me = cycle
    made = weakref.ref(cycle)
    del cycle
    frozen = gc.get_freeze_count()
    try:
        started()
        assert gc.get_freeze_count() > frozen
        assert made() is None  # garbage collected first, not kept for good by the freeze
    finally:
        gc.unfreeze()


@pytest.mark.usefixtures("database")
def test_a_move_for_a_turn_far_beyond_the_game_is_refused_as_stale(app):
    """Any whole number up to 2**53 is taken as a turn; one the game has not reached has no
    record to look up (PostgreSQL's integer keys hold 32 bits)."""
    _, tokens = new_game(app, 3, "far")
    with app.test_request_context("/"):
        for turn in (1, 2**31, 2**53 - 1):
            with pytest.raises(errors.StaleTurn, match="has not reached"):
                submit_move(tokens[0], "draw deck", turn)


@pytest.mark.usefixtures("database")
def test_a_turns_end_finds_the_games_waiting_timers_without_its_finished_ones(app):
    """Ending a turn marks the game's waiting timers obsolete: found through the index of
    waiting timers, not by walking every timer the game ever had (three a turn)."""
    from sqlalchemy import insert

    from pbem.ground.models import DONE, TIMEOUT, Timer
    from pbem.services.deadlines import _OBSOLETE

    new_game(app, 3, "timers")
    past = utcnow() - timedelta(days=3)
    with app.test_request_context("/"), writing() as session:
        session.connection().execute(insert(Timer.__table__), [
            {"game_id": 1, "seat_id": 1, "kind": TIMEOUT, "due_at": past, "clock_version": 0,
             "status": DONE, "done_at": past, "outcome": "obsolete"} for _ in range(3000)])
    engine = get_engine(app)
    with engine.connect() as connection:
        connection.exec_driver_sql("ANALYZE")
        connection.commit()
    engine.dispose()  # statistics are read when a connection opens
    with engine.connect() as connection:
        sql = _OBSOLETE._plan(connection.dialect, ("of_game", "now"))[0]
        if connection.dialect.name == "sqlite":
            plan = " ".join(row[-1] for row in connection.exec_driver_sql(
                "EXPLAIN QUERY PLAN " + sql, ("x", "y", "z", 1)))
        else:
            plan = json.dumps(connection.exec_driver_sql(
                "EXPLAIN (FORMAT JSON) " + sql,
                {"status": "x", "now": past, "outcome": "z", "of_game": 1}).scalar())
    # Through the waiting timers (PostgreSQL may take them from ix_timer_due's status first:
    # as good), never through ix_timer_game_id, which holds all 3,000 of the game's.
    assert "ix_timer_waiting" in plan or "(status)::text = 'pending'" in plan, plan
    assert "ix_timer_game_id" not in plan, plan


@pytest.mark.usefixtures("database")
def test_a_links_first_newer_key_is_found_in_one_step_among_many(app):
    """When a link was superseded: the first newer unrevoked key of its seat, found through
    the seat's keys in order (ix_seatkey_seat), not by walking every key made since."""
    from sqlalchemy import insert, update

    from pbem.ground.models import Seat, SeatKey
    from pbem.ground.tokens import hash_token

    _, tokens = new_game(app, 3, "keys")
    now = utcnow()
    with app.test_request_context("/"), writing() as session:
        connection = session.connection()
        seat_id = seats.seat_rows(connection, tokens[0])[0].id
        # A server's other seats (a thousand, in a game of their own here) and their mail
        # since the link was made.
        game = connection.execute(select(*Game.__table__.c).where(Game.id == 1)).one()._asdict()
        connection.execute(insert(Game.__table__), [{**game, "id": 2, "watch_id": "other"}])
        connection.execute(insert(Seat.__table__), [
            {"game_id": 2, "number": n, "name": f"P{n}", "email": f"p{n}@example.org",
             "colour": "red"} for n in range(1000)])
        others = connection.execute(select(Seat.id).where(Seat.game_id == 2)).scalars().all()
        connection.execute(insert(SeatKey.__table__), [
            {"seat_id": others[i % 1000], "token_hash": f"{i:064x}", "turn": 0,
             "created_at": now - timedelta(days=40)} for i in range(4000)])
        connection.execute(insert(SeatKey.__table__), [  # the seat's: a revoked one first
            {"seat_id": seat_id, "token_hash": "e" * 64, "turn": 0,
             "created_at": now - timedelta(days=40), "revoked_at": now - timedelta(days=40)},
            {"seat_id": seat_id, "token_hash": "f" * 64, "turn": 0,
             "created_at": now - timedelta(days=5), "revoked_at": None}])
    engine = get_engine(app)
    with engine.connect() as connection:
        connection.exec_driver_sql("ANALYZE")
        connection.commit()
    engine.dispose()  # statistics are read when a connection opens
    with app.test_request_context("/"), engine.connect() as connection:
        sql = seats._ROWS["token", False]._plan(connection.dialect, ("token_hash",))[0]
        if connection.dialect.name == "sqlite":
            plan = " ".join(row[-1] for row in connection.exec_driver_sql(
                "EXPLAIN QUERY PLAN " + sql, (hash_token(tokens[0]), 1, 0)))
        else:
            plan = json.dumps(connection.exec_driver_sql(
                "EXPLAIN (FORMAT JSON) " + sql,
                {"token_hash": hash_token(tokens[0]), "param_1": 1}).scalar())
        assert "ix_seatkey_seat" in plan and "seatkey_pkey" not in plan, plan
        # Superseded five days ago by the unrevoked key (not forty, by the revoked one): the
        # link works for two more days of the seven.
        seats.seat_rows(connection, tokens[0])
        connection.execute(update(SeatKey).where(SeatKey.token_hash == "f" * 64)
                           .values(created_at=now - timedelta(days=8)))
        with pytest.raises(errors.LinkExpired):
            seats.seat_rows(connection, tokens[0])


def test_a_mail_is_composed_in_its_seats_language_as_force_locale_would_and_back(app):
    from flask_babel import force_locale

    with app.test_request_context("/"):
        i18n.use("es")
        before = (i18n.gettext("Your turn"), i18n.language())
        for code in ("en", "de", "es"):
            with force_locale(code):
                expected = (i18n.gettext("Your turn"), i18n.language(),
                            i18n.ngettext("%(num)d card", "%(num)d cards", 2))
            with i18n.in_language(code):
                assert (i18n.gettext("Your turn"), i18n.language(),
                        i18n.ngettext("%(num)d card", "%(num)d cards", 2)) == expected
                with i18n.in_language("de" if code != "de" else "en"):
                    assert i18n.language() != code
                assert i18n.language() == code
            assert (i18n.gettext("Your turn"), i18n.language()) == before
    assert len({expected}) == 1


def test_the_process_keeps_each_games_latest_window_only():
    """A newer window of a game replaces the older one; an older one coming late (a request
    that read the game before a move) is not kept in its place."""
    now = utcnow()
    windows = log._Windows()

    def key(game, turn, seconds):
        return ("db", game, turn, 1, now + timedelta(seconds=seconds))

    made = {k: log.Window((), (), 50, True) for k in (
        key("a", 3, 3), key("a", 4, 4), key("b", 7, 1))}
    windows.put(key("a", 3, 3), made[key("a", 3, 3)])
    windows.put(key("b", 7, 1), made[key("b", 7, 1)])
    windows.put(key("a", 4, 4), made[key("a", 4, 4)])
    assert windows.get(key("a", 3, 3), 1) is None
    assert windows.get(key("a", 4, 4), 1) is made[key("a", 4, 4)]
    windows.put(key("a", 3, 3), made[key("a", 3, 3)])  # late: not kept
    assert windows.get(key("a", 3, 3), 1) is None
    assert windows.get(key("a", 4, 4), 1) is made[key("a", 4, 4)]
    assert windows.get(key("b", 7, 1), 1) is made[key("b", 7, 1)]


def test_a_started_server_process_leaves_start_up_out_of_collections_and_collects_less_often():
    """`pbem.started()` (wsgi.py, `pbem serve`): what start-up made is frozen out of the
    collector's passes, and its youngest generation is collected every YOUNG_OBJECTS new
    objects instead of Python's 700; the older generations' thresholds are Python's."""
    import subprocess
    import sys
    from pathlib import Path

    probe = ("import gc, json; before = gc.get_threshold(); import pbem; pbem.started(); "
             "print(json.dumps([before, gc.get_threshold(), gc.get_freeze_count()]))")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                         text=True, cwd=Path(__file__).resolve().parent.parent.parent).stdout
    before, after, frozen = json.loads(out)
    assert before[0] == 700 and after == [10_000, *before[1:]]
    assert frozen > 1000  # the modules' objects, at least
