"""The scheduler's one job: outage guard, clocks of upgraded games, due timers, then mail.

`run_jobs(app, now)` is a plain function that takes the time, so tests and `pbem run-jobs
--now` can act as if it were any moment. Every piece of due work lives in the database and is
claimed atomically before it is done, so any number of scheduler processes may run it at once:
each reminder is sent once, each timeout played once. A claim left by a process that died is
given back after a while, and acting on it again is harmless because a timer only acts while
its turn is still current (same clock version, same seat to move).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from flask import Flask, current_app
from sqlalchemy import bindparam, update
from sqlmodel import select

from flask_babel import lazy_gettext as L_

from . import mail
from .db import (
    claim_rows,
    insert_if_missing,
    is_status,
    locked,
    new_claim,
    reading,
    utcnow,
    writing,
)
from .deadlines import add_pause, reset_clock, start_clock
from .games import rules_for
from .mailin import poll_imap
from .models import (
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
from .outbox import deliver_all_due, stop_event
from .services import ServiceError, submit_move
from .talk import run_due_chores

BATCH = 500
# The most moves the server plays for one seat in one go: its whole turn, however long. A turn
# may be many moves (in a card game every card bought, built, paid for or discarded, an offer
# to each opponent), but far fewer than this: a bound against a game that would never hand the
# move on, not a limit a real turn reaches.
MAX_DEFAULT_MOVES = 500
JOB = "scheduler"


def run_jobs(app: Flask, now: datetime | None = None, simulated: bool = False) -> dict[str, int]:
    """One run of the scheduler's job at `now`; returns what it did, by kind.

    With `simulated`, `now` is a time someone jumps to (to see reminders and timeouts of a
    game come): the outage guard then neither runs nor records it, so the scheduler's own
    heartbeat (the real times it ran) alone tells an outage, before and after the jump."""
    now = now or utcnow()
    with app.app_context():
        counts = {"outage_games": 0 if simulated else guard_outage(now),
                  "clocks_started": start_missing_clocks(now)}
        counts.update(handle_due_timers(now))
        chores = run_due_chores(now)  # message digests, invitations that expire: mailed below
    if app.config["MAIL_IMAP_HOST"] and not stop_event(app).is_set():
        counts["imap"] = poll_imap(app)  # before sending, so its answers leave in this run
    mailed = deliver_all_due(app, now)
    counts.update({f"mail_{k}": v for k, v in mailed.items()})
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


def handle_due_timers(now: datetime) -> dict[str, int]:
    """Claim the timers due at `now` and act on each that is still current. Asked to stop
    (SIGTERM), it finishes the timer in hand (a timeout plays the whole turn) and gives the
    rest of its claim back at once, for the next run."""
    counts = {"reminders": 0, "timeouts": 0, "obsolete": 0}
    stop = stop_event(current_app._get_current_object())
    refresh = current_app.config["SCHEDULER_CLAIM_SECONDS"] / 4
    while not stop.is_set():
        claim, ids = _claim(now)
        started = refreshed = time.monotonic()
        for timer_id in ids:
            if stop.is_set():
                _release(claim)
                break
            if time.monotonic() - refreshed > refresh:  # still alive: keep the claim
                refreshed = time.monotonic()
                _renew(claim, now + timedelta(seconds=refreshed - started))
            counts[_handle(timer_id, claim, now)] += 1
        if len(ids) < BATCH:
            break
    return counts


# Statements built once: a burst of timeouts runs them for every timer, and building them
# (the ORM's `get` with a lock builds its SELECT anew each time) cost more than running them.
# A timer and its game are read with populate_existing, as `session.get(..., with_for_update)`
# reads them: what is in the session is refreshed from the locked row.
_TIMER = (select(Timer).where(Timer.id == bindparam("timer_id")).with_for_update()
          .execution_options(populate_existing=True))
_GAME = (select(Game).where(Game.id == bindparam("game_id")).with_for_update()
         .execution_options(populate_existing=True))
_HELD = (Timer.claim == bindparam("of_claim"), is_status(Timer.status, CLAIMED))
_RENEW = update(Timer).where(*_HELD).values(claimed_at=bindparam("moment"))
_RELEASE = update(Timer).where(*_HELD).values(status=PENDING, claim=None, claimed_at=None)
_FINISH = (update(Timer).where(Timer.id == bindparam("timer_id"),
                               Timer.claim == bindparam("of_claim"))
           .values(status=DONE, done_at=bindparam("now"), outcome=bindparam("outcome")))


def _renew(claim: str, moment: datetime) -> None:
    """Mark the rest of a claim as held at `moment`: a long run is not taken for a dead one."""
    with writing() as session:
        session.connection().execute(_RENEW, {"of_claim": claim, "moment": moment})


def _release(claim: str) -> None:
    with writing() as session:
        session.connection().execute(_RELEASE, {"of_claim": claim})


def _finish(timer_id: int, claim: str, now: datetime, outcome: str) -> None:
    with writing() as session:
        session.connection().execute(_FINISH, {"timer_id": timer_id, "of_claim": claim,
                                               "now": now, "outcome": outcome})


def _current(session, timer: Timer):
    """The game, seat and state if `timer` still belongs to the turn being played, else None."""
    game = session.get(Game, timer.game_id)
    seat = session.get(Seat, timer.seat_id)
    if game.status != RUNNING or game.clock_version != timer.clock_version:
        return None
    rules = rules_for(game.kind)
    state = rules.loads(game.state_json)
    if rules.to_move(state) != seat.number:
        return None
    return game, seat, rules, state


def _handle(timer_id: int, claim: str, now: datetime) -> str:
    """Act on one claimed timer. A reminder, or a timeout played with default moves, takes one
    write transaction: the check that the timer is still current, the moves (each through
    `submit_move`), the timer marked done. A computer player's turn is played move by move
    instead (`_time_out`), each move thought out before its transaction begins, so that a
    search never holds up the other writers."""
    with writing() as session:
        # Locked: a scheduler taking this claim over (it looked dead) waits for this one.
        timer = session.exec(_TIMER, params={"timer_id": timer_id}).first()
        if timer is None or timer.claim != claim or timer.status != CLAIMED:
            return "obsolete"
        session.exec(_GAME, params={"game_id": timer.game_id}).first()  # no move meanwhile
        current = _current(session, timer)
        if current is None:
            outcome, counted = "obsolete", "obsolete"
        elif timer.kind == REMINDER:
            game, seat, rules, state = current
            mail.your_turn(session, game, seat, rules, state, [], reminder=True)
            outcome, counted = "sent", "reminders"
        elif _bot_of(current[0], current[1]) is None:
            played = _default_moves(session, timer, now, current)
            outcome, counted = ("timed out", "timeouts") if played else ("obsolete", "obsolete")
        else:
            outcome = None
        if outcome is not None:
            timer.status, timer.done_at, timer.outcome = DONE, now, outcome
            session.add(timer)
            return counted
    return _time_out(timer_id, claim, now)


def _bot_of(game: Game, seat: Seat) -> str | None:
    """The computer player that plays this seat's turn, if any."""
    return seat.bot or (game.absent_bot if seat.absent else None)


