"""The end of a game as a value: final scores with their breakdown, and the winners."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..words import say
from .scoring import Breakdown, final_breakdown, intermediate_breakdown
from .state import GameState


@dataclass(frozen=True)
class Outcome:
    """Who won and why: totals include the intermediate scoring; ties go to pieces left."""

    reason: str
    scores: tuple[int, ...]
    winners: tuple[int, ...]
    pieces_left: tuple[int, ...]
    breakdown: Breakdown
    intermediate: Breakdown | None

    def to_dict(self, players: tuple[str, ...]) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "scores": dict(zip(players, self.scores)),
            "winners": [players[s] for s in self.winners],
            "pieces_left": dict(zip(players, self.pieces_left)),
            "breakdown": self.breakdown.to_dict(),
            "intermediate": self.intermediate.to_dict() if self.intermediate else None,
        }


def intermediate_of(state: GameState) -> Breakdown | None:
    """The intermediate scoring as it happened, or None before the deck first ran out."""
    if state.intermediate is None:
        return None
    return intermediate_breakdown(state.board, state.players, state.intermediate)


def outcome(state: GameState) -> Outcome | None:
    """The result of a finished game, or None while it is still being played."""
    if not state.is_over:
        return None
    pieces = tuple(m + a for m, a in zip(state.monastery_supply, state.advisor_supply))
    best = max(state.scores)
    leaders = [s for s in state.seats if state.scores[s] == best]
    most_pieces = max(pieces[s] for s in leaders)
    winners = tuple(s for s in leaders if pieces[s] == most_pieces)
    # The reason as a Phrase: its English text, and its message id for a server to translate.
    return Outcome(say(state.end_reason) if state.end_reason else "", state.scores, winners, pieces,
                   final_breakdown(state.board, state.players, state.monasteries, state.advisors),
                   intermediate_of(state))
