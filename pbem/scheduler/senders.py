"""Helper sender processes (`[mail] senders`): a backlog of mail delivered by more processes.

A scheduler run that finds a backlog of mail, or a burst of timeouts about to queue one (a
deadline at midnight for a big league, a restart after an outage), delivers it together with
`[mail] senders` - 1 helper processes. Each claims and delivers as any sender does (a claim at
a time, each delivery recorded, a killed one leaves at most its claim) until the run has queued
everything (`done_queueing`) and nothing due is left; then it reports what it delivered.

While the run plays a burst of timeouts it holds SQLite's one write lock nearly all the time
(a transaction of timeouts after another), and a helper waiting for the lock to claim mail
mostly waited: with an idempotent backend (the local folder) the run claims mail for its helpers
between its transactions instead (`HelperPool.hand_off`, some HAND_AHEAD mails each), and a
helper delivers what it was handed and records it when the lock is free (outbox.LaterRecords).
Once the run has queued everything, helpers claim for themselves as any sender does. A killed
helper then leaves what it was handed and had not recorded, which is written again once it is
old: to the local folder, the same file again.

`pbem scheduler` keeps its helpers for as long as it runs (a `HelperPool` made when it starts):
each one makes its app and warms what a sender computes once (`warm_up`: the mail templates
compiled, the board pictures' bare boards drawn) as the scheduler starts, then waits, idle on
its pipe, for the runs that need it; a burst finds them ready instead of paying a process's
start (about a second and a half of a core) each time. A one-off run (`pbem run-jobs`) starts
helpers of its own and ends them with it.

Asked to stop (SIGTERM), the scheduler passes the stop on to its helpers: each finishes the
mail in hand and gives the rest of its claim back. They end with the process that started
them however it ends: the kernel's parent-death signal on Linux, and everywhere their end of
the pipe to it.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import queue
import signal
import sys
import threading
from dataclasses import dataclass
from datetime import datetime

from flask import Flask
from sqlalchemy import bindparam, func
from sqlmodel import select

from ..games import picture
from ..ground.db import get_engine, is_status
from ..ground.models import QUEUED, OutboxMessage
from .backends import backend_for
from .outbox import (
    LaterRecords,
    claim_for,
    claim_size,
    deliver_handed,
    deliver_queued,
    give_back,
    request_stop,
    stop_event,
)

logger = logging.getLogger(__name__)

# Mails due (or about to be queued: a timeout mails every seat of its game, three or more) from
# which a scheduler run delivers with helpers. Measured with bench/scheduler_bench.py when each
# run started its helpers: a burst of 100 timeouts (300 mails) took a little longer with a
# helper (1.63 s against 1.52 s alone), one of 200 (600 mails) less (2.55 s against 2.96 s).
HELP_FROM = 500
MAILS_A_TIMER = 3
# The mails due at a moment, counted up to HELP_FROM (by the index the claims use).
_BACKLOG = select(func.count()).select_from(
    select(OutboxMessage.id).where(is_status(OutboxMessage.status, QUEUED),
                                   OutboxMessage.next_attempt_at <= bindparam("moment"))
    .limit(HELP_FROM).subquery())

_READY = "ready"  # a helper to its scheduler: made and warmed up
_DRAIN = "done queueing"  # the scheduler to a helper: the run queues no more mail
_DELIVER = "deliver"  # the scheduler to a helper: (_DELIVER, now), deliver what is due at now
_HANDED = "handed"  # the scheduler to a helper: (_HANDED, claim), mail it claimed for the helper
_HANDED_DONE = "handed done"  # a helper to its scheduler: (_HANDED_DONE, mails) of one claim
# Mails a helper holds claimed for it by the scheduler while it plays a burst of timeouts (each
# of its write transactions some 0.1 s): enough for the helper to go on until the next.
HAND_AHEAD = 100
PR_SET_PDEATHSIG = 1  # linux/prctl.h
CLOSE_SECONDS = 10  # how long a closed pool waits for a helper to end before it is terminated


def sigterm_when_parent_ends() -> None:
    """Have the kernel send this process SIGTERM when the process that started it ends (Linux's
    parent-death signal; elsewhere nothing: the callers also watch a pipe to their parent)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        except (OSError, AttributeError):  # no prctl: the pipe tells
            pass


