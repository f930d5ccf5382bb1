"""Each turn's deadline and the timers that watch it: reminders and the timeout.

The deadline of a turn is always computed the same way: the game's move time (plus any hours an
admin added) of running clock after the turn began, where the clock stands still on weekends
(if the game pauses then), during the seat's vacation, and during the game's pauses and the
scheduler's outages in this turn. Whenever an input changes, `start_clock` or `reset_clock`
computes it anew, bumps the game's clock version (older timers become obsolete) and writes
fresh timers. The scheduler (`pbem.scheduler.jobs`) only acts on timers that are due and still current.

The functions here change the game they are given and add rows to the session; they do not add
the game to it. An ORM game belongs to the caller's session already, which writes its changes;
the move path's plain row (pbem.ground.rows) is written by its caller (`pbem.services.moves.submit_move`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from flask import current_app
from sqlalchemy import bindparam, update
from sqlmodel import Session, col

from ..ground import clock
from ..ground.db import Cached, insert_later, insert_pending, is_status
from ..ground.i18n import gettext as _
from ..ground.models import DONE, PENDING, REMINDER, TIMEOUT, Game, Seat, Timer
from .errors import SettingsError

MIN_HOURS, MAX_HOURS = 12, 14 * 24


@dataclass(frozen=True)
class TimeControl:
    deadline_hours: int
    reminder_hours: tuple[int, ...]
    weekend_pause: bool
    timezone: str

    @property
    def reminders_text(self) -> str:
        return ",".join(str(h) for h in self.reminder_hours)


def _problem(field: str, message: str) -> SettingsError:
    """A refused setting that names the create form's input it is about (`field`)."""
    return SettingsError(message, field=field)


def parse_hours(text: str) -> tuple[int, ...]:
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    if not all(p.isascii() and p.isdigit() for p in parts):
        raise _problem("reminders", _("reminders are whole numbers of hours before the "
                                      "deadline, separated by commas, like 24,2"))
    return tuple(sorted({int(p) for p in parts}, reverse=True))


def time_control(deadline_hours: int | None = None, reminder_hours: str | None = None,
                 weekend_pause: bool | None = None, timezone: str | None = None) -> TimeControl:
    """A checked time control; what is not given comes from the settings."""
    config = current_app.config
    hours = config["GAMES_MOVE_DEADLINE_HOURS"] if deadline_hours is None else deadline_hours
    if isinstance(hours, bool) or not isinstance(hours, int) or \
            not MIN_HOURS <= hours <= MAX_HOURS:
        raise _problem("deadline_hours", _("the move deadline must be %(least)d hours to 14 "
                                           "days (%(most)d hours), not %(hours)s",
                                           least=MIN_HOURS, most=MAX_HOURS, hours=repr(hours)))
    reminders = parse_hours(config["GAMES_REMINDER_HOURS"] if reminder_hours is None
                            else reminder_hours)
    if any(not 0 < h < hours for h in reminders):
        raise _problem("reminders", _("each reminder must come 1 to %(most)d hours before the "
                                      "deadline", most=hours - 1))
    zone = config["GAMES_TIMEZONE"] if timezone is None else timezone
    try:
        clock.zone(zone)
    except ValueError:
        raise _problem("timezone", _("unknown time zone %(name)s; use a name like "
                                     "Europe/Berlin or UTC", name=repr(zone))) from None
    pause = config["GAMES_WEEKEND_PAUSE"] if weekend_pause is None else bool(weekend_pause)
    return TimeControl(hours, reminders, pause, zone)


def _pauses(game: Game, seat: Seat) -> list[clock.Pause]:
    pauses = [(datetime.fromisoformat(a), datetime.fromisoformat(b))
              for a, b in json.loads(game.clock_pauses)]
    if seat.vacation_from and seat.vacation_until:
        pauses.append((seat.vacation_from, seat.vacation_until))
    return pauses


def add_pause(game: Game, start: datetime, end: datetime) -> None:
    """Record that this turn's clock stood still from `start` to `end`."""
    pauses = json.loads(game.clock_pauses)
    pauses.append([start.isoformat(), end.isoformat()])
    game.clock_pauses = json.dumps(pauses)


def deadline_of(game: Game, seat: Seat) -> datetime:
    """The deadline of the current turn of `seat`, from the game's clock inputs."""
    return clock.add_running_time(
        game.turn_started_at, timedelta(hours=game.deadline_hours + game.extension_hours),
        tz=game.timezone, weekend_pause=game.weekend_pause, pauses=_pauses(game, seat))


# Built once and run on the session's connection: every move that ends a turn runs it, and
# building it (and the ORM's bookkeeping of a bulk UPDATE) cost more than running it. No Timer
# object is kept in a session for its status, so none needs to learn of it.
# The status written into the statement (is_status): the game's waiting timers are found in
# the partial index ix_timer_waiting, not among every timer the game ever had.
_OBSOLETE = Cached(update(Timer)
                   .where(col(Timer.game_id) == bindparam("of_game"),
                          is_status(Timer.status, PENDING))
                   .values(status=DONE, done_at=bindparam("now"), outcome="obsolete"))


def stop_clock(session: Session, game: Game, now: datetime) -> None:
    """No deadline any more (the game ended or is paused): every waiting timer is obsolete."""
    game.clock_version += 1
    game.deadline_at = None
    insert_pending(session, Timer)  # timers written earlier in this transaction wait too
    _OBSOLETE.execute(session.connection(), [{"of_game": game.id, "now": now}])


def start_clock(session: Session, game: Game, seat: Seat, now: datetime) -> None:
    """A new turn for `seat` begins now."""
    game.turn_started_at = now
    game.extension_hours = 0
    game.clock_pauses = "[]"
    reset_clock(session, game, seat, now)


def reset_clock(session: Session, game: Game, seat: Seat, now: datetime) -> None:
    """Compute the current turn's deadline anew and write its timers.

    An absent seat's timeout is due at once and it gets no reminders; so is a computer
    player's turn, which the scheduler plays when it handles that timer."""
    stop_clock(session, game, now)
    if seat.absent or seat.bot is not None:
        game.deadline_at = now
    else:
        game.deadline_at = deadline_of(game, seat)
        for hours in parse_hours(game.reminder_hours):
            due = game.deadline_at - timedelta(hours=hours)
            if due > now:
                _add_timer(session, game, seat, REMINDER, due)
    _add_timer(session, game, seat, TIMEOUT, game.deadline_at)


def _add_timer(session: Session, game: Game, seat: Seat, kind: str, due: datetime) -> None:
    insert_later(session, Timer, {"game_id": game.id, "seat_id": seat.id, "kind": kind,
                                  "due_at": due, "clock_version": game.clock_version})
