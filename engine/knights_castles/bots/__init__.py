"""Computer players for Knights & Castles, as pure functions of one seat's view.

The same contract as Kardinal & König's bots: `choose_move(name, view, rng)` takes the
`SeatView` that `view_for(state, seat)` gives the seat to move (whether the turn's player, the
target of a disaster or the target of an offer) and an explicit `random.Random`, and returns a
legal move; the same view and random input give the same move, whatever the hidden cards are.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from ...players import bot_named
from ..moves import Move
from ..view import SeatView
from .players import greedy_bot, random_bot
from .strong import strong_bot
from .view_state import check_view

Bot = Callable[[SeatView, random.Random], Move]

BOTS: dict[str, Bot] = {"random": random_bot, "greedy": greedy_bot, "strong": strong_bot}
BOT_NAMES = tuple(BOTS)


def choose_move(name: str, view: SeatView, rng: random.Random) -> Move:
    """The move bot `name` makes from `view` (the seat to move's own view), using `rng`.

    TypeError if `view` is not a `SeatView`; ValueError for an unknown bot or a view that is not
    of the seat to move."""
    bot = bot_named(BOTS, name, rng)
    check_view(view)
    return bot(view, rng)
