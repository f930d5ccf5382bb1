"""Computer players for Kardinal & König, as pure functions of one seat's view.

A bot never sees a `GameState`: `choose_move(name, view, rng)` takes the `SeatView` that
`engine.view_for(state, seat)` gives the seat to move (what that seat's player would see, no
more) and an explicit `random.Random`, and returns a legal move. The same view and random input
give the same move, whatever the hidden cards are. This package owns the bots and their
heuristics; playing them against each other is `engine.arena`, seating them in a hosted game is
`pbem`'s.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from ...players import bot_named
from ..board import Board
from ..moves import Move
from ..view import SeatView
from .players import greedy_bot, random_bot, strong_bot
from .view_state import check_view

Bot = Callable[[SeatView, random.Random, Board], Move]

BOTS: dict[str, Bot] = {"random": random_bot, "greedy": greedy_bot, "strong": strong_bot}
BOT_NAMES = tuple(BOTS)


def choose_move(name: str, view: SeatView, rng: random.Random, board: Board | None = None) -> Move:
    """The move bot `name` makes from `view` (the seat to move's own view), using `rng`.

    TypeError if `view` is not a `SeatView`; ValueError for an unknown bot or a view that is not
    of the seat to move."""
    bot = bot_named(BOTS, name, rng)
    return bot(view, rng, check_view(view, board))


__all__ = ["BOTS", "BOT_NAMES", "Bot", "choose_move"]
