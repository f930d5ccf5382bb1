"""Several processes on one database, for real: the app under gunicorn with 4 workers and two
`pbem scheduler` processes, all on one SQLite file, and all on one PostgreSQL database.

- Racing moves: threads post the same turn's move through the JSON API at the same moment; the
  4 workers take them side by side. Exactly one is applied, every other gets a clean 409 saying
  the game has moved on (or that this very move was already recorded).
- Many games time out at once: the two schedulers (each ticking every second) share the work,
  and each reminder, each timeout and each mail happens exactly once: every game's log is its
  one default turn, every mail reaches the SMTP server (aiosmtpd in this process) once.
- A scheduler is killed with SIGKILL in the middle of its timeouts (a trigger holds it inside
  one game's timeout, so that it is caught there however fast the machine): the claims it
  leaves are taken over by the other one once they are older than `[scheduler] claim_seconds`
  (20 s here); it is started again; in the end nothing is lost and nothing happened twice.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from server import Hang, check_timed_out_logs, make_app, new_game, rows
from sqlmodel import select
from test_mail_delivery import SmtpServer, free_port

import engine
from pbem.ground.db import BUSY_TIMEOUT_SECONDS, get_engine, reading, utcnow
from pbem.ground.models import (
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

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parent.parent.parent
SECRET = "processes-secret"
WEB_WORKERS = 4
RACERS = 8
ROUNDS = 5
GAMES = 24
KILL_GAMES = 40
CLAIM_SECONDS = 20  # more than one scheduler run takes here, even on a busy machine
WAIT = 120  # seconds for the schedulers to finish; a hang fails the test instead


def _settings(smtp_port: int) -> dict:
    return {"SECRET_KEY": SECRET, "BASE_URL": "http://127.0.0.1", "MAIL_BACKEND": "smtp",
            "SMTP_HOST": "127.0.0.1", "SMTP_PORT": smtp_port, "SMTP_SECURITY": "none",
            "SCHEDULER_TICK_SECONDS": 1, "SCHEDULER_CLAIM_SECONDS": CLAIM_SECONDS,
            "SCHEDULER_OUTAGE_MINUTES": 100000, "GAMES_REMINDER_HOURS": "24",
            "MAIL_BOARD_PICTURE": False,  # no picture is read here; rendering one is slow
            # A few timeouts to a write transaction: the first ones are seen done while the
            # others are still in hand (a scheduler can be killed in the middle of its work).
            "SCHEDULER_TIMERS_PER_TRANSACTION": 2}


class Cluster:
    """gunicorn and scheduler processes on one instance and database, as in real use: each
    gets its settings from PBEM_* environment variables only."""

    def __init__(self, app, smtp: SmtpServer, logs: Path):
        self.app, self.smtp, self.logs = app, smtp, logs
        self.port = free_port()
        self.processes: dict[str, subprocess.Popen] = {}
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PBEM_", "FLASK_"))}
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        settings = {**_settings(smtp.port), "DATABASE_URL": app.config["DATABASE_URL"],
                    "INSTANCE_PATH": app.config["INSTANCE_PATH"]}
        env.update({f"PBEM_{k}": str(v) for k, v in settings.items()})
        self.env = env

    def start(self, name: str, command: list[str]) -> None:
        log = (self.logs / f"{name}.log").open("ab")
        self.processes[name] = subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=log,
                                                stderr=subprocess.STDOUT)
        log.close()

    def start_web(self) -> None:
        self.start("web", [sys.executable, "-m", "gunicorn", "-w", str(WEB_WORKERS),
                           "-b", f"127.0.0.1:{self.port}", "--graceful-timeout", "5",
                           "wsgi:app"])
        deadline = time.monotonic() + WAIT
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=30).close()
                return
            except (urllib.error.URLError, ConnectionError, OSError):
                assert self.processes["web"].poll() is None, self.log("web")
                assert time.monotonic() < deadline, "gunicorn did not start in time"
                time.sleep(0.2)

    def start_scheduler(self, name: str) -> None:
        self.start(name, [sys.executable, "-m", "pbem", "scheduler"])

    def kill(self, name: str) -> None:
        process = self.processes.pop(name)
        process.send_signal(signal.SIGKILL)
        process.wait(WAIT)

    def schedulers(self) -> list[str]:
        return [name for name in self.processes if name.startswith("scheduler")]

    @contextmanager
    def schedulers_held(self):
        """The schedulers stopped (SIGSTOP) outside any transaction while the block runs (the
        games it makes are all there when they next look), and continued after it."""
        names = self.schedulers()
        deadline = time.monotonic() + WAIT
        while True:
            for name in names:
                os.kill(self.processes[name].pid, signal.SIGSTOP)
            if not self.writing():
                break
            self.resume(names)  # stopped inside a transaction: let it finish, and try again
            assert time.monotonic() < deadline, "the schedulers were never out of a transaction"
            time.sleep(0.02)
        try:
            yield
        finally:
            self.resume(names)

    def resume(self, names: list[str]) -> None:
        for name in names:
            os.kill(self.processes[name].pid, signal.SIGCONT)

    def writing(self) -> bool:
        """Whether a process of the cluster is inside a transaction on the database now."""
        engine = get_engine(self.app)
        with engine.connect() as connection:
            if connection.dialect.name == "sqlite":  # holding the write lock?
                raw = connection.connection.dbapi_connection
                raw.execute("PRAGMA busy_timeout = 0")
                try:
                    raw.execute("BEGIN IMMEDIATE")
                except sqlite3.OperationalError:
                    return True
                finally:
                    raw.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_SECONDS * 1000}")
                raw.execute("ROLLBACK")
                return False
            return bool(connection.exec_driver_sql(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid() AND state <> 'idle'").scalar())

    def stop(self) -> None:
        for process in self.processes.values():
            process.terminate()
        for process in self.processes.values():
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")[-3000:]

    def check_alive(self) -> None:
        for name, process in self.processes.items():
            assert process.poll() is None, f"{name} stopped: {self.log(name)}"

    def web_workers(self) -> int:
        pid = self.processes["web"].pid
        children = Path(f"/proc/{pid}/task/{pid}/children")
        return len(children.read_text().split()) if children.exists() else -1


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, database):
    folder = tmp_path_factory.mktemp("cluster")
    smtp = SmtpServer()
    smtp.start()
    app = make_app(folder / "instance", **_settings(smtp.port))
    cluster = Cluster(app, smtp, folder)
    try:
        cluster.start_web()
        cluster.start_scheduler("scheduler-1")
        cluster.start_scheduler("scheduler-2")
        yield cluster
    finally:
        cluster.stop()
        smtp.stop()
    for name in ("web", "scheduler-1", "scheduler-2"):
        log = cluster.log(name)
        assert "Traceback" not in log and "locked" not in log, f"{name}: {log}"


# --- racing moves through gunicorn --------------------------------------------------------------

def _post(port: int, token: str, move: str, turn: int) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/seat/{token}/move", method="POST",
        data=json.dumps({"move": move, "turn": turn}).encode(),
        headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.load(error)


def _state(app, game_id: int):
    with reading(app) as session:
        game = session.get(Game, game_id)
        records = session.exec(select(MoveRecord).where(MoveRecord.game_id == game_id)
                               .order_by(MoveRecord.number)).all()
    return game, engine.from_json(game.state_json), records


def test_racing_moves_on_one_turn_through_four_workers_apply_exactly_one(cluster):
    # gunicorn forks its workers one after another: the first may answer before the last is up.
    deadline = time.monotonic() + WAIT
    while cluster.web_workers() != WEB_WORKERS:
        assert time.monotonic() < deadline, f"{cluster.web_workers()} gunicorn workers"
        time.sleep(0.1)
    created, tokens = new_game(cluster.app, 3, seed="processes-race")
    game_id = created.game_id
    for _ in range(ROUNDS):
        game, state, _records = _state(cluster.app, game_id)
        legal = [str(m) for m in engine.legal_moves(state)]
        moves = [legal[0] if i % 2 == 0 else legal[(i // 2) % len(legal)]
                 for i in range(RACERS)]
        barrier = threading.Barrier(RACERS)
        answers: list = [None] * RACERS

        def race(i: int, barrier=barrier, answers=answers, state=state, moves=moves,
                 game=game) -> None:
            barrier.wait(30)
            answers[i] = _post(cluster.port, tokens[state.current], moves[i], game.turn)

        threads = [threading.Thread(target=race, args=(i,)) for i in range(RACERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(90)
        assert all(answers), answers
        winners = [i for i, (status, _) in enumerate(answers) if status == 200]
        assert len(winners) == 1, answers
        winning = moves[winners[0]]
        for i, (status, body) in enumerate(answers):
            if i != winners[0]:
                assert status == 409, (status, body)
                expected = "was already recorded" if moves[i] == winning \
                    else "the game has moved on"
                assert expected in body["error"], body
        after, after_state, after_records = _state(cluster.app, game_id)
        assert after.turn == game.turn + 1
        assert [r.number for r in after_records] == list(range(after.turn))
        assert after_records[-1].notation == winning
        assert after_state == engine.apply_move(state, engine.parse_move(
            winning, engine.default_board()))
    cluster.check_alive()


# --- many games timing out at once ------------------------------------------------------------

def _games_due_at(app, count: int, due, prefix: str) -> list[int]:
    """`count` games whose first deadline is `due` (their reminder is due at once)."""
    t0 = due - timedelta(hours=72)
    return [new_game(app, 3, seed=f"{prefix}-{i}", now=t0, title=f"{prefix} {i}")[0].game_id
            for i in range(count)]


def _wait_until_settled(cluster, games: list[int]) -> None:
    """Until every first-turn timer of `games` is done and their mail is sent."""
    deadline = time.monotonic() + WAIT
    while True:
        timers = rows(cluster.app, Timer, Timer.game_id.in_(games), Timer.clock_version == 1)
        mail = rows(cluster.app, OutboxMessage, OutboxMessage.game_id.in_(games))
        if timers and all(t.status == DONE for t in timers) and \
                all(m.status == SENT for m in mail):
            return
        cluster.check_alive()
        assert time.monotonic() < deadline, \
            f"not settled in time: {Counter(t.status for t in timers)}, " \
            f"{Counter(m.status for m in mail)}"
        time.sleep(0.2)


def _check_each_once(cluster, games: list[int], interrupted: int = 0) -> None:
    """Each game: its reminder sent once, its timeout played once (the default turn, as the
    log's replay shows), every mail of it handed to the SMTP server exactly once.

    Up to `interrupted` timeouts may be marked obsolete instead of timed out: a scheduler
    killed after playing a timeout but before marking it done leaves it claimed; whoever takes
    it over finds the turn played already, and so plays nothing."""
    seats = {s.id: s for s in rows(cluster.app, Seat, Seat.game_id.in_(games))}
    turns = check_timed_out_logs(cluster.app, games)
    assert all(len(turns[game_id]) == 1 for game_id in games), "one default turn each"
    assert all(g.clock_version == 2 for g in rows(cluster.app, Game, Game.id.in_(games)))
    timers = rows(cluster.app, Timer, Timer.game_id.in_(games), Timer.clock_version == 1)
    outcomes = Counter((t.kind, t.outcome) for t in timers)
    assert outcomes[REMINDER, "sent"] == len(games)
    assert outcomes[TIMEOUT, "obsolete"] <= interrupted
    assert outcomes[TIMEOUT, "timed out"] + outcomes[TIMEOUT, "obsolete"] == len(games)
    assert sum(outcomes.values()) == 2 * len(games)
    later = rows(cluster.app, Timer, Timer.game_id.in_(games), Timer.clock_version == 2)
    assert all(t.status == PENDING for t in later)

    mail = rows(cluster.app, OutboxMessage, OutboxMessage.game_id.in_(games))
    kinds = Counter((m.game_id, seats[m.seat_id].number, m.kind) for m in mail)
    for game_id in games:
        start = turns[game_id][0][0].seat
        assert kinds[(game_id, start, "reminder")] == 1
        assert kinds[(game_id, start, "played_for_you")] == 1
    assert all(m.status == SENT and m.attempts == 1 for m in mail)
    received = Counter(r["message"]["Message-ID"] for r in cluster.smtp.received)
    for row in mail:
        assert received[f"<{row.message_id}>" if not row.message_id.startswith("<")
                        else row.message_id] == 1, f"mail {row.id} ({row.kind}) not once"


def test_many_games_timing_out_at_once_each_time_out_remind_and_mail_once(cluster):
    with cluster.schedulers_held():  # however long making them takes, all are due at once
        games = _games_due_at(cluster.app, GAMES, utcnow(), "at-once")
    _wait_until_settled(cluster, games)
    _check_each_once(cluster, games)


HUNG = 6  # the game whose timeout hangs: the timeouts of the games before it are done first


def test_a_scheduler_killed_mid_work_loses_nothing_and_repeats_nothing(cluster):
    with cluster.schedulers_held():
        games = _games_due_at(cluster.app, KILL_GAMES, utcnow(), "killed")
        hang = Hang(cluster.app, games[HUNG])
    # One scheduler claims all the timers (reminders first, then the timeouts in the games'
    # order) and works through them, two to a transaction, up to the hung game's timeout:
    # there it stays, its claim on the rest in hand, until it is killed.
    try:
        deadline = time.monotonic() + WAIT
        while True:
            timeouts = {t.game_id: t for t in rows(cluster.app, Timer, Timer.game_id.in_(games),
                                                   Timer.kind == TIMEOUT,
                                                   Timer.clock_version == 1)}
            done = sum(timeouts[g].status == DONE for g in games[:HUNG])
            hung = timeouts[games[HUNG]]
            if done >= HUNG - 1 and hung.status == "claimed":
                break
            cluster.check_alive()
            assert time.monotonic() < deadline, f"the timeouts did not start: {done} done"
            time.sleep(0.05)
        assert all(timeouts[g].status != DONE for g in games[HUNG:]), "a timeout passed the hang"
        pids = {str(cluster.processes[name].pid): name for name in cluster.schedulers()}
        victim = pids[hung.claim.split("@", 1)[0]]
        cluster.kill(victim)
    finally:
        hang.release()

    cluster.start_scheduler(victim)  # started again, as systemd would
    _wait_until_settled(cluster, games)
    _check_each_once(cluster, games, interrupted=1)
