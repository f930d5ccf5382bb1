"""Scheduler processes racing for the same due timers: real processes on one database (an
SQLite file, and a PostgreSQL database).

Several processes (new ones, tests/server.py fresh_processes, each with its own app on the
shared instance) call `run_jobs(app, now)` with the same `now` at the same moment (a Barrier
before each call). Every piece of due work is claimed atomically, so whatever the interleaving:

- each due reminder is mailed exactly once (one outbox row of kind "reminder" per reminder
  timer, none twice), each timeout plays the seat's default turn exactly once (its moves logged
  once, with actor "timeout", and the turn handed on once), and each game's stored state is the
  replay of its move log from the seed;
- every timer that was due is done and none is left claimed; no process raises, sees
  "database is locked", or logs that a timeout "gave way" (nobody else moves here);
- although every process also delivers mail, each outbox row is handed to the mail backend
  once: it ends `sent` after one attempt, and the backends' own records (one file per process)
  name it once.

Games are made with `new_game(..., now=t0)`: a 72-hour deadline, so at t0 + 49 h each game has
its one reminder (24 h before) due and at t0 + 73 h its timeout. The jumps in `now` are not
outages (SCHEDULER_OUTAGE_MINUTES is huge). Two processes race with the production claim sizes
(the first claim takes every due timer, the others race for the mail), four with claims of a
few rows (each process handles a share; each holds its first claim of timers and of mail in a
run until every process has tried its own, so that on a loaded machine the others, woken later
from the barrier, still find work to claim). A longer run has four processes loop over many
successive `now`s with short deadlines (reminders, timeouts, new turns, their reminders...); it
must leave the database as one scheduler doing the same runs alone leaves a copy of it.

Several new processes start slowly, so a module-wide pool of them takes the tasks.
"""

from __future__ import annotations

import logging
import os
import queue
import time
import traceback
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from server import (
    assert_intact,
    check_timed_out_logs,
    database_url,
    default_turn,
    fresh_processes,
    make_app,
    new_game,
    rows,
)
from sqlmodel import select

from pbem.games import rules_for
from pbem.ground.db import get_engine, reading, utcnow
from pbem.ground.models import (
    CLAIMED,
    DONE,
    PENDING,
    REMINDER,
    SENT,
    TIMEOUT,
    Game,
    MoveRecord,
    OutboxMessage,
    Seat,
    Timer,
)
from pbem.scheduler import jobs, outbox
from pbem.scheduler.backends import LocalBackend
from pbem.scheduler.jobs import run_jobs

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

SECRET = "scheduler-race-secret"
WORKERS = 4
GAMES = 40
WAIT = 90  # seconds; a hung scheduler fails the test instead of hanging it
# No board pictures in the mail: rendering them is no part of the race, and only slow.
BASE = {"SCHEDULER_OUTAGE_MINUTES": 100000, "MAIL_BACKEND": "local", "MAIL_BOARD_PICTURE": False}
SINGLE = {**BASE, "GAMES_REMINDER_HOURS": "24"}  # one reminder per turn: 24 h before
# The long run: 12-hour turns with reminders 6 and 3 hours before, scheduler runs every 3 hours
# (each timer falls on a run of its own), 5 turns a game: no seat misses 3 deadlines in a row,
# so none becomes absent (an absent seat's timeout is due at once, and several processes may
# then play it in the same run that wrote it, which one process leaves for its next run).
LOOP = {**BASE, "GAMES_MOVE_DEADLINE_HOURS": 12, "GAMES_REMINDER_HOURS": "6,3",
        "GAMES_ABSENT_AFTER_TIMEOUTS": 3}
LOOP_GAMES = 8
LOOP_STEPS = 20
STEP = timedelta(hours=3)
PRODUCTION_BATCHES = (jobs.BATCH, outbox.BATCH)
SMALL_BATCHES = (3, 5)  # timers, mails per claim


# --- the scheduler processes --------------------------------------------------------------------