def _nothing() -> dict[str, int]:
    return {"sent": 0, "retry": 0, "failed": 0, "unknown": 0}


@dataclass
class _Helper:
    process: multiprocessing.process.BaseProcess
    connection: object  # our end of its pipe
    ready: bool = False
    busy: bool = False  # delivering for a run, which waits for its counts
    handed: int = 0  # mails claimed for it this run and not yet delivered
    report: dict | None = None  # its run's counts, if heard before `finish` listens


class HelperPool:
    """A process's helper senders: `[mail] senders` - 1 of them (none with one sender, or when
    the app delivers through a backend of its own: tests install one), started by `start`,
    kept until `close`."""

    def __init__(self, app: Flask):
        self.app = app
        self.helpers: list[_Helper] = []

    @property
    def processes(self) -> list:
        return [helper.process for helper in self.helpers]

    def wanted(self) -> int:
        """How many helpers this process keeps."""
        app = self.app
        if "pbem_mail_backend" in app.extensions:
            return 0
        return app.config["MAIL_SENDERS"] - 1

    def start(self) -> None:
        """Start the helpers that are not running: all at first, and any that has ended since
        (killed, or failed). Returns at once: each makes its app and warms up by itself."""
        if stop_event(self.app).is_set():
            return
        for helper in self.helpers:
            if not helper.process.is_alive():
                helper.connection.close()
        self.helpers = [helper for helper in self.helpers if helper.process.is_alive()]
        from ..ground.config import SETTINGS

        settings = {name: self.app.config[name] for name in SETTINGS}
        context = multiprocessing.get_context("spawn")  # nothing of this process shared
        while len(self.helpers) < self.wanted():
            ours, theirs = context.Pipe()
            # The helper makes its app as this one was made (pbem.app keeps its factory).
            factory = self.app.extensions["pbem_factory"]
            process = context.Process(target=_serve, args=(factory, settings, theirs),
                                      name=f"pbem-mail-helper-{len(self.helpers) + 1}",
                                      daemon=True)
            process.start()
            theirs.close()
            self.helpers.append(_Helper(process, ours))

    def wait_ready(self, timeout: float) -> bool:
        """Wait until every helper has made its app and warmed up; False after `timeout`
        seconds or when one has ended."""
        for helper in self.helpers:
            while not helper.ready:
                if not helper.connection.poll(timeout):
                    return False
                try:
                    helper.ready = helper.connection.recv() == _READY
                except (EOFError, OSError):
                    return False
        return True

    def begin(self, now: datetime) -> int:
        """Ask each helper to deliver what is due at `now`; returns how many were asked."""
        for helper in self.helpers:
            try:
                helper.connection.send((_DELIVER, now))
                helper.busy, helper.handed = True, 0
            except OSError:  # it has ended: `finish` skips it, `start` replaces it
                pass
        return sum(helper.busy for helper in self.helpers)

    def hand_off(self, now: datetime, size: int) -> None:
        """Claim due mail for each busy helper that holds less than HAND_AHEAD, `size` at a
        time, and tell it: while this process plays timeouts it holds SQLite's one write lock
        nearly all the time, and a helper claiming for itself would mostly wait for it."""
        for helper in self.helpers:
            if not helper.busy:
                continue
            try:
                while helper.connection.poll():
                    heard = self._heard(helper, helper.connection.recv())
                    helper.report = heard if heard is not None else helper.report
            except (EOFError, OSError):
                continue
            while helper.handed < HAND_AHEAD and not stop_event(self.app).is_set():
                claim, mails = claim_for(self.app, now, size, helper.process.pid)
                if not mails:
                    return  # nothing more is due
                try:
                    helper.connection.send((_HANDED, claim))
                except OSError:  # it has ended: the mail goes back to the queue
                    give_back(self.app, claim)
                    break
                helper.handed += mails
                logger.debug("claimed %d mails for %s", mails, helper.process.name)

    def _heard(self, helper: _Helper, message) -> dict[str, int] | None:
        """What a helper said before its report: it is ready, or delivered a claim handed to
        it; its report (the counts of its run) is returned."""
        if message == _READY:
            helper.ready = True
        elif isinstance(message, tuple) and message[0] == _HANDED_DONE:
            helper.handed -= message[1]
        else:
            return message
        return None

    def done_queueing(self) -> None:
        """Tell the busy helpers the run queues no more mail: each reports once nothing due is
        left."""
        for helper in self.helpers:
            if helper.busy:
                try:
                    helper.connection.send(_DRAIN)
                except OSError:
                    pass

    def finish(self) -> dict[str, int]:
        """Wait for each busy helper's report (stopping them if this process is asked to
        stop); returns what they delivered, by outcome."""
        total = _nothing()
        self.done_queueing()
        stop, stopped = stop_event(self.app), False
        for helper in self.helpers:
            if not helper.busy:
                continue
            counts, helper.report = helper.report, None
            while counts is None:
                if stop.is_set() and not stopped:
                    stopped = True
                    for other in self.helpers:  # SIGTERM: the mail in hand, the rest given back
                        if other.process.is_alive():
                            other.process.terminate()
                try:
                    if helper.connection.poll(0.1):
                        counts = self._heard(helper, helper.connection.recv())
                        if counts is None:
                            continue
                        break
                except (EOFError, OSError):
                    break
                if not helper.process.is_alive() and not helper.connection.poll():
                    break
            helper.busy = False
            if counts is None:
                logger.warning("mail helper %s ended (exit code %s) without saying what it "
                               "sent; a claim it left is sent again once it is old",
                               helper.process.name, helper.process.exitcode)
                continue
            for key, value in counts.items():
                total[key] += value
        logger.info("the mail helpers delivered %d mails", sum(total.values()))
        return total

    def close(self) -> None:
        """End the helpers: each sees its pipe closed, finishes what it holds and ends."""
        for helper in self.helpers:
            helper.connection.close()
        for helper in self.helpers:
            helper.process.join(CLOSE_SECONDS)
            if helper.process.is_alive():
                helper.process.terminate()
                helper.process.join(CLOSE_SECONDS)
        self.helpers = []


