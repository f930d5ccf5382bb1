"""Knights & Castles hidden information: a seat's view holds its own hand and public facts only.

The strongest form of the check: re-deal every card a seat cannot see (the other hands and the
deck) at random, keeping how many each holds, and the seat's view must not change. The same for
a spectator with every hand re-dealt.
"""

from __future__ import annotations

import json
import random
from dataclasses import fields

from kc_support import play, position

from engine.knights_castles import apply_move, parse_move, random_playout, view_for
from engine.knights_castles.cards import N_KINDS
from engine.knights_castles.rules import replace
from engine.knights_castles.state import KEEP


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


def test_the_narration_names_a_kept_card_and_an_offers_cards_only_to_their_seats():
    """Hidden information in the log: describe() tells each reader only what it may know."""
    from engine.knights_castles.narrate import describe

    state = play(position(players=3, current=2, step="trade", deck_top="town mine",
                          tableau={0: "scholastics"}, gold={0: 1, 1: 1}), "done")
    after = play(state, "keep mine")
    mine = describe(state, parse_move("keep mine"), after, 0)
    assert "You kept Mine and discarded Town." in mine
    for reader in (1, 2, None):
        words = " ".join(describe(state, parse_move("keep mine"), after, reader))
        assert "Mine" not in words and "discarded Town" in words
    trade = position(players=3, step="trade", hands={0: "castle", 1: "bishop"},
                     gold={0: 1, 1: 1, 2: 1})
    offer = parse_move("offer red: castle for bishop")
    asked = apply_move(trade, offer)
    for reader in (0, 1):
        assert "Castle" in " ".join(describe(trade, offer, asked, reader))
    for reader in (2, None):
        words = " ".join(describe(trade, offer, asked, reader))
        assert "Castle" not in words and "Bishop" not in words and "offer" in words


def test_the_picture_shows_every_tableau_and_no_hand():
    """The tableau picture is drawn from a view: cards in play and advances, no hand."""
    import xml.etree.ElementTree as ET

    from engine.knights_castles.svg import tableau_svg

    state = position(players=3, hands={0: "bishop"}, tableau={0: "2 village town",
                     1: "irrigation"}, shared={2: "irrigation"}, gold={1: 4})
    for seat in (None, 0, 1):
        svg = tableau_svg(view_for(state, seat), "t")
        ET.fromstring(svg)  # well-formed
        assert "Bishop" not in svg and "Village" in svg and "Irrigation" in svg
        assert "shared" in svg and "gold 4" in svg


def test_an_organiser_may_choose_the_start_seat_and_nobody_rolls_for_it():
    """Set-up: a chosen start seat replaces the start roll; replays keep it."""
    from engine.knights_castles import new_game, replay

    chosen = new_game(3, 1, start=2)
    assert chosen.start == chosen.current == 2 and chosen.start_chosen
    assert chosen.dice == ()
    rolled = new_game(3, 1)
    assert not rolled.start_chosen and len(rolled.dice) >= 3
    assert replay(chosen.players, 1, (), [], start=2) == chosen
