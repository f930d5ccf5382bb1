"""Knights & Castles: each reading in docs/rules-notes.md, one test or a few each."""

from __future__ import annotations

import pytest
from kc_support import legal, play, position, vector

from engine.errors import IllegalMoveError, NotationError
from engine.knights_castles import (
    apply_move,
    default_move,
    legal_moves,
    new_game,
    outcome,
    parse_move,
    unsupported,
)
from engine.knights_castles.cards import INDEX
from engine.knights_castles.state import (
    ANSWER,
    BUILD,
    BUY,
    END,
    EVENT,
    KEEP,
    LOSS,
    OVER,
    RESEARCH,
    TRADE,
    UPKEEP,
)


def builds(state) -> set[str]:
    return {m[len("build "):] for m in legal(state) if m.startswith("build ")}


def losses(state) -> set[str]:
    return {m for m in legal(state) if m.startswith("lose")}


# --- the cards ----------------------------------------------------------------------------------

def test_the_deck_has_106_cards_as_the_readings_list_them():
    """Cards: 30 villages, 9 towns, ... 5 leaders, 7 advances, 15 events of three kinds: 106."""
    from engine.knights_castles.cards import KINDS

    counts = {k.id: k.count for k in KINDS}
    assert (counts["village"], counts["town"], counts["mine"], counts["castle"], counts["city"],
            counts["knights"], counts["ships"], counts["trade-route"]) == (30, 9, 6, 9, 6, 9, 6, 4)
    assert sum(counts.values()) == 106
    state = new_game(4, 1)
    assert state.card_total() == 106


# --- support is counting ------------------------------------------------------------------------

def test_a_village_supports_one_town_mine_or_castle():
    """Support: towns + mines + castles <= villages, without Irrigation."""
    state = position(hands={0: "town mine castle village"}, tableau={0: "2 village town"})
    assert builds(state) == {"village", "town", "mine", "castle"}
    state = play(state, "build mine")
    assert builds(state) == {"village"}
    with pytest.raises(IllegalMoveError, match="castle would be unsupported"):
        apply_move(state, parse_move("build castle"))
    state = play(state, "build village")
    assert "castle" in builds(state)


def test_irrigation_lets_every_two_villages_support_three():
    """Support with Irrigation: 2 villages carry 3 cards, 3 villages 4 (an odd village 1)."""
    hand = "3 town 2 mine 2 village"
    plain = position(hands={0: hand}, tableau={0: "2 village 2 town"})
    assert builds(plain) == {"village"}
    irrigated = position(hands={0: hand}, tableau={0: "2 village 2 town irrigation"})
    assert builds(irrigated) == {"village", "town", "mine"}
    state = play(irrigated, "build mine")
    assert builds(state) == {"village"}
    state = play(state, "build village")  # 3 villages: 3 + 1 = 4 cards
    assert builds(state) == {"village", "town", "mine"}
    state = play(state, "build town")
    assert builds(state) == {"village"}


def test_shared_irrigation_counts_like_your_own():
    """Support with Irrigation shared from another seat."""
    state = position(hands={0: "town"}, tableau={0: "2 village 2 town", 1: "irrigation"},
                     shared={0: "irrigation"})
    assert builds(state) == {"town"}


@pytest.mark.parametrize("tableau,hand,allowed", [
    ("village town", "city", {"city"}),
    ("2 village town city", "city", set()),
    ("village castle", "2 knights", {"knights"}),
    ("village castle 2 knights", "knights", set()),
    ("2 village 2 town city", "3 ships", {"ships"}),
    ("2 village 2 town city 2 ships", "ships", set()),
    ("2 village 2 town city", "bishop duke", {"bishop", "duke"}),
    ("2 village 2 town city bishop", "duke", set()),
    ("2 village 2 town city ships", "2 trade-route", {"trade-route"}),
    ("2 village 2 town city ships trade-route", "trade-route", set()),
    ("", "town mine castle city knights ships trade-route prince", set()),
])
def test_each_card_needs_its_supporter_with_room(tableau, hand, allowed):
    """Support: cities <= towns, knights <= 2 x castles, ships <= 2 x cities, leaders <= cities,
    trade routes <= ships."""
    state = position(hands={0: hand}, tableau={0: tableau})
    assert builds(state) == allowed


