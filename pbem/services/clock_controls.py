"""The organisers' clock controls: extend a deadline, pause and resume a game, the players told
by mail. The clock's timers are pbem.services.deadlines'; what a passing deadline does is
pbem.services.timeouts'.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import cast

from flask_babel import lazy_gettext as L_
from sqlmodel import Session, select

from ..games import rules_for
from ..ground import i18n
from ..ground.db import (
    get_row,
    utcnow,
    writing,
)
from ..ground.models import (
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
)
from .mail import kinds
from .mail.sending import send
from .seats import seats_of_game


def game_and_seat_to_move(session: Session, game_id: int) -> tuple[Game, Seat | None]:
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
    for seat in seats_of_game(session, cast(int, game.id)):  # a saved game's
        send(session, kinds.NOTICE, game=game, seat=seat, heading=subject, lines=lines)


def extend_deadline(game_id: int, hours: int | None, now: datetime | None = None,
                    also: Callable[[Session], None] | None = None) -> datetime:
    """Give the seat to move `hours` more (1 to 336); returns the new deadline.

    `also` runs in the same transaction (the admin pages write their audit entry there)."""
    if isinstance(hours, bool) or not isinstance(hours, int) or not 0 < hours <= 336:
        raise Malformed("extend by 1 to 336 hours")
    now = now or utcnow()
    with writing() as session:
        game, seat = game_and_seat_to_move(session, game_id)
        if game.status != RUNNING:
            raise GameNotRunning(f"game {game.id} is {game.status}; only a running game has "
                                 "a deadline to extend")
        seat = cast(Seat, seat)  # running: a seat is to move
        game.extension_hours += hours
        reset_clock(session, game, seat, now)
        _tell_players(session, game, L_("The deadline was extended"),
                      [L_("The deadline of %(name)s (%(colour)s) was extended by %(hours)d "
                          "hours.", name=seat.name, colour=i18n.lazy_colour(seat.colour),
                          hours=hours)])
        if also:
            also(session)
        return cast(datetime, game.deadline_at)  # reset_clock set it


def pause_game(game_id: int, now: datetime | None = None,
               also: Callable[[Session], None] | None = None) -> None:
    """Stop the clock of a running game: no reminders, no timeouts, no moves until resumed."""
    now = now or utcnow()
    with writing() as session:
        game, __ = game_and_seat_to_move(session, game_id)
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
        game, seat = game_and_seat_to_move(session, game_id)
        if game.status != PAUSED:
            raise GameNotRunning(f"game {game.id} is {game.status}, not paused")
        seat = cast(Seat, seat)  # paused, not over: a seat is to move
        add_pause(game, cast(datetime, game.paused_at), now)  # paused: since then
        game.status, game.paused_at = RUNNING, None
        reset_clock(session, game, seat, now)
        _tell_players(session, game, L_("The game goes on"),
                      [L_("The game is running again. %(name)s (%(colour)s) is to move.",
                          name=seat.name, colour=i18n.lazy_colour(seat.colour))])
        if also:
            also(session)
        return game.deadline_at


