"""How long one scheduler run (`pbem.scheduler.jobs.run_jobs`) takes on a big database.

    python3 bench/scheduler_bench.py                 # 100,000 games
    python3 bench/scheduler_bench.py --quick         # 10,000 games
    python3 bench/scheduler_bench.py --games 50000 --runs 30 --profile

The database is a SQLite file in a fresh temporary folder, set up as `pbem.ground.db` sets it up (WAL,
synchronous=NORMAL, BEGIN IMMEDIATE for writes) and migrated by `pbem.ground.schema`. Its rows are
written straight with SQLAlchemy Core (executemany), not through the services: N running games
of three seats (a few real initial states from the engine, reused; each game that is due in a
position of its own, 10 to 69 random legal moves in, so that every timeout mails a board picture
of its own, as in a real burst), each with the timers of its current turn (clock version 1 on game and timers): a reminder 24 hours before the deadline and
the timeout. 1% of the games have their deadline in the ten minutes before NOW (their reminder
already sent, so only the timeout is due); all the other deadlines lie 25 to 72 hours after NOW,
so nothing else is due. Optionally (--history K) the outbox also holds K sent mails per game,
as an older server keeps them.

Figures (wall-clock time from time.perf_counter, one process, one thread):
  (a) `run_jobs` at a moment when nothing is due (NOW - 10 minutes): median of --runs runs;
  (b) `run_jobs` at NOW: the due timeouts play their default moves and queue their mails, and
      the same run delivers the mails (local backend: .eml files in the temporary folder); with
      the time spent in each part. It runs in a scheduler process started for it (spawned), so
      that every cache a process fills as it works is as cold as after a restart: the parsed
      positions, the pictures' pieces, the mails' shared parts (board tables, position lines).
      What that process does before it, as `pbem scheduler` does before its first run (the app
      made, its helper senders started and ready, the mail templates compiled and the
      pictures' bare boards drawn in each: pbem.scheduler.senders.warm_up, the database connected), is
      its start-up, a figure of its own, also given added to (b). Before it, the time to
      create an empty file, which this machine's filesystem makes slow for minutes after mass
      deletions (`file_creation_microseconds`), says whether (b) was taken in that state. Above
      TARGET_SECONDS (or with --profile), a second run on a copy of the database, over a fifth
      of the due games, is profiled with cProfile in this process;
  (c) the query plans (EXPLAIN QUERY PLAN) of the statements of a run: the due-timer claim and
      the clock_version = 0 query in full, and every other statement whose plan scans a table;
  (f) the floor: the writes of (b) done bare (per timeout one transaction updating a game and
      adding a log entry and its mails; per mail the .eml file and its row marked sent in its
      own transaction), on an engine made by `pbem.ground.db.make_engine`; the ratio floor/pbem is the
      figure to compare on a shared machine, beside (b)'s wall and CPU time against the limit
      (5 s) and the target (1 s) for 1,000 timeouts, scaled to the timeouts of the run;
  (g) (a) again, after ANALYZE, with the outbox at 1, 10 and 100 times the sent mail of (b):
      the median and every statement whose plan reads a whole table (a partial index of the
      rows in flight does not count: it holds only those).
The figures are saved as JSON in bench/results/ (unless --no-save).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import platform
import pstats
import random
import re
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import results_file
import sqlalchemy
from sqlalchemy import event, func, insert, text
from sqlmodel import select

import pbem.games.picture
import pbem.scheduler.backends
import pbem.scheduler.jobs
import pbem.scheduler.outbox
import pbem.scheduler.senders
import pbem.scheduler.wire
import pbem.services.mail
import pbem.services.mail.sending
import pbem.services.moves
import pbem.services.timeouts
from pbem import create_app
from pbem.games import rules_for
from pbem.ground import schema
from pbem.ground.db import get_engine, reading
from pbem.ground.models import (
    DONE,
    PENDING,
    REMINDER,
    RUNNING,
    SENT,
    TIMEOUT,
    Game,
    OutboxMessage,
    Seat,
    Timer,
)

TARGET_SECONDS = 1.0  # (b) for 1,000 timeouts and their mail
LIMIT_SECONDS = 5.0  # what (b) must meet at least, for 1,000 timeouts
DUE_SHARE = 100  # one game in this many has its timeout due at NOW
STATES = 8  # different initial positions, reused round-robin
CHUNK = 20_000  # rows per executemany
KIND = "kardinal-koenig"
COLOURS = ["yellow", "red", "green"]
NOW = datetime(2030, 1, 7, 12, 0, tzinfo=UTC)  # mail queued now is due at once: keep it ahead


# --- the database -----------------------------------------------------------------------------

PICTURES = True  # --no-picture: mail without the board picture ([mail] board_picture = false)
SENDERS = None  # --senders N: [mail] senders (None: the product's default)


def open_app(folder: Path):
    """The app as a scheduler process starts it, on the instance `folder`'s database."""
    settings = {"INSTANCE_PATH": str(folder), "SECRET_KEY": "bench",
                "BASE_URL": "http://localhost", "MAIL_BACKEND": "local",
                "SCHEDULER_OUTAGE_MINUTES": 60, "MAIL_BOARD_PICTURE": PICTURES}
    if SENDERS is not None:
        settings["MAIL_SENDERS"] = SENDERS
    return create_app(settings)


def compile_templates(app) -> None:
    """Compile the mail templates, as a scheduler process has done after its first mails:
    once per process (counted in the start-up figure, not in a burst)."""
    for name in app.jinja_env.list_templates():
        if name.startswith(("email/", "games/")):
            app.jinja_env.get_template(name)


