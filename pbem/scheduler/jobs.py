"""The scheduler's one job: outage guard, clocks of upgraded games, due timers, then mail.

This module decides when and how much: what a passing deadline does (a reminder, a timeout,
the server's move for an absent seat, absence after repeated timeouts) is
pbem.services.timeouts', which each claimed timer is handed to.

`run_jobs(app, now)` is a plain function that takes the time, so tests and `pbem run-jobs
--now` can act as if it were any moment. Every piece of due work lives in the database and is
claimed atomically before it is done, so any number of scheduler processes may run it at once:
each reminder is sent once, each timeout played once. A claim left by a process that died is
given back after a while, and acting on it again is harmless because a timer only acts while
its turn is still current (same clock version, same seat to move). A burst of due timers is
acted on a few dozen to a write transaction (at most a tenth of a second of it), each timer in
a savepoint of its own, so that one that fails changes nothing and holds up no other.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, cast

from flask import Flask, current_app

from ..ground.db import utcnow
from ..mailin.listener import poll_imap
from ..services import timeouts
from ..services.reviews import run_due_reviews
from ..services.talk import run_due_chores
from .notices import deliver_notices
from .outbox import deliver_all_due, stop_event
from .senders import MAILS_A_TIMER, HelperPool, Helpers

if TYPE_CHECKING:
    from werkzeug.local import LocalProxy

logger = logging.getLogger(__name__)

BATCH = 500  # timers claimed at a time


def run_jobs(app: Flask, now: datetime | None = None, simulated: bool = False,
             pool: HelperPool | None = None) -> dict[str, int]:
    """One run of the scheduler's job at `now`; returns what it did, by kind. A backlog of mail
    is delivered with the helper senders of `pool` (`pbem scheduler`'s, kept between runs), or
    without one with helpers started for this run (pbem.scheduler.senders).

    With `simulated`, `now` is a time someone jumps to (to see reminders and timeouts of a
    game come): the outage guard then neither runs nor records it, so the scheduler's own
    heartbeat (the real times it ran) alone tells an outage, before and after the jump."""
    now = now or utcnow()
    # A backlog of mail (or a burst of timers about to make one) is delivered by helper
    # processes too, from as soon as it is seen: they deliver while this one plays timeouts.
    helpers = Helpers(app, now, pool)
    try:
        with app.app_context():
            counts = {"outage_games": 0 if simulated else timeouts.guard_outage(now),
                      "clocks_started": timeouts.start_missing_clocks(now)}
            counts.update(handle_due_timers(now, helpers))
            chores = run_due_chores(now)  # message digests, expiring invitations: mailed below
        if app.config["MAIL_IMAP_HOST"] and not stop_event(app).is_set():
            counts["imap"] = poll_imap(app)  # before sending, so its answers leave in this run
        mailed = deliver_all_due(app, now, helpers)
        noticed = deliver_notices(app, now)  # chat and push, after the mail
    finally:
        helpers.finish()  # after an error or a stop: the helpers end too
    counts.update({f"mail_{k}": v for k, v in mailed.items()})
    counts.update(noticed)
    with app.app_context():  # last: reviews of finished games, a few turns a run
        counts.update(run_due_reviews(now, stop_event(app).is_set))
    counts.update(chores)
    return counts


def _claim(now: datetime) -> tuple[str, list[int]]:
    """A batch of due timers claimed (pbem.services.timeouts.claim_due)."""
    return timeouts.claim_due(now, BATCH)


def handle_due_timers(now: datetime, helpers: Helpers | None = None) -> dict[str, int]:
    """Claim the timers due at `now` and act on each that is still current. Asked to stop
    (SIGTERM), it finishes the timer in hand (a timeout plays the whole turn) and gives the
    rest of its claim back at once, for the next run. A burst that will queue a backlog of
    mail starts the run's `helpers`, which deliver it meanwhile."""
    counts = {"reminders": 0, "timeouts": 0, "obsolete": 0}
    stop = stop_event(cast("LocalProxy[Flask]", current_app)._get_current_object())
    while not stop.is_set():
        claim, ids = _claim(now)
        if helpers is not None:
            helpers.expect(len(ids) * MAILS_A_TIMER)
        waiting = deque(ids)
        held = Held(claim, now)
        while waiting and not stop.is_set():
            for counted in _handle_some(waiting, held, stop):
                counts[counted] += 1
            if helpers is not None:
                helpers.hand_off()
        if waiting:  # a stop was asked for
            timeouts.release(claim)
        if len(ids) < BATCH:
            break
    return counts


# Timers acted on in one write transaction, each in a savepoint of its own (one that fails
# changes nothing, and the others stand): at most `[scheduler] timers_per_transaction`, and
# none more once the transaction is this old, since other writers (players' moves) wait for it
# meanwhile.
TRANSACTION_SECONDS = 0.1


class Held:
    """A claim being worked through, and when it was last marked as alive."""

    def __init__(self, claim: str, now: datetime):
        self.claim, self.now = claim, now
        self.started = self.renewed = time.monotonic()
        self.every = current_app.config["SCHEDULER_CLAIM_SECONDS"] / 4

    def renew_in(self, connection) -> None:
        """Mark the rest of the claim as held now, if it is time: a long run is not taken
        for a dead one."""
        if time.monotonic() - self.renewed > self.every:
            self.renewed = time.monotonic()
            timeouts.renew(connection, self.claim, self.now + timedelta(
                seconds=self.renewed - self.started))


def _handle_some(waiting: deque, held: Held, stop) -> list[str]:
    """Act on the next timers of `waiting` (taking them from it) in one write transaction;
    returns what each counted as. A computer player's turn ends the transaction: it is played
    move by move (`timeouts.play_server_turn`), each move thought out before its own
    transaction begins, so that a search never holds up the other writers. A timer that fails is logged and left
    claimed (the next runs take it again once its claim is old); the others stand."""
    done: list[str] = []
    thinking = None
    most = current_app.config["SCHEDULER_TIMERS_PER_TRANSACTION"]
    with timeouts.transaction() as session:
        began = time.monotonic()
        held.renew_in(session.connection())
        while waiting and len(done) < most and not stop.is_set() \
                and time.monotonic() - began < TRANSACTION_SECONDS:
            timer_id = waiting.popleft()
            try:
                with session.begin_nested():
                    counted = timeouts.act(session, timer_id, held.claim, held.now)
            except Exception:  # one broken game must not hold up the others
                current_app.logger.exception("timer %s failed; it is tried again once its "
                                             "claim is given back", timer_id)
                continue
            if counted is None:
                thinking = timer_id
                break
            done.append(counted)
    if thinking is not None:
        done.append(timeouts.play_server_turn(thinking, held.claim, held.now))
    return done
