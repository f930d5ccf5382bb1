"""A toy third game, "take the last stone", to show what a new game touches
(docs/adding-a-game.md): this engine package, its adapter (`adapter.py`), its templates
(`templates/`) and one registration (`REGISTRATION`, put on the list by the tests).

Two seats take turns taking one to three stones from one heap; who takes the last one wins.
Pure rules only, like every engine package: immutable state, moves with a text form that round-
trips, `legal_moves` as the one source of truth and `apply_move` checking legality."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace

from engine.errors import IllegalMoveError, NotationError, SetupError
from engine.games import Registration

KIND = "take-the-last-stone"
REGISTRATION = Registration(KIND, "stones_game", "stones_game.adapter:Stones")
COLOURS = ("red", "blue")
MOST = 3  # stones one move may take


@dataclass(frozen=True)
class Take:
    stones: int

    def __str__(self) -> str:
        return f"take {self.stones}"


@dataclass(frozen=True)
class State:
    players: tuple[str, ...]
    seed: str
    start: int
    heap: int
    current: int
    ply: int = 0
    winner: int | None = None

    @property
    def is_over(self) -> bool:
        return self.winner is not None


def new_game(players: tuple[str, ...], seed: str, start: int | None = None) -> State:
    """A heap of 7 to 12 stones, drawn from `seed`, as is the start seat unless given."""
    if len(players) != 2 or len(set(players)) != 2:
        raise SetupError("take the last stone is for two players of two colours")
    rng = random.Random(seed)
    heap = rng.randint(7, 12)
    first = rng.randrange(2) if start is None else start
    return State(tuple(players), seed, first, heap, first)


def legal_moves(state: State) -> list[Take]:
    return [] if state.is_over else [Take(n) for n in range(1, min(MOST, state.heap) + 1)]


def parse_move(text: str) -> Take:
    match = re.fullmatch(r"\s*take\s+(\d)\s*", text)
    if match is None:
        raise NotationError(f"write a move as 'take 1' to 'take {MOST}', not {text[:40]!r}")
    return Take(int(match.group(1)))


def apply_move(state: State, move: Take) -> State:
    if move not in legal_moves(state):
        raise IllegalMoveError(f"you may take 1 to {min(MOST, state.heap)} stones now")
    heap = state.heap - move.stones
    return replace(state, heap=heap, ply=state.ply + 1,
                   current=1 - state.current if heap else state.current,
                   winner=state.current if heap == 0 else None)
