"""The scheduler's one job: outage guard, clocks of upgraded games, due timers, then mail.

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
from typing import NamedTuple

from flask import Flask, current_app
from flask_babel import lazy_gettext as L_
from sqlalchemy import bindparam, update
from sqlmodel import select

from ..games import rules_for
from ..ground.db import (
    claim_rows,
    insert_if_missing,
    is_status,
    locked,
    new_claim,
    reading,
    utcnow,
    writing,
)
from ..ground.models import (
    CLAIMED,
    DONE,
    PENDING,
    REMINDER,
    RUNNING,
    Game,
    JobState,
    Seat,
    Timer,
)
from ..mailin.listener import poll_imap
from ..services import mail
from ..services.deadlines import add_pause, reset_clock, start_clock
from ..services.errors import ServiceError
from ..services.mail import intents
from ..services.moves import submit_move
from ..services.reviews import run_due_reviews
from ..services.talk import run_due_chores
from .outbox import deliver_all_due, stop_event
from .senders import MAILS_A_TIMER, HelperPool, Helpers

logger = logging.getLogger(__name__)

BATCH = 500
# The most moves the server plays for one seat in one go: its whole turn, however long. A turn
# may be many moves (in a card game every card bought, built, paid for or discarded, an offer
# to each opponent), but far fewer than this: a bound against a game that would never hand the
# move on, not a limit a real turn reaches.
MAX_DEFAULT_MOVES = 500
JOB = "scheduler"


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
            counts = {"outage_games": 0 if simulated else guard_outage(now),
                      "clocks_started": start_missing_clocks(now)}
            counts.update(handle_due_timers(now, helpers))
            chores = run_due_chores(now)  # message digests, expiring invitations: mailed below
        if app.config["MAIL_IMAP_HOST"] and not stop_event(app).is_set():
            counts["imap"] = poll_imap(app)  # before sending, so its answers leave in this run
        mailed = deliver_all_due(app, now, helpers)
    finally:
        helpers.finish()  # after an error or a stop: the helpers end too
    counts.update({f"mail_{k}": v for k, v in mailed.items()})
    with app.app_context():  # last: reviews of finished games, a few turns a run
        counts.update(run_due_reviews(now, stop_event(app).is_set))
    counts.update(chores)
    return counts


def guard_outage(now: datetime) -> int:
    """After a gap longer than the threshold, move on the deadlines that fell in it.

    Returns how many games had their clock moved. The run time is recorded either way."""
    threshold = timedelta(minutes=current_app.config["SCHEDULER_OUTAGE_MINUTES"])
    moved = []
    with writing() as session:
        if insert_if_missing(session, JobState, name=JOB, last_run_at=now):
            return 0  # the first run: nothing to compare with
        # Locked: a second scheduler checking at the same moment sees this run's time.
        state = session.get(JobState, JOB, with_for_update=True)
        last, state.last_run_at = state.last_run_at, max(state.last_run_at, now)
        session.add(state)
        if now - last <= threshold:
            return 0
        games = session.exec(select(Game).join(Timer, Timer.game_id == Game.id)
                             .where(is_status(Timer.status, PENDING), Timer.due_at > last,
                                    Timer.due_at <= now, Game.status == RUNNING,
                                    Timer.clock_version == Game.clock_version)
                             .distinct()).all()
        for game in games:
            to_move = rules_for(game.kind).to_move(rules_for(game.kind).loads(game.state_json))
            seat = session.exec(select(Seat).where(Seat.game_id == game.id,
                                                   Seat.number == to_move)).one()
            add_pause(game, last, now)
            reset_clock(session, game, seat, now)
            moved.append(L_("%(game)s: the deadline of %(name)s is now %(when)s UTC",
                            game=f"{game.title} #{game.id}", name=seat.name,
                            when=f"{game.deadline_at:%Y-%m-%d %H:%M}"))
        if moved:
            mail.to_admins(session, L_("the scheduler was not running"), [
                L_("The scheduler did not run from %(start)s to %(end)s UTC (%(hours)s hours).",
                   start=f"{last:%Y-%m-%d %H:%M}", end=f"{now:%Y-%m-%d %H:%M}",
                   hours=f"{(now - last).total_seconds() / 3600:.1f}"),
                L_("No one was timed out for that gap: these deadlines moved on by its length:"),
                *moved])
    return len(moved)


def start_missing_clocks(now: datetime) -> int:
    """Running games from before the scheduler existed (clock version 0) get their clock."""
    started = 0
    with writing() as session:
        for game in session.exec(locked(select(Game).where(Game.clock_version == 0,
                                                           Game.status == RUNNING))):
            rules = rules_for(game.kind)
            to_move = rules.to_move(rules.loads(game.state_json))
            seat = session.exec(select(Seat).where(Seat.game_id == game.id,
                                                   Seat.number == to_move)).one()
            start_clock(session, game, seat, now)
            started += 1
    return started


def _claim(now: datetime) -> tuple[str, list[int]]:
    claim = new_claim()
    # A claim this old belongs to a scheduler that died: its timers are due again.
    given_up = now - timedelta(seconds=current_app.config["SCHEDULER_CLAIM_SECONDS"])
    with writing() as session:
        session.exec(update(Timer).where(is_status(Timer.status, CLAIMED),
                                         Timer.claimed_at < given_up)
                     .values(status=PENDING, claim=None, claimed_at=None))
        # On PostgreSQL each claimer takes due timers no other claimer holds (SKIP LOCKED).
        claim_rows(session, Timer, select(Timer.id)
                   .where(is_status(Timer.status, PENDING), Timer.due_at <= now)
                   .order_by(Timer.due_at, Timer.id).limit(BATCH),
                   status=CLAIMED, claim=claim, claimed_at=now)
        ids = list(session.exec(select(Timer.id).where(is_status(Timer.status, CLAIMED),
                                                       Timer.claim == claim)
                                .order_by(Timer.due_at, Timer.id)))
    return claim, ids


def handle_due_timers(now: datetime, helpers: Helpers | None = None) -> dict[str, int]:
    """Claim the timers due at `now` and act on each that is still current. Asked to stop
    (SIGTERM), it finishes the timer in hand (a timeout plays the whole turn) and gives the
    rest of its claim back at once, for the next run. A burst that will queue a backlog of
    mail starts the run's `helpers`, which deliver it meanwhile."""
    counts = {"reminders": 0, "timeouts": 0, "obsolete": 0}
    stop = stop_event(current_app._get_current_object())
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
            _release(claim)
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
            connection.execute(_RENEW, {"of_claim": self.claim, "moment": self.now + timedelta(
                seconds=self.renewed - self.started)})