def test_unsupported_cards_after_losses_cost_1_gold_each_or_are_discarded():
    """Build: after building, each unsupported card is kept for 1 gold or discarded, the owner's
    choice; a kept card is paid for again in the next build phase."""
    # Lost a village: 1 village left for a town and a castle; the city on the town is fine.
    state = position(tableau={0: "village town castle city"}, hands={0: "masonry"},
                     gold={0: 6})
    assert unsupported(state, 0) == [1, 0, 0, 0, 0, 0]
    state = play(state, "done")
    assert state.step == UPKEEP and state.to_move == 0
    assert set(legal(state)) == {"pay town", "pay castle", "abandon town", "abandon castle"}
    kept = play(state, "pay castle")
    assert kept.step == RESEARCH and kept.gold[0] == 5
    assert kept.tableau[0] == vector("village town castle city")
    gone = play(state, "abandon town")
    # Without the town the city is unsupported too: that is asked next.
    assert gone.step == UPKEEP
    assert set(legal(gone)) == {"pay city", "abandon city"}
    assert play(gone, "abandon city").tableau[0] == vector("village castle")


def test_a_seat_without_gold_can_only_abandon():
    """Build: an unsupported card is discarded unless its owner pays 1 gold."""
    state = play(position(tableau={0: "village castle 3 knights"}), "done")
    # One knights card too many and no gold: the only answer is played at once; the turn
    # goes on to the event phase (an act of war is possible) without asking.
    assert state.step == EVENT
    assert state.tableau[0] == vector("village castle 2 knights")
    assert state.discard[-1] == INDEX["knights"]


# --- a turn -------------------------------------------------------------------------------------

def test_start_seat_is_the_highest_roll_and_ties_roll_again():
    """Set-up: 7 cards each, 0 gold, each seat rolls 1D6, highest starts, ties roll again."""
    for seed in range(40):
        state = new_game(3, seed)
        first = state.dice[:3]
        if first.count(max(first)) == 1:
            assert state.start == first.index(max(first))
        else:
            assert len(state.dice) > 3  # the tied seats rolled again
        assert all(sum(h) >= 7 for h in state.hands)
        assert state.current == state.start and state.turn == 1


def test_draw_phase_draws_one_then_buys_for_5_gold():
    """Draw: draw 1 card automatically; buy extra cards for 5 gold each."""
    # The previous seat (1) ends its turn; seat 0's turn starts with its draw.
    state = position(current=1, gold={0: 11}, step=TRADE, deck_top="town mine castle")
    state = play(state, "done")
    assert state.current == 0 and state.step == BUY
    assert state.hands[0] == vector("town")
    state = play(state, "buy")
    assert state.hands[0] == vector("town mine") and state.gold[0] == 6
    state = play(state, "buy")
    assert state.gold[0] == 1 and "buy" not in legal(state)


def test_printing_press_draws_one_more():
    """Draw: Printing Press draws 1 more."""
    state = position(current=1, step=TRADE, deck_top="town mine castle",
                     tableau={0: "printing-press"})
    state = play(state, "done")
    assert state.hands[0] == vector("town mine")


def test_scholastics_draws_two_keeps_one_discards_the_other_bought_cards_too():
    """Draw with Scholastics: every draw, bought ones too, is draw 2, keep 1, discard 1."""
    state = position(current=1, step=TRADE, deck_top="town mine castle city",
                     tableau={0: "scholastics"}, gold={0: 5})
    state = play(state, "done")
    assert state.step == KEEP and state.to_move == 0
    assert set(legal(state)) == {"keep town", "keep mine"}
    state = play(state, "keep mine")
    assert state.hands[0] == vector("mine") and state.discard[-1] == INDEX["town"]
    state = play(state, "buy")
    assert state.step == KEEP and set(legal(state)) == {"keep castle", "keep city"}
    state = play(state, "keep city")
    assert state.hands[0] == vector("mine city") and state.discard[-1] == INDEX["castle"]


def test_tax_is_revenue_with_leaders_cartography_and_crop_rotation():
    """Tax: revenue of every card in play, leaders too; Cartography ships +1; Crop Rotation +1
    per 2 villages."""
    tableau = "5 village 2 town mine city ships trade-route bishop"
    plain = play(position(step=BUY, tableau={0: tableau}), "done")
    assert plain.gold[0] == 2 + 2 + 3 + 1 + 4 + 2 == 14
    both = play(position(step=BUY, tableau={0: tableau + " cartography crop-rotation"}), "done")
    assert both.gold[0] == 14 + 1 + 2