KINDS = ("timers", "mail")


class Hold:
    """Holds this process's first claim of timers, and of mail, in each run (when `on`) until
    every process of the race has tried its first claim of that kind in the run (`tried`,
    counts shared by the processes): whoever comes first, the others find the rest of the work
    there, however late a loaded machine wakes them."""

    def __init__(self):
        self.on, self.parties, self.step, self.tried = False, 0, 0, None
        self.held: set[str] = set()
        self.counted: set[str] = set()

    def new_run(self, step: int) -> None:
        self.step = step
        self.held.clear()
        self.counted.clear()

    def _slot(self, kind: str) -> int:
        return self.step * len(KINDS) + KINDS.index(kind)

    def tried_claim(self, kind: str) -> None:
        if kind not in self.counted:
            self.counted.add(kind)
            with self.tried.get_lock():
                self.tried[self._slot(kind)] += 1

    def first(self, kind: str) -> None:
        if self.on and kind not in self.held:
            self.held.add(kind)
            deadline = time.monotonic() + WAIT
            while self.tried[self._slot(kind)] < self.parties:
                assert time.monotonic() < deadline, f"the others never tried to claim {kind}"
                time.sleep(0.005)


HOLD = Hold()
_CLAIM_TIMERS = jobs._claim
_CLAIM_MAIL = outbox._claim


def _claim_and_hold(now):
    claim, ids = _CLAIM_TIMERS(now)
    HOLD.tried_claim("timers")
    if ids:
        HOLD.first("timers")
    return claim, ids


def _claim_mail(*args, **kwargs):
    claimed = _CLAIM_MAIL(*args, **kwargs)
    HOLD.tried_claim("mail")
    return claimed


class RecordingBackend(LocalBackend):
    """The local backend, also noting in this process's own file each row it was handed."""

    def __init__(self, folder: str, record: Path):
        super().__init__(folder)
        self.record = record

    def send(self, messages):
        for row, message in messages:
            HOLD.first("mail")
            with self.record.open("a") as f:
                f.write(f"{row.id}\n")
            yield from super().send([(row, message)])


class Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(f"{record.levelname}: {record.getMessage()}")


