"""The strong Knights & Castles bot: determinized play-outs from one seat's view.

For a decision with more than one sensible answer, the bot deals the cards hidden from it at
random several times, consistently with its view (`view_state.sampled_state`: the other hands
and the deck order; the dice still to come are its guesses), and in every deal plays each
candidate move, then lets every seat play on until the other seats have each had their turn
(to the end of the game once fewer than `ENDGAME_ROUNDS` rounds are left): itself by the rules
of thumb of `policy`, the others as `greedy` would, which answers an offer by whether the trade
adds to its worth. It keeps the candidate whose positions are worth most to it on average,
measured as its worth less the others' (half the best other seat's, half their mean:
`policy.margins`). Every candidate meets the
same deals and dice, so their differences are the moves' and not the luck's.

Every decision goes this way: the turn's moves, the losses a disaster or an act of war asks of
it, the answer to an offer. In the trade phase the candidates are `done` and a few offers of its
own (`trade_offers`): a resource or leader it has little use for, to a seat whose tableau can
use it, for gold; a card its hand is waiting for, from a seat that may hold it, for gold. An
offer is made only when its play-outs beat `done` by `OFFER_GAIN` gold a deal, at most
`MAX_OFFERS` a turn, each to a different seat (the rules allow one a seat a turn).
"""

from __future__ import annotations

import random

from ..cards import BUILDABLE, ID, INDEX, KINDS
from ..moves import Build, Move, Offer, Share
from ..rules import DECLINE, DONE, LegalMoves, apply_move, legal_moves
from ..state import BUILD, EVENT, LOSS, OVER, RESEARCH, TRADE, UPKEEP, GameState
from ..view import SeatView
from .players import greedy_move
from .policy import event_values, hand_gain, has_room, loss_cost, margins, policy_move, turns_left
from .view_state import check_view, sampled_state

SAMPLES = 10  # deals per decision
WIDTH = 6  # candidates played out per decision, the best by the rules of thumb
ENDGAME_ROUNDS = 2.0  # with fewer rounds left than this, play-outs run to the end of the game
MAX_OFFERS = 2  # offers of its own a turn
OFFERS_WEIGHED = 12  # offers weighed a trade phase, the most promising by the rules of thumb
OFFER_GAIN = 2.0  # gold an offer must gain on average to be made
# The prices weighed, as shares of a card's printed revenue over the turns left: asked for a
# card of the hand, and offered for a card the hand would build (one of the WANTED best).
SELL_SHARES = (0.3, 0.5, 0.7)
BUY_SHARES = (0.2, 0.35, 0.5)
WANTED = 2
EPSILON = 1e-9


def strong_bot(view: SeatView, rng: random.Random, *, samples: int | None = None,
               width: int | None = None) -> Move:
    """The candidate with the best average margin over `samples` deals of the hidden cards."""
    check_view(view)
    samples = SAMPLES if samples is None else samples
    width = WIDTH if width is None else width
    seat = view.seat
    first = sampled_state(view, rng)
    legal = legal_moves(first)
    candidates = candidate_moves(first, legal, width)
    offers = trade_offers(first, legal) if first.step == TRADE else []
    if len(candidates) == 1 and not offers:
        return candidates[0]
    deals = [first] + [sampled_state(view, rng) for _ in range(samples - 1)]
    if offers:
        offer = _best_offer(deals, offers, seat)
        if offer is not None:
            return offer
        if len(candidates) == 1:
            return candidates[0]
    stop = _horizon(first)
    totals = [0.0] * len(candidates)
    for deal in deals:
        for i, move in enumerate(candidates):
            totals[i] += _play_out(apply_move(deal, move), seat, stop)
    best_value = max(totals)
    return rng.choice([m for m, v in zip(candidates, totals) if v >= best_value - EPSILON])


# --- candidates ------------------------------------------------------------------------------

