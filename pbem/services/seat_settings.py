"""What a player sets for their own seat: vacation, time zone, language, the mail they want,
and coming back after being absent.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import cast

from flask import current_app

from ..ground import clock, i18n
from ..ground.db import (
    utcnow,
    writing,
)
from ..ground.i18n import _
from ..ground.models import (
    NOTIFY_CHOICES,
    PAUSED,
    RUNNING,
)
from .clock_controls import game_and_seat_to_move
from .deadlines import reset_clock
from .errors import (
    GameNotRunning,
    Rejected,
)
from .seats import seat_and_game


def take_vacation(token: str, days: object, now: datetime | None = None) -> datetime:
    """Pause the seat's own clock for whole days from now, within its budget for the game."""
    budget = current_app.config["GAMES_VACATION_DAYS"]
    now = now or utcnow()
    with writing() as session:
        seat, game = seat_and_game(session, token)
        left = budget - seat.vacation_days_used
        if isinstance(days, bool) or not isinstance(days, int) or not 0 < days <= left:
            raise Rejected(_("choose 1 to %(left)d days of vacation", left=left) if left > 0 else
                           _("you have used all %(budget)d days of vacation of this game",
                             budget=budget))
        if game.status not in (RUNNING, PAUSED):
            raise GameNotRunning(_("This game is %(status)s.",
                                   status=i18n.status_word(game.status)))
        active = seat.vacation_until is not None and seat.vacation_until > now
        seat.vacation_from = seat.vacation_from if active else now
        # (active: it has an end)
        seat.vacation_until = (cast(datetime, seat.vacation_until) if active else now
                               ) + timedelta(days=days)
        seat.vacation_days_used += days
        session.add(seat)
        __, to_move = game_and_seat_to_move(session, cast(int, game.id))  # a saved game's
        if game.status == RUNNING and to_move is not None and to_move.id == seat.id:
            reset_clock(session, game, seat, now)
        return seat.vacation_until


def end_vacation_now(token: str, now: datetime | None = None) -> int:
    """End the seat's vacation now; the whole days it did not use are given back (returned)."""
    now = now or utcnow()
    with writing() as session:
        seat, game = seat_and_game(session, token)
        if seat.vacation_until is None or seat.vacation_until <= now:
            raise Rejected(_("you are not on vacation, so there is nothing to end"))
        if game.status not in (RUNNING, PAUSED):
            raise GameNotRunning(_("This game is %(status)s.",
                                   status=i18n.status_word(game.status)))
        unused = (seat.vacation_until - now) // timedelta(days=1)
        seat.vacation_until = now
        seat.vacation_days_used = max(0, seat.vacation_days_used - unused)
        session.add(seat)
        __, to_move = game_and_seat_to_move(session, cast(int, game.id))  # a saved game's
        if game.status == RUNNING and to_move is not None and to_move.id == seat.id:
            reset_clock(session, game, seat, now)
        return unused


def set_language(token: str, code: str) -> str:
    """The seat's own language, for its pages and mails; returns it."""
    try:
        code = i18n.check_language(code)
    except ValueError as exc:
        raise Rejected(str(exc)) from None
    with writing() as session:
        seat, __ = seat_and_game(session, token)
        seat.language = code
        session.add(seat)
    i18n.use(code)
    return code


def set_timezone(token: str, name: str) -> None:
    """The seat's own time zone, for the times its pages and mails show."""
    try:
        clock.zone(name)
    except ValueError as exc:
        raise Rejected(str(exc)) from None
    with writing() as session:
        seat, __ = seat_and_game(session, token)
        seat.timezone = name
        session.add(seat)


def come_back(token: str) -> None:
    """An absent seat says it will play again: its turns wait for it from the next one on."""
    with writing() as session:
        seat, __ = seat_and_game(session, token)
        seat.absent, seat.timeouts_in_row = False, 0
        session.add(seat)


def set_notify(token: str, choice: str) -> None:
    if choice not in NOTIFY_CHOICES:
        raise Rejected(_("choose one of the offered mail settings"))
    with writing() as session:
        seat, __ = seat_and_game(session, token)
        seat.notify = choice
        session.add(seat)
