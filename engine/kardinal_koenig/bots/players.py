"""The Kardinal & König bots: `random`, `greedy` and `strong`.

Each is a pure function `(view, rng, board) -> Move` of one seat's `SeatView` (never the state:
what the seat sees, no more) and an explicit `random.Random`; the same view and the same random
input give the same move. `greedy` looks one move ahead with the projected final score
(`bots.evaluate`). `strong` searches: it deals the hidden cards at random several times
consistently with the view (determinization), and for its best few candidate moves plays out the
round in each deal (every other seat answering with its own greedy best placement, then its own
next turn with the cards it would draw), and keeps the move with the best average margin over the
best other seat.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..board import Board
from ..moves import DECK, Draw, Exchange, Move, Place
from ..rules import legal_moves
from ..state import DRAW, HAND_SIZE, PLAY, GameState
from ..view import SeatView
from .evaluate import Projection, margin, prospects
from .view_state import sampled_state, unseen_cards, visible_state

EPSILON = 1e-9


def random_bot(view: SeatView, rng: random.Random, board: Board) -> Move:
    """A legal move chosen uniformly at random."""
    return rng.choice(legal_moves(visible_state(view, board)))


def greedy_bot(view: SeatView, rng: random.Random, board: Board) -> Move:
    """The move with the best projected margin right after it (one move ahead)."""
    state, moves, settled = _settled(view, board)
    if settled is not None:
        return settled
    proj = Projection.of(state)
    seat = state.current
    base = margin(proj.totals, seat)
    hands = _HandValues(state, proj)

    def value(move: Move) -> float:
        if isinstance(move, Place):
            return margin(proj.after(seat, move), seat)
        if isinstance(move, Exchange):  # keeps the two cards that can do the most
            return base + 0.001 * hands.value(_without(state.hands[seat], (move.card,)))
        return base - 1000
    return _pick(moves, value, rng)


def strong_bot(view: SeatView, rng: random.Random, board: Board, *, samples: int = 6,
               width: int = 10, prospect: float = 1.0, advisor_weight: float = 0.4) -> Move:
    """Determinized search: the best `width` candidates, each played out in `samples` deals."""
    state, moves, settled = _settled(view, board)
    if settled is not None:
        return settled
    seat = state.current
    proj = Projection.of(state)
    hands = _HandValues(state, proj)
    places = [m for m in moves if isinstance(m, Place)]
    ranked: list[Move] = [
        *sorted(places, key=lambda m: -margin(proj.after(seat, m), seat))[:width]]
    exchanges = [m for m in moves if isinstance(m, Exchange)]
    if exchanges:
        ranked.append(max(exchanges, key=lambda m: hands.value(
            _without(state.hands[seat], (m.card,)))))
    if len(ranked) == 1:
        return ranked[0]
    unseen = unseen_cards(view, board)
    deals = [sampled_state(view, board, rng, unseen) for _ in range(samples)]
    followers = _seats_still_to_move(state)
    scores = {m: sum(_play_out(deal, proj, m, followers, prospect, advisor_weight)
                     for deal in deals)
              for m in ranked}
    return _pick(ranked, scores.__getitem__, rng)


# --- the parts -------------------------------------------------------------------------------

def _settled(view: SeatView, board: Board) -> tuple[GameState, list[Move], Move | None]:
    """The state a bot reasons on, its legal moves, and the move when there is nothing to
    search: the only legal one, or the best draw."""
    state = visible_state(view, board)
    moves = thrifty(legal_moves(state))
    if len(moves) == 1:
        return state, moves, moves[0]
    if state.phase == DRAW:
        return state, moves, _best_draw(state, view, board, moves)
    return state, moves, None


def thrifty(moves: list[Move]) -> list[Move]:
    """`moves` without the placements that pay a card for nothing: those whose pieces, in the
    same country, fewer of their own cards could place too.

    Under the English and Spanish joker (`joker_anywhere`) a pair of a country's own colour may
    place one piece there, so `PP Frankreich: Fleury` is legal beside `P Frankreich: Fleury`.
    The bots' projections score pieces, not cards, and their play-outs refill a hand from the
    deck, so both scored alike (or the pair ahead by the luck of the draws) and a tie went to
    chance: a strong bot paid two cards for one piece. A kept card is never worth less than a
    card spent for nothing, so such a placement is not a candidate at all.
    """
    by_place: dict[tuple[Any, ...], list[Counter[str]]] = {}
    for move in moves:
        if isinstance(move, Place):
            by_place.setdefault((move.country, move.pieces), []).append(Counter(move.cards))
    if all(len(group) == 1 for group in by_place.values()):
        return moves

    def wasteful(move: Place) -> bool:
        cards = Counter(move.cards)
        return any(other.total() < cards.total() and not other - cards
                   for other in by_place[move.country, move.pieces])

    return [m for m in moves if not (isinstance(m, Place) and wasteful(m))]


def _pick(moves: Sequence[Move], value: Callable[[Move], float], rng: random.Random) -> Move:
    """The move of highest value; ties broken by `rng`."""
    values = [value(m) for m in moves]
    top = max(values)
    return rng.choice([m for m, v in zip(moves, values) if v >= top - EPSILON])


def _without(hand: tuple[str, ...], cards: tuple[str, ...]) -> tuple[str, ...]:
    rest = list(hand)
    for c in cards:
        rest.remove(c)
    return tuple(rest)


def _seats_still_to_move(state: GameState) -> tuple[list[int], bool]:
    """The other seats that move before this one's next turn, and whether it has one."""
    n, seat = len(state.players), state.current
    others = [(seat + i) % n for i in range(1, n)]
    if state.last_seat is None:
        return others, True
    if seat == state.last_seat:
        return [], False
    return others[:others.index(state.last_seat) + 1], False


