"""Helper sender processes (`[mail] senders`): a scheduler run that finds a backlog delivers it
together with processes it starts. Real processes, a real SMTP server (aiosmtpd) and the local
backend's folder: each mail goes once, the stop promises hold for the helpers too (SIGTERM:
the mail in hand finished, the rest given back; they end with the run's process; a killed
process leaves at most its own claim).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from email import message_from_bytes
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from server import make_app, new_game
from sqlalchemy import insert
from sqlmodel import select
from test_hardening_processes import SlowServer, is_running, wait_for
from test_pbem_cli import environment, free_port

from pbem.ground.db import BUSY_TIMEOUT_SECONDS, get_engine, reading
from pbem.ground.models import QUEUED, SENDING, SENT, OutboxMessage
from pbem.scheduler import outbox, senders
from pbem.scheduler.backends import SmtpBackend
from pbem.scheduler.jobs import run_jobs

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL


def queue_mails(app, count: int, due: datetime, first: int = 0) -> None:
    """`count` plain mails (their text written) queued, due at `due`, numbered from `first`."""
    rows = [{"kind": "notice", "to_addr": f"Player {n} <p{n}@example.org>",
             "subject": f"Mail {n}", "text_body": f"Hello {n}\n", "html_body": f"<p>{n}</p>",
             "message_id": f"<helpers.{n}@pbem.localhost>", "secrets_json": "[]",
             "status": QUEUED, "attempts": 0, "created_at": due, "next_attempt_at": due}
            for n in range(first, first + count)]
    with get_engine(app).begin() as connection:
        connection.execute(insert(OutboxMessage.__table__), rows)


def outbox_rows(app) -> list[OutboxMessage]:
    with reading(app) as db:
        return list(db.exec(select(OutboxMessage).order_by(OutboxMessage.id)))


def smtp_connections(port: int | str) -> int:
    """How many TCP connections to the local `port` its server still has open (established,
    or closed by the other end and not yet by the server)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == int(port) and fields[3] in ("01", "08"):
                count += 1
    return count