def _handle_some(waiting: deque, held: Held, stop) -> list[str]:
    """Act on the next timers of `waiting` (taking them from it) in one write transaction;
    returns what each counted as. A computer player's turn ends the transaction: it is played
    move by move (`_time_out`), each move thought out before its own transaction begins, so
    that a search never holds up the other writers. A timer that fails is logged and left
    claimed (the next runs take it again once its claim is old); the others stand."""
    done: list[str] = []
    thinking = None
    most = current_app.config["SCHEDULER_TIMERS_PER_TRANSACTION"]
    with writing() as session:
        began = time.monotonic()
        held.renew_in(session.connection())
        while waiting and len(done) < most and not stop.is_set() \
                and time.monotonic() - began < TRANSACTION_SECONDS:
            timer_id = waiting.popleft()
            try:
                with session.begin_nested():
                    counted = _act(session, timer_id, held.claim, held.now)
            except Exception:  # one broken game must not hold up the others
                current_app.logger.exception("timer %s failed; it is tried again once its "
                                             "claim is given back", timer_id)
                continue
            if counted is None:
                thinking = timer_id
                break
            done.append(counted)
    if thinking is not None:
        done.append(_time_out(thinking, held.claim, held.now))
    return done


# Statements built once: a burst of timeouts runs them for every timer, and building them
# cost more than running them. Rows are read as plain rows on the session's connection (the
# ORM's objects cost more than the reads); the game's row is locked as it is read (on
# PostgreSQL: a move for it waits, and none was made meanwhile).
_TIMER_READ = select(Timer.game_id, Timer.seat_id, Timer.kind, Timer.clock_version,
                     Timer.status, Timer.claim).where(Timer.id == bindparam("timer_id"))
_TIMER = _TIMER_READ.with_for_update()
_CURRENT_READ = (select(Game.status, Game.clock_version, Game.kind, Game.state_json, Game.turn,
                        Game.watch_id, Game.absent_bot, Seat.number, Seat.bot, Seat.absent)
                 .select_from(Game).join(Seat, Seat.id == bindparam("seat_id"))
                 .where(Game.id == bindparam("game_id")))
_CURRENT = _CURRENT_READ.with_for_update(of=Game.__table__)
_HELD = (Timer.claim == bindparam("of_claim"), is_status(Timer.status, CLAIMED))
_RENEW = update(Timer).where(*_HELD).values(claimed_at=bindparam("moment"))
_RELEASE = update(Timer).where(*_HELD).values(status=PENDING, claim=None, claimed_at=None)
_FINISH = (update(Timer).where(Timer.id == bindparam("timer_id"),
                               Timer.claim == bindparam("of_claim"))
           .values(status=DONE, done_at=bindparam("now"), outcome=bindparam("outcome")))


class Turn(NamedTuple):
    """The turn a timer watches, as it stands: the game and the seat to move."""

    game_id: int
    seat_id: int
    turn: int
    kind: str
    state: object
    watch_id: str | None
    bot: str | None  # the computer player that plays this seat's turn, if any
    seat: int  # its number (from 0)


def _release(claim: str) -> None:
    with writing() as session:
        session.connection().execute(_RELEASE, {"of_claim": claim})


def _finish(timer_id: int, claim: str, now: datetime, outcome: str) -> None:
    with writing() as session:
        session.connection().execute(_FINISH, {"timer_id": timer_id, "of_claim": claim,
                                               "now": now, "outcome": outcome})


