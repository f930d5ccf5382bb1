"""The strong Knights & Castles bot: greedy, improved by play-outs to the end of the game.

Its greedy is armoured: the worth it weighs counts every defence point in play as `ARMOR`
gold a turn (the cards a disaster can take shield the ones that earn), which alone wins greedy
more games against greedy and random tables alike (bench/kc_armor.py). For a decision with more
than one answer, the bot takes that greedy's choice and the next best moves by its one-decision
judgement (`WIDTH` of them, and `done` where it is listed, except in the build phase: see
`candidate_moves`), deals the cards hidden from it at random several times, consistently with
its view (`view_state.sampled_state`: the other hands and the deck order; the dice still to
come are its guesses), and in every deal plays each candidate and then the whole rest of the
game, itself playing armoured `greedy` and each other seat plain `greedy` or `random`: which,
it guesses per deal from what every seat sees of that seat (`random_beliefs`: gold, income,
cards in play and advances against the rounds played), so that against a table of random
players it plays the game that table gives (their disasters aimed anywhere, their gold low)
and not the one greedy rivals would. A play-out scores the seat's final gold less the
best other seat's, and `WIN_BONUS` more for a win. Every candidate meets the same deals, dice
and rivals (common random numbers), so their differences are the moves' and not the luck's;
successive halving spends the play-outs on the candidates still in the running (`_halving`).
Play-outs of a base player to the end improve on that player: greedy's choice stands unless
another candidate's play-outs score more.

Every decision goes this way: the turn's moves, the losses a disaster or an act of war asks of
it, the answer to an offer. In the trade phase the candidates are `done` and a few offers of its
own (`trade_offers`): a resource or leader it has little use for, to a seat whose cards in
play cannot carry it yet (one that could would earn more from it than it pays), for gold; a
card its hand is waiting for, from a seat that may hold it, for gold. An offer is made only
when, answered as `greedy` would answer it, it gains `OFFER_GAIN` gold a deal by the worth
of `policy`, at most `MAX_OFFERS` a turn, each to a different seat (the rules allow one a seat
a turn).
"""

from __future__ import annotations

import math
import random

from ..cards import ADVANCES, BUILDABLE, DECK_SIZE, ID, KINDS
from ..moves import Move, Offer
from ..rules import DECLINE, DONE, LegalMoves, apply_move, legal_moves, revenue
from ..state import (
    BUILD,
    HAND_SIZE,
    OVER,
    TRADE,
    GameState,
)
from ..view import SeatView
from .players import greedy_move, greedy_values
from .policy import hand_gain, has_room, margins, turns_left
from .view_state import check_view, sampled_state

SAMPLES = 8  # deals the last candidates of a decision are played out in
# The same where the rivals' mean belief (`random_beliefs`) is 0.5 or more: with random rivals
# the play-outs vary more; played out on 48 deals, 378 decisions of strong seats chose better
# with 16 deals than with 8 by 0.30 (+-0.12) gold a decision against random rivals and by
# nothing measurable against greedy ones.
SAMPLES_NOISY = 16
WIDTH = 5  # candidates weighed a decision, the best by greedy's own judgement
FIRST_DEALS = 2  # deals every candidate meets before the weakest half is dropped
WIN_BONUS = 10.0  # gold a play-out's win counts for besides the final margin
# Gold a turn that a defence point in play is worth in the bot's own play (its candidates and
# its own moves in the play-outs): greedy counting it wins 27.5% of 2,000 games against three
# plain greedy bots and 80.2% against three random ones, where plain greedy wins 22.1% and 78.7%
# (bench/kc_armor.py, seed 1).
ARMOR = 0.2
MAX_OFFERS = 2  # offers of its own a turn
OFFERS_WEIGHED = 12  # offers weighed a trade phase, the most promising by the rules of thumb
OFFER_GAIN = 2.0  # gold an offer must gain on average to be made
# The prices weighed, as shares of a card's printed revenue over the turns left: asked for a
# card of the hand, and offered for a card the hand would build (one of the WANTED best).
SELL_SHARES = (0.3, 0.5, 0.7)
BUY_SHARES = (0.2, 0.35, 0.5)
WANTED = 2