def make_app(folder: Path):
    app = open_app(folder)
    schema.upgrade(app)
    compile_templates(app)
    return app


def _states() -> list[tuple[str, str, int, int, int]]:
    """(seed, state JSON, seat to move, moves played, start seat) of a few new games."""
    rules = rules_for(KIND)
    states = []
    for i in range(STATES):
        seed = f"bench-{i}"
        state = rules.new_state(COLOURS, seed, None)
        states.append((seed, rules.dumps(state), rules.to_move(state), 0, rules.to_move(state)))
    return states


def _played(game_id: int) -> tuple[str, str, int, int, int]:
    """(seed, state JSON, seat to move, moves played, start seat) of a game of its own, 10 to 69 random
    legal moves in: each due game times out in a position (and so a board picture) no other
    game has, as in a real burst."""
    rules = rules_for(KIND)
    seed = f"bench-due-{game_id}"
    state = rules.new_state(COLOURS, seed, None)
    chooser = random.Random(seed)
    plies = 10 + game_id * 7 % 60
    for ply in range(plies):
        legal = rules.legal(state)
        after = rules.apply(state, rules.parse(state, chooser.choice(legal)))
        if rules.to_move(after) is None:  # over: stop before the end
            break
        state = after
    else:
        ply = plies
    return seed, rules.dumps(state), rules.to_move(state), ply, rules.start_seat(state)


def _chunks(rows, size=CHUNK):
    batch = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def sent_mail(mail_id: int, game_id: int | None, seat_id: int | None, lines: int) -> dict:
    """An outbox row as a sent mail is kept (its links hidden), three days old."""
    sent_at = NOW - timedelta(days=3)
    return {"id": mail_id, "game_id": game_id, "seat_id": seat_id, "kind": "moved",
            "to_addr": f"Player <p{mail_id}@example.org>", "subject": "[Bench] Player 1 is next",
            "text_body": "Hello,\n\n[link hidden once sent]\n" * lines,
            "html_body": "<p>Hello, [link hidden once sent]</p>" * lines,
            "message_id": f"<bench.{mail_id}@pbem.localhost>", "secrets_json": "[]",
            "status": SENT, "attempts": 1, "last_error": None, "created_at": sent_at,
            "next_attempt_at": sent_at, "claimed_at": sent_at, "claim": None,
            "sent_at": sent_at}


