"""The database connection: one SQLAlchemy engine per app, sessions for reading and for writing.

Two databases are supported, SQLite (the default: one file, nothing to run) and PostgreSQL
through psycopg 3 (`postgresql+psycopg://`), for several web workers and schedulers on several
hosts. Code that writes is the same for both; how concurrent writers are kept apart differs:

- SQLite runs in WAL mode so pages can be read while a move is written, and every write
  transaction starts with BEGIN IMMEDIATE: writers queue for the one write lock at their first
  statement instead of failing later with "database is locked". So a write transaction sees
  no other writer's changes while it runs.
- PostgreSQL runs writers side by side (READ COMMITTED). A write that reads a row to change it
  (a game's turn, a claimed timer, the scheduler's last run) locks that row first with
  `SELECT ... FOR UPDATE` (`session.get(..., with_for_update=True)`, `locked()` below), and a
  claim of due work takes the rows no other claimer holds (`FOR UPDATE SKIP LOCKED`, see
  `pbem.scheduler.jobs` and `pbem.scheduler.outbox`). SQLite ignores both clauses: its write lock covers them.

Schema changes are Alembic migrations (`pbem init-db` runs them, on either database); nothing
here creates tables.
"""

from __future__ import annotations

import logging
import operator
import os
import socket
import sqlite3
import time
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

from flask import Flask, current_app
from sqlalchemy import DateTime, Table, event, insert, literal_column, text, update
from sqlalchemy.engine import Connection, Engine, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import ORMExecuteState
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.sql import Select
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.types import TypeDecorator
from sqlmodel import Session, SQLModel, create_engine

from .checkpoints import (
    AUTOCHECKPOINT_PAGES,
    BUSY_TIMEOUT_SECONDS,
    CountingConnection,
    checkpoints_for,
)

SYNCHRONOUS = {"normal": "NORMAL", "full": "FULL"}
# app.extensions: the database's schema was found to be the code's (pbem.ground.schema.checked),
# here so that a request can ask without loading Alembic.
SCHEMA_OK = "pbem_schema_ok"
logger = logging.getLogger(__name__)


def utcnow() -> datetime:
    return datetime.now(UTC)


class UtcDateTime(TypeDecorator):
    """An aware UTC datetime in and out; stored without zone (SQLite keeps none)."""

    impl = DateTime
    cache_ok = True

    @property
    def python_type(self):
        return datetime

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the database; use an aware UTC time")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value, dialect):
        return None if value is None else value.replace(tzinfo=UTC)


def _use_wal(dbapi_connection) -> None:
    """Put the file in WAL mode (it stays so; later calls change nothing).

    Switching a new file to WAL takes a lock that SQLite does not wait for: a process that
    connects while another one is switching is told "database is locked" at once, whatever the
    busy timeout. So wait here, as the busy timeout would, when several processes open a new
    database together (`pbem init-db` beside a starting server, parallel test workers).
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    pause = 0.001
    while True:
        try:
            dbapi_connection.execute("PRAGMA journal_mode=WAL").close()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def create_private(path: Path) -> None:
    """Make the database file (and its folder) readable by this user only, before SQLite opens
    it: it holds seat keys' hashes, admin password hashes and unsent mail with live links.
    SQLite gives its -wal and -shm files the same permissions. An existing file is left as
    it is."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not path.exists():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))


POSTGRES_PREFIXES = ("postgres://", "postgresql://", "postgresql+psycopg2://")


