"""One position of Knights & Castles, the seeded dice, and setting up a new game.

`GameState` is immutable; `rules` makes new states from it. The secrets (deck order, hands,
the seed) live here and never in a view. Every die is rolled from the seed and the number of
dice rolled so far, and every roll is kept in `dice`, so a replay from the seed and the move log
rolls the same dice and a playout can print them.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import cast

from ..errors import SetupError
from ..words import say
from .cards import DECK_SIZE, KINDS, N_KINDS
from .moves import COLOURS, Offer

MIN_PLAYERS, MAX_PLAYERS = 2, 6
HAND_SIZE = 7
VARIANTS = ("catch-up", "no-buying", "knights-from-hand")
VARIANT_PLAYERS = 2  # the rule page's variants are "for a two-player game only"

# Steps: where a turn stands. The phase a step belongs to is PHASE_OF[step].
KEEP, BUY, BUILD, UPKEEP, RESEARCH, EVENT, LOSS, TRADE, ANSWER, END, OVER = (
    "keep", "buy", "build", "upkeep", "research", "event", "loss", "trade", "answer", "end", "over")
PHASE_OF = {KEEP: "draw", BUY: "draw", BUILD: "build", UPKEEP: "build", RESEARCH: "research",
            EVENT: "event", LOSS: "event", TRADE: "trade", ANSWER: "trade", END: "end",
            OVER: "over"}


@dataclass(frozen=True, slots=True)
class Loss:
    """A loss the target must choose: `roll` DP worth of cards in play, or, when `kinds` is
    given, one card of those kinds (Storm at Sea, Untimely End, Crusades, Mined Out)."""

    target: int
    by: int
    card: int  # the kind index of the card that caused it (Knights for an act of war)
    roll: int = 0
    kinds: tuple[int, ...] = ()


@dataclass(frozen=True)
class GameState:
    """A whole position. Seats are 0..n-1 clockwise. Cards are kind indices (`cards.KINDS`).

    `hands[seat]` and `tableau[seat]` are count vectors over the kinds; the tableau holds the
    resources, leaders and advances a seat has in play. `shared[seat]` are the advances it paid
    10 gold to share. `deck` is drawn from its end. `choice` is the pair a Scholastics draw put
    into the current hand, awaiting `keep`. `paid[seat]` are the unsupported cards the seat paid
    1 gold for in its latest build phase. `revenue[seat]` is what its latest tax phase yielded.
    """

    players: tuple[str, ...]
    seed: int | str = field(repr=False)
    variants: tuple[str, ...]
    deck: tuple[int, ...] = field(repr=False)
    hands: tuple[tuple[int, ...], ...] = field(repr=False)
    tableau: tuple[tuple[int, ...], ...]
    shared: tuple[tuple[int, ...], ...]
    discard: tuple[int, ...]
    gold: tuple[int, ...]
    dice: tuple[int, ...]
    start: int
    current: int
    step: str
    turn: int = 1
    ply: int = 0
    draws_left: int = 0
    choice: tuple[int, ...] = field(default=(), repr=False)
    loss: Loss | None = None
    offer: Offer | None = None
    offered: tuple[int, ...] = ()
    paid: tuple[tuple[int, ...], ...] = ()
    revenue: tuple[int, ...] = ()
    start_chosen: bool = False  # the organiser chose the start seat: nobody rolled for it

    @property
    def is_over(self) -> bool:
        return self.step == OVER

    @property
    def phase(self) -> str:
        return PHASE_OF[self.step]

    @property
    def round(self) -> int:
        """The round of the table, as players count (every player has one turn a round)."""
        return round_of(self.turn, len(self.players))

    @property
    def seats(self) -> range:
        return range(len(self.players))

    @property
    def to_move(self) -> int | None:
        """The seat whose decision it is: the turn's player, or the seat asked for one."""
        if self.step == LOSS:
            assert self.loss is not None
            return self.loss.target
        if self.step == ANSWER:
            assert self.offer is not None
            return self.players.index(self.offer.target)
        if self.step == OVER:
            return None
        return self.current

    def has(self, seat: int, advance: int) -> bool:
        """Whether `seat` has the benefit of `advance` (in play or shared)."""
        return self.tableau[seat][advance] > 0 or advance in self.shared[seat]

    def card_total(self) -> int:
        """Every card in the game: deck, hands, in play and discard pile (always 106)."""
        return (len(self.deck) + sum(map(sum, self.hands)) + sum(map(sum, self.tableau))
                + len(self.discard))


def roll(seed: int | str, number: int) -> int:
    """Die number `number` (0, 1, ...) of the game: 1-6 from the seed alone.

    `Random(str).random()` keeps its sequence across Python versions, so games replay anywhere.
    """
    return int(random.Random(f"kc:{seed}:die:{number}").random() * 6) + 1


