"""One position of Kardinal & König, and setting up a new game.

`GameState` is immutable; `rules` makes new states from it. Everything secret (the deck
order and the seed it came from) lives in this object and never in a view.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import cast

from ..errors import SetupError
from ..words import say
from .board import Board, default_board

PLAYER_COLOURS = ("yellow", "red", "green", "purple", "blue")
MONASTERIES_EACH = 20
ADVISORS_EACH = 8
HAND_SIZE = 3
FACE_UP = 2
MIN_PLAYERS, MAX_PLAYERS = 3, 5
REMOVED_PER_COLOUR = {3: 2, 4: 1, 5: 0}
EMPTY = -1

PLAY, DRAW, OVER = "play", "draw", "over"

# The rule books disagree on the joker (docs/rules-notes.md): the German original lets two cards
# of one colour place a piece "in ein beliebiges anderes Land" (another country); the English
# v1.3 and Spanish books say *any* country, so a colour's own pair is a joker there too.
JOKER_OTHER, JOKER_ANY = "other", "any"
JOKER_RULES = (JOKER_OTHER, JOKER_ANY)


@dataclass(frozen=True)
class GameState:
    """A whole position. Seats are numbered 0..n-1 in clockwise order; cards are colour codes.

    `deck` is drawn from its end. `monasteries` holds, for each cloister field, the seat whose
    monastery stands there or EMPTY. `advisors[country][seat]` counts advisors on a crest.
    `drawn[seat]` is what that seat drew from the deck in its latest turn (its own secret).
    """

    board: Board = field(repr=False)
    players: tuple[str, ...]
    start: int
    seed: int | str = field(repr=False)
    deck: tuple[str, ...] = field(repr=False)
    face_up: tuple[str, ...]
    discard: tuple[str, ...]
    removed: tuple[str, ...]
    hands: tuple[tuple[str, ...], ...] = field(repr=False)
    monasteries: tuple[int, ...]
    advisors: tuple[tuple[int, ...], ...]
    monastery_supply: tuple[int, ...]
    advisor_supply: tuple[int, ...]
    scores: tuple[int, ...]
    current: int
    phase: str
    draws_left: int
    drawn: tuple[tuple[str, ...], ...] = field(repr=False)
    exhaustions: int
    last_seat: int | None
    ply: int
    intermediate: tuple[int, ...] | None
    end_reason: str | None
    joker: str = JOKER_OTHER  # JOKER_OTHER (German book, the default) or JOKER_ANY

    @property
    def joker_anywhere(self) -> bool:
        return self.joker == JOKER_ANY

    @property
    def is_over(self) -> bool:
        return self.phase == OVER

    @property
    def to_move(self) -> int:
        """The seat whose decision the game waits for (every game's state names it so)."""
        return self.current

    @property
    def seats(self) -> range:
        return range(len(self.players))

    def monastery_counts(self, country_index: int) -> list[int]:
        """Monasteries per seat in one country."""
        counts = [0] * len(self.players)
        for f in self.board.countries[country_index].fields:
            seat = self.monasteries[f]
            if seat != EMPTY:
                counts[seat] += 1
        return counts

    def free_fields(self, country_index: int) -> list[int]:
        return [f for f in self.board.countries[country_index].fields if self.monasteries[f] == EMPTY]

    def advisor_room(self, country_index: int) -> int:
        """How many more advisors the crest takes now (most monasteries of one seat, minus advisors)."""
        return max(self.monastery_counts(country_index)) - sum(self.advisors[country_index])


def shuffled(cards: tuple[str, ...] | list[str], seed: int | str, purpose: str) -> tuple[str, ...]:
    """A seeded Fisher-Yates shuffle.

    It uses only `Random(str).random()`, whose sequence Python promises to keep across versions,
    so a game replays bit for bit on any Python.
    """
    rng = random.Random(f"kk:{seed}:{purpose}")
    out = list(cards)
    for i in range(len(out) - 1, 0, -1):
        j = int(rng.random() * (i + 1))
        out[i], out[j] = out[j], out[i]
    return tuple(out)


def seeded_index(n: int, seed: int | str, purpose: str) -> int:
    return int(random.Random(f"kk:{seed}:{purpose}").random() * n)


def new_game(players: int | tuple[str, ...] | list[str], seed: int | str,
             board: Board | None = None, start: int | None = None,
             joker: str = JOKER_OTHER) -> GameState:
    """Set up a game: `players` is a count (colours in box order) or the colours in seat order.

    The start seat is `start`, or drawn from the seed when None; `joker` is the reading of the
    joker rule (JOKER_OTHER, the German book's, or JOKER_ANY, the English and Spanish books').
    """
    if joker not in JOKER_RULES:
        raise SetupError(f"the joker rule must be one of {', '.join(JOKER_RULES)}, not {joker!r}")
    board = board or default_board()
    colours = _colours(players)
    if not isinstance(seed, (int, str)) or isinstance(seed, bool):
        raise SetupError("the seed must be a whole number or a text")
    n = len(colours)
    if start is None:
        start = seeded_index(n, seed, "start")
    elif not (isinstance(start, int) and 0 <= start < n):
        raise SetupError(f"the start seat must be from 0 to {n - 1}")
    removed = REMOVED_PER_COLOUR[n]
    cards = [c.code for c in board.cards for _ in range(c.count - removed)]
    deck = list(shuffled(cards, seed, "deal"))
    hands = []
    for _ in range(n):
        hand = [deck.pop() for _ in range(HAND_SIZE)]
        hands.append(tuple(sorted(hand)))
    face_up = tuple(sorted(deck.pop() for _ in range(FACE_UP)))
    return GameState(
        board=board, players=colours, start=start, seed=seed, deck=tuple(deck), face_up=face_up,
        discard=(), removed=tuple(c.code for c in board.cards for _ in range(removed)),
        hands=tuple(hands), monasteries=(EMPTY,) * len(board.fields),
        advisors=((0,) * n,) * len(board.countries),
        monastery_supply=(MONASTERIES_EACH,) * n, advisor_supply=(ADVISORS_EACH,) * n,
        scores=(0,) * n, current=start, phase=PLAY, draws_left=0, drawn=((),) * n,
        exhaustions=0, last_seat=None, ply=0, intermediate=None, end_reason=None, joker=joker)


def _colours(players: int | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The players' colours: the first `players` in box order for a count, else those named."""
    if isinstance(players, int) and not isinstance(players, bool):
        if not MIN_PLAYERS <= players <= MAX_PLAYERS:
            raise SetupError(say("%(game)s is for %(least)d to %(most)d players, not %(count)d",
                                 game="Kardinal & König", least=3, most=5, count=players))
        colours: tuple[str, ...] = PLAYER_COLOURS[:players]
    else:
        colours = tuple(cast(Iterable[str], players))  # a bool is no count: tuple() refuses it
        if not MIN_PLAYERS <= len(colours) <= MAX_PLAYERS:
            raise SetupError(say("%(game)s is for %(least)d to %(most)d players, not %(count)d",
                                 game="Kardinal & König", least=3, most=5, count=len(colours)))
        unknown = [c for c in colours if c not in PLAYER_COLOURS]
        if unknown:
            raise SetupError(say("unknown player colour %(colour)s; choose from %(colours)s",
                                 colour=repr(unknown[0]), colours=", ".join(PLAYER_COLOURS)))
        if len(set(colours)) != len(colours):
            raise SetupError(say("each player needs a different colour"))
    return colours