def helper_pids(parent: int) -> list[int]:
    """The helper processes `parent` started (multiprocessing's spawned children; not its
    resource tracker)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            command = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == parent and b"spawn_main" in command and fields[0] not in "ZX":
            found.append(int(stat.parent.name))
    return found


@pytest.fixture
def smtp_server():
    handler = HeldServer(pause=0.02, first=0, ready=None)  # holds nothing unless told
    controller = Controller(handler, hostname="127.0.0.1", port=free_port(), ready_timeout=60)
    controller.start()
    try:
        yield handler, {"MAIL_BACKEND": "smtp", "SMTP_HOST": "127.0.0.1",
                        "SMTP_PORT": str(controller.port), "SMTP_SECURITY": "none"}
    finally:
        controller.stop()


def _all_handed_done(helpers) -> bool:
    """Whether each helper said it delivered every claim handed to it (it says so once it
    tried to record the claim's deliveries)."""
    pool = helpers.pool
    for helper in pool.helpers:
        while helper.connection.poll():
            pool._heard(helper, helper.connection.recv())
    return all(helper.handed == 0 for helper in pool.helpers)


def test_helpers_start_only_for_a_backlog_with_more_than_one_sender_and_the_apps_backend(
        tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(senders.multiprocessing, "get_context",
                        lambda method: started.append(method) or pytest.fail("started"))
    now = datetime.now(UTC)
    app = make_app(tmp_path / "one", MAIL_SENDERS=1)
    senders.Helpers(app, now).expect(senders.HELP_FROM)  # one sender: this process alone
    app = make_app(tmp_path / "two", MAIL_SENDERS=2)
    senders.Helpers(app, now).expect(senders.HELP_FROM - 1)  # not a backlog
    app.extensions["pbem_mail_backend"] = object()  # a backend of the test's own
    senders.Helpers(app, now).expect(senders.HELP_FROM)
    assert started == []


def test_helpers_deliver_a_backlog_to_the_local_folder_each_mail_once(tmp_path):
    app = make_app(tmp_path / "instance", MAIL_SENDERS=3)
    now = datetime.now(UTC)
    queue_mails(app, 60, now - timedelta(minutes=1))
    helpers = senders.Helpers(app, now)
    helpers.start()
    assert len(helpers.processes) == 2
    processes = helpers.processes
    counts = helpers.finish()  # this process delivers nothing: the helpers deliver it all
    assert counts == {"sent": 60, "retry": 0, "failed": 0, "unknown": 0}
    assert not any(process.is_alive() for process in processes)
    rows = outbox_rows(app)
    assert {row.status for row in rows} == {SENT}
    files = sorted(Path(app.config["MAIL_FOLDER"]).glob("*.eml"))
    assert [f.name for f in files] == [f"{row.id:08d}.eml" for row in rows]
    assert sorted(message_from_bytes(f.read_bytes())["Message-ID"] for f in files) == \
        sorted(row.message_id for row in rows)


def test_a_pool_keeps_its_helpers_between_runs_and_ends_them_when_closed(tmp_path):
    app = make_app(tmp_path / "instance", MAIL_SENDERS=2)
    pool = senders.HelperPool(app)
    pool.start()
    try:
        assert pool.wait_ready(120), "the helper made its app and warmed up"
        [helper] = pool.processes
        now = datetime.now(UTC)
        for run in range(2):
            queue_mails(app, 30, now - timedelta(minutes=1), first=100 * run)
            helpers = senders.Helpers(app, now, pool)
            helpers.start()
            assert helpers.finish() == {"sent": 30, "retry": 0, "failed": 0, "unknown": 0}
            assert pool.processes == [helper] and helper.is_alive(), \
                "the same helper delivered, and waits for the next run"
    finally:
        pool.close()
    assert not helper.is_alive() and pool.processes == []
    rows = outbox_rows(app)
    assert len(rows) == 60 and {row.status for row in rows} == {SENT}
    assert len(list(Path(app.config["MAIL_FOLDER"]).glob("*.eml"))) == 60


def test_a_pool_replaces_a_helper_that_has_ended(tmp_path):
    app = make_app(tmp_path / "instance", MAIL_SENDERS=2)
    pool = senders.HelperPool(app)
    pool.start()
    try:
        [first] = pool.processes
        first.kill()
        first.join(WAIT)
        now = datetime.now(UTC)
        queue_mails(app, 20, now - timedelta(minutes=1))
        helpers = senders.Helpers(app, now, pool)
        helpers.start()
        assert helpers.finish() == {"sent": 20, "retry": 0, "failed": 0, "unknown": 0}
        [second] = pool.processes
        assert second.pid != first.pid and second.is_alive()
    finally:
        pool.close()


def test_the_scheduler_starts_its_helpers_with_it_and_a_sigterm_ends_them(tmp_path):
    instance = tmp_path / "instance"
    make_app(instance)
    scheduler = subprocess.Popen([sys.executable, "-m", "pbem", "scheduler"], cwd=tmp_path,
                                 env=environment(instance, PBEM_MAIL_SENDERS="3"),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        helpers = wait_for(lambda: len(helper_pids(scheduler.pid)) == 2
                           and helper_pids(scheduler.pid), 120,
                           "the scheduler's two helpers, before any mail is due")
        wait_for(lambda: "Scheduler: running" in (scheduler.stderr.readline() or ""), 120,
                 "the scheduler to run")
        scheduler.send_signal(signal.SIGTERM)
        _, err = scheduler.communicate(timeout=60)
    finally:
        if scheduler.poll() is None:
            scheduler.kill()
    assert scheduler.returncode == 0, err
    wait_for(lambda: not any(is_running(pid) for pid in helpers), WAIT, "the helpers to end")


def test_warm_up_draws_the_bare_boards_of_each_number_of_players(app):
    from pbem.games import picture, rules_for

    picture._board.cache_clear()
    picture._bare_board.cache_clear()
    with app.app_context():
        senders.warm_up(app)
        rules = rules_for("kardinal-koenig")
        rooms = {rules.picture_pieces(rules.new_state(list(rules.colours)[:players], "x", 0),
                                      picture.WIDTH / picture.BOARD_UNITS)[0]
                 for players in range(rules.min_players, rules.max_players + 1)}
        assert len(rooms) > 1, "the panel grows with the players"
        assert picture._bare_board.cache_info().currsize == len(rooms)
        drawn = picture._bare_board.cache_info().misses
        state = rules.new_state(list(rules.colours)[:4], "a game", 0)
        assert picture.png_of("kardinal-koenig", rules.dumps(state), "de").startswith(
            b"\x89PNG")
        assert picture._bare_board.cache_info().misses == drawn, "no board drawn again"


class HeldServer(SlowServer):
    """A slow SMTP server that, once it has taken `first` mails, answers no more until
    `ready()` holds (checked while it waits, without blocking its other connections; `WAIT`
    seconds at most)."""

    def __init__(self, pause: float, first: int, ready):
        super().__init__(pause)
        self.first, self.ready, self.held, self.deadline = first, ready, True, None

    async def handle_DATA(self, server, session, envelope):
        import asyncio

        if (self.ready is not None and self.held and len(self.message_ids) >= self.first
                and self.deadline is None):
            self.deadline = time.monotonic() + WAIT
        while self.held and self.deadline is not None:
            if self.ready() or time.monotonic() > self.deadline:
                self.held = not self.ready()
                break
            await asyncio.sleep(0.02)
        return await super().handle_DATA(server, session, envelope)


WAIT = 120  # seconds any one event may take to come, however busy the machine


def test_a_scheduler_run_delivers_a_backlog_with_helpers_over_smtp_each_mail_once(
        tmp_path, caplog, monkeypatch):
    # The run delivers its first claim, sees the backlog and starts the helper; the server
    # then answers no more mail until the helper has claimed some: this process alone would
    # otherwise deliver the whole backlog on a machine too busy to start the helper meanwhile.
    monkeypatch.setattr(senders, "HELP_FROM", 100)
    me = str(os.getpid())

    def helper_claimed() -> bool:
        return any(row.status == SENDING and row.claim.split("@")[0] != me
                   for row in outbox_rows(app))

    handler = HeldServer(0.01, outbox.BATCH, helper_claimed)  # SMTP's claims: a batch each
    controller = Controller(handler, hostname="127.0.0.1", port=free_port(), ready_timeout=60)
    controller.start()
    try:
        app = make_app(tmp_path / "instance", MAIL_SENDERS=2, MAIL_BACKEND="smtp",
                       SMTP_HOST="127.0.0.1", SMTP_PORT=str(controller.port),
                       SMTP_SECURITY="none", SMTP_TIMEOUT_SECONDS=WAIT + 60)  # held answers
        now = datetime.now(UTC)
        backlog = senders.HELP_FROM + 50
        queue_mails(app, backlog, now - timedelta(minutes=1))
        with caplog.at_level(logging.INFO, logger="pbem.scheduler.senders"):
            counts = run_jobs(app, now)
    finally:
        controller.stop()
    assert counts["mail_sent"] == backlog  # the helpers' deliveries counted in
    helped = [int(m.group(1)) for m in (re.search(r"the mail helpers delivered (\d+) mails",
                                                  r.getMessage()) for r in caplog.records) if m]
    assert helped and 0 < helped[0] < backlog, "both delivered a share"
    rows = outbox_rows(app)
    assert {row.status for row in rows} == {SENT}
    assert sorted(handler.message_ids) == sorted(row.message_id for row in rows), \
        "each mail arrived once"
    assert not handler.held, "the helper claimed mail"


@contextmanager
def run_with_helpers(tmp_path, smtp_server):
    """`pbem run-jobs` in a process of its own with two senders, on a backlog of slow SMTP
    mail; yields the app, the run and its helpers' ids once a helper holds a claim beside the
    run's own. The run is killed at the end if it is still there."""
    handler, smtp = smtp_server
    handler.pause = 0.1
    instance = tmp_path / "instance"
    app = make_app(instance, **smtp)
    queue_mails(app, senders.HELP_FROM + 300, datetime.now(UTC) - timedelta(minutes=1))

    def claims() -> int:
        return len({row.claim for row in outbox_rows(app) if row.status == SENDING})

    # After the run's first claim the server answers no mail until a helper holds a claim
    # beside the run's: on a busy machine the run could otherwise send the whole backlog
    # before its helper has started.
    handler.first, handler.ready = outbox.BATCH, lambda: claims() >= 2
    run = subprocess.Popen([sys.executable, "-m", "pbem", "run-jobs"], cwd=tmp_path,
                           env=environment(instance, PBEM_MAIL_SENDERS="2",
                                           PBEM_SMTP_TIMEOUT_SECONDS=str(WAIT + 60),
                                           **{f"PBEM_{k}": v for k, v in smtp.items()}),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def working():
        assert run.poll() is None, run.communicate()
        return helper_pids(run.pid) if claims() >= 2 else []

    try:
        yield app, run, wait_for(working, WAIT, "a helper to claim mail beside the run")
    finally:
        if run.poll() is None:
            run.kill()
        run.communicate(timeout=WAIT)  # reaped, its pipes closed


def test_sigterm_to_a_run_stops_its_helpers_each_with_its_mail_in_hand_done(tmp_path,
                                                                             smtp_server):
    with run_with_helpers(tmp_path, smtp_server) as (app, run, helpers):
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert helpers and not any(is_running(pid) for pid in helpers)
    rows = outbox_rows(app)
    assert not [row.id for row in rows if row.status == SENDING], "every claim given back"
    sent = sorted(row.message_id for row in rows if row.status == SENT)
    assert sorted(smtp_server[0].message_ids) == sent, \
        "each mail in hand finished and recorded, once"
    assert any(row.status == QUEUED for row in rows), "stopped in the middle of the backlog"


def test_a_killed_run_takes_its_helpers_with_it_and_leaves_only_its_own_claim(tmp_path,
                                                                               smtp_server):
    with run_with_helpers(tmp_path, smtp_server) as (app, run, helpers):
        os.kill(run.pid, signal.SIGKILL)  # no clean-up code of the run's process runs
        run.communicate(timeout=WAIT)
        wait_for(lambda: not any(is_running(pid) for pid in helpers), WAIT,
                 "the helpers to end")
        # The SMTP server records a mail the killed processes were sending, if any, before it
        # closes their connections.
        wait_for(lambda: not smtp_connections(smtp_server[1]["SMTP_PORT"]), WAIT,
                 "the SMTP server to close the killed processes' connections")
    rows = outbox_rows(app)
    claimed = [row for row in rows if row.status == SENDING]
    assert len({row.claim for row in claimed}) <= 1, "each helper gave its claim back"
    assert len(claimed) <= outbox.claim_size(SmtpBackend(app.config))
    recorded = {row.message_id for row in rows if row.status == SENT}
    arrived = smtp_server[0].message_ids
    assert len(arrived) == len(set(arrived)), "nothing sent twice"
    assert recorded <= set(arrived) and len(set(arrived) - recorded) <= 1


def test_a_helper_delivers_mail_claimed_for_it_and_records_it_once_the_lock_is_free(
        tmp_path, database):
    # While a scheduler plays a burst of timeouts it holds SQLite's write lock nearly all the
    # time: it claims mail for its helper between its transactions, and the helper writes it
    # without waiting for the lock, recording it when the lock is free.
    app = make_app(tmp_path / "instance", MAIL_SENDERS=2)
    now = datetime.now(UTC)
    queue_mails(app, senders.HAND_AHEAD + 30, now - timedelta(minutes=1))
    helpers = senders.Helpers(app, now)
    helpers.start()
    [helper] = helpers.processes
    helpers.hand_off()
    rows = outbox_rows(app)
    handed = [row for row in rows if row.status == SENDING]
    assert len(handed) == senders.HAND_AHEAD, "claimed for the helper, up to what it may hold"
    assert {row.claim.split("@")[0] for row in handed} == {str(helper.pid)}, \
        "each claim names the helper that holds it"
    assert [row.status for row in rows].count(QUEUED) == 30
    folder = Path(app.config["MAIL_FOLDER"])
    lock = get_engine(app).raw_connection() if database == "sqlite" else None
    try:
        if lock is not None:
            lock.execute("BEGIN IMMEDIATE")  # the scheduler's next timer transaction
        wait_for(lambda: len(list(folder.glob("*.eml"))) == senders.HAND_AHEAD, 120,
                 "the helper to write the mail handed to it")
        if lock is not None:
            # It says it delivered each claim once it tried to record it (and must not wait
            # for the lock to say so).
            wait_for(lambda: _all_handed_done(helpers), 120,
                     "the helper to say it delivered what it was handed")
            assert [row.status for row in outbox_rows(app)].count(SENDING) == \
                senders.HAND_AHEAD, "recorded only once the lock is free"
    finally:
        if lock is not None:
            lock.rollback()
            lock.close()
    assert helpers.finish() == {"sent": senders.HAND_AHEAD + 30, "retry": 0, "failed": 0,
                                "unknown": 0}, "the handed mail and the rest, which it claimed"
    rows = outbox_rows(app)
    assert {row.status for row in rows} == {SENT}
    files = sorted(folder.glob("*.eml"))
    assert [f.name for f in files] == [f"{row.id:08d}.eml" for row in rows]
    assert sorted(message_from_bytes(f.read_bytes())["Message-ID"] for f in files) == \
        sorted(row.message_id for row in rows), "each mail once"


def test_mail_claimed_for_a_helper_that_has_ended_goes_back_to_the_queue(tmp_path):
    app = make_app(tmp_path / "instance", MAIL_SENDERS=2)
    now = datetime.now(UTC)
    queue_mails(app, 30, now - timedelta(minutes=1))
    claim, mails = outbox.claim_for(app, now, 20, 4321)
    assert mails == 20 and claim.startswith("4321@")
    outbox.give_back(app, claim)
    helpers = senders.Helpers(app, now)
    helpers.start()
    [helper] = helpers.processes
    helper.kill()
    helper.join(WAIT)
    helpers.hand_off()  # it hears the helper has ended, and claims nothing for it
    assert helpers.finish() == {"sent": 0, "retry": 0, "failed": 0, "unknown": 0}
    rows = outbox_rows(app)
    assert {(row.status, row.claim) for row in rows} == {(QUEUED, None)}


def test_a_helper_asked_to_stop_gives_back_what_was_handed_to_it_and_not_begun(tmp_path):
    app = make_app(tmp_path / "instance", MAIL_SENDERS=2)
    now = datetime.now(UTC)
    queue_mails(app, 30, now - timedelta(minutes=1))
    handed = queue.SimpleQueue()
    for _ in range(2):
        handed.put(outbox.claim_for(app, now, 10, os.getpid())[0])
    outbox.request_stop(app)
    _ours, theirs = multiprocessing.Pipe()
    counts = senders._deliver_run(app, now, threading.Event(), handed, theirs)
    assert counts == {"sent": 0, "retry": 0, "failed": 0, "unknown": 0}
    assert {(row.status, row.claim) for row in outbox_rows(app)} == {(QUEUED, None)}
    assert not list(Path(app.config["MAIL_FOLDER"]).glob("*.eml"))


@pytest.mark.only_sqlite  # PostgreSQL has no one write lock to wait for
def test_deliveries_recorded_later_are_written_once_the_lock_is_free_not_waited_for(
        tmp_path):
    app = make_app(tmp_path / "instance", MAIL_SENDERS=2)
    now = datetime.now(UTC)
    queue_mails(app, 5, now - timedelta(minutes=1))
    claim, _ = outbox.claim_for(app, now, 5, os.getpid())
    later = outbox.LaterRecords(app, now)
    lock = get_engine(app).raw_connection()
    lock.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        assert outbox.deliver_handed(app, claim, now, later) == 5
        # Waiting for the lock would take SQLite's busy timeout (and then give up).
        assert time.monotonic() - started < BUSY_TIMEOUT_SECONDS, "no wait for the lock"
        assert len(list(Path(app.config["MAIL_FOLDER"]).glob("*.eml"))) == 5
        assert later.counts["sent"] == 0 and len(later.waiting) == 1
    finally:
        lock.rollback()
        lock.close()
    later.write(block=False)
    assert later.counts["sent"] == 5 and later.waiting == []
    assert {(row.status, row.claim) for row in outbox_rows(app)} == {(SENT, None)}


def test_a_burst_of_timeouts_hands_its_mail_to_the_helper_between_its_transactions(
        tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(senders, "HELP_FROM", 3)  # the helper joins for a few timeouts
    app = make_app(tmp_path / "instance", MAIL_SENDERS=2, SCHEDULER_OUTAGE_MINUTES=100000,
                   SCHEDULER_TIMERS_PER_TRANSACTION=1)
    created = datetime.now(UTC) - timedelta(days=10)  # every first deadline has passed
    for seed in "1234":
        new_game(app, 3, seed, now=created)
    with app.app_context(), reading() as db:
        invitations = len(db.exec(select(OutboxMessage)).all())
    with caplog.at_level(logging.DEBUG, logger="pbem.scheduler.senders"):
        # A moment ahead: the mail the timeouts queue is due at it (as at a real run's next).
        counts = run_jobs(app, datetime.now(UTC) + timedelta(minutes=1))
    assert counts["timeouts"] == 4
    handed = [r.getMessage() for r in caplog.records if "mails for pbem-mail-helper" in
              r.getMessage()]
    assert handed, "mail claimed for the helper between the timer transactions"
    rows = outbox_rows(app)
    assert len(rows) > invitations and {row.status for row in rows} == {SENT}
    assert counts["mail_sent"] == len(rows), "the helper's deliveries counted in, each once"
    files = list(Path(app.config["MAIL_FOLDER"]).glob("*.eml"))
    assert len(files) == len(rows)