def test_research_costs_5_and_sharing_costs_10():
    """Research: an advance costs 5 gold; sharing one another seat has costs 10, any phase of
    one's own turn, and the owner keeps it."""
    state = position(step=RESEARCH, hands={0: "masonry"}, tableau={1: "irrigation"},
                     gold={0: 15})
    assert set(legal(state)) == {"research masonry", "share irrigation", "done"}
    state = play(state, "research masonry", "share irrigation")
    assert state.gold[0] == 0 and state.has(0, INDEX["irrigation"])
    assert state.has(1, INDEX["irrigation"]) and state.tableau[1][INDEX["irrigation"]] == 1
    assert state.tableau[0][INDEX["masonry"]] == 1
    # Not with 9 gold, not what one has, not what nobody has in play.
    poor = position(step=BUILD, tableau={1: "irrigation"}, gold={0: 9})
    assert "share irrigation" not in legal(poor)
    with pytest.raises(IllegalMoveError, match="costs 10 gold"):
        apply_move(poor, parse_move("share irrigation"))
    with pytest.raises(IllegalMoveError, match="no other player has masonry"):
        apply_move(position(step=BUILD, gold={0: 30}), parse_move("share masonry"))


def test_share_is_offered_in_every_phase_with_a_choice_on_ones_own_turn_only():
    """Sharing 'at any time' is any phase of one's own turn."""
    for step in (BUY, BUILD, RESEARCH, EVENT, TRADE):
        state = position(step=step, tableau={1: "gun-powder"}, gold={0: 10, 1: 10})
        assert "share gun-powder" in legal(state), step
    answering = position(step=ANSWER, tableau={0: "gun-powder"}, gold={1: 10},
                         hands={0: "town"}, offer=parse_move("offer red: town for 1 gold"),
                         offered=(1,))
    assert answering.to_move == 1 and "share gun-powder" not in legal(answering)


# A gold each: enough for an offer, so a turn waits in the trade phase instead of ending.
BOTH = {0: 1, 1: 1}


# --- events -------------------------------------------------------------------------------------

def test_a_disaster_makes_the_target_the_seat_to_move():
    """Event: the target's choice of losses is its own decision, asked for like a move."""
    state = position(step=EVENT, hands={0: "plague"}, tableau={1: "2 village town castle"},
                     rolls=(3,), gold=BOTH)
    state = play(state, "play plague at red")
    assert state.step == LOSS and state.to_move == 1 and state.current == 0
    assert state.dice == (3,)
    assert losses(state) == {"lose castle", "lose village, town"}
    state = play(state, "lose castle")
    assert state.step == TRADE and state.to_move == 0
    assert state.tableau[1] == vector("2 village town")
    assert state.discard[-2:] == (INDEX["plague"], INDEX["castle"])


def test_losses_are_covered_exactly_with_none_that_could_be_left_out():
    """Event: cards whose DP add up to at least the roll, none of which could be left out."""
    state = play(position(step=EVENT, hands={0: "vikings"},
                          tableau={1: "3 village town castle bishop"}, rolls=(4,), gold=BOTH),
                 "play vikings at red")
    assert losses(state) == {"lose village, castle", "lose town, castle",
                             "lose 2 village, town", "lose 3 village, town"} - {
        "lose 3 village, town"}  # 3 villages + town = 5: a village could be left out
    # The 0-DP Bishop never helps to cover a loss.
    assert not any("bishop" in m for m in losses(state))


def test_a_target_with_fewer_dp_than_the_roll_loses_everything():
    """Event: a target with fewer DP than the roll loses all its cards in play, 0-DP ones too;
    its advances stay."""
    state = play(position(step=EVENT, hands={0: "famine"},
                          tableau={1: "village town city bishop masonry"}, rolls=(6,), gold=BOTH),
                 "play famine at red")
    # 1 + 2 + 4 (Masonry) = 7 DP cover 6, by town and city alone: not everything.
    assert state.step == TRADE and state.tableau[1] == vector("village bishop masonry")
    poor = play(position(step=EVENT, hands={0: "famine"},
                         tableau={1: "village town bishop masonry"}, rolls=(6,), gold=BOTH),
                "play famine at red")
    # The only answer is played at once: everything goes, Masonry stays.
    assert poor.step == TRADE
    assert poor.tableau[1] == vector("masonry")