def _scheduler(index: int, barriers: dict, tried, tasks, results) -> None:
    """One scheduler process: for each task, its own app on the task's instance, then one
    `run_jobs` per `now`, each started together with the other processes of the task.

    A task may make the claims smaller than in production (timers, mails per claim), so that
    the processes take turns claiming and each handles a share of the work, and may hold each
    process's first claims of a run (`Hold`)."""
    jobs._claim = _claim_and_hold
    outbox._claim = _claim_mail
    HOLD.tried = tried
    while True:
        task = tasks.get()
        if task is None:
            break
        instance, config, nows, parties, batches, hold = task
        jobs.BATCH, outbox.BATCH = batches or PRODUCTION_BATCHES
        HOLD.on, HOLD.parties = hold, parties
        barrier = barriers[parties]
        report = {"counts": [], "errors": [], "logs": []}
        try:
            app = make_app(Path(instance), SECRET_KEY=SECRET, **config)
            Path(instance).mkdir(parents=True, exist_ok=True)  # no database file there on PG
            app.extensions["pbem_mail_backend"] = RecordingBackend(
                app.config["MAIL_FOLDER"], Path(instance) / f"handed-{index}.log")
            handler = Collect()
            app.logger.addHandler(handler)
            app.logger.setLevel(logging.INFO)
            with reading(app) as session:  # connect before the race, not during it
                session.exec(select(Game.id)).first()
            for step, now in enumerate(nows):
                barrier.wait(WAIT)
                HOLD.new_run(step)
                report["counts"].append(run_jobs(app, now))
            report["logs"] = handler.lines
            get_engine(app).dispose()
        except BaseException as exc:
            report["errors"].append(f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
            barrier.abort()  # the others stop waiting for this one
        results.put((index, "done", report))
    # Skip the interpreter's slow clean-up (a large share of this test's time on a small
    # machine) once the reports are surely out of the queue.
    results.close()
    results.join_thread()
    os._exit(0)


@pytest.fixture(scope="module")
def schedulers():
    """WORKERS spawned processes, shared by the tests of this module (spawning is the slow
    part). Started without the developer's PBEM_* settings, like the apps of the tests."""
    context = fresh_processes()
    barriers = {n: context.Barrier(n) for n in (2, WORKERS)}
    tried = context.Array("i", len(KINDS) * LOOP_STEPS)  # per run of a task, per kind (Hold)
    results = context.Queue()
    tasks = [context.Queue() for _ in range(WORKERS)]
    with pytest.MonkeyPatch.context() as patch:
        for key in [k for k in os.environ if k.startswith("PBEM_")]:
            patch.delenv(key)
        processes = [context.Process(target=_scheduler, daemon=True,
                                     args=(i, barriers, tried, tasks[i], results))
                     for i in range(WORKERS)]
        for process in processes:
            process.start()
    try:
        yield Pool(tasks, results, tried)
    finally:
        for task in tasks:
            task.put(None)
        for process in processes:
            process.join(WAIT)
            if process.is_alive():
                process.terminate()
                process.join()
        results.close()
        for task in tasks:
            task.close()
    assert all(process.exitcode == 0 for process in processes)


class Pool:
    def __init__(self, tasks, results, tried):
        self.tasks, self.results, self.tried = tasks, results, tried
        self.waiting = (0, 0.0)

    def start(self, instance: Path, config: dict, nows: list, parties: int,
              batches: tuple[int, int] | None = None, hold: bool = False) -> None:
        """Have `parties` processes run the scheduler at each of `nows`, together."""
        assert len(nows) * len(KINDS) <= len(self.tried)
        with self.tried.get_lock():
            self.tried[:] = [0] * len(self.tried)
        config = {**config, "DATABASE_URL": database_url(instance)}  # the test's database
        for i in range(parties):
            self.tasks[i].put((str(instance), config, nows, parties, batches, hold))
        self.waiting = (parties, time.monotonic() + WAIT + 5 * len(nows))

    def reports(self) -> list[dict]:
        """Each process's report, once all are done, after checking that none failed."""
        parties, deadline = self.waiting
        reports: dict[int, dict] = {}
        while len(reports) < parties:
            try:
                index, kind, report = self.results.get(
                    timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"schedulers did not finish in time; got {reports}") \
                    from None
            if kind == "done":
                reports[index] = report
        for index, report in sorted(reports.items()):
            assert not report["errors"], f"scheduler {index} failed: {report['errors']}"
            for line in report["logs"]:
                assert "gave way" not in line and "locked" not in line, line
                assert not line.startswith(("ERROR", "CRITICAL")), line
        return [reports[i] for i in sorted(reports)]

    def run(self, instance: Path, config: dict, nows: list, parties: int,
            batches: tuple[int, int] | None = None, hold: bool = False) -> list[dict]:
        self.start(instance, config, nows, parties, batches, hold)
        reports = self.reports()
        assert all(len(report["counts"]) == len(nows) for report in reports)
        return reports


# --- games, and what the database holds ------------------------------------------------------

def _games(instance: Path, config: dict, count: int, t0):
    app = make_app(instance, SECRET_KEY=SECRET, **config)
    for i in range(count):
        new_game(app, 3, seed=f"scheduler-race-{i}", now=t0, title=f"Race {i}")
    return app


def _check_timers_settled(app, now) -> list[Timer]:
    """No timer is left claimed, and every timer due at `now` is done. (Not so with absent
    seats: the last run writes their timeouts due at once, for the next run.)"""
    assert not any(s.absent for s in rows(app, Seat))
    timers = rows(app, Timer)
    assert not [t for t in timers if t.status == CLAIMED], "a timer is left claimed"
    late = [t for t in timers if t.status == PENDING and t.due_at <= now]
    assert not late, f"due timers left pending: {late}"
    return timers


def _check_delivered_once(app, instance: Path, parties: int) -> list[OutboxMessage]:
    sent = rows(app, OutboxMessage)
    assert sent
    for row in sent:
        assert (row.status, row.attempts, row.claim) == (SENT, 1, None), row
    assert len({r.message_id for r in sent}) == len(sent)
    handed = Counter()
    for i in range(parties):
        path = instance / f"handed-{i}.log"
        if path.exists():
            handed.update(int(line) for line in path.read_text().split())
    assert handed == Counter(r.id for r in sent), "a mail was handed to a backend twice"
    assert len(list(Path(app.config["MAIL_FOLDER"]).glob("*.eml"))) == len(sent)
    assert_intact(app)
    return sent


def _totals(reports: list[dict], step: int) -> Counter:
    total = Counter()
    for report in reports:
        total.update(report["counts"][step])
    return total


def _check_work_was_shared(reports: list[dict]) -> None:
    """With small claims the race is real: several processes handled timers, several sent."""
    def busy(kinds):
        return sum(any(counts[k] for counts in r["counts"] for k in kinds) for r in reports)

    assert busy(["reminders", "timeouts"]) >= 2, "one process handled every timer"
    assert busy(["mail_sent"]) >= 2, "one process sent every mail"


# --- the races -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("parties", "batches"), [(2, None), (WORKERS, SMALL_BATCHES)],
                         ids=["2-processes", "4-processes-small-claims"])