def normalized_url(url: str) -> str:
    """`url` with PostgreSQL's usual spellings (`postgres://`, `postgresql://`) meaning psycopg 3,
    the driver installed with the server."""
    for prefix in POSTGRES_PREFIXES:
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def shown_url(url: str) -> str:
    """`url` fit for a log or a terminal: the password replaced by ***."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 (not a URL: shown as given)
        return url


_Selected = TypeVar("_Selected", bound=Select)


def locked(statement: _Selected, skip_locked: bool = False) -> _Selected:
    """`statement` locking the rows it reads until the transaction ends (FOR UPDATE; with
    `skip_locked`, leaving out rows another transaction holds). SQLite renders neither: its
    write transactions run one at a time anyway."""
    return statement.with_for_update(skip_locked=skip_locked)


def new_claim(holder: int | None = None) -> str:
    """A claim on due work, naming the process that holds it (pid@host, for operators and for
    finding a dead scheduler's claims: this one, or the process `holder` it is made for),
    unique to this claim; at most 40 characters."""
    return f"{holder or os.getpid()}@{socket.gethostname()[:16]}:{uuid.uuid4().hex[:12]}"


ID_LIMITS = {"postgresql": 2**31 - 1}  # its INTEGER keys are 32-bit; SQLite's hold 64 bits


def get_row(session: Session, model, row_id: int, **options):
    """`session.get`, except that an id the database's keys cannot hold finds nothing (instead
    of an overflow error from PostgreSQL): an address with a huge id is a plain "no such"."""
    if not -2**63 <= row_id <= ID_LIMITS.get(session.get_bind().dialect.name, 2**63 - 1):
        return None
    return session.get(model, row_id, **options)


def one_at_a_time(session: Session, *keys: str) -> None:
    """Until the transaction ends, other transactions naming any of `keys` wait for this one:
    for a check that counts rows and then inserts one (no row to lock yet). On PostgreSQL a
    transaction-level advisory lock per key, taken in one order so that two transactions
    cannot wait for each other; SQLite's write transactions run one at a time anyway."""
    if session.get_bind().dialect.name != "postgresql":
        return
    for key in sorted(set(keys)):
        session.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
                        {"key": key})


def claim_rows(session: Session, model, due: Select, **values) -> list[int]:
    """Mark the rows whose ids `due` selects (with its order and limit) with `values`, leaving
    out rows another transaction holds; returns their ids.

    The ids are read first (FOR UPDATE SKIP LOCKED) and then updated by id: in one statement,
    `UPDATE ... WHERE id IN (SELECT ... LIMIT n FOR UPDATE SKIP LOCKED)`, PostgreSQL may run the
    subquery more than once and take more than n rows."""
    ids = list(session.exec(locked(due, skip_locked=True)))
    if ids:
        session.exec(update(model).where(model.id.in_(ids)).values(**values))
    return ids


def insert_if_missing(session: Session, model, **values) -> bool:
    """Insert a row unless one with the same key exists; True if this call inserted it.

    Two processes doing this at once do not fail: on PostgreSQL the second waits for the
    first's transaction and then inserts nothing; on SQLite they do not run at once."""
    if session.get_bind().dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    result = session.execute(insert(model).values(**values).on_conflict_do_nothing())
    return result.rowcount == 1


def make_engine(url: str, synchronous: str = "normal") -> Engine:
    """An engine for `url`; for SQLite with WAL, foreign keys and IMMEDIATE write transactions.

    `synchronous` is SQLite's: "normal" syncs the WAL to disk at checkpoints only, so a power
    cut (not a crash of the server) may lose the last transactions, acknowledged moves
    included; "full" syncs at every commit, at the cost of one disk flush per write."""
    url = normalized_url(url)
    if url.startswith("postgresql"):
        # pre_ping: a connection the server closed (restart, failover, idle timeout) is
        # replaced before use instead of failing the request that drew it from the pool.
        return create_engine(url, pool_pre_ping=True,
                             connect_args={"application_name": "pbem", "connect_timeout": 10})
    if not url.startswith("sqlite"):
        return create_engine(url, pool_pre_ping=True)
    path = url.split("///", 1)[1] if "///" in url else ""
    is_file = bool(path) and path != ":memory:" and not path.startswith("file:")
    connect_args = {"timeout": BUSY_TIMEOUT_SECONDS, "check_same_thread": False}
    checkpoints = None
    if is_file:
        checkpoints = checkpoints_for(os.path.abspath(path))  # the file SQLAlchemy opens
        connect_args["factory"] = CountingConnection
    engine = create_engine(url, connect_args=connect_args)

    if is_file:
        @event.listens_for(engine, "do_connect")
        def _private_file(*_):  # at the first connection, not when the app is made
            create_private(Path(path))

        # The thread holds neither the engine nor these: a disposed or collected engine's
        # thread ends.
        event.listen(engine, "engine_disposed", lambda _engine: checkpoints.stop())
        weakref.finalize(engine, checkpoints.stop)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves, below
        _use_wal(dbapi_connection)
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA synchronous={SYNCHRONOUS[synchronous]}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_SECONDS * 1000}")
        if checkpoints is not None:
            cursor.execute(f"PRAGMA wal_autocheckpoint={AUTOCHECKPOINT_PAGES}")
            dbapi_connection.checkpoints = checkpoints
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        options = conn.get_execution_options()
        if options.get("pbem_begun"):  # the caller begins on the driver (_begin_on_driver)
            return
        conn.exec_driver_sql("BEGIN IMMEDIATE" if options.get("pbem_write") else "BEGIN")

    return engine


