"""What one seat, or a spectator, may see of a position.

A `SeatView` is built from a `GameState` by copying only public facts and the viewer's own
hand and draws, so a page or an email given a view cannot show what its reader may not see.
It never holds another seat's cards, the deck order or the seed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .board import Board
from .scoring import intermediate_breakdown
from .state import EMPTY, JOKER_OTHER, GameState


@dataclass(frozen=True)
class SeatView:
    """One seat's (or, with seat None, a spectator's) view of a position."""

    board_id: str
    players: tuple[str, ...]
    seat: int | None
    start: int
    current: int
    phase: str
    draws_left: int
    ply: int
    hand: tuple[str, ...] | None
    drawn: tuple[str, ...] | None
    hand_sizes: tuple[int, ...]
    face_up: tuple[str, ...]
    discard: tuple[str, ...]
    deck_size: int
    removed: tuple[str, ...]
    monasteries: tuple[tuple[str, str], ...]
    advisors: tuple[tuple[str, tuple[int, ...]], ...]
    monastery_supply: tuple[int, ...]
    advisor_supply: tuple[int, ...]
    scores: tuple[int, ...]
    exhaustions: int
    last_seat: int | None
    end_reason: str | None
    intermediate: dict[str, Any] | None
    joker: str = JOKER_OTHER  # the game's joker rule, which every player is told

    @property
    def colour(self) -> str | None:
        return None if self.seat is None else self.players[self.seat]

    @property
    def is_my_turn(self) -> bool:
        return self.seat is not None and self.seat == self.current and self.phase != "over"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data; colours stand for seats."""
        players = self.players
        return {
            "board": self.board_id,
            "players": list(players),
            "seat": self.seat,
            "colour": self.colour,
            "start_player": players[self.start],
            "to_move": players[self.current] if self.phase != "over" else None,
            "phase": self.phase,
            "draws_left": self.draws_left,
            "ply": self.ply,
            "hand": list(self.hand) if self.hand is not None else None,
            "drawn": list(self.drawn) if self.drawn is not None else None,
            "hand_sizes": dict(zip(players, self.hand_sizes)),
            "face_up": list(self.face_up),
            "discard": dict(Counter(self.discard)),
            "deck_size": self.deck_size,
            "removed": dict(Counter(self.removed)),
            "monasteries": dict(self.monasteries),
            "advisors": {country: {players[s]: n for s, n in enumerate(counts) if n}
                         for country, counts in self.advisors},
            "supply": {players[s]: {"monasteries": m, "advisors": a} for s, (m, a)
                       in enumerate(zip(self.monastery_supply, self.advisor_supply))},
            "scores": dict(zip(players, self.scores)),
            "deck_runs_out": self.exhaustions,
            "last_player": players[self.last_seat] if self.last_seat is not None else None,
            "end_reason": self.end_reason,
            "intermediate": self.intermediate,
        }


@lru_cache(maxsize=256)
def _intermediate_dict(board: Board, players: tuple[str, ...],
                      monasteries: tuple[int, ...] | None) -> dict[str, Any] | None:
    """The intermediate scoring as a view shows it (None before the deck first ran out): made
    once, and the same dict in every view from then on (a view is read, never changed)."""
    if monasteries is None:
        return None
    return intermediate_breakdown(board, players, monasteries).to_dict()


def view_for(state: GameState, seat: int | None) -> SeatView:
    """The view of `seat`, or of a spectator when `seat` is None."""
    if seat is not None and seat not in state.seats:
        raise ValueError(f"there is no seat {seat} in a {len(state.players)}-player game")
    board = state.board
    intermediate = _intermediate_dict(state.board, state.players, state.intermediate)
    return SeatView(
        board_id=board.id, players=state.players, seat=seat, start=state.start,
        current=state.current, phase=state.phase, draws_left=state.draws_left, ply=state.ply,
        hand=None if seat is None else state.hands[seat],
        drawn=None if seat is None else state.drawn[seat],
        hand_sizes=tuple(len(h) for h in state.hands), face_up=state.face_up,
        discard=state.discard, deck_size=len(state.deck), removed=state.removed,
        monasteries=tuple((board.fields[f].name, state.players[s])
                          for f, s in enumerate(state.monasteries) if s != EMPTY),
        advisors=tuple((c.name, state.advisors[c.index]) for c in board.countries),
        monastery_supply=state.monastery_supply, advisor_supply=state.advisor_supply,
        scores=state.scores, exhaustions=state.exhaustions, last_seat=state.last_seat,
        end_reason=state.end_reason,
        intermediate=intermediate, joker=state.joker)