def _default_moves(session, timer: Timer, now: datetime, current) -> int:
    """Play the seat's turn with default moves in the caller's transaction, each through
    `submit_move`, from `current` (what `_current` just gave: nothing has moved since);
    returns how many were played."""
    played = 0
    for _ in range(MAX_DEFAULT_MOVES):
        if played:
            current = _current(session, timer)
        if current is None:
            break
        game, seat, rules, state = current
        try:
            submit_move(None, rules.default_move(state), game.turn, seat_id=seat.id,
                        actor="timeout", via="scheduler", now=now, session=session)
        except ServiceError as exc:  # a person moved at the same moment: theirs stands
            current_app.logger.info("timeout of seat %s gave way: %s", seat.id, exc.message)
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
    played = 0
    for _ in range(MAX_DEFAULT_MOVES):
        with reading() as session:
            timer = session.get(Timer, timer_id)
            current = _current(session, timer)
            if current is None:
                break
            game, seat, rules, state = current
            bot = _bot_of(game, seat)
            turn, seat_id, watch_id = game.turn, seat.id, game.watch_id
        move, actor = _server_move(rules, state, bot, f"{watch_id}:{turn}")
        try:
            submit_move(None, move, turn, seat_id=seat_id, actor=actor, via="scheduler",
                        now=now)
        except ServiceError as exc:  # a person moved at the same moment: theirs stands
            current_app.logger.info("timeout of seat %s gave way: %s", seat_id, exc.message)
            break
        played += 1
    _finish(timer_id, claim, now, "timed out" if played else "obsolete")
    return "timeouts" if played else "obsolete"