def fill(app, games: int, history: int) -> tuple[int, float]:
    """Write the games, seats, timers (and outbox history); returns (due games, seconds)."""
    started = time.perf_counter()
    shared = _states()
    due_games = games // DUE_SHARE
    own = {game_id: _played(game_id) for game_id in range(DUE_SHARE, games + 1, DUE_SHARE)}

    def state_of(game_id: int) -> tuple[str, str, int, int, int]:
        return own.get(game_id) or shared[game_id % STATES]
    due_step = timedelta(minutes=9) / max(due_games, 1)
    horizon = timedelta(hours=47)  # deadlines from NOW + 25 h to NOW + 72 h

    def deadline(game_id: int) -> datetime:
        if game_id % DUE_SHARE == 0:  # spread over the database, not in one corner of it
            return NOW - timedelta(minutes=9) + due_step * (game_id // DUE_SHARE - 1)
        return NOW + timedelta(hours=25) + horizon * ((game_id * 7919) % games) / games

    def game_rows():
        for game_id in range(1, games + 1):
            seed, state_json, _, played, start = state_of(game_id)
            due = deadline(game_id)
            begun = due - timedelta(hours=72)
            yield {"id": game_id, "kind": KIND, "title": f"Bench {game_id}", "status": RUNNING,
                   "seed": seed, "start_seat": start, "turn": played,
                   "state_json": state_json,
                   "created_at": begun, "updated_at": begun, "turn_started_at": begun,
                   "deadline_at": due, "finished_at": None, "deadline_hours": 72,
                   "reminder_hours": "24", "weekend_pause": False, "timezone": "UTC",
                   "extension_hours": 0, "clock_pauses": "[]", "clock_version": 1,
                   "paused_at": None}

    def seat_rows():
        for game_id in range(1, games + 1):
            for number, colour in enumerate(COLOURS):
                yield {"id": 3 * (game_id - 1) + number + 1, "game_id": game_id,
                       "number": number, "name": f"Player {number}",
                       "email": f"g{game_id}p{number}@example.org", "colour": colour,
                       "notify": "every", "timezone": None, "timeouts_in_row": 0,
                       "absent": False, "vacation_days_used": 0, "vacation_from": None,
                       "vacation_until": None}

    def timer_rows():
        for game_id in range(1, games + 1):
            to_move = state_of(game_id)[2]
            seat_id = 3 * (game_id - 1) + to_move + 1
            due = deadline(game_id)
            reminded = due - timedelta(hours=24) <= NOW
            base = {"game_id": game_id, "seat_id": seat_id, "clock_version": 1,
                    "claim": None, "claimed_at": None}
            yield {**base, "id": 2 * game_id - 1, "kind": REMINDER,
                   "due_at": due - timedelta(hours=24), "status": DONE if reminded else PENDING,
                   "done_at": due - timedelta(hours=24) if reminded else None,
                   "outcome": "sent" if reminded else None}
            yield {**base, "id": 2 * game_id, "kind": TIMEOUT, "due_at": due,
                   "status": PENDING, "done_at": None, "outcome": None}

    def outbox_rows():
        for game_id in range(1, games + 1):
            for k in range(history):
                yield sent_mail(history * (game_id - 1) + k + 1, game_id,
                                3 * (game_id - 1) + k % 3 + 1, 20)

    engine = get_engine(app)
    with engine.connect() as connection:
        raw = connection.connection.dbapi_connection  # pragmas outside any transaction
        raw.execute("PRAGMA synchronous=OFF")
        with connection.begin():
            for model, rows in ((Game, game_rows()), (Seat, seat_rows()),
                                (Timer, timer_rows()), (OutboxMessage, outbox_rows())):
                statement = insert(model.__table__)
                for batch in _chunks(rows):
                    connection.execute(statement, batch)
        raw.execute("PRAGMA synchronous=NORMAL")
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return due_games, time.perf_counter() - started


def copy_database(app, folder: Path):
    """A second app on a copy of the database file (checkpointed first)."""
    source = app.config["DATABASE_URL"].split("///", 1)[1]
    with get_engine(app).connect() as connection:
        connection.connection.dbapi_connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    folder.mkdir(parents=True)
    shutil.copyfile(source, folder / Path(source).name)
    copy = make_app(folder)
    assert copy.config["DATABASE_URL"].endswith(str(folder / Path(source).name)), \
        copy.config["DATABASE_URL"]
    return copy


# --- where the time goes -----------------------------------------------------------------------

class Phases:
    """Inclusive wall time and calls per labelled function, by wrapping module attributes."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._undo: list = []

    def wrap(self, module, name: str, label: str) -> None:
        original = getattr(module, name)

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[label] += time.perf_counter() - started
                self.calls[label] += 1

        setattr(module, name, timed)
        self._undo.append((module, name, original))

    def restore(self) -> None:
        for module, name, original in reversed(self._undo):
            setattr(module, name, original)
        self._undo.clear()


class TimedBackend(pbem.scheduler.backends.LocalBackend):
    """The local backend, timed while it takes each mail (checked and built as it is taken)
    and writes its file."""

    LABEL = "  backend: each mail checked, built and written (.eml)"

    def __init__(self, folder: str, phases: Phases):
        super().__init__(folder)
        self.phases = phases

    def send(self, messages):
        results = super().send(messages)
        while True:
            started = time.perf_counter()
            try:
                result = next(results)
            except StopIteration:
                return
            finally:
                self.phases.seconds[self.LABEL] += time.perf_counter() - started
            self.phases.calls[self.LABEL] += 1
            yield result


PHASES = [  # (module, attribute, label); labels are indented under what calls them
    (pbem.services.timeouts, "guard_outage", "guard_outage"),
    (pbem.services.timeouts, "start_missing_clocks", "start_missing_clocks"),
    (pbem.scheduler.jobs, "handle_due_timers", "handle_due_timers"),
    (pbem.scheduler.jobs, "_claim", "  _claim (claim a batch of timers)"),
    (pbem.scheduler.jobs, "_handle_some", "  _handle_some (timers in one write transaction)"),
    (pbem.services.timeouts, "act", "    act (one timer: check, moves, done; in a savepoint)"),
    (pbem.services.timeouts, "current", "      current (game, seat, state still current?)"),
    (pbem.services.timeouts, "submit_move", "      submit_move (each default move)"),
    (pbem.services.moves, "_notify", "        _notify (the mails a turn's end causes)"),
    (pbem.services.mail.sending, "mint_keys", "          mint_keys (a fresh seat key per mail)"),
    (pbem.scheduler.jobs, "deliver_all_due", "deliver_all_due"),
    (pbem.scheduler.outbox, "_claim", "  outbox _claim (claim a batch of mails)"),
    (pbem.scheduler.outbox, "_write", "    _write (a mail queued as an intent written)"),
    (pbem.services.mail.sending, "render", "      render (its text and HTML, by Jinja)"),
    (pbem.scheduler.wire, "build_message", "    build_message (the MIME message)"),
    (pbem.games.picture, "png_of", "      png_of (the board picture; made once a position)"),
    (pbem.scheduler.outbox, "_record", "  _record (deliveries and their written texts, one transaction)"),
]


class Statements(list):
    """(SQL, parameters) of each statement run, in order, and the seconds spent in each SQL."""

    def __init__(self):
        super().__init__()
        self.seconds: dict[str, float] = defaultdict(float)

    def slowest(self, runs: int, count: int = 4) -> list[tuple[float, str]]:
        """The costliest SQL texts: (milliseconds a run, statement)."""
        ranked = sorted(self.seconds.items(), key=lambda item: -item[1])[:count]
        return [(seconds / runs * 1000, statement) for statement, seconds in ranked]


@contextmanager
def statements(app):
    """Collect the statements run meanwhile, with the time SQLite took for each."""
    seen = Statements()

    def before(conn, cursor, statement, parameters, context, executemany):
        if not executemany:
            seen.append((statement, tuple(parameters or ())))
        conn.info["bench_started"] = time.perf_counter()

    def after(conn, cursor, statement, parameters, context, executemany):
        seen.seconds[statement] += time.perf_counter() - conn.info.pop("bench_started")

    engine = get_engine(app)
    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "after_cursor_execute", after)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", before)
        event.remove(engine, "after_cursor_execute", after)


def query_plan(app, statement: str, parameters: tuple) -> list[str]:
    with get_engine(app).connect() as connection:
        rows = connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters).all()
    return [row[-1] for row in rows]


def wide_steps(plan: list[str]) -> list[str]:
    """The steps of a plan that visit many rows: a table scanned without an index, or an index
    searched on a status column alone (every row in that status, e.g. all pending timers)."""
    return [line for line in plan
            if (line.startswith("SCAN") and "USING" not in line)
            or re.search(r"INDEX \w+ \((status|sent)=\?\)$", line)]


def _short(statement: str, width: int = 140) -> str:
    text = " ".join(statement.split())
    return text if len(text) <= width else text[:width - 3] + "..."


# --- the figures ---------------------------------------------------------------------------------

def quiet_runs(app, runs: int, quiet: datetime) -> tuple[list[float], Statements]:
    """Time `runs` runs at `quiet`, when nothing is due; also what their SQL cost."""
    for _ in range(3):  # the first run writes the scheduler's JobState row; warm up caches
        pbem.scheduler.jobs.run_jobs(app, quiet)
    samples = []
    with statements(app) as seen:
        for _ in range(runs):
            started = time.perf_counter()
            counts = pbem.scheduler.jobs.run_jobs(app, quiet)
            samples.append(time.perf_counter() - started)
            assert not any(counts.values()), f"something was due at {quiet}: {counts}"
    return samples, seen


def print_quiet(label: str, samples: list[float], seen: Statements, app=None) -> None:
    """The figures of quiet runs, with their costliest SQL (and its plan, given `app`)."""
    ms = sorted(s * 1000 for s in samples)
    sql = sum(seen.seconds.values()) / len(samples) * 1000
    print(f"{label}: median {statistics.median(ms):.2f} ms (min {ms[0]:.2f} ms, max "
          f"{ms[-1]:.2f} ms, {len(ms)} runs); SQLite's share {sql:.2f} ms a run, most in:")
    parameters = found_parameters(seen)
    for milliseconds, statement in seen.slowest(len(samples)):
        print(f"    {milliseconds:8.3f} ms  {_short(statement, 110)}")
        if app is not None and milliseconds > 0.5:
            print("                 " + "; ".join(query_plan(app, statement,
                                                           parameters[statement])))


def due_run(app, due_games: int, pool=None) -> tuple[float, dict, Phases]:
    phases = Phases()
    for module, name, label in PHASES:
        phases.wrap(module, name, label)
    # Timing the backend means installing one of its own, and helper processes only deliver
    # with the app's own backend: timed with a single sender only. The helpers' CPU time is
    # read from /proc before and after.
    single = app.config["MAIL_SENDERS"] == 1
    if single:
        app.extensions["pbem_mail_backend"] = TimedBackend(app.config["MAIL_FOLDER"], phases)
    helped = []  # what the helpers delivered, as the pool reports it
    finish = pbem.scheduler.senders.HelperPool.finish
    pbem.scheduler.senders.HelperPool.finish = lambda self: helped.append(finish(self)) or helped[-1]
    try:
        before, helpers_before = os.times(), helpers_cpu(pool) if pool else 0.0
        started = time.perf_counter()
        counts = pbem.scheduler.jobs.run_jobs(app, NOW, pool=pool)
        seconds, after = time.perf_counter() - started, os.times()
        helpers_after = helpers_cpu(pool) if pool else 0.0
    finally:
        phases.restore()
        pbem.scheduler.senders.HelperPool.finish = finish
        app.extensions.pop("pbem_mail_backend", None)
    counts["mail_by_helpers"] = sum(sum(totals.values()) for totals in helped)
    counts["cpu_seconds"] = (after.user + after.system) - (before.user + before.system)
    counts["children_cpu_seconds"] = helpers_after - helpers_before
    assert counts["timeouts"] == due_games, counts
    assert counts["reminders"] == counts["obsolete"] == counts["clocks_started"] == 0, counts
    return seconds, counts, phases


def print_burst(title: str, due_games: int, seconds: float, cpu: float, helpers_cpu: float,
                counts: dict, phases: Phases, load: str) -> None:
    """One (b) figure, with where its time went (in the run's own process)."""
    helped = f" + {helpers_cpu:.2f} s in helper processes" if helpers_cpu else ""
    print(f"{title}: {seconds:.2f} s, CPU {cpu:.2f} s{helped} ({seconds / due_games * 1000:.1f} "
          f"ms a timeout, all included; target {TARGET_SECONDS:g} s): {counts['timeouts']:,} "
          f"timeouts, {counts['mail_sent']:,} mails sent"
          + (f" ({counts['mail_by_helpers']:,} by the helpers)" if helpers_cpu else "")
          + f"; load average after it {load}")
    print("    where the time went in the run's process (inclusive; nested parts indented "
          "under their caller; the backend is timed with one sender only):")
    order = [label for _, _, label in PHASES]
    order.insert(order.index("    _write (a mail queued as an intent written)"),
                 TimedBackend.LABEL)
    for label in order:
        if phases.calls.get(label):
            share = phases.seconds[label] / seconds * 100
            print(f"    {label:<60} {phases.seconds[label]:7.2f} s {share:5.1f}%  "
                  f"{phases.calls[label]:>7,} calls")


def start_up(folder: Path) -> tuple[object, object, float, float, float]:
    """A scheduler process's start, as `pbem scheduler` starts: the app made, its helper
    senders started ([mail] senders - 1 processes), its mail templates compiled and board
    pictures' bare boards drawn (pbem.scheduler.senders.warm_up), what start-up made left out of the
    garbage collector's full passes (pbem.started), its database connected, and the
    helpers ready (each has done the same). Returns the app, the helper pool, and the wall,
    CPU and helpers' CPU seconds it took."""
    started, cpu = time.perf_counter(), time.process_time()
    app = open_app(folder)
    pool = pbem.scheduler.senders.HelperPool(app)
    pool.start()
    pbem.scheduler.senders.warm_up(app)
    pbem.started()
    with reading(app) as session:
        session.exec(select(func.count()).select_from(Timer)).one()
    if not pool.wait_ready(120):
        raise RuntimeError("the helper senders did not start")
    return (app, pool, time.perf_counter() - started, time.process_time() - cpu,
            helpers_cpu(pool))


def helpers_cpu(pool) -> float:
    """The CPU seconds the pool's helper processes have used so far (user and system, from
    /proc: they are not this process's children that have ended)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for process in pool.processes:
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
    return total


def _burst_process(folder: str, due_games: int, pictures: bool, senders: int | None,
                   pipe) -> None:
    """(b) in a scheduler process of its own, started for it: its caches (the parsed
    positions, the pictures' pieces, the mails' shared parts) are as cold as a new
    scheduler's, and what a scheduler does as it starts (`start_up`) is done. Sends back the
    start-up's and the burst's figures."""
    global PICTURES, SENDERS
    PICTURES, SENDERS = pictures, senders
    try:
        app, pool, startup, startup_cpu, startup_helpers_cpu = start_up(Path(folder))
        try:
            with statements(app) as seen:
                seconds, counts, phases = due_run(app, due_games, pool)
        finally:
            pool.close()
        distinct: dict[str, list] = {}
        for statement, parameters in seen:
            distinct.setdefault(statement, [parameters, 0, 0.0])[1] += 1
        for statement, spent in seen.seconds.items():
            distinct.setdefault(statement, [(), 0, 0.0])[2] = spent
        get_engine(app).dispose()
        pipe.send({"startup": startup, "startup_cpu": startup_cpu,
                   "startup_helpers_cpu": startup_helpers_cpu, "seconds": seconds,
                   "counts": counts, "phases": (dict(phases.seconds), dict(phases.calls)),
                   "statements": distinct})
    except BaseException as exc:
        import traceback

        pipe.send({"error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"})
        raise


def burst_in_new_process(folder: Path, due_games: int, senders: int | None = None) -> dict:
    """Run (b) in a newly started scheduler process (see `_burst_process`), with `[mail]
    senders` at `senders` (None: the product's default)."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    receiving, sending = context.Pipe(duplex=False)
    process = context.Process(target=_burst_process,
                              args=(str(folder), due_games, PICTURES, senders, sending))
    process.start()
    result = receiving.recv()
    process.join()
    if "error" in result:
        raise RuntimeError(f"the burst's process failed: {result['error']}")
    seen = Statements()
    for statement, (parameters, executed, spent) in result["statements"].items():
        seen.extend([(statement, parameters)] * executed)
        seen.seconds[statement] = spent
    phases = Phases()
    phases.seconds.update(result["phases"][0])
    phases.calls.update(result["phases"][1])
    result.update(statements=seen, phases=phases)
    return result


def profile_run(copy, due_games: int, top: int) -> str:
    """cProfile one run over the first fifth of the due games, on `copy` (a copy of the
    database made before (b))."""
    share = max(1, due_games // 5)
    until = NOW - timedelta(minutes=9) + timedelta(minutes=9) / max(due_games, 1) * (share - 1)
    copy.config["MAIL_SENDERS"] = 1  # this process's own work alone
    pbem.scheduler.jobs.run_jobs(copy, until - timedelta(minutes=10))  # connect, warm up
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    counts = pbem.scheduler.jobs.run_jobs(copy, until)
    profiler.disable()
    seconds = time.perf_counter() - started
    out = io.StringIO()
    out.write(f"profiled run: {counts['timeouts']} timeouts, {counts['mail_sent']} mails in "
              f"{seconds:.2f} s under cProfile\n")
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(r"pbem|email|jinja2|sqlalchemy/orm/session",
                                               top)
    return out.getvalue()


def found_parameters(seen: list[tuple[str, tuple]]) -> dict[str, tuple]:
    distinct: dict[str, tuple] = {}
    for statement, parameters in seen:
        distinct.setdefault(statement, parameters)
    return distinct


def plans(app, seen: list[tuple[str, tuple]]) -> list[tuple[str, str, list[str]]]:
    """(label, SQL, plan) of each distinct statement; the two asked for are labelled."""
    found = []
    for statement, parameters in found_parameters(seen).items():
        flat = " ".join(statement.split())
        if flat.startswith(("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA")):
            continue
        label = ""
        if flat.startswith("UPDATE timer SET status=?, claim=?, claimed_at=? WHERE timer.id IN"):
            label = "due-timer claim"
        elif "game.clock_version = ?" in flat and flat.startswith("SELECT"):
            label = "clock_version = 0"
        found.append((label, statement, query_plan(app, statement, parameters)))
    return found


# --- the floor: the same writes, bare ------------------------------------------------------------

def floor_run(folder: Path, timeouts: int, mails: int, state_json: str, eml: bytes) -> float:
    """Seconds for the writes a burst of `timeouts` needs at the least, done with bare SQL on an
    engine made by the same `pbem.ground.db.make_engine`: per timeout one write transaction that
    updates its game, adds a log entry and its share of `mails` mail rows; then per mail the
    .eml file written (as the local backend does) and its row marked sent in its own
    transaction (each delivery recorded before the next)."""
    from pbem.ground.db import make_engine

    engine = make_engine(f"sqlite:///{folder / 'floor.sqlite3'}")
    writer = engine.execution_options(pbem_write=True)
    with writer.begin() as connection:
        for statement in ("CREATE TABLE game (id INTEGER PRIMARY KEY, turn INTEGER, state TEXT)",
                          "CREATE TABLE log (id INTEGER PRIMARY KEY, game_id INTEGER, move TEXT)",
                          ("CREATE TABLE mail (id INTEGER PRIMARY KEY, game_id INTEGER, "
                           "body TEXT, status TEXT)")):
            connection.exec_driver_sql(statement)
        connection.execute(text("INSERT INTO game (turn, state) VALUES (0, :state)"),
                           [{"state": state_json}] * timeouts)
    body = eml.decode("utf-8", "replace")
    each = max(1, mails // max(timeouts, 1))
    outbox = folder / "floor-mail"
    outbox.mkdir()
    started = time.perf_counter()
    for game_id in range(1, timeouts + 1):
        with writer.begin() as connection:
            connection.execute(text("UPDATE game SET turn = turn + 1, state = :state "
                                    "WHERE id = :id"), {"state": state_json, "id": game_id})
            connection.execute(text("INSERT INTO log (game_id, move) VALUES (:id, 'pass')"),
                               {"id": game_id})
            connection.execute(text("INSERT INTO mail (game_id, body, status) "
                                    "VALUES (:id, :body, 'queued')"),
                               [{"id": game_id, "body": body}] * each)
    with engine.connect() as connection:
        ids = connection.exec_driver_sql("SELECT id FROM mail WHERE status = 'queued'").scalars()
        ids = list(ids)
    for mail_id in ids:
        target = outbox / f"{mail_id:08d}.eml"
        temporary = target.with_suffix(".tmp")
        temporary.write_bytes(eml)
        os.replace(temporary, target)
        with writer.begin() as connection:
            connection.execute(text("UPDATE mail SET status = 'sent' WHERE id = :id"),
                               {"id": mail_id})
    seconds = time.perf_counter() - started
    engine.dispose()
    return seconds


# --- history: the idle run at 10 and 100 times the sent mail ------------------------------------

def add_sent_mail(app, rows: int, first_id: int) -> None:
    """`rows` more sent mails in the outbox, as an older server keeps them."""
    with get_engine(app).begin() as connection:
        for batch in _chunks(sent_mail(first_id + k, None, None, 5) for k in range(rows)):
            connection.execute(insert(OutboxMessage.__table__), batch)


def partial_indexes(app) -> set[str]:
    with get_engine(app).connect() as connection:
        return {name for (name,) in connection.exec_driver_sql(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND sql LIKE '% WHERE %'")}


def full_scans(plan: list[str], partial: set[str]) -> list[str]:
    """The steps of a plan that read a whole table or a whole index, other than a partial
    index (which holds only the rows in flight) or the scheduler's one-row table."""
    return [line for line in plan if line.startswith("SCAN ")
            and line.split()[1] != "jobstate" and line.split()[-1] not in partial]


def growth(app, sent_now: int, runs: int) -> list[dict]:
    """Idle runs (after ANALYZE) with the outbox at 1, 10 and 100 times `sent_now` sent mails:
    the median time and the statements whose plan reads a whole table."""
    levels = []
    with reading(app) as session:
        last_id = session.exec(select(func.max(OutboxMessage.id))).one() or 0
        have = session.exec(select(func.count()).select_from(OutboxMessage)
                            .where(OutboxMessage.status == SENT)).one()
    partial = partial_indexes(app)
    for factor in (1, 10, 100):
        wanted = sent_now * factor
        if wanted > have:
            add_sent_mail(app, wanted - have, last_id + 1)
            last_id += wanted - have
            have = wanted
        with get_engine(app).connect() as connection:
            connection.connection.dbapi_connection.execute("ANALYZE")
        get_engine(app).dispose()
        samples, seen = quiet_runs(app, runs, NOW + timedelta(minutes=1))
        parameters = found_parameters(seen)
        scans = {}
        for statement, values in parameters.items():
            if statement.split()[0].upper() in ("SELECT", "UPDATE", "DELETE"):
                found = full_scans(query_plan(app, statement, values), partial)
                if found:
                    scans[_short(statement, 110)] = found
        levels.append({"factor": factor, "sent_mails": have,
                       "idle_median_ms": statistics.median(samples) * 1000,
                       "statements": len(parameters), "full_scans": scans})
    return levels


CREATION_PROBE_FILES = 500
SLOW_CREATION_MICROSECONDS = 40  # a quiet filesystem here: some 10 µs a file


def file_creation_microseconds(folder: Path) -> float:
    """Microseconds to create an empty file in a new folder under `folder` (the files stay:
    deleting them would itself slow what follows).

    On ext4 without a journal (this machine's root), the inode allocator passes over every
    inode deleted in the last 60 s, or 300 s while its inode table block is not yet written
    back (`recently_deleted` in fs/ext4/ialloc.c), looking at each for each new file. Right
    after mass deletions (a test run, a previous benchmark's clean-up), creating a file costs
    five to ten times as much, and (b) creates one for each mail: at 46cf0d9, (b) took 4.47,
    4.64 and 4.67 s at some 10 µs a file, 4.86 and 4.89 s at 61 and 118 µs a file (and (b1)
    8.09 and 8.31 s against 8.56 and 8.92 s). A figure says which it was taken in."""
    probe = folder / "file-creation-probe"
    probe.mkdir()
    started = time.perf_counter()
    for number in range(CREATION_PROBE_FILES):
        os.close(os.open(probe / f"{number}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    return (time.perf_counter() - started) / CREATION_PROBE_FILES * 1e6


def load_average() -> str:
    """The machine's load average (1, 5 and 15 minutes), to read a figure by."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="10,000 games")
    parser.add_argument("--runs", type=int, default=20, help="runs with nothing due (a)")
    parser.add_argument("--history", type=int, default=0, metavar="K",
                        help="sent mails per game already in the outbox (default 0)")
    parser.add_argument("--profile", action="store_true",
                        help="profile (b) even when it meets the target")
    parser.add_argument("--top", type=int, default=25, help="profile lines to print")
    parser.add_argument("--no-growth", action="store_true",
                        help="skip (g), the idle runs at 10 and 100 times the sent mail")
    parser.add_argument("--no-picture", action="store_true",
                        help="mail without the board picture, to see what the rest costs")
    parser.add_argument("--senders", type=int, metavar="N",
                        help="[mail] senders for (b) (default: the product's default; with more "
                             "than 1, (b) is also run with 1)")
    parser.add_argument("--no-save", action="store_true",
                        help="do not write the figures to bench/results/")
    args = parser.parse_args(argv)
    games = 10_000 if args.quick else args.games
    global PICTURES, SENDERS
    PICTURES, SENDERS = not args.no_picture, args.senders
    if games < DUE_SHARE:
        parser.error(f"--games must be at least {DUE_SHARE}")

    load_before = load_average()
    print(f"load average (1, 5, 15 minutes; 2 cores shared): {load_before}; board pictures "
          f"{'on' if PICTURES else 'off'}")
    print(f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
          f"SQLAlchemy {sqlalchemy.__version__}, {platform.machine()}")
    with tempfile.TemporaryDirectory(prefix="pbem-scheduler-bench-") as tmp:
        folder = Path(tmp)
        app = make_app(folder / "instance")
        due_games, setup_seconds = fill(app, games, args.history)
        database = Path(app.config["DATABASE_URL"].split("///", 1)[1])
        print(f"setup: {games:,} games, {3 * games:,} seats, {2 * games:,} timers, "
              f"{args.history * games:,} outbox rows in {setup_seconds:.1f} s "
              f"(database {database.stat().st_size / 2 ** 20:.0f} MiB)")
        print(f"due at NOW: {due_games:,} timeouts ({100 / DUE_SHARE:g}% of the games)")

        samples, quiet_statements = quiet_runs(app, args.runs, NOW - timedelta(minutes=10))
        print()
        print_quiet("(a) run_jobs with nothing due", samples, quiet_statements)
        idle_ms = statistics.median(samples) * 1000

        copy = copy_database(app, folder / "copy")  # for the profile, if it is wanted
        senders = open_app(folder / "instance").config["MAIL_SENDERS"]
        # (b) with one sender too, on a copy, when the setting has more.
        single = copy_database(app, folder / "single") if senders > 1 else None
        with get_engine(app).connect() as connection:  # the burst's process reads it whole
            connection.connection.dbapi_connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        creation = file_creation_microseconds(folder)
        print(f"\nfile creation before (b): {creation:.1f} µs a file"
              + (" (SLOW: files were deleted by the thousand in the last minutes; (b) creates "
                 "one a mail and is slower for it: run this again in 5 minutes)"
                 if creation > SLOW_CREATION_MICROSECONDS else " (a quiet filesystem)"))
        burst = burst_in_new_process(folder / "instance", due_games, SENDERS)
        seconds, counts, phases = burst["seconds"], burst["counts"], burst["phases"]
        due_statements = burst["statements"]
        cpu_seconds = counts.pop("cpu_seconds")
        helpers_cpu = counts.pop("children_cpu_seconds")
        load_burst = load_average()
        print(f"\nstart-up of the scheduler process that runs (b), not counted in it (the app "
              f"made, its helper senders started, the mail templates compiled and the "
              f"pictures' bare boards drawn, the database connected, the helpers ready): "
              f"{burst['startup']:.2f} s, CPU {burst['startup_cpu']:.2f} s, helpers' CPU "
              f"{burst['startup_helpers_cpu']:.2f} s; with (b): "
              f"{burst['startup'] + seconds:.2f} s")
        print_burst(f"(b) run_jobs with {due_games:,} timeouts due, [mail] senders = {senders}",
                    due_games, seconds, cpu_seconds, helpers_cpu, counts, phases, load_burst)
        single_figures = {}
        if single is not None:
            get_engine(single).dispose()
            alone = burst_in_new_process(folder / "single", due_games, 1)
            alone_counts = alone["counts"]
            alone_cpu = alone_counts.pop("cpu_seconds")
            alone_counts.pop("children_cpu_seconds")
            print_burst("(b1) the same with [mail] senders = 1 (on a copy of the database)",
                        due_games, alone["seconds"], alone_cpu, 0.0, alone_counts,
                        alone["phases"], load_average())
            single_figures = {"burst_single_seconds": alone["seconds"],
                              "burst_single_cpu_seconds": alone_cpu,
                              "single_phases": {label.strip(): alone["phases"].seconds[label]
                                                for _, _, label in PHASES
                                                if alone["phases"].calls.get(label)}}
        with reading(app) as session:
            left = session.exec(select(func.count()).select_from(Timer)
                                .where(Timer.status != DONE, Timer.due_at <= NOW)).one()
        assert left == 0, f"{left} due timers are not done"

        print("\n(c) query plans (EXPLAIN QUERY PLAN) of the statements of the runs:")
        found = plans(app, quiet_statements + due_statements)
        for label, statement, plan in found:
            if label:
                print(f"  {label}:\n    {_short(statement, 400)}")
                for line in plan:
                    print(f"      {line}")
        quiet_distinct = {s for s, _ in quiet_statements}
        executed = Counter(s for s, _ in quiet_statements + due_statements)
        spent = Counter(quiet_statements.seconds) + Counter(due_statements.seconds)
        wide = sorted(((spent[s] / executed[s] * 1000, s, p) for _, s, p in found
                       if wide_steps(p)), reverse=True)
        print(f"  {len(found)} distinct statements; {len(wide)} may visit many rows (a table "
              "scan, or an index on a status column alone: cheap while few rows have that "
              "status); * = in every run, even with nothing due; time = mean per execution:")
        for milliseconds, statement, plan in wide:
            mark = "*" if statement in quiet_distinct else " "
            print(f"  {mark} {milliseconds:8.3f} ms  {_short(statement, 110)}")
            print("                 " + "\n                 ".join(plan))

        # The plans above are what a database gets without table statistics (nothing in pbem
        # runs ANALYZE). With them, after (b): the outbox now holds the mails of (b), all sent.
        with get_engine(app).connect() as connection:
            connection.connection.dbapi_connection.execute("ANALYZE")
        get_engine(app).dispose()  # statistics are read when a connection opens
        samples, seen = quiet_runs(app, args.runs, NOW)
        print()
        print_quiet(f"(a2) nothing due, after (b) and ANALYZE (table statistics; the outbox "
                    f"now holds {counts['mail_sent']:,} sent mails)", samples, seen, app)
        for label, statement, _ in found:
            if label == "due-timer claim":
                # Claims now read the due timers, then update them by id: only a run with
                # something due makes that statement.
                parameters = found_parameters(quiet_statements + due_statements)[statement]
                plan = query_plan(app, statement, parameters)
                print("    due-timer claim now: " + "; ".join(plan))

        target = TARGET_SECONDS * due_games / 1000  # the targets are for 1,000 timeouts
        limit = LIMIT_SECONDS * due_games / 1000
        eml = next(Path(app.config["MAIL_FOLDER"]).glob("*.eml")).read_bytes()
        floor_seconds = floor_run(folder, due_games, counts["mail_sent"], _states()[0][1], eml)
        print(f"\n(f) the floor: the same {due_games:,} write transactions and "
              f"{counts['mail_sent']:,} mails ({len(eml):,} bytes each) written and recorded "
              f"with bare SQL: {floor_seconds:.2f} s; ratio floor/pbem "
              f"{floor_seconds / seconds:.3f}")
        print(f"(b) against its target: {seconds:.2f} s (CPU {cpu_seconds:.2f} s) for "
              f"{due_games:,} timeouts; at most {limit:.2f} s: "
              f"{'ok' if seconds <= limit else 'MISSED'}; target {target:.2f} s: "
              f"{'ok' if seconds <= target else 'MISSED'} (both scaled from 1,000 timeouts)")

        levels = [] if args.no_growth else growth(app, counts["mail_sent"], max(5, args.runs // 2))
        if levels:
            print("\n(g) nothing due, after ANALYZE, as the sent mail grows (x1 is what (b) sent):")
            for level in levels:
                print(f"    x{level['factor']:<4} {level['sent_mails']:>9,} sent mails: idle run "
                      f"median {level['idle_median_ms']:.2f} ms; {level['statements']} distinct "
                      f"statements, {len(level['full_scans'])} reading a whole table")
                for statement, steps in level["full_scans"].items():
                    print(f"           {statement}\n             {'; '.join(steps)}")
        if not args.no_save:
            saved = results_file.save("scheduler_bench", {
                "games": games, "due_timeouts": due_games, "mails": counts["mail_sent"],
                "board_pictures": PICTURES,
                "idle_median_ms": idle_ms,
                "startup_seconds": burst["startup"], "startup_cpu_seconds": burst["startup_cpu"],
                "startup_helpers_cpu_seconds": burst["startup_helpers_cpu"],
                "senders": senders, "burst_seconds": seconds, "burst_cpu_seconds": cpu_seconds,
                "burst_helpers_cpu_seconds": helpers_cpu, **single_figures,
                "load_average_before": load_before, "load_average_after_burst": load_burst,
                "file_creation_microseconds": creation,
                "floor_seconds": floor_seconds, "ratio_floor_over_pbem": floor_seconds / seconds,
                "limit_seconds": limit, "target_seconds": target,
                "phases": {label.strip(): phases.seconds[label] for _, _, label in PHASES
                           if phases.calls.get(label)},
                "growth": levels})
            print(f"figures saved in {saved.relative_to(ROOT)}")

        if args.profile or seconds > target:
            print(f"\n(b) is {'over' if seconds > target else 'within'} the target: "
                  "profile of a run over a fifth of the due games, on a copy of the database")
            print(profile_run(copy, due_games, args.top))
        get_engine(copy).dispose()
        get_engine(app).dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