def shuffled(cards: list[int], seed: int | str) -> tuple[int, ...]:
    """The deck for `seed`: a Fisher-Yates shuffle driven by `Random(str).random()`."""
    rng = random.Random(f"kc:{seed}:deck")
    out = list(cards)
    for i in range(len(out) - 1, 0, -1):
        j = int(rng.random() * (i + 1))
        out[i], out[j] = out[j], out[i]
    return tuple(out)


def round_of(turn: int, players: int) -> int:
    """The round turn `turn` (the first being 1) falls in, at a table of `players`."""
    return (turn - 1) // players + 1


def turn_player(start: int, turn: int, players: int) -> int:
    """The seat whose turn `turn` is: turns go round the table from the start seat."""
    return (start + turn - 1) % players


def deal(players: int | tuple[str, ...] | list[str], seed: int | str,
         variants: tuple[str, ...] | list[str] = (), start: int | None = None) -> GameState:
    """The position after the deal and the start roll, before any draw (see `rules.new_game`).

    With `start` given (an organiser's choice) nobody rolls for the start seat."""
    colours = _colours(players)
    n = len(colours)
    _check_seed_and_variants(seed, variants, n)
    deck = list(shuffled([k for k, kind in enumerate(KINDS) for _ in range(kind.count)], seed))
    assert len(deck) == DECK_SIZE
    hands = []
    for _ in range(n):
        counts = [0] * N_KINDS
        for _ in range(HAND_SIZE):
            counts[deck.pop()] += 1
        hands.append(tuple(counts))
    chosen = start is not None
    start, dice = _start_seat(seed, n, start)
    empty = (0,) * N_KINDS
    return GameState(
        players=colours, seed=seed, variants=tuple(v for v in VARIANTS if v in variants),
        deck=tuple(deck), hands=tuple(hands), tableau=(empty,) * n, shared=((),) * n,
        discard=(), gold=(0,) * n, dice=tuple(dice), start=start, current=start, step=BUY,
        paid=((),) * n, revenue=(0,) * n, start_chosen=chosen)


def _colours(players: int | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The players' colours: the first `players` of COLOURS for a count, else those named."""
    if isinstance(players, int) and not isinstance(players, bool):
        if not MIN_PLAYERS <= players <= MAX_PLAYERS:
            raise SetupError(say("%(game)s is for %(least)d to %(most)d players, not %(count)d",
                                 game="Knights & Castles", least=MIN_PLAYERS, most=MAX_PLAYERS,
                                 count=players))
        colours: tuple[str, ...] = COLOURS[:players]
    else:
        colours = tuple(cast(Iterable[str], players))  # a bool is no count: tuple() refuses it
        if not MIN_PLAYERS <= len(colours) <= MAX_PLAYERS:
            raise SetupError(say("%(game)s is for %(least)d to %(most)d players, not %(count)d",
                                 game="Knights & Castles", least=MIN_PLAYERS, most=MAX_PLAYERS,
                                 count=len(colours)))
        unknown = [c for c in colours if c not in COLOURS]
        if unknown:
            raise SetupError(say("unknown player colour %(colour)s; choose from %(colours)s",
                                 colour=repr(unknown[0]), colours=", ".join(COLOURS)))
        if len(set(colours)) != len(colours):
            raise SetupError(say("each player needs a different colour"))
    return colours


def _check_seed_and_variants(seed: int | str, variants: tuple[str, ...] | list[str],
                             n: int) -> None:
    if not isinstance(seed, (int, str)) or isinstance(seed, bool):
        raise SetupError("the seed must be a whole number or a text")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise SetupError(f"unknown variant {unknown[0]!r}; the variants are {', '.join(VARIANTS)}")
    if variants and n > VARIANT_PLAYERS:
        # The rule page: "The above variations are for a two-player game only."
        raise SetupError(say("the rule page offers its variants (%(variant)s) for a two-player "
                             "game only; play this game of %(count)d with the standard rules, "
                             "or with two players",
                             variant="+".join(v for v in VARIANTS if v in variants), count=n))


def _start_seat(seed: int | str, n: int, start: int | None) -> tuple[int, list[int]]:
    """The start seat (`start` if given) and the dice of the start roll: each seat rolls 1D6;
    the highest starts; tied seats roll again."""
    if start is not None and not (isinstance(start, int) and 0 <= start < n):
        raise SetupError(f"the start seat must be from 0 to {n - 1}")
    dice: list[int] = []
    rolling = [start] if start is not None else list(range(n))
    while len(rolling) > 1:
        rolls = []
        for _ in rolling:
            rolls.append(roll(seed, len(dice)))
            dice.append(rolls[-1])
        best = max(rolls)
        rolling = [s for s, r in zip(rolling, rolls) if r == best]
    return rolling[0], dice