def test_gun_powder_and_masonry_add_a_dp():
    """Event: Gun Powder gives knights and ships +1 DP, Masonry castles and cities +1."""
    tableau = "village castle knights"
    plain = play(position(step=EVENT, hands={0: "celts"}, tableau={1: tableau}, rolls=(4,)),
                 "play celts at red")
    assert losses(plain) == {"lose village, castle", "lose village, knights",
                             "lose castle, knights"}
    armed = play(position(step=EVENT, hands={0: "celts"}, tableau={1: tableau + " gun-powder"},
                          rolls=(4,)), "play celts at red")
    assert losses(armed) == {"lose village, castle", "lose knights"}
    walled = play(position(step=EVENT, hands={0: "celts"}, tableau={1: tableau},
                           shared={1: "masonry gun-powder"}, rolls=(4,)), "play celts at red")
    assert losses(walled) == {"lose castle", "lose knights"}


def test_an_act_of_war_discards_a_knights_card_and_counts_as_an_invasion():
    """Event: discard one Knights card in play as an act of war; it counts as an invasion."""
    state = position(step=EVENT, tableau={0: "village castle knights", 1: "2 village castle"},
                     rolls=(2,), gold=BOTH)
    assert "war at red" in legal(state) and "war at red from hand" not in legal(state)
    state = play(state, "war at red")
    assert state.tableau[0] == vector("village castle")
    assert state.discard == (INDEX["knights"],) and state.dice == (2,)
    assert state.step == LOSS and losses(state) == {"lose 2 village", "lose castle"}


def test_knights_from_hand_is_a_variant():
    """Variant knights-from-hand: a Knights card in the hand may be the act of war."""
    plain = position(step=EVENT, hands={0: "knights"})
    assert not any(m.startswith("war") for m in legal(plain))
    variant = position(step=EVENT, hands={0: "knights"}, variants=("knights-from-hand",),
                       rolls=(1,), tableau={1: "2 village"}, gold=BOTH)
    state = play(variant, "war at red from hand")
    assert state.hands[0] == vector("") and state.tableau[1] == vector("village")


def test_caravan_gains_1d6_gold_for_the_player():
    """Event: Caravan targets oneself and gains 1D6 gold."""
    state = play(position(step=EVENT, hands={0: "caravan"}, gold={0: 2, 1: 1},
                          rolls=(5,)), "play caravan")
    assert state.gold[0] == 7 and state.dice == (5,) and state.step == TRADE
    with pytest.raises(IllegalMoveError, match="Caravan targets yourself"):
        apply_move(position(step=EVENT, hands={0: "caravan"}), parse_move("play caravan at red"))


def test_single_card_events_discard_one_card_of_their_kind_target_chooses_the_leader():
    """Event: Storm at Sea, Untimely End, Crusades, Mined Out: one card of that kind, if any;
    the target chooses which leader."""
    rich = "2 village 2 town 2 city ships bishop duke mine castle knights"
    for card, kind in [("storm-at-sea", "ships"), ("crusades", "knights"),
                       ("mined-out", "mine")]:
        state = play(position(step=EVENT, hands={0: card}, tableau={1: rich}, gold=BOTH),
                     f"play {card} at red")
        assert state.step == TRADE, card  # one card of that kind: no choice to ask for
        assert state.tableau[1][INDEX[kind]] == 0
    state = play(position(step=EVENT, hands={0: "untimely-end"}, tableau={1: rich}, gold=BOTH),
                 "play untimely-end at red")
    assert state.to_move == 1 and losses(state) == {"lose bishop", "lose duke"}
    nothing = play(position(step=EVENT, hands={0: "storm-at-sea"}, tableau={1: "village"},
                            gold=BOTH),
                   "play storm-at-sea at red")
    assert nothing.step == TRADE and nothing.tableau[1] == vector("village")


def test_only_one_event_a_turn():
    """Event: at most one Event, Disaster or Invasion card a turn."""
    state = play(position(step=EVENT, hands={0: "plague famine"}, rolls=(1,), gold=BOTH),
                 "play plague at red")
    assert state.step == TRADE
    assert not any(m.startswith("play") for m in legal(state))


# --- trade --------------------------------------------------------------------------------------