def init_app(app: Flask) -> None:
    engine = make_engine(app.config["DATABASE_URL"], app.config["SQLITE_SYNCHRONOUS"])
    app.extensions["pbem_db"] = engine
    # Made once: an engine with options is a proxy whose event dispatch is joined anew for each
    # one made, which cost a write transaction more than its statements.
    app.extensions["pbem_db_writer"] = engine.execution_options(pbem_write=True)
    # The move path's own transactions send their BEGIN straight to the driver.
    app.extensions["pbem_db_rows"] = engine.execution_options(pbem_begun=True)
    # Names this app's database in what the process keeps of it (pbem.services.log's windows):
    # two apps of one process may hold copies of one game in two databases.
    app.extensions["pbem_db_token"] = uuid.uuid4().hex


def get_engine(app: Flask | None = None) -> Engine:
    return (app or current_app).extensions["pbem_db"]


@contextmanager
def reading(app: Flask | None = None) -> Iterator[Session]:
    """A session for reads; it sees one consistent snapshot and writes nothing."""
    with Session(get_engine(app), expire_on_commit=False) as session:
        yield session


@contextmanager
def reading_rows(app: Flask | None = None) -> Iterator[Connection]:
    """A connection for reads of plain rows (no ORM session): one consistent snapshot, and
    nothing written."""
    with (app or current_app).extensions["pbem_db_rows"].connect() as connection:
        _begin_on_driver(connection, "BEGIN")
        yield connection


def _begin_on_driver(connection: Connection, sql: str) -> None:
    """Begin the connection's transaction, on SQLite with `sql` sent straight to the driver (a
    db.Cached statement: heard by listeners, and a fraction of SQLAlchemy's cost for it);
    PostgreSQL's driver begins by itself."""
    connection.begin()
    if connection.dialect.name == "sqlite":
        _BEGIN[sql].execute(connection, [{}])


@contextmanager
def writing(app: Flask | None = None) -> Iterator[Session]:
    """One write transaction: committed when the block ends, rolled back if it raises."""
    engine = (app or current_app).extensions["pbem_db_writer"]
    with Session(engine, expire_on_commit=False) as session, session.begin():
        yield session


class Writer:
    """One write transaction on a Core connection, with what the move path's helpers use of an
    ORM session (`info`, where insert_later keeps its rows, and `connection()`) and nothing
    else: no identity map, no unit of work, no session events. The rows insert_later holds are
    written at the commit (`writing_rows`) or by an explicit insert_pending, not before each
    statement: a statement that must see them calls insert_pending first."""

    def __init__(self, connection: Connection):
        self._connection = connection
        self.info: dict = {}

    def connection(self) -> Connection:
        return self._connection


@contextmanager
def writing_rows(app: Flask | None = None) -> Iterator[Writer]:
    """One write transaction without an ORM session (a `Writer`, for plain rows): committed
    when the block ends, after the rows insert_later holds; rolled back if it raises."""
    with (app or current_app).extensions["pbem_db_rows"].connect() as connection:
        _begin_on_driver(connection, "BEGIN IMMEDIATE")
        writer = Writer(connection)
        yield writer
        insert_pending(writer)
        connection.commit()


def is_status(column, value: str) -> ColumnElement[bool]:
    """`column = 'value'` with the value written into the statement instead of bound: only then
    can SQLite and PostgreSQL use a partial index `WHERE status = 'value'` (they match the
    index's condition against the statement's text). For the models' status constants only."""
    if not value.isidentifier():
        raise ValueError(f"not a status constant: {value!r}")
    return column == literal_column(f"'{value}'")


