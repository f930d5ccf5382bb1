"""The Knights & Castles bots: `random` and `greedy`. Neither makes offers of its own.

Each is a pure function `(view, rng) -> Move` of one seat's `SeatView` and an explicit
`random.Random`; the same view and random input give the same move. `greedy` looks one decision
ahead: it plays each listed move in a position dealt from its view (`view_state`), lets the
target of a disaster or war answer as a seat that missed its deadline would (the cards of least
revenue), and keeps the move that leaves its worth furthest ahead of the others'. Worth is gold,
plus the income in play for the turns the deck has left, plus half that for cards in hand
that could be built. It makes no offers of its own and accepts one when the trade adds to its
worth.
"""

from __future__ import annotations

import random

from ..cards import (
    ADVANCE,
    ADVANCES,
    CASTLE,
    CITY,
    DISASTER,
    EVENT,
    INVASION,
    IRRIGATION,
    KINDS,
    PRINTING_PRESS,
    SCHOLASTICS,
    TOWN,
    VILLAGE,
)
from ..moves import Buy, Done, Move
from ..rules import CARD_PRICE, apply_move, default_move, dp_total, legal_moves, revenue
from ..state import BUY, LOSS, GameState
from ..view import SeatView
from .view_state import check_view, sampled_state

# What a card does for its holder besides its revenue, in gold a turn: supporting other cards,
# drawing more, and so on. Rough figures; the arena (README) shows they beat random play.
SUPPORT = {VILLAGE: 0.35, TOWN: 0.3, CASTLE: 0.15, CITY: 0.3}
ADVANCE_TURN = {PRINTING_PRESS: 0.8, SCHOLASTICS: 0.3, IRRIGATION: 0.3}
ADVANCE_OTHER = 0.1  # Gun Powder, Masonry: a little more DP; income advances count as income
HAND_SHARE = 0.5  # a card in hand is worth half of what it would be in play
EVENT_IN_HAND = 2.0  # a disaster, invasion or event to play at a rival later


def random_bot(view: SeatView, rng: random.Random) -> Move:
    """A listed legal move chosen uniformly at random. It makes no offers: they are billions,
    and a bot that made them would keep the other seats, people too, answering all day."""
    return rng.choice(legal_moves(sampled_state(check_view(view), rng)).moves)


def turns_left(state: GameState) -> float:
    """About how many more tax phases each seat has: a card leaves the deck each turn."""
    return len(state.deck) / len(state.players)


_SUPPORTERS = tuple(sorted(SUPPORT.items()))
_ADVANCE_TURN = tuple((a, ADVANCE_TURN.get(a, ADVANCE_OTHER)) for a in ADVANCES)


def _in_play(state: GameState, seat: int, turns: float) -> float:
    tableau, shared = state.tableau[seat], state.shared[seat]
    per_turn = revenue(state, seat) + sum([rate * tableau[k] for k, rate in _SUPPORTERS])
    per_turn += sum([rate for a, rate in _ADVANCE_TURN if tableau[a] or a in shared])
    return per_turn * turns


def card_worth(kind: int, turns: float) -> float:
    """What one card in hand is worth to a seat with `turns` tax phases to come."""
    k = KINDS[kind]
    if k.type in (EVENT, DISASTER, INVASION):
        return EVENT_IN_HAND
    if k.type == ADVANCE:
        return HAND_SHARE * ADVANCE_TURN.get(kind, ADVANCE_OTHER) * turns
    return HAND_SHARE * (k.revenue + SUPPORT.get(kind, 0)) * turns


# card_worth as (kind, a gold per turn left, or None for a fixed worth, that worth): the same
# products in the same order, made once (greedy scores thousands of positions a decision).
_WORTH = tuple((k, None, EVENT_IN_HAND) if kind.type in (EVENT, DISASTER, INVASION) else
               (k, HAND_SHARE * (ADVANCE_TURN.get(k, ADVANCE_OTHER) if kind.type == ADVANCE
                                 else kind.revenue + SUPPORT.get(k, 0)), 0.0)
               for k, kind in enumerate(KINDS))