class Helpers:
    """The helpers of one scheduler run: the scheduler's `pool`, or (without one) processes
    started for this run alone and ended with it. They start delivering at most once a run,
    when a backlog is in sight (`expect`)."""

    def __init__(self, app: Flask, now: datetime, pool: HelperPool | None = None):
        self.app, self.now = app, now
        self.pool = pool if pool is not None else HelperPool(app)
        self.own = pool is None
        self.started = False

    @property
    def processes(self) -> list:
        return self.pool.processes

    def expect(self, mails: int) -> None:
        """Start the helpers if `mails` (due, or about to be queued) make a backlog."""
        if mails >= HELP_FROM:
            self.start()

    def expect_backlog(self) -> None:
        """Start the helpers if the mails due at this run's moment make a backlog."""
        with get_engine(self.app).connect() as connection:
            self.expect(connection.execute(_BACKLOG, {"moment": self.now}).scalar_one())

    def start(self) -> None:
        """Have the helpers deliver beside this run, unless it did already, `[mail] senders`
        is 1, a stop was asked for, or the app delivers through a backend of its own."""
        if self.started or self.pool.wanted() < 1 or stop_event(self.app).is_set():
            return
        self.started = True
        self.pool.start()  # a pool's: only a helper that has ended since is started again
        asked = self.pool.begin(self.now)
        logger.info("delivering a backlog with %d helper processes", asked)

    def hand_off(self) -> None:
        """Claim due mail for the helpers (`HelperPool.hand_off`) if they deliver beside this
        run and need more; called between the run's timer transactions. Only for an idempotent
        backend, whose deliveries a helper may record when the write lock is free."""
        if not self.started:
            return
        backend = backend_for(self.app)
        if getattr(backend, "idempotent", False):
            self.pool.hand_off(self.now, claim_size(backend))

    def done_queueing(self) -> None:
        """Tell the helpers this run queues no more mail: they report once nothing due is
        left."""
        if self.started:
            self.pool.done_queueing()

    def finish(self) -> dict[str, int]:
        """Wait for the helpers' reports; returns what they delivered, by outcome. Helpers
        started for this run alone end here."""
        total = self.pool.finish() if self.started else _nothing()
        self.started = False
        if self.own:
            self.pool.close()
        return total