# --- writes compiled once ------------------------------------------------------------------------

class Cached:
    """A Core statement compiled once per database dialect and set of parameters given, then
    run straight on the DBAPI cursor of the caller's connection, in its transaction: for the
    statements every move and every answer run, where SQLAlchemy's execution of a statement
    took several times what the database took to run it.

    The parameters go through their types exactly as SQLAlchemy would bind them (the UTC
    datetimes, booleans), values the statement holds itself (`.values(outcome="obsolete")`) and
    an INSERT's Python-side column defaults are filled in as SQLAlchemy fills them, listeners of
    `before_cursor_execute` hear of the statement as of any other (the benchmarks count
    statements so), and a database error is raised as SQLAlchemy raises it
    (sqlalchemy.exc.IntegrityError, ...). A SELECT's rows come back as the driver gives them;
    `converters` are the columns' result processors, for the caller to apply to what it uses.
    No ids or counts are read back."""

    def __init__(self, statement):
        self.statement = statement
        self._plans: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def _plans_of(self, dialect) -> dict:
        plans = self._plans.get(dialect)
        if plans is None:
            plans = self._plans.setdefault(dialect, {})
        return plans

    def _plan(self, dialect, keys: tuple[str, ...]) -> tuple:
        plans = self._plans_of(dialect)
        plan = plans.get(keys)
        if plan is None:
            compiled = self.statement.compile(dialect=dialect, column_keys=list(keys))
            names = list(compiled.positiontup) if compiled.positional else list(compiled.binds)
            binds = [compiled.binds[name] for name in names]
            processors = [bind.type.dialect_impl(dialect).bind_processor(dialect)
                          for bind in binds]
            # What the rows do not give: the statement's own values, and an INSERT's columns
            # with a Python-side default.
            fixed = {name: bind.effective_value for name, bind in zip(names, binds)
                     if name not in keys and not bind.required}
            defaults = {column.key: column.default
                        for column in getattr(compiled, "insert_prefetch", ())}
            # The same for every row: the statement's values and the scalar defaults, merged
            # once; a callable default is called for each row.
            constant = {**fixed, **{key: default.arg for key, default in defaults.items()
                                    if default.is_scalar}}
            made = tuple((key, default.arg) for key, default in defaults.items()
                         if not default.is_scalar)
            # Each parameter taken from a row in one call, and converted only where its type
            # converts anything.
            pick = (operator.itemgetter(*names) if len(names) > 1 else
                    (lambda row, name=names[0]: (row[name],)) if names else (lambda row: ()))
            converting = tuple((i, process) for i, process in enumerate(processors)
                               if process is not None)
            plan = plans[keys] = (compiled.string, names, pick, converting, constant, made,
                                  compiled.positional)
        return plan

    def _parameters(self, dialect, rows: list[dict]) -> tuple[str, list]:
        sql, names, pick, converting, constant, made, positional = self._plan(dialect,
                                                                             tuple(rows[0]))
        parameters = []
        # A value that is the same object as the previous row's (the move's moment, its game)
        # is converted once.
        last: dict[int, tuple] = {}
        for row in rows:
            if constant or made:
                row = {**constant, **{key: make(None) for key, make in made}, **row}
            values = pick(row)
            if converting:
                values = list(values)
                for i, process in converting:
                    value = values[i]
                    held = last.get(i)
                    if held is not None and held[0] is value:
                        values[i] = held[1]
                    else:
                        values[i] = converted = process(value)
                        last[i] = (value, converted)
            parameters.append(tuple(values) if positional else dict(zip(names, values)))
        return sql, parameters

    def _run(self, connection: Connection, rows: list[dict], fetch: bool = False) -> list:
        dialect = connection.dialect
        sql, parameters = self._parameters(dialect, rows)
        many = len(parameters) > 1
        if not connection.in_transaction():  # as SQLAlchemy begins one at a first statement
            connection.begin()
        cursor = connection.connection.dbapi_connection.cursor()
        try:
            connection.dispatch.before_cursor_execute(connection, cursor, sql,
                                                      parameters if many else parameters[0],
                                                      None, many)
            if many:
                cursor.executemany(sql, parameters)
            else:
                cursor.execute(sql, parameters[0])
            return cursor.fetchall() if fetch else []
        except dialect.loaded_dbapi.Error as exc:
            raise DBAPIError.instance(sql, parameters, exc, dialect.loaded_dbapi.Error,
                                      dialect=dialect) from exc
        finally:
            cursor.close()

    def execute(self, connection: Connection, rows: list[dict]) -> None:
        """Run the statement once per row (every row naming the same parameters)."""
        self._run(connection, rows)

    def fetch(self, connection: Connection, parameters: dict) -> list[tuple]:
        """A SELECT's rows, as the driver gives them (see `converters`)."""
        return self._run(connection, [parameters], fetch=True)

    def converters(self, dialect) -> tuple:
        """Each selected column's result processor for `dialect` (None: taken as it is)."""
        plans = self._plans_of(dialect)
        converters = plans.get(None)
        if converters is None:
            converters = plans[None] = tuple(
                column.type.dialect_impl(dialect).result_processor(dialect, None)
                for column in self.statement.selected_columns)
        return converters

    def converted(self, dialect, row: tuple, start: int, end: int) -> list:
        """Columns `start` to `end` of a row `fetch` gave, as SQLAlchemy would give them."""
        plans = self._plans_of(dialect)
        conversions = plans.get((start, end))
        if conversions is None:  # only the columns whose type converts anything
            conversions = plans[start, end] = tuple(
                (i, convert) for i, convert in enumerate(self.converters(dialect)[start:end])
                if convert is not None)
        values = list(row[start:end])
        for i, convert in conversions:
            values[i] = convert(values[i])
        return values


