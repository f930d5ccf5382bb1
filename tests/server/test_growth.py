"""An idle scheduler run costs the same however long the server has been running: every
statement it sends reads through an index, never a whole table that grows with history (sent
mail, finished timers, mailed digest news, old seat keys, the move log).

The plans are the database's own (EXPLAIN QUERY PLAN on SQLite; on PostgreSQL, EXPLAIN with
sequential scans priced out, so that a plan still holding one has no index to use), for a
database with a small and a ten times larger history, each with and without table statistics
(ANALYZE), because statistics are what turns a planner from an index to a scan."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from server import make_app, new_game, play_moves
from sqlalchemy import event, insert, text

from pbem.ground.db import get_engine, utcnow, writing
from pbem.ground.models import (
    DONE,
    SENT,
    TIMEOUT,
    DigestItem,
    Game,
    MoveRecord,
    OutboxMessage,
    SeatKey,
    Timer,
)
from pbem.scheduler.jobs import run_jobs

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

# Tables that stay small whatever the history: one row per scheduler job.
SMALL = {"jobstate"}
LATER = timedelta(minutes=5)


def plan_scans(connection, statement: str, parameters) -> list[str]:
    """The steps of `statement`'s plan that read a whole table (or a whole index) of one of
    the growing tables; [] when every step looks rows up by an index. Reading a whole partial
    index is fine: it holds only the rows in flight (mail waiting, timers claimed)."""
    partial = partial_indexes(connection)
    if connection.dialect.name == "sqlite":
        rows = connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters).all()
        steps = [row[-1] for row in rows]
        return [step for step in steps if step.startswith("SCAN ")
                and step.split()[1] not in SMALL and step.split()[-1] not in partial]
    if connection.dialect.name == "postgresql":
        with connection.begin_nested():
            connection.exec_driver_sql("SET LOCAL enable_seqscan = off")
            plan = connection.exec_driver_sql("EXPLAIN (FORMAT JSON) " + statement,
                                              parameters).scalar()
        found = []

        def walk(node):
            table = node.get("Relation Name")
            whole = node["Node Type"] == "Seq Scan" or (
                node["Node Type"] in ("Index Scan", "Index Only Scan", "Bitmap Index Scan")
                and "Index Cond" not in node)
            if table and table not in SMALL and whole and node.get("Index Name") not in partial:
                found.append(f"{node['Node Type']} on {table}")
            for child in node.get("Plans", []):
                walk(child)

        walk((plan if isinstance(plan, list) else json.loads(plan))[0]["Plan"])
        return found
    raise NotImplementedError(connection.dialect.name)


def partial_indexes(connection) -> set[str]:
    if connection.dialect.name == "sqlite":
        return {name for (name,) in connection.exec_driver_sql(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql LIKE '% WHERE %'")}
    return {name for (name,) in connection.exec_driver_sql(
        "SELECT indexrelid::regclass::text FROM pg_index WHERE indpred IS NOT NULL")}


def idle_statements(app, now: datetime) -> list[tuple[str, object]]:
    """The distinct statements (with the parameters of their first use) of a scheduler run
    at `now`, when nothing is due."""
    seen: dict[str, object] = {}

    def before(_conn, _cursor, statement, parameters, _context, executemany):
        if not executemany and statement.split()[0].upper() in ("SELECT", "UPDATE", "DELETE"):
            seen.setdefault(statement, parameters)

    engine = get_engine(app)
    event.listen(engine, "before_cursor_execute", before)
    try:
        counts = run_jobs(app, now)
    finally:
        event.remove(engine, "before_cursor_execute", before)
    assert not any(counts.values()), f"something was due: {counts}"
    return list(seen.items())


def add_history(app, game_id: int, seat_id: int, rows: int, start: int) -> None:
    """What a long-running server keeps: finished games, sent mail, finished timers, mailed
    digest news, replaced seat keys and old log entries (numbered after the game's own)."""
    past = utcnow() - timedelta(days=30)
    outbox = [{"game_id": game_id, "seat_id": seat_id, "kind": "your_turn",
               "to_addr": "p0@example.org", "subject": "old", "text_body": "sent",
               "html_body": "<p>sent</p>", "message_id": f"<old.{start + i}@example.org>",
               "secrets_json": "[]", "status": SENT, "attempts": 1, "created_at": past,
               "next_attempt_at": past, "claimed_at": past, "sent_at": past}
              for i in range(rows)]
    timers = [{"game_id": game_id, "seat_id": seat_id, "kind": TIMEOUT, "due_at": past,
               "clock_version": 0, "status": DONE, "done_at": past, "outcome": "obsolete"}
              for _ in range(rows)]
    digests = [{"seat_id": seat_id, "text": "old news", "created_at": past, "sent": True}
               for _ in range(rows)]
    keys = [{"seat_id": seat_id, "token_hash": f"{start + i:064x}", "turn": 0,
             "created_at": past, "revoked_at": past} for i in range(rows)]
    games = [{"kind": "kardinal-koenig", "title": "Old", "watch_id": f"old{start + i}",
              "status": "finished", "seed": "old", "start_seat": 0, "turn": 120,
              "state_json": "{}", "created_at": past, "updated_at": past,
              "turn_started_at": past, "finished_at": past, "clock_version": 2 + i % 50}
             for i in range(rows // 10)]
    log = [{"game_id": game_id, "number": 10_000 + start + i, "seat": 0, "notation": "draw deck",
            "actor": "player", "via": "web", "lines_json": "{}", "created_at": past}
           for i in range(rows)]
    with app.app_context(), writing() as session:
        connection = session.connection()
        for model, batch in ((Game, games), (OutboxMessage, outbox), (Timer, timers),
                             (DigestItem, digests), (SeatKey, keys), (MoveRecord, log)):
            connection.execute(insert(model.__table__), batch)


@pytest.fixture(scope="module")
def grown(tmp_path_factory, database):
    """An app with a game under way (its mail sent); `grow(rows)` tops its history up to
    `rows` rows in each growing table."""
    app = make_app(tmp_path_factory.mktemp("growth") / "instance")
    _created, tokens = new_game(app, players=3, seed="growth")
    play_moves(app, tokens, 12)
    run_jobs(app)  # the mail of those moves goes out; the scheduler's own row is written
    added = [0]

    def grow(rows: int) -> None:
        add_history(app, 1, 1, rows - added[0], added[0])
        added[0] = rows

    return app, grow


def test_the_check_finds_a_scan_of_a_growing_table(grown):
    """The check below can fail: a query with no index to use is caught."""
    app, _grow = grown
    with get_engine(app).connect() as connection:
        assert plan_scans(connection, "SELECT id FROM outboxmessage WHERE subject = 'x'", ())
        assert plan_scans(connection, "SELECT id FROM timer WHERE outcome = 'x'", ())
        assert not plan_scans(connection, "SELECT id FROM outboxmessage WHERE id = 1", ())
        assert "ix_outbox_waiting" in partial_indexes(connection)


@pytest.mark.parametrize("history", [500, 5_000])
def test_an_idle_scheduler_run_reads_no_growing_table_whole(grown, history):
    """Every statement of a run with nothing due uses an index, before and after ANALYZE."""
    app, grow = grown
    grow(history)
    now = utcnow() + LATER
    for statistics in (False, True):
        if statistics:
            with get_engine(app).connect() as connection:
                connection.exec_driver_sql("ANALYZE")
                connection.commit()
            get_engine(app).dispose()  # statistics are read when a connection opens
        statements = idle_statements(app, now)
        assert len(statements) >= 5, statements  # the run did look at its tables
        with get_engine(app).connect() as connection:
            scans = {statement: plan_scans(connection, statement, parameters)
                     for statement, parameters in statements}
        found = {" ".join(s.split())[:120]: steps for s, steps in scans.items() if steps}
        assert found == {}, \
            f"full scans with{'' if statistics else 'out'} table statistics: {found}"
    with get_engine(app).connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM outboxmessage")).scalar() > history
