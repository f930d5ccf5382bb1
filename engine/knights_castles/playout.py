"""Seeded random games of Knights & Castles: the loop the command line, the benchmark and the
property tests share."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from .moves import Move
from .rules import LegalMoves, apply_move, legal_moves, new_game
from .state import GameState


def random_playout(players: int, seed: int, variants: tuple[str, ...] | list[str] = ()
                   ) -> Iterator[tuple[GameState, LegalMoves, Move, GameState]]:
    """Play a whole game from `seed`, each move chosen uniformly among the legal moves by a
    chooser seeded from `seed` too; yield (state, its legal moves, the move, the state after)."""
    state = new_game(players, seed, variants)
    chooser = random.Random(f"kc-playout:{seed}")
    while not state.is_over:
        moves = legal_moves(state)
        move = moves[int(chooser.random() * len(moves))]
        after = apply_move(state, move)
        yield state, moves, move, after
        state = after


def playout_result(players: int, seed: int, variants: tuple[str, ...] | list[str] = ()
                   ) -> dict[str, Any]:
    """A whole random game as `python -m engine playout --game knights-castles` prints it: the
    moves in notation, each seat's gold, the winners and every die in the order rolled."""
    notations, state = [], new_game(players, seed, variants)
    for _, _, move, state in random_playout(players, seed, variants):
        notations.append(str(move))
    return {"game": "knights-castles", "players": players, "moves": notations,
            "gold": dict(zip(state.players, state.gold)),
            "winners": [state.players[s] for s in state.seats if state.gold[s] == max(state.gold)],
            "dice": list(state.dice)}
