"""What happens when a deadline passes: the one place to read or change it.

A timer (pbem.services.deadlines sets them) is due: a reminder is mailed, or the seat's turn is
played for it, every move through `submit_move` like any other: the computer player's moves for
a computer player's seat (or for an absent seat, when the game gives those to one), else the
default moves. A turn the server played for a person counts as a timeout; after enough of them
in a row the seat is absent, and the server plays its turns at once until it moves again. What
the server does at each step is `Policy`'s (its one instance, `POLICY`): a rule changed there
is changed everywhere.

Owns the timers' claims (taken atomically, so any number of schedulers may run: each timeout
is played once), acting on a claimed timer, the clocks of games from before the scheduler and
the outage guard. The scheduler (pbem.scheduler.jobs) only decides when and how many: it
claims due work and runs each piece in a transaction of its own through these functions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import NamedTuple

from flask import current_app
from flask_babel import lazy_gettext as L_
from sqlalchemy import bindparam, update
from sqlmodel import col, select

from ..games import GameRules, rules_for
from ..ground import i18n
from ..ground.db import (
    claim_rows,
    insert_if_missing,
    is_status,
    locked,
    new_claim,
    reading,
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
from . import notices
from .deadlines import add_pause, reset_clock, start_clock
from .errors import ServiceError
from .events import TurnTimedOut
from .mail import kinds
from .mail.sending import send
from .moves import Actor, submit_move

# The lines of a timeout keep the logger name operators know them by (docs/deploy.md).
logger = logging.getLogger("pbem.scheduler.jobs")

# The most moves the server plays for one seat in one go: its whole turn, however long. A turn
# may be many moves (in a card game every card bought, built, paid for or discarded, an offer
# to each opponent), but far fewer than this: a bound against a game that would never hand the
# move on, not a limit a real turn reaches.
MAX_DEFAULT_MOVES = 500
JOB = "scheduler"  # its JobState row: when it last ran (the outage guard)


# --- the policy ---------------------------------------------------------------------------------

class Policy:
    """What the server does when a seat's deadline passes. Change a timeout's rule here (or
    give `POLICY` another instance); everything else only carries it out."""

    def is_absent(self, seat) -> bool:
        """Whether `seat` is absent now that it missed another deadline (its
        `timeouts_in_row` already counts this one)."""
        return seat.timeouts_in_row >= current_app.config["GAMES_ABSENT_AFTER_TIMEOUTS"]

    def default_move(self, rules: GameRules, state) -> str:
        """The move played for a person who let the deadline pass."""
        return rules.default_move(state)

    def server_move(self, rules: GameRules, state, bot: str | None,
                    seed: str) -> tuple[str, Actor]:
        """The move the server makes for a seat, and who it is logged as: computer player
        `bot`'s (its random input `seed` is public, the spectator page's id and the turn: it
        only varies its play and reveals nothing hidden), or the default move."""
        if bot is not None:
            try:
                return rules.bot_move(state, bot, seed), Actor.BOT
            except Exception:  # a bot's failure must not stop the game: the default move stands in
                current_app.logger.exception("computer player %s failed; default move played",
                                             bot)
        return self.default_move(rules, state), Actor.TIMEOUT


POLICY = Policy()


def on_turn_timed_out(event: TurnTimedOut) -> None:
    """The server ended a person's turn for them: tell the seat, count it, maybe mark it absent
    (and tell the organisers). Listens to TurnTimedOut, in the move's transaction."""
    session, game, seat = event.session, event.game, event.seat
    seat.timeouts_in_row += 1
    if not seat.absent and POLICY.is_absent(seat):
        seat.absent = True
        send(session, kinds.ADMIN, heading=L_("%(name)s is absent from %(game)s", name=seat.name,
                                              game=f"{game.title} #{game.id}"), lines=[
            L_("Deadlines %(player)s (%(colour)s) missed in a row: %(count)d.",
               player=f"{seat.name} <{seat.email}>", colour=i18n.lazy_colour(seat.colour),
               count=seat.timeouts_in_row),
            L_("From now on the server plays the default move at once at each of their turns, "
               "until they make a move again."),
        ], game=game)
    send(session, kinds.PLAYED_FOR_YOU, game=game, seat=seat, lines=event.lines,
         absent=seat.absent)


# --- claims -------------------------------------------------------------------------------------

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
_FINISH = (update(Timer).where(col(Timer.id) == bindparam("timer_id"),
                               col(Timer.claim) == bindparam("of_claim"))
           .values(status=DONE, done_at=bindparam("now"), outcome=bindparam("outcome")))


def transaction():
    """A write transaction for a batch of claimed timers (the scheduler acts on several in
    one, each in a savepoint of its own: `act`)."""
    return writing()


def claim_due(now: datetime, most: int) -> tuple[str, list[int]]:
    """Claim at most `most` timers due at `now` that no one holds (and take back those of a
    claim so old that its scheduler died); the claim and its timers, in the order they fell
    due."""
    claim = new_claim()
    given_up = now - timedelta(seconds=current_app.config["SCHEDULER_CLAIM_SECONDS"])
    with writing() as session:
        session.exec(update(Timer).where(is_status(Timer.status, CLAIMED),
                                         col(Timer.claimed_at) < given_up)
                     .values(status=PENDING, claim=None, claimed_at=None))
        # On PostgreSQL each claimer takes due timers no other claimer holds (SKIP LOCKED).
        claim_rows(session, Timer, select(Timer.id)
                   .where(is_status(Timer.status, PENDING), Timer.due_at <= now)
                   .order_by(col(Timer.due_at), col(Timer.id)).limit(most),
                   status=CLAIMED, claim=claim, claimed_at=now)
        ids = list(session.exec(select(Timer.id).where(is_status(Timer.status, CLAIMED),
                                                       Timer.claim == claim)
                                .order_by(col(Timer.due_at), col(Timer.id))))
    return claim, ids