_BEGIN = {sql: Cached(text(sql)) for sql in ("BEGIN", "BEGIN IMMEDIATE")}
_INSERTS: dict[Table, Cached] = {}


def cached_insert(table: Table) -> Cached:
    """The INSERT of rows into `table`, compiled once per dialect and set of columns."""
    statement = _INSERTS.get(table)
    if statement is None:
        statement = _INSERTS[table] = Cached(insert(table))
    return statement


# --- rows written in batches ----------------------------------------------------------------------

_LATER = "pbem_insert_later"


def insert_later(session: OrmSession | Writer, model: type[SQLModel], row: dict) -> None:
    """Add a row to `model`'s table without making an ORM object of it (for rows nobody reads
    back in the transaction that writes them: mails, seat keys, timers, log entries).

    The rows of a table are written together in one executemany before the session's next
    statement, flush or commit, so the transaction sees them exactly where it would have seen
    objects added with `session.add` and flushed by autoflush. Every row of a table must name
    the same columns; the table's column defaults fill in the rest."""
    session.info.setdefault(_LATER, {}).setdefault(model.__table__, []).append(row)


def insert_pending(session: OrmSession | Writer, model: type[SQLModel] | None = None) -> None:
    """Write the rows `insert_later` holds for `session` now (only `model`'s, when given)."""
    if model is not None:
        rows = session.info.get(_LATER, {}).pop(model.__table__, None)
        if rows:
            cached_insert(model.__table__).execute(session.connection(), rows)
        return
    batches: dict[Table, list[dict]] | None = session.info.pop(_LATER, None)
    if batches:
        connection = session.connection()
        for table, rows in batches.items():
            cached_insert(table).execute(connection, rows)


@event.listens_for(OrmSession, "do_orm_execute")
def _before_statement(state: ORMExecuteState) -> None:
    if _LATER in state.session.info:
        insert_pending(state.session)


@event.listens_for(OrmSession, "before_flush")
def _before_flush(session: OrmSession, _context, _instances) -> None:
    if _LATER in session.info:
        insert_pending(session)


@event.listens_for(OrmSession, "before_commit")
def _before_commit(session: OrmSession) -> None:
    if _LATER in session.info:
        insert_pending(session)


@event.listens_for(OrmSession, "after_rollback")
def _after_rollback(session: OrmSession) -> None:
    session.info.pop(_LATER, None)  # never written: they go with the transaction
