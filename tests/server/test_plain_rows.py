"""The move path's plain rows (pbem.ground.rows): games and seats read with one Core statement and
written back column by column, beside the ORM objects the rest of the server uses.

A plain row must read every column as the model does, write back exactly what changed, pass
wherever a game or a seat is taken (the clock, the mails a move queues), and a move made in a
caller's session must leave that session's ORM objects as the database has them.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from server import new_game
from sqlalchemy import bindparam, event, insert, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from pbem.games import rules_for
from pbem.ground.db import (
    Cached,
    cached_insert,
    get_engine,
    insert_later,
    reading,
    utcnow,
    writing,
    writing_rows,
)
from pbem.ground.models import PENDING, Game, OutboxMessage, Seat, SeatKey, Timer
from pbem.ground.rows import GameRow, SeatRow, write_changes
from pbem.services.deadlines import start_clock
from pbem.services.errors import NotFound
from pbem.services.mail import kinds
from pbem.services.mail.sending import send
from pbem.services.moves import submit_move
from pbem.services.seats import seat_game_seats, seat_rows

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL


class Statements:
    """The SQL statements sent to the database while the block runs."""

    def __init__(self, app):
        self.engine, self.sent = get_engine(app), []

    def _seen(self, _conn, _cursor, statement, *_args):
        self.sent.append(statement)

    def __enter__(self):
        event.listen(self.engine, "before_cursor_execute", self._seen)
        return self.sent

    def __exit__(self, *_exc):
        event.remove(self.engine, "before_cursor_execute", self._seen)


def _plain(connection, game_id: int = 1) -> tuple[GameRow, list[SeatRow]]:
    """The game and its seats as plain rows."""
    game = GameRow(connection.execute(select(*Game.__table__.c).where(Game.id == game_id)).one())
    return game, [SeatRow(row) for row in connection.execute(
        select(*Seat.__table__.c).where(Seat.game_id == game_id).order_by(Seat.number))]


def test_a_plain_row_holds_every_column_as_the_model_reads_it(app):
    new_game(app, 3, "rows")
    with app.test_request_context("/"), writing() as session:
        game, seats = _plain(session.connection())
        orm_game = session.get(Game, game.id)
        orm_seats = list(session.exec(select(Seat).where(Seat.game_id == game.id)
                                      .order_by(Seat.number)))
        for row, model in ((game, orm_game), *zip(seats, orm_seats)):
            assert set(type(row).names) == set(type(model).model_fields)
            for name in type(row).names:
                assert getattr(row, name) == getattr(model, name), name
        assert game.created_at.tzinfo is not None  # aware UTC, as the model's type reads it
        assert game.changes() == {} and seats[1].changes() == {}


def test_only_the_columns_that_changed_are_written_and_an_unchanged_row_costs_nothing(app):
    new_game(app, 3, "rows")
    later = utcnow() + timedelta(hours=5)
    with app.test_request_context("/"), writing() as session:
        connection = session.connection()
        game, seats = _plain(connection)
        game.deadline_at, game.extension_hours = later, game.extension_hours + 2
        seats[2].absent = True
        with Statements(app) as sent:
            assert [write_changes(connection, row) for row in (game, *seats)] == [
                True, False, False, True]
        assert len(sent) == 2 and all(s.lstrip().upper().startswith("UPDATE") for s in sent)
        assert "extension_hours" in sent[0] and "state_json" not in sent[0]
        assert "absent" in sent[1] and "name" not in sent[1]
        assert game.changes() == {} and not write_changes(connection, game)  # written: read
    with reading(app) as session:
        stored = session.get(Game, game.id)
        assert stored.deadline_at == later and stored.extension_hours == 2
        assert [s.absent for s in session.exec(select(Seat).order_by(Seat.number))] == [
            False, False, True]


def test_a_changed_type_is_a_change_even_when_the_values_compare_equal(app):
    new_game(app, 3, "rows")
    with app.test_request_context("/"), reading() as session:
        seat = _plain(session.connection())[1][0]
    seat.timeouts_in_row = False  # == 0, but not what the column held
    assert seat.changes() == {"timeouts_in_row": False}


def test_the_clock_takes_a_plain_game_and_leaves_writing_it_to_the_caller(app):
    new_game(app, 3, "rows")
    now = utcnow() + timedelta(minutes=1)
    with app.test_request_context("/"), writing() as session:
        connection = session.connection()
        game, seats = _plain(connection)
        version = game.clock_version
        start_clock(session, game, seats[1], now)
        assert not session.new and not session.dirty  # nothing of the ORM's to flush
        assert game.clock_version == version + 1 and game.turn_started_at == now
        assert set(game.changes()) >= {"clock_version", "turn_started_at", "deadline_at"}
        write_changes(connection, game)
    with reading(app) as session:
        stored = session.get(Game, game.id)
        assert stored.clock_version == version + 1 and stored.deadline_at == game.deadline_at
        pending = session.exec(select(Timer).where(Timer.status == PENDING)).all()
        assert {t.seat_id for t in pending} == {seats[1].id}
        assert {t.clock_version for t in pending} == {version + 1}


def _intents(app, kind: str) -> list[dict]:
    with reading(app) as session:
        rows = session.exec(select(OutboxMessage).where(OutboxMessage.kind == kind)
                            .order_by(OutboxMessage.id)).all()
        return [json.loads(r.intent_json) for r in rows]


def test_a_mail_queued_for_later_names_plain_seats_as_it_names_orm_seats(app):
    new_game(app, 3, "rows")
    with app.test_request_context("/"), writing() as session:
        game, seats = _plain(session.connection())
        seat = seats[0]
        send(session, kinds.MOVED, game=game, seat=seat, lines=[], next_seat=seats[2])
        send(session, kinds.FINAL, game=game, seat=seat, seats=seats, lines=[])
        orm_game = session.get(Game, game.id)
        orm_seats = list(session.exec(select(Seat).where(Seat.game_id == game.id)
                                      .order_by(Seat.number)))
        send(session, kinds.MOVED, game=orm_game, seat=orm_seats[0], lines=[],
             next_seat=orm_seats[2])
        send(session, kinds.FINAL, game=orm_game, seat=orm_seats[0], seats=orm_seats,
             lines=[])
    for kind in ("moved", "final"):
        plain, orm = _intents(app, kind)
        assert plain == orm
    moved, final = _intents(app, "moved")[0], _intents(app, "final")[0]
    assert moved["args"]["next_seat"] == {"seat": 2} and set(moved["seats"]) == {"0", "2"}
    assert final["args"]["seats"] == {"seats": True} and set(final["seats"]) == {"0", "1", "2"}


def _move_of(app, game_id: int = 1) -> tuple[str, int, int]:
    """A legal move of the seat to move: (notation, turn, seat id)."""
    with reading(app) as session:
        game = session.get(Game, game_id)
        rules = rules_for(game.kind)
        state = rules.loads(game.state_json)
        seat = session.exec(select(Seat).where(Seat.game_id == game_id,
                                               Seat.number == rules.to_move(state))).one()
        return rules.legal(state)[0], game.turn, seat.id


def test_a_move_in_the_callers_session_leaves_its_orm_objects_as_the_database_has_them(app):
    new_game(app, 3, "rows")
    move, turn, seat_id = _move_of(app)
    with app.test_request_context("/"), writing() as session:
        game = session.get(Game, 1)
        seat = session.get(Seat, seat_id)
        # The caller's changes, not flushed yet: the move reads them (and keeps the one it
        # does not change); a person's move clears the count of missed deadlines.
        seat.timeouts_in_row, seat.notify = 4, "turn"
        submit_move(None, move, turn, seat_id=seat_id, session=session)
        assert game.turn == turn + 1  # read again: the move wrote the row around the ORM
        assert (seat.timeouts_in_row, seat.notify) == (0, "turn")
        state_json = game.state_json
    with reading(app) as session:
        stored = session.get(Game, 1)
        assert (stored.turn, stored.state_json) == (turn + 1, state_json)
        stored = session.get(Seat, seat_id)
        assert (stored.timeouts_in_row, stored.notify) == (0, "turn")


def test_a_seats_rows_are_those_its_orm_objects_hold_by_token_and_by_seat(app):
    _, tokens = new_game(app, 4, "rows")
    with app.test_request_context("/"), writing() as session:
        for token, seat_id in ((tokens[2], None), (None, 3)):
            seat, game, seats = seat_rows(session.connection(), token, seat_id, lock=True)
            orm_seat, orm_game, orm_seats = seat_game_seats(session, token, seat_id)
            assert seat.id == orm_seat.id and seats[seat.number] is seat
            for row, model in ((game, orm_game), *zip(seats, orm_seats, strict=True)):
                assert {n: getattr(row, n) for n in type(row).names} == model.model_dump()
        for token in ("not-a-link", "A" * 43):
            with pytest.raises(NotFound):
                seat_rows(session.connection(), token)


def _timers(app) -> list[tuple]:
    with reading(app) as session:
        return [(t.game_id, t.seat_id, t.kind, t.due_at, t.clock_version, t.status, t.outcome)
                for t in session.exec(select(Timer).order_by(Timer.id))]


def test_a_cached_insert_writes_the_rows_sqlalchemy_writes_defaults_and_all(app):
    new_game(app, 3, "rows")
    due = utcnow().replace(microsecond=123456) + timedelta(days=1)
    rows = [{"game_id": 1, "seat_id": s, "kind": "reminder", "due_at": due + timedelta(hours=s),
             "clock_version": 7} for s in (1, 2)]
    with app.test_request_context("/"), writing() as session:
        session.connection().execute(Timer.__table__.delete())
        session.connection().execute(insert(Timer.__table__), rows)
    by_sqlalchemy = _timers(app)
    with app.test_request_context("/"), writing() as session:
        session.connection().execute(Timer.__table__.delete())
        with Statements(app) as sent:
            cached_insert(Timer.__table__).execute(session.connection(), rows)
            cached_insert(Timer.__table__).execute(session.connection(), rows[:1])
        assert len(sent) == 2  # heard by listeners as any statement is
    assert _timers(app) == by_sqlalchemy + by_sqlalchemy[:1]
    assert by_sqlalchemy[0][3] == due + timedelta(hours=1)  # an aware UTC time, as given
    assert by_sqlalchemy[0][5] == PENDING  # the column default, filled in


def test_a_cached_update_takes_the_values_its_statement_holds(app):
    new_game(app, 3, "rows")
    obsolete = Cached(update(Timer).where(Timer.game_id == bindparam("of_game"),
                                          Timer.status == PENDING)
                      .values(status="done", done_at=bindparam("now"), outcome="obsolete"))
    now = utcnow()
    with app.test_request_context("/"), writing() as session:
        obsolete.execute(session.connection(), [{"of_game": 1, "now": now}])
    assert {(status, outcome) for *_, status, outcome in _timers(app)} == {("done", "obsolete")}
    with reading(app) as session:
        assert {t.done_at for t in session.exec(select(Timer))} == {now}


def test_a_cached_statement_raises_what_sqlalchemy_raises(app):
    new_game(app, 3, "rows")
    with app.test_request_context("/"), writing() as session:
        key = session.exec(select(SeatKey)).first()
        row = {"seat_id": key.seat_id, "token_hash": key.token_hash, "created_at": utcnow()}
    with app.test_request_context("/"), pytest.raises(IntegrityError), writing() as session:
        cached_insert(SeatKey.__table__).execute(session.connection(), [row])


def test_a_cached_select_gives_the_drivers_rows_and_the_types_converters(app):
    new_game(app, 3, "rows")
    statement = select(Seat.id, Seat.absent, Game.created_at, Game.title).join(
        Game, Game.id == Seat.game_id).where(Seat.game_id == bindparam("game_id")).order_by(
        Seat.number)
    with app.test_request_context("/"), reading() as session:
        connection = session.connection()
        expected = [tuple(row) for row in connection.execute(statement, {"game_id": 1})]
        cached = Cached(statement)
        raw = cached.fetch(connection, {"game_id": 1})
        converters = cached.converters(connection.dialect)
    assert len(converters) == 4 and converters[0] is None  # an integer is taken as it is
    assert [tuple(v if c is None else c(v) for v, c in zip(row, converters))
            for row in raw] == expected
    assert [tuple(cached.converted(connection.dialect, row, 0, 4)) for row in raw] == expected
    assert [cached.converted(connection.dialect, row, 1, 3) for row in raw] == [
        list(row[1:3]) for row in expected]
    assert isinstance(expected[0][1], bool) and expected[0][2].tzinfo is not None


def test_a_writers_rows_are_written_at_its_commit_and_gone_with_its_rollback(app):
    new_game(app, 3, "rows")
    row = {"game_id": 1, "seat_id": 1, "kind": "reminder", "due_at": utcnow(),
           "clock_version": 99}
    with app.test_request_context("/"), pytest.raises(RuntimeError), writing_rows() as writer:
        insert_later(writer, Timer, row)
        raise RuntimeError("the move failed")
    assert all(t[4] != 99 for t in _timers(app))
    with app.test_request_context("/"), writing_rows() as writer:
        insert_later(writer, Timer, row)
        assert all(t[4] != 99 for t in _timers(app))  # not yet: at the commit
    assert sum(t[4] == 99 for t in _timers(app)) == 1


def test_a_turn_played_in_the_callers_session_is_told_whole_in_its_mails(app):
    """A timeout plays a turn's moves in one session: the mails of its last move tell every
    move of the turn (the earlier ones are read back, not lost among the waiting rows)."""
    new_game(app, 3, "whole")
    with reading(app) as session:
        rules = rules_for(session.get(Game, 1).kind)
    notations = []
    with app.test_request_context("/"), writing() as session:
        read = select(Game.turn, Game.state_json).where(Game.id == 1)  # as jobs reads: Core
        while True:
            turn, state_json = session.connection().execute(read).one()
            state = rules.loads(state_json)
            mover = rules.to_move(state)
            seat_id = session.connection().execute(select(Seat.id).where(
                Seat.game_id == 1, Seat.number == mover)).scalar_one()
            move = rules.default_move(state)
            submit_move(None, move, turn, seat_id=seat_id, actor="timeout", via="scheduler",
                        session=session)
            notations.append(move)
            after = rules.loads(session.connection().execute(read).one()[1])
            if rules.to_move(after) != mover:
                break
    assert len(notations) > 1  # an exchange and the draw after it, at least
    moved = next(i for i in _intents(app, "moved") if i["seat"] != mover)
    told = [line["sentence"]["t"] for line in moved["args"]["lines"]]
    assert notations[0].startswith("exchange") and len(told) == len(notations), told
    assert "exchanged" in told[0] and all("drew" in line for line in told[1:])


def test_a_read_of_plain_rows_sees_one_moment_on_sqlite(app):
    """reading_rows begins its transaction on the driver (BEGIN, sent straight to SQLite): a
    move committed meanwhile is not seen halfway through a page's reads."""
    from pbem.ground.db import get_engine as engine_of
    from pbem.ground.db import reading_rows

    if engine_of(app).dialect.name != "sqlite":
        pytest.skip("PostgreSQL reads each statement at its own moment (READ COMMITTED)")
    new_game(app, 3, "moment")
    move, turn, seat_id = _move_of(app)
    read = select(Game.turn).where(Game.id == 1)
    with app.test_request_context("/"), reading_rows() as connection:
        assert connection.execute(read).scalar_one() == turn
        submit_move(None, move, turn, seat_id=seat_id)
        assert connection.execute(read).scalar_one() == turn  # the moment the read began
    with app.test_request_context("/"), reading_rows() as connection:
        assert connection.execute(read).scalar_one() == turn + 1