def candidate_moves(state: GameState, legal: LegalMoves, width: int) -> list[Move]:
    """The listed moves worth playing out: all of them where they are few, else the best
    `width` by the rules of thumb (and always the policy's own choice and `done`)."""
    moves = list(legal.moves)
    step = state.step
    if step not in (RESEARCH, UPKEEP, BUILD):
        moves = [m for m in moves if type(m) is not Share]  # weighed where they pay for
    if step == BUILD:
        # Building costs nothing and earns from the next tax on, and a card held back is safe
        # from disasters only in a play-out's short sight: which card goes first is the choice.
        builds = [m for m in moves if type(m) is Build]
        if builds:
            moves = builds
    if len(moves) <= width:
        return moves
    seat = state.current
    turns = turns_left(state)
    if step == LOSS:
        target = state.loss.target
        ranked = sorted(moves, key=lambda m: loss_cost(state, target, m.cards, turns))
    elif step == EVENT:
        value = dict(event_values(state, seat, moves, turns))
        ranked = sorted(moves, key=lambda m: -value.get(m, 0.0))
    else:
        gain = {m: hand_gain(state, seat, INDEX[m.card], turns, -1) for m in moves
                if getattr(m, "card", None) is not None}
        ranked = sorted(moves, key=lambda m: -gain.get(m, 0.0))
    chosen = ranked[:width]
    for extra in (policy_move(state), DONE):
        if extra in moves and extra not in chosen:
            chosen.append(extra)
    return chosen


# --- play-outs -------------------------------------------------------------------------------

def _horizon(state: GameState) -> int:
    """The turn number at which a play-out stops: once every other seat has had a turn after
    this one, or never before the game ends when it is near."""
    if turns_left(state) < ENDGAME_ROUNDS:
        return 1 << 30
    return state.turn + len(state.players) + (state.to_move != state.current)


def _play_out(state: GameState, seat: int, stop: int) -> float:
    """`seat`'s margin when the play-out from `state` stops."""
    while state.step != OVER and state.turn < stop:
        move = policy_move(state) if state.to_move == seat else greedy_move(state)
        state = apply_move(state, move)
    return margins(state)[seat]


# --- offers ----------------------------------------------------------------------------------

def _best_offer(deals: list[GameState], offers: list[Offer], seat: int) -> Offer | None:
    """The offer that gains the seat most on average over `deals`, each answered there as
    `greedy` would answer it (accepted when the trade adds to its worth), if that is at least
    `OFFER_GAIN` gold; None otherwise. The gain is judged right after the answer: in play-outs
    that run on, the difference a trade makes drowns in the luck of the draws."""
    best, best_gain = None, OFFER_GAIN
    for offer in offers:
        gain = 0.0
        for deal in deals:
            asked = apply_move(deal, offer)
            answer = greedy_move(asked)
            if answer != DECLINE:
                gain += margins(apply_move(asked, answer))[seat] - margins(deal)[seat]
        gain /= len(deals)
        if gain >= best_gain:
            best, best_gain = offer, gain
    return best


def trade_offers(state: GameState, legal: LegalMoves) -> list[Offer]:
    """The offers worth weighing now (at most `OFFERS_WEIGHED`, none once `MAX_OFFERS` were
    made this turn): a hand card for gold to a seat whose cards in play could carry it (a
    trade route to a seat with a free ship), or gold for a card the hand would build, each at a
    few prices tied to the card's printed revenue over the turns left, so that the other side
    may find one of them fair; the most promising first by the rules of thumb."""
    seat = state.current
    if len(state.offered) >= MAX_OFFERS:
        return []
    turns = turns_left(state)
    open_to = set(legal.offers_to())
    targets = [s for s in state.seats if s != seat and state.players[s] in open_to]
    hand, gold = state.hands[seat], state.gold[seat]
    scored: dict[Offer, float] = {}
    for k in BUILDABLE:
        if hand[k]:
            mine = max(0.0, -hand_gain(state, seat, k, turns, -1))  # what the card does for us
            for s in targets:
                if not has_room(state, s, k):  # its cards in play could not carry it
                    continue
                for share in SELL_SHARES:
                    price = int(min(state.gold[s], share * _list_value(k, turns)))
                    if price >= 1 and price - mine >= OFFER_GAIN:
                        scored[Offer(state.players[s], 0, (ID[k],), price, ())] = price - mine
    wanted = sorted(((hand_gain(state, seat, k, turns, 1), k) for k in BUILDABLE), reverse=True)
    for gain, k in wanted[:WANTED]:
        for share in BUY_SHARES:
            price = int(min(gold, share * _list_value(k, turns)))
            if price >= 1 and gain - price >= OFFER_GAIN:
                for s in targets:
                    if sum(state.hands[s]):
                        scored[Offer(state.players[s], price, (), 0, (ID[k],))] = gain - price
    ranked = sorted(scored, key=lambda offer: -scored[offer])
    return ranked[:OFFERS_WEIGHED]


def _list_value(kind: int, turns: float) -> float:
    """A card's printed revenue over the turns left (a village's: what it lets be built)."""
    return max(KINDS[kind].revenue, 1) * turns
