"""A position the bots can search from, built from one seat's view and nothing else.

The view shows everything public and the seat's own hand; what it hides (the other hands and
the order of the deck) is dealt at random from the cards the seat cannot see, with the bot's
own random input, and the dice still to come are the bot's guesses (a seed of its own). So the
bot's legal moves are the real ones (they depend on public facts and the seat's own hand only:
tests/server/test_kc_bots.py checks it), and what it foresees after a move is one possible future,
never the real one.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable

from ..cards import DECK_SIZE, INDEX, KINDS, N_KINDS
from ..moves import Offer, parse_move
from ..state import GameState, Loss
from ..view import SeatView


def check_view(view: object) -> SeatView:
    """`view`, if it is the view of the seat to move; TypeError or ValueError otherwise."""
    if not isinstance(view, SeatView):
        raise TypeError(f"a bot plays from a SeatView (view_for), not {type(view).__name__}")
    if not view.is_my_move:
        raise ValueError("a bot moves only for the seat whose view it is, when it is to move")
    return view


def _counts(ids: Iterable[str]) -> tuple[int, ...]:
    vec = [0] * N_KINDS
    for card in ids:
        vec[INDEX[card]] += 1
    return tuple(vec)


def unseen_cards(view: SeatView) -> list[int]:
    """The cards (kind indices, sorted) this seat cannot see: the other hands and the deck."""
    left = Counter({k: kind.count for k, kind in enumerate(KINDS)})
    assert view.hand is not None, "a bot plays from its seat's own view"
    for card in (*view.hand, *view.discard, *(c for t in view.tableau for c in t)):
        left[INDEX[card]] -= 1
    if any(n < 0 for n in left.values()):
        raise ValueError("the view shows more cards of a kind than the game has")
    cards = sorted(left.elements())
    hidden = view.deck_size + sum(n for s, n in enumerate(view.hand_sizes) if s != view.seat)
    if len(cards) != hidden:
        raise ValueError(f"the view hides {hidden} cards but {len(cards)} of the "
                         f"{DECK_SIZE} are unaccounted for")
    return cards


def sampled_state(view: SeatView, rng: random.Random) -> GameState:
    """A position that looks exactly like `view` to its seat: the hidden cards dealt at random."""
    check_view(view)
    seat, players = view.seat, view.players
    pool = unseen_cards(view)
    # The target of an open offer knows the offerer holds the cards it offers: they are dealt
    # to the offerer, the rest at random.
    known: list[list[int]] = [[] for _ in players]
    if view.offer is not None and "give" in view.offer:
        giver = players.index(view.offer["from"])
        if giver != seat:
            for card in view.offer["give"]:
                pool.remove(INDEX[card])
                known[giver].append(INDEX[card])
    rng.shuffle(pool)
    hands = []
    for s in range(len(players)):
        if s == seat:
            assert view.hand is not None, "a bot plays from its seat's own view"
            hands.append(_counts(view.hand))
        else:
            size = view.hand_sizes[s] - len(known[s])
            taken, pool = known[s] + pool[:size], pool[size:]
            hands.append(_counts(KINDS[k].id for k in taken))
    loss = None
    if view.loss is not None:
        l = view.loss
        loss = Loss(players.index(l["target"]), players.index(l["by"]), INDEX[l["card"]],
                    l["roll"], tuple(INDEX[k] for k in l["kinds"]))
    offer = None
    if view.offer is not None and "notation" in view.offer:
        parsed = parse_move(view.offer["notation"])
        assert isinstance(parsed, Offer)
        offer = parsed
    return GameState(
        players=players, seed=f"bot-guess:{rng.random()}", variants=view.variants,
        deck=tuple(pool), hands=tuple(hands), tableau=tuple(_counts(t) for t in view.tableau),
        shared=tuple(tuple(sorted(INDEX[k] for k in s)) for s in view.shared),
        discard=tuple(INDEX[k] for k in view.discard), gold=view.gold, dice=view.dice,
        start=view.start, current=view.current, step=view.step, turn=view.turn, ply=view.ply,
        draws_left=view.draws_left,
        choice=tuple(INDEX[k] for k in view.choice) if view.choice else (),
        loss=loss, offer=offer, offered=tuple(players.index(c) for c in view.offered),
        paid=tuple(tuple(INDEX[k] for k in p) for p in view.paid), revenue=view.taxed)