def test_an_offer_is_answered_by_its_target_and_play_returns():
    """Trade: the target accepts or declines, its own decision; play returns to the offerer."""
    state = position(step=TRADE, players=3, hands={0: "town village", 1: "castle"},
                     gold={0: 5, 1: 3, 2: 1})
    offer = parse_move("offer red: 2 gold, town for castle, 1 gold")
    assert offer in legal_moves(state)
    asked = apply_move(state, offer)
    assert asked.step == ANSWER and asked.to_move == 1
    assert set(legal(asked)) == {"accept", "decline"}
    done = play(asked, "accept")
    assert done.to_move == 0 and done.step == TRADE
    assert done.hands[0] == vector("village castle") and done.hands[1] == vector("town")
    assert done.gold == (4, 4, 1)
    declined = play(asked, "decline")
    assert declined.hands == state.hands and declined.gold == state.gold
    # One offer to each opponent a turn.
    assert not any(s.colour == "red" for s in legal_moves(done).spaces)
    assert legal_moves(done).offers_to() == ["green"]


def test_an_offer_the_target_cannot_pay_can_only_be_declined():
    """Trade: accepting needs what the offer asks for; the target's hand is secret to the
    offerer, so asking is allowed."""
    state = position(step=TRADE, hands={0: "town", 1: "village"}, gold={1: 3})
    asked = play(state, "offer red: town for castle")
    assert legal(asked) == ["decline"]
    with pytest.raises(IllegalMoveError, match="only 'decline'"):
        apply_move(asked, parse_move("accept"))


@pytest.mark.parametrize("text,reason", [
    ("offer red: nothing for town", "gives something and asks for something"),
    ("offer red: town for nothing", "gives something and asks for something"),
    ("offer red: 6 gold for town", "only 5 gold"),
    ("offer red: castle for town", "do not hold"),
    ("offer red: town for 4 gold", "red has only 3 gold"),
    ("offer red: town for 3 village", "red holds only 2 cards"),
    ("offer yellow: town for 1 gold", "offer a trade to an opponent"),
])
def test_offers_that_cannot_be_made(text, reason):
    """Trade: gold and/or hand cards for gold and/or hand cards, within what each side has."""
    state = position(step=TRADE, hands={0: "town", 1: "2 village"}, gold={0: 5, 1: 3})
    with pytest.raises(IllegalMoveError, match=reason):
        apply_move(state, parse_move(text))


# --- end phase and the end of the game ----------------------------------------------------------

def test_the_end_phase_cuts_the_hand_to_7_by_the_players_choice():
    """End: a hand over 7 cards discards down to 7, the player's choice."""
    state = play(position(step=TRADE, hands={0: "3 village 3 town 2 mine castle"}), "done")
    assert state.step == END and state.to_move == 0
    assert set(legal(state)) == {"discard village", "discard town", "discard mine",
                                 "discard castle"}
    state = play(state, "discard castle")
    assert state.step == END
    state = play(state, "discard mine")
    assert state.current == 1 and sum(state.hands[0]) == 7


def test_the_game_ends_at_the_draw_that_empties_the_deck():
    """End: the game ends the moment the last card is drawn, before tax."""
    state = position(current=1, step=TRADE, deck_size=1, tableau={0: "village town"})
    over = play(state, "done")
    assert over.step == OVER and len(over.deck) == 0 and over.gold[0] == 0
    assert legal_moves(over).moves == [] and len(legal_moves(over)) == 0
    with pytest.raises(IllegalMoveError, match="game is over"):
        apply_move(over, parse_move("done"))


def test_the_game_ends_at_a_bought_card_or_scholastics_emptying_the_deck():
    """End: by a draw, a bought card or Scholastics."""
    bought = play(position(step=BUY, deck_size=1, gold={0: 5}), "buy")
    assert bought.step == OVER and bought.gold[0] == 0
    scholastics = play(position(current=1, step=TRADE, deck_size=2,
                                tableau={0: "scholastics"}), "done")
    assert scholastics.step == OVER and sum(scholastics.hands[0]) == 2  # no keep asked


def test_most_gold_wins_and_equal_gold_shares_the_win():
    """Victory: most gold; equal gold shares the win."""
    state = play(position(players=3, current=2, step=TRADE, deck_size=1,
                          gold={0: 12, 1: 12, 2: 3}), "done")
    result = outcome(state)
    assert result.winners == (0, 1) and result.gold == (12, 12, 3)
    alone = play(position(players=3, current=2, step=TRADE, deck_size=1, gold={1: 1}), "done")
    assert outcome(alone).winners == (1,)
    assert outcome(position()) is None


# --- variants -----------------------------------------------------------------------------------

