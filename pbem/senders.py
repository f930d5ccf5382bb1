"""Helper sender processes (`[mail] senders`): a backlog of mail delivered by more processes.

A scheduler run that finds a backlog of mail, or a burst of timeouts about to queue one (a
deadline at midnight for a big league, a restart after an outage), delivers it together with
`[mail] senders` - 1 helper processes. Each claims and delivers as any sender does (a claim at
a time, each delivery recorded, a killed one leaves at most its claim) until the run has queued
everything (`done_queueing`) and nothing due is left; then it reports what it delivered.

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

from . import picture
from .db import get_engine, is_status
from .models import QUEUED, OutboxMessage
from .outbox import backend_for, claim_size, deliver_queued, request_stop, stop_event

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
        from .config import SETTINGS

        settings = {name: self.app.config[name] for name in SETTINGS}
        context = multiprocessing.get_context("spawn")  # nothing of this process shared
        while len(self.helpers) < self.wanted():
            ours, theirs = context.Pipe()
            process = context.Process(target=_serve, args=(settings, theirs),
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
                helper.busy = True
            except OSError:  # it has ended: `finish` skips it, `start` replaces it
                pass
        return sum(helper.busy for helper in self.helpers)

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
            counts = None
            while True:
                if stop.is_set() and not stopped:
                    stopped = True
                    for other in self.helpers:  # SIGTERM: the mail in hand, the rest given back
                        if other.process.is_alive():
                            other.process.terminate()
                try:
                    if helper.connection.poll(0.1):
                        message = helper.connection.recv()
                        if message == _READY:
                            helper.ready = True
                            continue
                        counts = message
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


def _serve(settings: dict, connection) -> None:
    """A helper process (`HelperPool`): make the app, warm up, say so, then deliver for each
    run that asks, until the pipe closes or a stop is asked for."""
    sigterm_when_parent_ends()
    from . import create_app

    app = create_app(settings)
    stop = stop_event(app)
    for number in (signal.SIGTERM, signal.SIGINT):  # only sets the flag: the mail in hand ends
        signal.signal(number, lambda *_: request_stop(app))
    runs: queue.SimpleQueue = queue.SimpleQueue()  # (now, drained) of each run that asks

    def listen():
        drained = None
        try:
            while True:
                message = connection.recv()
                if message == _DRAIN:
                    if drained is not None:
                        drained.set()
                else:
                    drained = threading.Event()
                    runs.put((message[1], drained))
        except (EOFError, OSError):  # the scheduler has closed the pool, or ended
            request_stop(app)

    threading.Thread(target=listen, name="pbem-helper-pipe", daemon=True).start()
    try:
        warm_up(app)
        connection.send(_READY)
        while not stop.is_set():
            try:
                now, drained = runs.get(timeout=0.2)
            except queue.Empty:
                continue
            connection.send(_deliver_run(app, now, drained))
    except OSError:  # the pipe closed under a report: the scheduler has ended
        pass
    finally:
        get_engine(app).dispose()


def _deliver_run(app: Flask, now: datetime, drained: threading.Event) -> dict[str, int]:
    """Deliver what is due at `now` until the run has queued everything (`drained`) and nothing
    due is left, or a stop is asked for; returns what was delivered, by outcome."""
    stop = stop_event(app)
    total = _nothing()
    size = claim_size(backend_for(app))
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