def test_schedulers_started_together_send_each_reminder_and_play_each_timeout_once(
        tmp_path, schedulers, parties, batches):
    instance = tmp_path / "instance"
    t0 = utcnow().replace(microsecond=0)  # mail is queued due at the real time: keep now after
    app = _games(instance, SINGLE, GAMES, t0)
    rules = rules_for("kardinal-koenig")
    before = {g.id: rules.loads(g.state_json) for g in rows(app, Game)}
    seats = {(s.game_id, s.number): s for s in rows(app, Seat)}
    reminder_at, timeout_at = t0 + timedelta(hours=49), t0 + timedelta(hours=73)

    reports = schedulers.run(instance, SINGLE, [reminder_at, timeout_at], parties, batches,
                             hold=bool(batches))
    if batches:
        _check_work_was_shared(reports)

    # What the processes say they did adds up to each due timer once.
    assert _totals(reports, 0)["reminders"] == GAMES and _totals(reports, 0)["timeouts"] == 0
    assert _totals(reports, 1)["timeouts"] == GAMES and _totals(reports, 1)["reminders"] == 0
    assert _totals(reports, 0)["obsolete"] == _totals(reports, 1)["obsolete"] == 0

    timers = _check_timers_settled(app, timeout_at)
    first = [t for t in timers if t.clock_version == 1]
    assert Counter((t.kind, t.status, t.outcome) for t in first) == {
        (REMINDER, DONE, "sent"): GAMES, (TIMEOUT, DONE, "timed out"): GAMES}
    following = [t for t in timers if t.clock_version != 1]
    assert all(t.status == PENDING and t.due_at > timeout_at and t.clock_version == 2
               for t in following)

    turns = check_timed_out_logs(app)
    numbers = {s.id: s.number for s in seats.values()}
    sent = _check_delivered_once(app, instance, parties)
    assert all(r.seat_id is not None for r in sent)  # no admin mail: nobody is absent yet
    mails = Counter((r.game_id, numbers[r.seat_id], r.kind) for r in sent)
    games = {g.id: g for g in rows(app, Game)}
    for game_id, state in before.items():
        mover = rules.to_move(state)
        expected_moves, after = default_turn(rules, state)
        nxt = rules.to_move(after)
        assert [[r.notation for r in turn] for turn in turns[game_id]] == [expected_moves]
        game = games[game_id]
        assert game.turn == len(expected_moves)
        assert game.clock_version == 2  # the turn was handed on once
        assert rules.to_move(rules.loads(game.state_json)) == nxt != mover
        assert [t.seat_id for t in following if t.game_id == game_id] == \
            [seats[game_id, nxt].id] * 2  # its reminder and timeout
        third = ({0, 1, 2} - {mover, nxt}).pop()
        expected = Counter({(game_id, n, "invitation"): 1 for n in range(3)})
        expected.update([(game_id, mover, "reminder"), (game_id, mover, "played_for_you"),
                         (game_id, nxt, "your_turn"), (game_id, third, "moved")])
        assert Counter({k: v for k, v in mails.items() if k[0] == game_id}) == expected
        assert seats[game_id, mover].id in {t.seat_id for t in first if t.game_id == game_id}


