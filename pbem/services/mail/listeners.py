"""The mail that follows what the services announce (pbem.services.events), registered in
pbem.services: the mails of a seat handed over.
"""

from __future__ import annotations

from flask_babel import lazy_gettext as L_
from sqlmodel import col, select

from ...ground import i18n
from ...ground.models import Seat
from ..events import SeatHandedOver
from . import kinds
from .sending import send


def on_seat_handed_over(event: SeatHandedOver) -> None:
    """The one who played the seat (a person) is told it was handed over, and the game's other
    players who plays it from now on."""
    session, game, seat = event.session, event.game, event.seat
    if seat.bot is None:
        send(session, kinds.HANDED_OVER, game=game, seat=seat, new_name=str(event.new_name))
    others = session.exec(select(Seat).where(Seat.game_id == game.id, Seat.id != seat.id)
                          .order_by(col(Seat.number))).all()
    for other in others:
        send(session, kinds.NOTICE, game=game, seat=other, heading=L_("A seat changed hands"),
             lines=[L_("An organiser handed the seat of %(old)s (%(colour)s) to %(new)s, who "
                       "plays it from now on.", old=seat.name,
                       colour=i18n.lazy_colour(seat.colour), new=event.new_name)])
