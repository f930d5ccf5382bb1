"""Issue 19's defects that only show with several real processes on one SQLite file: the admin
login limit across gunicorn workers, a mail sender killed mid-batch, the scheduler stopped with
SIGTERM, and the scheduler child of a killed `pbem serve`.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
from server import Hang, database_url, fresh_processes, make_app
from sqlmodel import Session, select
from test_pbem_cli import environment, free_port

from pbem.ground.db import get_engine
from pbem.ground.models import JobState
from pbem.services import stewardship

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parent.parent.parent
PASSWORD = "a long enough password"
# An SQLite timeout held this many counting steps (`Hang`): a few seconds of its CPU.
HELD_STEPS = 20_000_000


def wait_for(check, seconds: float = 30, what: str = "the condition"):
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def answers(url: str) -> bool:
    """Whether the server answers /health at all: 200, or 503 while no scheduler has run
    (these tests start the web server alone)."""
    try:
        return requests.get(url, timeout=10).status_code in (200, 503)
    except requests.RequestException:  # not listening yet
        return False


@contextmanager
def gunicorn(instance: Path, workers: int = 4, **settings: str):
    """`gunicorn -w N wsgi:app` on a free port, as the README runs it; yields its base URL."""
    port = free_port()
    env = environment(instance, PBEM_SECRET_KEY="process-test-secret",
                      **{f"PBEM_{k}": v for k, v in settings.items()})
    process = subprocess.Popen([sys.executable, "-m", "gunicorn", "-w", str(workers), "-b",
                                f"127.0.0.1:{port}", "wsgi:app"], cwd=ROOT, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"

    def up():
        assert process.poll() is None, process.stderr.read().decode()
        return answers(f"{base}/health")

    try:
        wait_for(up, 120, "gunicorn to answer")
        yield base
    finally:
        process.terminate()
        process.wait(30)
        process.stderr.close()


def attempt(base: str, email: str, password: str, address: str) -> int:
    """One login as a browser makes it (the form's CSRF token first), from `address` as the
    proxy in front reports it."""
    with requests.Session() as browser:
        browser.headers["X-Forwarded-For"] = address
        page = browser.get(f"{base}/admin/login", timeout=30).text
        token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        return browser.post(f"{base}/admin/login", timeout=60, allow_redirects=False, data={
            "csrf_token": token, "email": email, "password": password}).status_code


# --- 1: the login limit holds across processes and does not lock out the right admin ----------

def test_the_login_limit_is_shared_by_gunicorn_workers_per_account_and_per_address(tmp_path):
    """Issue 34 changed what an account's limit does: an address that has not failed is still
    checked (the admin gets in while others guess), and an address over its limit is refused
    unchecked, the right password too (a flood must cost no hash)."""
    instance = tmp_path / "instance"
    app = make_app(instance)
    with app.app_context():
        stewardship.create_admin("boss@example.org", PASSWORD)
        stewardship.create_admin("clerk@example.org", PASSWORD)
    with gunicorn(instance, ADMIN_LOGIN_LIMIT="3 per minute", SERVE_TRUSTED_PROXIES="1") as base:
        # Twelve guesses at one account from twelve addresses, eight at a time over 4 workers:
        # each address's first guess is checked...
        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(lambda i: attempt(base, "boss@example.org", f"guess {i}",
                                                    f"203.0.113.{i}"), range(12)))
        assert codes == [401] * 12
        # ... and, the account being over its limit, a second one from any of them is not.
        with ThreadPoolExecutor(8) as pool:
            again = list(pool.map(lambda i: attempt(base, "boss@example.org", f"again {i}",
                                                    f"203.0.113.{i}"), range(12)))
        assert again == [429] * 12
        assert attempt(base, "boss@example.org", PASSWORD, "203.0.113.99") == 303

        # One address (a shared proxy, an office) fails three times on other accounts: it is
        # refused from then on, whatever the account and password...
        shared = "198.51.100.7"
        assert [attempt(base, f"nobody{i}@example.org", "wrong password", shared)
                for i in range(4)] == [401, 401, 401, 429]
        assert attempt(base, "clerk@example.org", PASSWORD, shared) == 429
        # ... while the colleague gets in from any other address, again and again: right
        # passwords do not count.
        assert {attempt(base, "clerk@example.org", PASSWORD, "192.0.2.1")
                for _ in range(5)} == {303}


# --- 2: a sender killed mid-batch loses nothing ---------------------------------------------------

class SlowServer:
    """An aiosmtpd handler taking `pause` seconds per message, recording each Message-ID."""

    def __init__(self, pause: float):
        self.pause = pause
        self.message_ids: list[str] = []

    async def handle_DATA(self, server, session, envelope):
        import asyncio
        from email import message_from_bytes

        await asyncio.sleep(self.pause)
        self.message_ids.append(message_from_bytes(envelope.content)["Message-ID"])
        return "250 2.0.0 Accepted"


def test_a_sender_killed_mid_batch_loses_nothing_and_sends_nothing_recorded_twice(tmp_path):
    from datetime import UTC, datetime, timedelta

    from aiosmtpd.controller import Controller
    from server import new_game
    from sqlmodel import select

    from pbem.ground.db import reading
    from pbem.ground.models import SENDING, SENT, OutboxMessage
    from pbem.scheduler.outbox import deliver_all_due
    from pbem.services.health import STUCK_AFTER

    handler = SlowServer(pause=0.25)
    controller = Controller(handler, hostname="127.0.0.1", port=free_port(), ready_timeout=60)
    controller.start()
    try:
        instance = tmp_path / "instance"
        smtp = {"MAIL_BACKEND": "smtp", "SMTP_HOST": "127.0.0.1",
                "SMTP_PORT": str(controller.port), "SMTP_SECURITY": "none"}
        app = make_app(instance, **smtp)
        for i in range(8):
            new_game(app, 3, f"killed-{i}")
        sender = subprocess.Popen([sys.executable, "-m", "pbem", "send-mail"], cwd=tmp_path,
                                  env=environment(instance, **{f"PBEM_{k}": v
                                                               for k, v in smtp.items()}),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(lambda: len(handler.message_ids) >= 4 or sender.poll() is not None, 60,
                 "four mails to arrive")
        sender.kill()
        sender.wait(10)
        # The mail server answers at once from now on: the slow answers were for the killed
        # sender, to be caught mid-batch; the runs below would only wait for them.
        handler.pause = 0

        def outbox():
            with reading(app) as db:
                return db.exec(select(OutboxMessage).order_by(OutboxMessage.id)).all()

        arrived = set(handler.message_ids)
        recorded = {r.message_id for r in outbox() if r.status == SENT}
        assert recorded <= arrived and len(arrived - recorded) <= 1, "recorded one by one"
        assert 0 < sum(r.status == SENDING for r in outbox()) <= 10, "a few claimed at a time"

        # Nobody retries by hand: the next runs, once the claim is stale, send the rest.
        later = datetime.now(UTC) + STUCK_AFTER + timedelta(seconds=1)
        deliver_all_due(app, later)
        rows = outbox()
        assert {r.status for r in rows} == {SENT}
        assert set(handler.message_ids) == {r.message_id for r in rows}
        for message_id in recorded:  # a retry skipped every mail recorded as sent
            assert handler.message_ids.count(message_id) == 1
        # At most the one in hand when the sender died came twice, with its Message-ID.
        assert len(handler.message_ids) - len(rows) <= 1
    finally:
        controller.stop()


# --- 3: the scheduler stopped with SIGTERM finishes its timer and gives the rest back ---------

def overdue_games(app, count: int) -> list[int]:
    """`count` games whose first deadline passed a day ago: a timeout due for each (due at
    one moment: they are taken in the order made)."""
    from datetime import UTC, datetime, timedelta

    from server import new_game

    long_ago = datetime.now(UTC) - timedelta(hours=72 + 24)
    return [new_game(app, 3, f"overdue-{i}", now=long_ago)[0].game_id for i in range(count)]


def scheduler_left_nothing_half_done(app) -> list:
    """Timers left claimed, mail left sending, games whose timed-out seat is still to move."""
    from sqlmodel import select

    from pbem.games import rules_for
    from pbem.ground.db import reading
    from pbem.ground.models import CLAIMED, SENDING, Game, MoveRecord, OutboxMessage, Seat, Timer

    problems = []
    with reading(app) as db:
        problems += [f"timer {t.id} claimed" for t in
                     db.exec(select(Timer).where(Timer.status == CLAIMED))]
        problems += [f"mail {m.id} sending" for m in
                     db.exec(select(OutboxMessage).where(OutboxMessage.status == SENDING))]
        for game in db.exec(select(Game)):
            rules = rules_for(game.kind)
            timed_out = {r.seat for r in db.exec(select(MoveRecord).where(
                MoveRecord.game_id == game.id, MoveRecord.actor == "timeout"))}
            to_move = rules.to_move(rules.loads(game.state_json))
            if to_move in timed_out:
                problems.append(f"game {game.id}: the timed-out seat {to_move} is still to move")
        assert db.exec(select(Seat)).first() is not None
    return problems


def timeouts_done(app) -> int:
    from sqlmodel import func, select

    from pbem.ground.db import reading
    from pbem.ground.models import DONE, TIMEOUT, Timer

    with reading(app) as db:
        return db.exec(select(func.count()).select_from(Timer).where(
            Timer.status == DONE, Timer.kind == TIMEOUT)).one()


def test_sigterm_lets_the_scheduler_finish_the_turn_in_hand_and_give_back_the_rest(tmp_path):
    instance = tmp_path / "instance"
    # No board pictures: no mail is read here, and rendering them was most of the time.
    app = make_app(instance, MAIL_BOARD_PICTURE=False)
    # More timeouts than one write transaction takes: the first ones are seen done (committed)
    # while the scheduler is still at work on the others, and the stop comes in their middle.
    # The timeout of the game after the second transaction's is held (`Hang`) until the stop
    # is sent, so that the middle cannot pass before the test sees it, however busy the machine.
    per_transaction = 10
    games = 15 * per_transaction
    made = overdue_games(app, games)
    hang = Hang(app, made[2 * per_transaction], steps=HELD_STEPS)
    scheduler = subprocess.Popen([sys.executable, "-m", "pbem", "scheduler"], cwd=tmp_path,
                                 env=environment(instance, PBEM_MAIL_BOARD_PICTURE="false",
                                                 PBEM_SCHEDULER_TIMERS_PER_TRANSACTION=str(
                                                     per_transaction)),
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: timeouts_done(app) >= 1 or scheduler.poll() is not None, 120,
                 "the first timeout")
        scheduler.send_signal(signal.SIGTERM)
        hang.release()
        _out, err = scheduler.communicate(timeout=60)
    finally:
        if scheduler.poll() is None:
            scheduler.kill()
        hang.release()
    assert scheduler.returncode == 0, err
    assert "Scheduler stopped." in err
    assert scheduler_left_nothing_half_done(app) == []
    done = timeouts_done(app)
    assert 1 <= done < games, "stopped in the middle of the batch"

    # The next scheduler run plays the rest at once (nothing waits for a stale claim).
    from pbem.scheduler.jobs import run_jobs

    run_jobs(app)
    assert timeouts_done(app) == games and scheduler_left_nothing_half_done(app) == []


# --- 10: the scheduler beside `pbem serve` ends with it -----------------------------------------

def is_running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def test_killing_serve_stops_its_scheduler_child(tmp_path):
    instance = tmp_path / "instance"
    make_app(instance)
    port = free_port()
    serve = subprocess.Popen([sys.executable, "-m", "pbem", "serve", "--port", str(port)],
                             cwd=tmp_path, env=environment(instance), stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    child = None
    try:
        for line in serve.stdout:
            match = re.search(r"Scheduler running beside it \(process (\d+)\)", line)
            if match:
                child = int(match.group(1))
                break
        assert child and is_running(child)
        wait_for(lambda: answers(f"http://127.0.0.1:{port}/health"), 120, "serve to answer")
        serve.kill()  # SIGKILL: no clean-up code of the parent runs
        serve.wait(60)
        wait_for(lambda: not is_running(child), 120, "the scheduler child to stop")
    finally:
        if serve.poll() is None:
            serve.kill()
        serve.stdout.close()
        if child and is_running(child):
            os.kill(child, signal.SIGKILL)


def test_the_scheduler_stops_cleanly_when_its_parents_pipe_closes(tmp_path):
    """The portable half (where there is no prctl): the child watches a pipe."""
    instance = tmp_path / "instance"
    app = make_app(instance)
    watched, lifeline = os.pipe()
    scheduler = subprocess.Popen([sys.executable, "-m", "pbem", "scheduler", "--parent-pipe",
                                  str(watched)], pass_fds=(watched,), cwd=tmp_path,
                                 env=environment(instance), stderr=subprocess.PIPE, text=True)
    os.close(watched)
    try:
        # Its start and stop are log lines, with their time stamps (issue 29, point 10).
        started = next((line for line in scheduler.stderr if "running the job" in line), "")
        assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\S* INFO \S+: Scheduler: running",
                        started), started
        wait_for(lambda: _job_ran(app), 60, "the scheduler's first run of the job")
        assert scheduler.poll() is None, "it runs while the parent lives"
        os.close(lifeline)
        _, err = scheduler.communicate(timeout=30)
    finally:
        if scheduler.poll() is None:
            scheduler.kill()
    assert scheduler.returncode == 0 and re.search(r"\d\d:\d\d\S* INFO \S+: Scheduler stopped\.",
                                                   err), err


def _job_ran(app) -> bool:
    with Session(get_engine(app)) as session:
        return session.exec(select(JobState)).first() is not None


# --- found on the way: processes migrating one new database together ---------------------------

def _migrate(instance: str, url: str, barrier, results) -> None:
    try:
        barrier.wait(60)
        make_app(Path(instance), SECRET_KEY="x", DATABASE_URL=url)  # migrates: an explicit URL
        results.put("ok")
    except BaseException as exc:
        results.put(f"{type(exc).__name__}: {exc}"[:300])


def test_processes_migrating_one_new_database_together_each_find_it_up_to_date(tmp_path):
    """Alembic commits after each migration on SQLite unless told otherwise: a second process
    then read the version between two migrations and ran the rest again ("table admin
    already exists", seen in the concurrency test). Now the whole upgrade is one IMMEDIATE
    transaction."""
    from pbem.ground import schema

    context = fresh_processes()
    for round_ in range(2):
        instance = tmp_path / f"instance-{round_}"
        # The test's database, empty (a new process would otherwise open SQLite).
        url = database_url(instance, empty=True)
        barrier, results = context.Barrier(6), context.Queue()
        processes = [context.Process(target=_migrate,
                                     args=(str(instance), url, barrier, results))
                     for _ in range(6)]
        for process in processes:
            process.start()
        outcomes = [results.get(timeout=180) for _ in processes]
        for process in processes:
            process.join(30)
        assert outcomes == ["ok"] * 6
        assert schema.problem(make_app(instance, SECRET_KEY="x", DATABASE_URL=url)) is None