def strong_bot(view: SeatView, rng: random.Random, *, samples: int | None = None,
               width: int | None = None) -> Move:
    """The candidate whose play-outs to the end of the game (this seat playing armoured
    `greedy`, each other seat `greedy` or `random` as `random_beliefs` guesses) end best for
    this seat over `samples` deals of the hidden cards (successive halving): by default
    `SAMPLES`, or `SAMPLES_NOISY` where the rivals look random on average (`random_beliefs`),
    whose play-outs vary more."""
    check_view(view)
    width = WIDTH if width is None else width
    seat = view.seat
    assert seat is not None, "a bot plays from a seat's view"
    first = sampled_state(view, rng)
    legal = legal_moves(first)
    if first.step == TRADE:
        offers = trade_offers(first, legal)
        if offers:
            n = SAMPLES if samples is None else samples
            deals = [first] + [sampled_state(view, rng) for _ in range(n - 1)]
            offer = _best_offer(deals, offers, seat)
            if offer is not None:
                return offer
        return DONE
    candidates = candidate_moves(first, legal, width)
    if len(candidates) == 1:
        return candidates[0]
    beliefs = random_beliefs(first, seat)
    if samples is None:
        rival = [b for s, b in enumerate(beliefs) if s != seat]
        samples = SAMPLES_NOISY if sum(rival) / len(rival) >= 0.5 else SAMPLES
    deals = [first] + [sampled_state(view, rng) for _ in range(samples - 1)]
    rivals = [_rivals(beliefs, rng) for _ in deals]
    return candidates[_halving(deals, candidates, seat, rivals)]


# --- candidates ------------------------------------------------------------------------------

def candidate_moves(state: GameState, legal: LegalMoves, width: int) -> list[Move]:
    """The listed moves worth playing out, greedy's choice first: the best `width` by greedy's
    one-decision judgement (counting `ARMOR`), and `done` where it is listed (holding back is
    always a choice), except in the build phase, where `done` is played out only when it is
    greedy's choice."""
    moves = list(legal.moves)
    if len(moves) == 1:
        return moves
    values = greedy_values(state, ARMOR)
    order = sorted(range(len(moves)), key=lambda i: (-values[i], i))
    chosen = [moves[i] for i in order[:width]]
    if state.step == BUILD and chosen[0] != DONE and len(chosen) > 1:
        # Holding back a build looks good in a play-out, whose greedy self builds the card a
        # turn later, out of reach of the disasters in between; but the bot then holds it back
        # again next turn, and a hand of villages never earns (seen in the arena's lost games).
        return [m for m in chosen if m != DONE]
    if DONE in moves and DONE not in chosen:
        chosen.append(DONE)
    return chosen


# --- the other seats: how they are likely to play ------------------------------------------

# Whether a seat plays like `random` rather than `greedy`, from what every seat sees of it: a
# logistic model over its gold, its income, its cards in play, its advances (in play or shared)
# and the rounds played, fitted to seats of both kinds in seeded games (random seats research
# and share advances on a whim and build what they hold; greedy ones hoard gold and income).
BELIEF_BIAS = 0.0
BELIEF_WEIGHTS = (-0.10, -0.16, 0.11, 1.3, 0.02)  # gold, income, cards in play, advances, round

Rivals = tuple[frozenset[int], float]  # the seats played out at random, the seed of their moves


def random_beliefs(state: GameState, seat: int) -> list[float]:
    """For each seat, how likely it is to play like `random` (0 for `seat` itself), from public
    facts only: gold, income, cards in play and advances, against the rounds played."""
    rounds = (DECK_SIZE - HAND_SIZE * len(state.players) - len(state.deck)) / len(state.players)
    beliefs = []
    for s in state.seats:
        if s == seat:
            beliefs.append(0.0)
            continue
        t = state.tableau[s]
        facts = (state.gold[s], revenue(state, s), sum([t[k] for k in BUILDABLE]),
                 sum([t[k] for k in ADVANCES]) + len(state.shared[s]), rounds)
        logit = BELIEF_BIAS + sum([w * f for w, f in zip(BELIEF_WEIGHTS, facts)])
        beliefs.append(1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, logit)))))
    return beliefs