class _HandValues:
    """What a hand is worth to the seat to move on this board: the best margin gain of a
    placement it pays for (negative when every placement hurts; -1 when none is possible)."""

    def __init__(self, state: GameState, proj: Projection):
        self.state, self.proj, self.seat = state, proj, state.current
        self.base = margin(proj.totals, self.seat)
        self.cache: dict[tuple[str, ...], float] = {}

    def value(self, hand: tuple[str, ...]) -> float:
        hand = tuple(sorted(hand))
        found = self.cache.get(hand)
        if found is None:
            best = _best_place(self.state, self.proj, self.seat, hand)
            found = -1.0 if best is None else best[1] - self.base
            self.cache[hand] = found
        return found


def _best_place(state: GameState, proj: Projection, seat: int,
                hand: tuple[str, ...]) -> tuple[Place, float] | None:
    """The placement `seat` would make with `hand` on the board of `proj`, and its margin."""
    if not hand:
        return None
    hands = list(state.hands)
    hands[seat] = tuple(sorted(hand))
    position = replace(state, monasteries=tuple(proj.monasteries), advisors=tuple(proj.advisors),
                       monastery_supply=tuple(proj.monastery_supply),
                       advisor_supply=tuple(proj.advisor_supply), hands=tuple(hands),
                       current=seat, phase=PLAY, draws_left=0)
    best: tuple[Place, float] | None = None
    for move in legal_moves(position):
        if isinstance(move, Place):
            value = margin(proj.after(seat, move), seat)
            if best is None or value > best[1]:
                best = move, value
    return best


def _play_out(deal: GameState, proj: Projection, move: Move,
              followers: tuple[list[int], bool], prospect: float,
              advisor_weight: float = 0.4) -> float:
    """The margin of the seat to move after `move`, the other seats' answers and its next turn,
    all in one deal of the hidden cards."""
    seat = deal.current
    p = proj.copy()
    hand = list(deal.hands[seat])
    if isinstance(move, Place):
        p.play(seat, move)
        for c in move.cards:
            hand.remove(c)
    elif isinstance(move, Exchange):
        hand.remove(move.card)
    deck = list(deal.deck)
    while len(hand) < HAND_SIZE and deck:
        hand.append(deck.pop())
    others, again = followers
    for other in others:
        answer = _best_place(deal, p, other, deal.hands[other])
        if answer is not None and answer[1] > margin(p.totals, other):
            p.play(other, answer[0])
    if again:
        mine = _best_place(deal, p, seat, tuple(hand))
        if mine is not None and mine[1] > margin(p.totals, seat):
            p.play(seat, mine[0])
    if not prospect:
        return margin(p.totals, seat)
    return margin([t + prospect * x for t, x in zip(p.totals, prospects(p, advisor_weight))], seat)


def _best_draw(state: GameState, view: SeatView, board: Board, moves: list[Move]) -> Move:
    """The draw that leaves the best hand: a face-up card, or the deck by its expected worth."""
    proj = Projection.of(state)
    hands = _HandValues(state, proj)
    hand = state.hands[state.current]
    best, best_value = moves[0], None
    for move in moves:
        assert isinstance(move, Draw), "a bot draws at the draw step"
        if move.source == DECK:
            counts = Counter(unseen_cards(view, board))
            total = sum(counts.values())
            value = sum(n * hands.value(hand + (code,)) for code, n in counts.items()) / total
        else:
            value = hands.value(hand + (move.source,))
        if best_value is None or value > best_value + EPSILON:
            best, best_value = move, value
    return best