def worth(state: GameState, seat: int, armor: float = 0.0) -> float:
    """Gold, plus what is in play and in hand is likely to earn before the deck runs out, plus
    `armor` gold a turn for each defence point in play (greedy counts none; see `strong`)."""
    turns = turns_left(state)
    held = state.hands[seat]
    hand = 0.0
    for k, rate, fixed in _WORTH:
        n = held[k]
        if n:
            hand += (fixed if rate is None else rate * turns) * n
    value = state.gold[seat] + _in_play(state, seat, turns) + hand
    if armor:
        value += armor * dp_total(state, seat) * turns
    return value


def _margin(values: list[float], seat: int) -> float:
    """A seat's worth less the others' (`values`: every seat's worth): half the best of them,
    half their mean."""
    others = values[:seat] + values[seat + 1:]
    return values[seat] - 0.5 * max(others) - 0.5 * sum(others) / len(others)


def greedy_bot(view: SeatView, rng: random.Random) -> Move:
    """The listed move with the best margin one decision ahead (no offers of its own)."""
    check_view(view)
    return greedy_move(sampled_state(view, rng), rng)


def greedy_move(state: GameState, rng: random.Random | None = None, armor: float = 0.0) -> Move:
    """greedy's choice for the seat to move of `state`: ties broken by `rng`, or the first one
    listed without it. It reads no hidden card that could change its choice: the cards of the
    other hands and the deck count only as the unseen pool a bought card comes from. With
    `armor`, the worth it weighs counts defence points in play too (`worth`)."""
    moves = legal_moves(state).moves
    if len(moves) == 1:
        return moves[0]
    scored = greedy_values(state, armor)
    best = max(scored)
    ties = [i for i, v in enumerate(scored) if v >= best - 1e-9]
    return moves[rng.choice(ties) if rng is not None else ties[0]]


def greedy_values(state: GameState, armor: float = 0.0) -> list[float]:
    """What greedy makes of each listed move of `state` (`legal_moves(state).moves`, in that
    order): the seat to move's margin one decision ahead; the highest is greedy's choice.
    `armor`: see `worth`."""
    seat = state.to_move
    assert seat is not None, "a bot plays in a game that is not over"
    moves = legal_moves(state).moves
    seats = state.seats
    before = [worth(state, s, armor) for s in seats]

    def after_margin(after: GameState) -> float:
        # A move changes one or two seats' worth; the others' are the ones before it. A seat's
        # worth reads only its gold, hand, cards in play and shared advances, and the deck's size.
        same_deck = len(after.deck) == len(state.deck)
        values = [before[s] if same_deck and after.gold[s] == state.gold[s]
                  and after.hands[s] is state.hands[s] and after.tableau[s] is state.tableau[s]
                  and after.shared[s] is state.shared[s] else worth(after, s, armor)
                  for s in seats]
        return _margin(values, seat)

    def value(move: Move) -> float:
        if state.step == BUY:
            # The tax comes after the draw phase whatever is bought, so it is left out, and a
            # card bought is one of the unseen cards, each as likely.
            if isinstance(move, Done):
                return _margin(before, seat)
            if isinstance(move, Buy):
                turns = turns_left(state)
                pool = _unseen(state, seat)
                mean = sum(card_worth(k, turns) * n for k, n in enumerate(pool)) / sum(pool)
                return _margin(before, seat) - CARD_PRICE + mean
        after = apply_move(state, move)
        if after.step == LOSS and after.to_move != seat:
            after = apply_move(after, default_move(after))  # the target's likely answer
        return after_margin(after)

    return [value(m) for m in moves]


def _unseen(state: GameState, seat: int) -> list[int]:
    """How many of each kind `seat` cannot see: the deck and the other hands."""
    pool = [0] * len(state.hands[seat])
    for k in state.deck:
        pool[k] += 1
    for s in state.seats:
        if s != seat:
            for k, n in enumerate(state.hands[s]):
                pool[k] += n
    return pool