def _rivals(beliefs: list[float], rng: random.Random) -> Rivals:
    """One deal's guess at the other seats: each plays at random with its belief's chance."""
    at_random = frozenset(s for s, p in enumerate(beliefs) if rng.random() < p)
    return at_random, rng.random()


# --- play-outs -------------------------------------------------------------------------------

def _halving(deals: list[GameState], candidates: list[Move], seat: int,
             rivals: list[Rivals]) -> int:
    """The index of the candidate to play, by successive halving: every candidate meets the
    first `FIRST_DEALS` deals, then the better half (greedy's choice, index 0, always among
    them) goes on to twice as many, and so on until the deals run out. All candidates alive
    meet the same deals (and so the same dice): their differences are the moves' and not the
    luck's. Greedy's choice stands unless another scores more."""
    scores: list[list[float]] = [[] for _ in candidates]
    alive = list(range(len(candidates)))
    used = 0
    upto = min(FIRST_DEALS, len(deals))
    while True:
        for d in range(used, upto):
            deal = deals[d]
            for i in alive:
                scores[i].append(play_out(apply_move(deal, candidates[i]), seat, rivals[d]))
        used = upto
        ranked = sorted(alive, key=lambda i: (-sum(scores[i]), i))
        if used >= len(deals) or len(alive) <= 2:
            break
        keep = ranked[:max(2, (len(alive) + 1) // 2)]
        alive = keep if 0 in keep else keep[:-1] + [0]
        upto = min(len(deals), used * 2)
    while used < len(deals):  # the last two meet every deal
        for i in alive:
            scores[i].append(play_out(apply_move(deals[used], candidates[i]), seat,
                                      rivals[used]))
        used += 1
    best = max(alive, key=lambda i: (sum(scores[i]), i == 0, -i))
    return best


def play_out(state: GameState, seat: int, rivals: Rivals | None = None) -> float:
    """How the game from `state` ends for `seat`: its gold less the best other seat's, and
    `WIN_BONUS` more when it wins (shares the win). The seat plays `greedy` counting `ARMOR`;
    every other seat plays plain `greedy`, except those `rivals` (a set of seats and a seed, see
    `_rivals`) plays at random."""
    at_random, seed = rivals if rivals is not None else (frozenset(), 0.0)
    chooser = random.Random(seed)
    while state.step != OVER:
        mover = state.to_move
        if mover == seat:
            state = apply_move(state, greedy_move(state, armor=ARMOR))
        elif mover in at_random:
            moves = legal_moves(state).moves
            state = apply_move(state, moves[int(chooser.random() * len(moves))])
        else:
            state = apply_move(state, greedy_move(state))
    return final_score(state, seat)


def final_score(state: GameState, seat: int) -> float:
    """`seat`'s gold less the best other seat's, and `WIN_BONUS` more for a win."""
    gold = state.gold
    best_other = max(g for s, g in enumerate(gold) if s != seat)
    lead = gold[seat] - best_other
    return lead + (WIN_BONUS if lead >= 0 else 0.0)


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
    made this turn): a hand card for gold to a seat whose cards in play cannot carry it yet (a
    trade route to a seat without a free ship), or gold for a card the hand would build, each
    at a few prices tied to the card's printed revenue over the turns left, so that the other
    side may find one of them fair; the most promising first by the rules of thumb."""
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
                if has_room(state, s, k):
                    # It would build the card at once and earn more from it than it pays: the
                    # worth judging the offer counts a card in hand at what a card in hand
                    # usually comes to, and so sold the leader its trade routes and bishops.
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
