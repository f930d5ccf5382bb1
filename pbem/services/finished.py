"""The end of a game by its rules: `finish_game`, called in the transaction that makes the last
move (pbem.services.moves, whoever makes it).

It marks the game finished, stops its clock and announces it (pbem.services.events'
GameFinished): what a finished game causes beyond its final mails, a rating (pbem.services.ratings),
a tournament's standings (pbem.services.tournaments) and the queued review by the strong
computer player (pbem.services.reviews), listens there, so this module and the
move path import neither. Each listener must work with the move path's `Writer` (a Core
connection, `session.connection()`) as well as an ORM session, and with `game` a plain row.
"""

from __future__ import annotations

from datetime import datetime

from ..ground.models import FINISHED
from .deadlines import stop_clock
from .events import GameFinished, publish


def finish_game(session, game, now: datetime) -> None:
    """`game` is over by its rules: finished now, its clock stopped, and everything that
    follows (the listeners of GameFinished) done, in its transaction."""
    game.status, game.finished_at = FINISHED, now
    stop_clock(session, game, now)
    publish(GameFinished(session, game, now))
