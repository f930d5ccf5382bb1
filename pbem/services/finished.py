"""What follows the end of a game: `on_game_finished`, the one hook, called in the transaction
that finishes a game (pbem.services.moves, where the last move is made, whoever makes it).

It rates a rated game (pbem.services.ratings) and counts a tournament's game (its standings,
and the round's end queued: pbem.services.tournaments). Each call here must work with the move path's `Writer` (a Core connection,
`session.connection()`) as well as an ORM session, and with `game` a plain row.
"""

from __future__ import annotations

from datetime import datetime

from . import ratings, reviews, tournaments


def on_game_finished(session, game, now: datetime | None = None) -> None:
    """Everything a finished game causes beyond its final mails, in its transaction."""
    ratings.rate_game(session, game, now)
    tournaments.game_ended(session, game, now)
    reviews.queue_review(session, game, now)