def warm_up(app: Flask) -> None:
    """Compute ahead what a process that sends mail computes once, so that its first burst
    does not: the mail templates compiled and, with board pictures on, each game's bare boards
    drawn (`picture.warm_up`). A scheduler and its helpers call it as they start."""
    for name in app.jinja_env.list_templates():
        if name.startswith(("email/", "games/")):
            app.jinja_env.get_template(name)
    if app.config["MAIL_BOARD_PICTURE"]:
        try:
            with app.app_context():
                picture.warm_up()
        except Exception:  # each mail tries again, and goes without its picture if it fails
            logger.exception("the board pictures' bare boards could not be drawn ahead")


def _serve(make_app, settings: dict, connection) -> None:
    """A helper process (`HelperPool`): make the app, warm up, say so, then deliver for each
    run that asks, until the pipe closes or a stop is asked for."""
    sigterm_when_parent_ends()
    from ..ground import logs
    from ..ground.process import started

    app = make_app(settings)
    logs.setup(app.config, "mail helper")  # a fresh interpreter: log as its scheduler does
    stop = stop_event(app)
    for number in (signal.SIGTERM, signal.SIGINT):  # only sets the flag: the mail in hand ends
        signal.signal(number, lambda *_: request_stop(app))
    runs: queue.SimpleQueue = queue.SimpleQueue()  # (now, drained, handed) of each run

    def listen():
        drained = handed = None
        try:
            while True:
                message = connection.recv()
                if message == _DRAIN:
                    if drained is not None:
                        drained.set()
                elif message[0] == _HANDED:
                    if handed is not None:
                        handed.put(message[1])
                else:
                    drained, handed = threading.Event(), queue.SimpleQueue()
                    runs.put((message[1], drained, handed))
        except (EOFError, OSError):  # the scheduler has closed the pool, or ended
            request_stop(app)

    threading.Thread(target=listen, name="pbem-helper-pipe", daemon=True).start()
    try:
        warm_up(app)
        started()
        connection.send(_READY)
        while not stop.is_set():
            try:
                now, drained, handed = runs.get(timeout=0.2)
            except queue.Empty:
                continue
            connection.send(_deliver_run(app, now, drained, handed, connection))
    except OSError:  # the pipe closed under a report: the scheduler has ended
        pass
    finally:
        get_engine(app).dispose()


def _deliver_run(app: Flask, now: datetime, drained: threading.Event, handed: queue.SimpleQueue,
                 connection) -> dict[str, int]:
    """Deliver what is due at `now` until the run has queued everything (`drained`) and nothing
    due is left, or a stop is asked for; returns what was delivered, by outcome. Until the run
    is drained, a helper with an idempotent backend delivers only the claims the scheduler
    `handed` it (`HelperPool.hand_off`), saying so on `connection` after each, and records them
    when the write lock is free; then it claims for itself."""
    stop = stop_event(app)
    total = _nothing()
    backend = backend_for(app)
    size = claim_size(backend)
    if getattr(backend, "idempotent", False):
        later = LaterRecords(app, now)
        while not stop.is_set():
            try:
                claim = handed.get(timeout=0.02)
            except queue.Empty:
                later.write(block=False)
                if drained.is_set() and handed.empty():
                    break
                continue
            connection.send((_HANDED_DONE, deliver_handed(app, claim, now, later)))
        later.write(block=True)
        total = dict(later.counts)
        while not handed.empty():  # a stop was asked for: what was handed and not begun
            give_back(app, handed.get())
    while not stop.is_set():
        last = drained.is_set()  # before the claim: all that run queued is in sight
        counts = deliver_queued(app, now, size)
        for key, value in counts.items():
            total[key] += value
        if not sum(counts.values()):
            if last:
                break
            drained.wait(0.05)  # the run is still queueing: more comes
    return total