def test_catch_up_draws_one_more_after_less_revenue():
    """Variant catch-up: less revenue than an opponent in the last tax phase: one more card."""
    behind = position(current=1, step=TRADE, revenue=(2, 5), variants=("catch-up",),
                      deck_top="town mine castle")
    assert sum(play(behind, "done").hands[0]) == 2
    level = position(current=1, step=TRADE, revenue=(5, 5), variants=("catch-up",))
    assert sum(play(level, "done").hands[0]) == 1
    plain = position(current=1, step=TRADE, revenue=(2, 5))
    assert sum(play(plain, "done").hands[0]) == 1


def test_variants_are_for_two_players_only():
    """Variants: "The above variations are for a two-player game only": a game of three or
    more with a variant is refused, with what to do instead; two players may play them."""
    from engine.errors import SetupError
    from engine.knights_castles import new_game

    for players in (3, 4, 6):
        with pytest.raises(SetupError, match=f"two-player game only; play this game of "
                                             f"{players} with the standard rules") as refused:
            new_game(players, 7, ("no-buying", "catch-up"))
        assert refused.value.args[0].params["variant"] == "catch-up+no-buying"
        assert new_game(players, 7).variants == ()
    assert new_game(2, 7, ("no-buying",)).variants == ("no-buying",)


def test_no_buying_variant():
    """Variant no-buying: extra cards cannot be bought."""
    state = position(step=BUY, gold={0: 50}, variants=("no-buying",), tableau={1: "masonry"})
    assert "buy" not in legal(state)
    with pytest.raises(IllegalMoveError, match="without buying"):
        apply_move(state, parse_move("buy"))


# --- the default move for a missed deadline -----------------------------------------------------

def test_default_moves_follow_the_readings():
    """Deadline: nothing built, researched, played or offered; an offer declined; a loss by the
    cards of least revenue; the hand cut by the cards of least value."""
    for step in (BUY, BUILD, RESEARCH, EVENT, TRADE):
        state = position(step=step, hands={0: "village masonry plague"}, gold={0: 20})
        assert str(default_move(state)) == "done"
    state = play(position(step=EVENT, hands={0: "plague"}, rolls=(3,),
                          tableau={1: "3 village town castle mine"}), "play plague at red")
    # Castle (revenue 0) covers 3 alone; village + town would lose the town's revenue.
    assert str(default_move(state)) == "lose castle"
    asked = play(position(step=TRADE, hands={0: "town"}, gold={1: 3}),
                 "offer red: town for 1 gold")
    assert str(default_move(asked)) == "decline"
    full = play(position(step=TRADE, hands={0: "2 village 2 town city caravan masonry knights"}),
                "done")
    assert str(default_move(full)) == "discard caravan"


def test_a_seat_that_never_moves_still_finishes_the_game():
    """Deadline: a game played by default moves alone ends (draws go on every turn)."""
    state = new_game(4, 3)
    for _ in range(5000):
        if state.is_over:
            break
        state = apply_move(state, default_move(state))
    assert state.is_over and state.card_total() == 106


# --- errors -------------------------------------------------------------------------------------

def test_a_move_in_the_wrong_phase_says_what_is_asked_now():
    """Errors: an illegal move names the step and what is legal in it."""
    state = position(step=RESEARCH, hands={0: "village"})
    with pytest.raises(IllegalMoveError, match="build phase|research phase"):
        apply_move(state, parse_move("build village"))
    with pytest.raises(NotationError, match="not a card"):
        parse_move("build palace")


# --- offers: the one kind of move counted rather than listed -----------------------------------

def test_every_offer_is_listed_once_and_membership_agrees_with_the_list():
    """legal_moves is the one source of truth for offers too: the i-th offer is legal, distinct
    from every other, and an offer is `in` the moves exactly when it can be made."""
    from engine.knights_castles import Offer

    state = position(step=TRADE, hands={0: "2 village town", 1: "castle"}, gold={0: 2, 1: 1})
    moves = legal_moves(state)
    offers = [moves[i] for i in range(len(moves.moves), len(moves))]
    # give: (2+1)(1+1) card choices x 3 gold amounts - nothing = 17; ask: up to 1 card of 35
    # kinds (36 choices) x 2 gold amounts - nothing = 71.
    assert len(offers) == 17 * 71 == len(set(offers))
    assert all(isinstance(o, Offer) and o in moves for o in offers)
    assert all(parse_move(str(o)) == o for o in offers[::37])
    assert Offer("red", 3, (), 0, ("castle",)) not in moves  # only 2 gold
    assert Offer("red", 0, ("castle",), 1, ()) not in moves  # no castle in the hand
    assert Offer("red", 0, ("town",), 0, ("castle", "mine")) not in moves  # red holds 1 card
