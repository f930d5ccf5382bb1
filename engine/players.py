"""What every game's computer players share: finding one by name, with its random input checked.

Each game's `bots` package holds its own players (pure functions of one seat's view); this
module only looks one up, the same way for every game.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

Bot = TypeVar("Bot", bound=Callable[..., Any])


def bot_named(bots: Mapping[str, Bot], name: str, rng: object) -> Bot:
    """Bot `name` of a game's `bots`; ValueError names the bots there are, TypeError unless
    `rng` is an explicit random.Random."""
    bot = bots.get(name)
    if bot is None:
        raise ValueError(f"unknown bot {name!r}; the bots are {', '.join(bots)}")
    if not isinstance(rng, random.Random):
        raise TypeError("a bot needs an explicit random.Random")
    return bot
