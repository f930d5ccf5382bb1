"""Time and the seats' own settings: the organisers' clock controls (extend a deadline, pause,
resume a game) and what a player sets for their seat (vacation, time zone, language, the
mail they want, coming back after being absent). The clock's timers are pbem.services.deadlines'.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from flask import current_app
from flask_babel import lazy_gettext as L_
from sqlmodel import Session, select

from ..games import rules_for
from ..ground import clock, i18n
from ..ground.db import (
    get_row,
    utcnow,
    writing,
)
from ..ground.i18n import _
from ..ground.models import (
    NOTIFY_CHOICES,
    PAUSED,
    RUNNING,
    Game,
    Seat,
)
from .deadlines import add_pause, reset_clock, stop_clock
from .errors import (
    GameNotRunning,
    Malformed,
    NotFound,
    Rejected,
)
from .mail import kinds
from .mail.sending import send
from .seats import seat_and_game, seats_of_game


def _game_and_seat_to_move(session: Session, game_id: int) -> tuple[Game, Seat | None]:
    game = get_row(session, Game, game_id, with_for_update=True) \
        if isinstance(game_id, int) else None
    if game is None:
        raise NotFound(f"there is no game {game_id}")
    rules = rules_for(game.kind)
    to_move = rules.to_move(rules.loads(game.state_json))
    seat = None if to_move is None else session.exec(
        select(Seat).where(Seat.game_id == game.id, Seat.number == to_move)).one()
    return game, seat


def _tell_players(session: Session, game: Game, subject: str, lines: list[str]) -> None:
    for seat in seats_of_game(session, game.id):
        send(session, kinds.NOTICE, game=game, seat=seat, heading=subject, lines=lines)


def extend_deadline(game_id: int, hours: int, now: datetime | None = None,
                    also: Callable[[Session], None] | None = None) -> datetime:
    """Give the seat to move `hours` more (1 to 336); returns the new deadline.

    `also` runs in the same transaction (the admin pages write their audit entry there)."""
    if isinstance(hours, bool) or not isinstance(hours, int) or not 0 < hours <= 336:
        raise Malformed("extend by 1 to 336 hours")
    now = now or utcnow()
    with writing() as session:
        game, seat = _game_and_seat_to_move(session, game_id)
        if game.status != RUNNING:
            raise GameNotRunning(f"game {game.id} is {game.status}; only a running game has "
                                 "a deadline to extend")
        game.extension_hours += hours
        reset_clock(session, game, seat, now)
        _tell_players(session, game, L_("The deadline was extended"),
                      [L_("The deadline of %(name)s (%(colour)s) was extended by %(hours)d "
                          "hours.", name=seat.name, colour=i18n.lazy_colour(seat.colour),
                          hours=hours)])
        if also:
            also(session)
        return game.deadline_at


def pause_game(game_id: int, now: datetime | None = None,
               also: Callable[[Session], None] | None = None) -> None:
    """Stop the clock of a running game: no reminders, no timeouts, no moves until resumed."""
    now = now or utcnow()
    with writing() as session:
        game, __ = _game_and_seat_to_move(session, game_id)
        if game.status != RUNNING:
            raise GameNotRunning(f"game {game.id} is {game.status}, not running")
        game.status, game.paused_at = PAUSED, now
        stop_clock(session, game, now)
        _tell_players(session, game, L_("The game is paused"), [
            L_("An organiser paused the game: no moves, reminders or deadlines until it is "
               "resumed. You will get a mail then.")])
        if also:
            also(session)


def resume_game(game_id: int, now: datetime | None = None,
                also: Callable[[Session], None] | None = None) -> datetime | None:
    """Start a paused game's clock again; the pause does not count against the player."""
    now = now or utcnow()
    with writing() as session:
        game, seat = _game_and_seat_to_move(session, game_id)
        if game.status != PAUSED:
            raise GameNotRunning(f"game {game.id} is {game.status}, not paused")
        add_pause(game, game.paused_at, now)
        game.status, game.paused_at = RUNNING, None
        reset_clock(session, game, seat, now)
        _tell_players(session, game, L_("The game goes on"),
                      [L_("The game is running again. %(name)s (%(colour)s) is to move.",
                          name=seat.name, colour=i18n.lazy_colour(seat.colour))])
        if also:
            also(session)
        return game.deadline_at


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
        seat.vacation_until = (seat.vacation_until if active else now) + timedelta(days=days)
        seat.vacation_days_used += days
        session.add(seat)
        __, to_move = _game_and_seat_to_move(session, game.id)
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
        __, to_move = _game_and_seat_to_move(session, game.id)
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
