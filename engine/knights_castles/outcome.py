"""Who won a finished game of Knights & Castles, as a value with its reasons."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..words import say
from .state import GameState


@dataclass(frozen=True)
class Outcome:
    """The end of a game: every seat's gold and the seats with the most (equal gold shares)."""

    gold: tuple[int, ...]
    winners: tuple[int, ...]
    reason: str

    @property
    def scores(self) -> tuple[int, ...]:
        """Each seat's gold, the game's only score (the name every game's outcome has)."""
        return self.gold

    def to_dict(self, players: tuple[str, ...]) -> dict[str, Any]:
        return {"gold": dict(zip(players, self.gold)),
                "winners": [players[s] for s in self.winners], "reason": self.reason}


def outcome(state: GameState) -> Outcome | None:
    """The outcome once the deck is empty; None while the game goes on."""
    if not state.is_over:
        return None
    best = max(state.gold)
    return Outcome(state.gold, tuple(s for s in state.seats if state.gold[s] == best),
                   say("the last card was drawn from the deck; the most gold wins"))


def score(state: GameState) -> dict[str, int]:
    """Each seat's gold (the game's only score), by colour."""
    return dict(zip(state.players, state.gold))