def _run_alone(app, nows) -> None:
    for now in nows:
        run_jobs(app, now)


def _summary(app) -> dict:
    """Everything the scheduler decides, without what differs between two databases anyway
    (fresh tokens, message ids, claim ids, real-time stamps)."""
    return {
        "games": [(g.id, g.status, g.turn, g.state_json, g.clock_version, g.deadline_at)
                  for g in rows(app, Game)],
        "seats": [(s.id, s.timeouts_in_row, s.absent) for s in rows(app, Seat)],
        "moves": sorted((m.game_id, m.number, m.seat, m.notation, m.actor, m.lines_json)
                        for m in rows(app, MoveRecord)),
        "timers": sorted((t.game_id, t.seat_id, t.kind, t.due_at, t.clock_version, t.status,
                          t.outcome, t.done_at) for t in rows(app, Timer)),
        "mail": sorted((r.game_id or 0, r.seat_id or 0, r.kind, r.to_addr, r.subject)
                       for r in rows(app, OutboxMessage)),
    }


def test_schedulers_looping_over_many_times_do_what_one_scheduler_does(tmp_path, schedulers):
    instance, alone = tmp_path / "instance", tmp_path / "alone"
    t0 = utcnow().replace(microsecond=0)
    nows = [t0 + STEP * k for k in range(1, LOOP_STEPS + 1)]
    app = _games(instance, LOOP, LOOP_GAMES, t0)
    reference = _games(alone, LOOP, LOOP_GAMES, t0)
    assert _summary(app) == _summary(reference)

    schedulers.start(instance, LOOP, nows, WORKERS, SMALL_BATCHES, hold=True)
    _run_alone(reference, nows)  # meanwhile: the racers mostly wait for each other's writes
    reports = schedulers.reports()
    _check_work_was_shared(reports)
    assert all(len(report["counts"]) == len(nows) for report in reports)

    timers = _check_timers_settled(app, nows[-1])
    sent = _check_delivered_once(app, instance, WORKERS)
    turns = check_timed_out_logs(app)
    assert _summary(app) == _summary(reference)

    # Each reminder timer that fired made one reminder mail, each timeout one turn.
    reminders = Counter(r.seat_id for r in sent if r.kind == "reminder")
    assert reminders == Counter(t.seat_id for t in timers
                                if t.kind == REMINDER and t.outcome == "sent")
    timed_out = [t for t in sorted(timers, key=lambda t: (t.game_id, t.due_at))
                 if t.kind == TIMEOUT and t.outcome == "timed out"]
    numbers = {s.id: s.number for s in rows(app, Seat)}
    for game_id, game_turns in turns.items():
        assert [turn[0].seat for turn in game_turns] == \
            [numbers[t.seat_id] for t in timed_out if t.game_id == game_id]
    totals = Counter()
    for step in range(len(nows)):
        totals.update(_totals(reports, step))
    assert totals["timeouts"] == len(timed_out) == LOOP_GAMES * 5
    assert totals["reminders"] == sum(reminders.values()) == LOOP_GAMES * 10
    assert totals["obsolete"] == 0
