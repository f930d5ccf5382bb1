"""Knights & Castles hidden information: a seat's view holds its own hand and public facts only.

The strongest form of the check: re-deal every card a seat cannot see (the other hands and the
deck) at random, keeping how many each holds, and the seat's view must not change. The same for
a spectator with every hand re-dealt.
"""

from __future__ import annotations

import json
import random
from dataclasses import fields

from engine.knights_castles import random_playout, view_for
from engine.knights_castles.cards import N_KINDS
from engine.knights_castles.rules import replace
from engine.knights_castles.state import KEEP
from kc_support import play, position


def redeal(state, seat, rng):
    """The state with every card hidden from `seat` (None: a spectator) dealt afresh."""
    hidden = [s for s in state.seats if s != seat]
    pool = list(state.deck)
    for s in hidden:
        pool += [k for k in range(N_KINDS) for _ in range(state.hands[s][k])]
    rng.shuffle(pool)
    hands = list(state.hands)
    for s in hidden:
        size, counts = sum(state.hands[s]), [0] * N_KINDS
        for _ in range(size):
            counts[pool.pop()] += 1
        hands[s] = tuple(counts)
    return replace(state, hands=tuple(hands), deck=tuple(pool))


def test_no_view_changes_when_the_cards_it_cannot_see_are_dealt_again():
    """Hidden information: hands and the deck are secret; views are built in the engine."""
    rng = random.Random(3)
    checked = 0
    for players in (2, 4, 6):
        for seed in range(3):
            for i, (_, _, _, state) in enumerate(random_playout(players, seed)):
                if i % 4 or state.offer is not None:
                    continue  # an offer's cards are seen by its two seats: tested below
                for seat in [None, *state.seats]:
                    other = redeal(state, seat, rng)
                    assert view_for(other, seat) == view_for(state, seat)
                    checked += 1
    assert checked > 1000


def test_a_view_holds_its_own_hand_and_no_secret():
    """Hidden information: a seat sees its hand; no view holds the deck order or the seed."""
    state = position(players=3, hands={0: "village town", 1: "castle", 2: "mine"})
    for seat in (None, 0, 1, 2):
        view = view_for(state, seat)
        data = json.dumps(view.to_dict())
        assert "seed" not in {f.name for f in fields(view)} and '"deck"' not in data
        assert view.hand_sizes == (2, 1, 1) and view.deck_size == len(state.deck)
    assert view_for(state, 0).hand == ("village", "town")
    assert view_for(state, 1).hand == ("castle",)
    assert view_for(state, None).hand is None
    assert '"castle"' not in json.dumps(view_for(state, 0).to_dict())


def test_an_offer_is_seen_by_its_two_seats_only():
    """Hidden information: an offer shows cards of a hand, so only the two seats see them."""
    state = play(position(players=3, step="trade", hands={0: "town", 1: "castle"}),
                 "offer red: town for castle")
    for seat in (0, 1):
        assert view_for(state, seat).offer["notation"] == "offer red: town for castle"
    for seat in (2, None):
        offer = view_for(state, seat).offer
        assert offer == {"from": "yellow", "to": "red"}
        assert '"town"' not in json.dumps(view_for(state, seat).to_dict())


def test_a_scholastics_pair_is_seen_by_its_drawer_only():
    """Hidden information: the two cards a Scholastics draw shows are the drawer's secret."""
    state = play(position(current=1, step="trade", deck_top="town mine",
                          tableau={0: "scholastics"}), "done")
    assert state.step == KEEP
    assert view_for(state, 0).choice == ("mine", "town")
    assert view_for(state, 1).choice is None and view_for(state, None).choice is None
    assert '"mine"' not in json.dumps(view_for(state, 1).to_dict())


def test_public_facts_are_in_every_view():
    """Gold, cards in play, advances, the discard pile and every die are public."""
    state = play(position(step="event", hands={0: "plague"}, tableau={1: "2 village town castle"},
                          gold={0: 1, 1: 1}, rolls=(3,)), "play plague at red")
    for seat in (None, 0, 1):
        view = view_for(state, seat)
        assert view.dice == (3,) and view.discard == ("plague",)
        assert view.loss == {"target": "red", "by": "yellow", "card": "plague", "roll": 3,
                             "kinds": []}
        assert view.tableau[1] == ("village", "village", "town", "castle") and view.dp[1] == 7
        assert view.to_move == 1