def renew(connection, claim: str, moment: datetime) -> None:
    """Mark the timers still held by `claim` as held at `moment` (a long run is not taken for a
    dead one), on the caller's connection."""
    connection.execute(_RENEW, {"of_claim": claim, "moment": moment})


def release(claim: str) -> None:
    """Give back the timers `claim` still holds, for the next run."""
    with writing() as session:
        session.connection().execute(_RELEASE, {"of_claim": claim})


def _finish(connection, timer_id: int, claim: str, now: datetime, outcome: str) -> None:
    connection.execute(_FINISH, {"timer_id": timer_id, "of_claim": claim, "now": now,
                                 "outcome": outcome})


# --- acting on a timer --------------------------------------------------------------------------

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


def current(session, timer, lock: bool = True) -> Turn | None:
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


def act(session, timer_id: int, claim: str, now: datetime) -> str | None:
    """Act on one claimed timer in the caller's transaction: the check that the timer is still
    current, a reminder or the default moves of a timeout (each through `submit_move`), the
    timer marked done; returns what it counts as ("reminders", "timeouts", "obsolete"). None
    for a computer player's turn, which `play_server_turn` plays (after this transaction: its
    moves are thought out outside any)."""
    connection = session.connection()
    timer = connection.execute(_TIMER, {"timer_id": timer_id}).first()
    if timer is None or timer.claim != claim or timer.status != CLAIMED:
        return "obsolete"
    turn = current(session, timer)
    if turn is None:
        outcome, counted = "obsolete", "obsolete"
    elif timer.kind == REMINDER:
        game, seat = session.get(Game, turn.game_id), session.get(Seat, turn.seat_id)
        if not notices.reminder(session, game, seat, now):  # a chat target may stand in
            send(session, kinds.REMINDER, game=game, seat=seat, news=[])
        outcome, counted = "sent", "reminders"
    elif turn.bot is None:
        played = play_default_moves(session, timer, now, turn)
        outcome, counted = ("timed out", "timeouts") if played else ("obsolete", "obsolete")
        if played:
            logger.info("timeout: game %d seat %d missed its deadline; %d default move(s) "
                        "played", turn.game_id, turn.seat + 1, played)
    else:
        return None
    _finish(connection, timer_id, claim, now, outcome)
    return counted


def play_default_moves(session, timer, now: datetime, turn: Turn) -> int:
    """Play the seat's turn with default moves in the caller's transaction, each through
    `submit_move`, from `turn` (what `current` just gave: nothing has moved since); returns
    how many were played."""
    def submit(turn: Turn, move: str, actor: Actor) -> None:
        submit_move(None, move, turn.turn, seat_id=turn.seat_id, actor=actor, via="scheduler",
                    now=now, session=session)

    return _play_turn(turn, lambda: current(session, timer), submit)


def play_server_turn(timer_id: int, claim: str, now: datetime) -> str:
    """Play the seat's turn, each move in a transaction of its own through `submit_move` (a
    computer player thinks before its transaction begins, so a search holds up no other
    writer): a computer player's moves for a computer player's seat, or for an absent seat
    when the game gives those to one; else the default moves. Returns what it counts as."""
    def read() -> Turn | None:
        with reading() as session:
            timer = session.connection().execute(_TIMER_READ, {"timer_id": timer_id}).first()
            return current(session, timer, lock=False) if timer is not None else None

    def submit(turn: Turn, move: str, actor: Actor) -> None:
        submit_move(None, move, turn.turn, seat_id=turn.seat_id, actor=actor, via="scheduler",
                    now=now)

    first = read()
    played = _play_turn(first, read, submit)
    with writing() as session:
        _finish(session.connection(), timer_id, claim, now,
                "timed out" if played else "obsolete")
    if played:
        logger.info("turn played by the server: game %d seat %d, %d move(s) by %s",
                    first.game_id, first.seat + 1, played,
                    f"computer player {first.bot}" if first.bot else "the default move")
    return "timeouts" if played else "obsolete"


def _play_turn(turn: Turn | None, again: Callable[[], Turn | None],
               submit: Callable[[Turn, str, Actor], None]) -> int:
    """The server's moves for the seat of `turn` until its turn ends (`again` reads the turn
    after each move: None once it is over), each the policy's and made by `submit`; returns
    how many were made. A person who moved meanwhile stops it: their move stands."""
    played = 0
    for _ in range(MAX_DEFAULT_MOVES):
        if played:
            turn = again()
        if turn is None:
            break
        move, actor = POLICY.server_move(rules_for(turn.kind), turn.state, turn.bot,
                                         f"{turn.watch_id}:{turn.turn}")
        try:
            submit(turn, move, actor)
        except ServiceError as exc:  # a person moved at the same moment: theirs stands
            current_app.logger.info("timeout of seat %s gave way: %s", turn.seat_id,
                                    exc.message)
            break
        played += 1
    return played


# --- clocks the scheduler looks after -----------------------------------------------------------

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
        games = session.exec(select(Game).join(Timer, col(Timer.game_id) == Game.id)
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
            send(session, kinds.ADMIN, heading=L_("the scheduler was not running"), lines=[
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