def _current(session, timer, lock: bool = True) -> Turn | None:
    """The turn `timer` watches if it is still the one being played (same clock version, its
    seat to move), else None. Reads the game as the session changed it (its ORM objects are
    flushed; rows waiting to be inserted wait on); with `lock`, locks the game's row (in a write
    transaction: no move for it meanwhile)."""
    session.flush()
    row = session.connection().execute(_CURRENT if lock else _CURRENT_READ, {
        "game_id": timer.game_id, "seat_id": timer.seat_id}).first()
    if row is None or row.status != RUNNING or row.clock_version != timer.clock_version:
        return None
    rules = rules_for(row.kind)
    state = rules.loads(row.state_json)
    if rules.to_move(state) != row.number:
        return None
    bot = row.bot or (row.absent_bot if row.absent else None)
    return Turn(timer.game_id, timer.seat_id, row.turn, row.kind, state, row.watch_id, bot,
                row.number)


def _act(session, timer_id: int, claim: str, now: datetime) -> str | None:
    """Act on one claimed timer in the caller's transaction: the check that the timer is still
    current, a reminder or the default moves of a timeout (each through `submit_move`), the
    timer marked done; returns what it counts as. None for a computer player's turn, which
    `_time_out` plays (after this transaction)."""
    connection = session.connection()
    timer = connection.execute(_TIMER, {"timer_id": timer_id}).first()
    if timer is None or timer.claim != claim or timer.status != CLAIMED:
        return "obsolete"
    current = _current(session, timer)
    if current is None:
        outcome, counted = "obsolete", "obsolete"
    elif timer.kind == REMINDER:
        game, seat = session.get(Game, current.game_id), session.get(Seat, current.seat_id)
        intents.your_turn(session, game, seat, [], reminder=True)
        outcome, counted = "sent", "reminders"
    elif current.bot is None:
        played = _default_moves(session, timer, now, current)
        outcome, counted = ("timed out", "timeouts") if played else ("obsolete", "obsolete")
        if played:
            logger.info("timeout: game %d seat %d missed its deadline; %d default move(s) "
                        "played", current.game_id, current.seat + 1, played)
    else:
        return None
    connection.execute(_FINISH, {"timer_id": timer_id, "of_claim": claim, "now": now,
                                 "outcome": outcome})
    return counted


def _default_moves(session, timer, now: datetime, current: Turn) -> int:
    """Play the seat's turn with default moves in the caller's transaction, each through
    `submit_move`, from `current` (what `_current` just gave: nothing has moved since);
    returns how many were played."""
    played = 0
    rules = rules_for(current.kind)
    for _ in range(MAX_DEFAULT_MOVES):
        if played:
            current = _current(session, timer)
        if current is None:
            break
        try:
            submit_move(None, rules.default_move(current.state), current.turn,
                        seat_id=current.seat_id, actor="timeout", via="scheduler", now=now,
                        session=session)
        except ServiceError as exc:  # a person moved at the same moment: theirs stands
            current_app.logger.info("timeout of seat %s gave way: %s", current.seat_id,
                                    exc.message)
            break
        played += 1
    return played


def _server_move(rules, state, bot: str | None, seed: str) -> tuple[str, str]:
    """The move the server makes for a seat, and the actor it is logged under: computer
    player `bot`'s (its random input `seed` is public, the spectator page's id and the turn:
    it only varies its play and reveals nothing hidden), or the default move."""
    if bot is not None:
        try:
            return rules.bot_move(state, bot, seed), "bot"
        except Exception:  # a bot's failure must not stop the game: the default move stands in
            current_app.logger.exception("computer player %s failed; default move played", bot)
    return rules.default_move(state), "timeout"


def _time_out(timer_id: int, claim: str, now: datetime) -> str:
    """Play the seat's turn, each move through `submit_move`: a computer player's moves for
    a computer player's seat, or for an absent seat when the game gives those to one; else
    the default moves."""
    played, first = 0, None
    for _ in range(MAX_DEFAULT_MOVES):
        with reading() as session:
            timer = session.connection().execute(_TIMER_READ, {"timer_id": timer_id}).first()
            current = _current(session, timer, lock=False) if timer is not None else None
        if current is None:
            break
        first = first or current
        rules = rules_for(current.kind)
        move, actor = _server_move(rules, current.state, current.bot,
                                   f"{current.watch_id}:{current.turn}")
        try:
            submit_move(None, move, current.turn, seat_id=current.seat_id, actor=actor,
                        via="scheduler", now=now)
        except ServiceError as exc:  # a person moved at the same moment: theirs stands
            current_app.logger.info("timeout of seat %s gave way: %s", current.seat_id,
                                    exc.message)
            break
        played += 1
    _finish(timer_id, claim, now, "timed out" if played else "obsolete")
    if played:
        logger.info("turn played by the server: game %d seat %d, %d move(s) by %s",
                    first.game_id, first.seat + 1, played,
                    f"computer player {first.bot}" if first.bot else "the default move")
    return "timeouts" if played else "obsolete"
