"""Seeded random games: the one loop the command line, the benchmark and the golden file share."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any

from .board import Board
from .moves import Move
from .outcome import outcome
from .rules import apply_move, legal_moves
from .state import GameState, new_game


def random_playout(players: int, seed: int,
                   board: Board | None = None) -> Iterator[tuple[GameState, list[Move], Move, GameState]]:
    """Play a whole game from `seed`, choosing uniformly among the legal moves (with a chooser
    seeded from `seed` too); yield (state, its legal moves, the move chosen, the state after)."""
    state = new_game(players, seed, board=board)
    chooser = random.Random(f"playout:{seed}")
    while not state.is_over:
        moves = legal_moves(state)
        move = chooser.choice(moves)
        after = apply_move(state, move)
        yield state, moves, move, after
        state = after


def playout_result(players: int, seed: int, variants: Sequence[str] = ()) -> dict[str, Any]:
    """A whole random game as `python -m engine playout` prints it: the colours, the number of
    moves, the scores with their breakdown, the winners and why the game ended."""
    if variants:
        raise ValueError("Kardinal & König has no variants to switch on")
    moves, state = 0, new_game(players, seed)
    for _, _, _, state in random_playout(players, seed):
        moves += 1
    result = outcome(state)
    assert result is not None, "a playout plays to the end"
    return {
        "players": list(state.players),
        "moves": moves,
        "scores": dict(zip(state.players, result.scores)),
        "winners": [state.players[s] for s in result.winners],
        "breakdown": result.breakdown.to_dict(),
        "intermediate": result.intermediate.to_dict() if result.intermediate else None,
        "end_reason": result.reason,
    }
