"""A turn from start to end: setup, refilling, exchanging, the deck running out, the game's end."""

from collections import Counter
from dataclasses import replace

import pytest

from engine import (
    DECK,
    Draw,
    Exchange,
    IllegalMoveError,
    Pass,
    SetupError,
    apply_move,
    legal_moves,
    new_game,
    outcome,
    parse_move,
)
from engine.kardinal_koenig.scoring import final_breakdown, intermediate_breakdown

from helpers import BOARD, fill, scenario, seat_of


def play(state, *texts):
    for text in texts:
        state = apply_move(state, parse_move(text, BOARD))
    return state


@pytest.mark.parametrize("players, removed, deck", [(3, 2, 45 - 9 - 2), (4, 1, 50 - 12 - 2),
                                                    (5, 0, 55 - 15 - 2)])
def test_setup_deals_three_cards_each_and_two_face_up(players, removed, deck):
    """Setup: 4 players set aside one card of each colour, 3 players two; 3 cards each, 2 face up."""
    state = new_game(players, seed=11)
    assert Counter(state.removed) == Counter({c.code: removed for c in BOARD.cards if removed})
    assert all(len(hand) == 3 for hand in state.hands)
    assert len(state.face_up) == 2 and len(state.deck) == deck
    assert state.monastery_supply == (20,) * players and state.advisor_supply == (8,) * players
    assert state.players == ("yellow", "red", "green", "purple", "blue")[:players]
    assert state.current == state.start and state.phase == "play"


def test_setup_is_seeded_and_takes_chosen_colours_and_start():
    """The same seed deals the same cards; another seed another deal; colours and start can be chosen."""
    assert new_game(4, 5) == new_game(4, 5)
    assert new_game(4, 5).deck != new_game(4, 6).deck
    assert {new_game(5, seed).start for seed in range(40)} == set(range(5))
    state = new_game(["blue", "red", "yellow"], 5, start=2)
    assert state.players == ("blue", "red", "yellow") and state.current == 2
    for bad in (2, 6, ["red", "red", "blue"], ["red", "pink", "blue"]):
        with pytest.raises(SetupError):
            new_game(bad, 1)
    with pytest.raises(SetupError):
        new_game(3, 1, start=3)


def test_refill_one_card_at_a_time_and_face_up_replaced_when_the_hand_is_full():
    """Refill: each card from a face-up card or the deck; face-up cards are replaced only afterwards."""
    state = scenario(hands={"yellow": "RRR"}, monasteries={"Mainz": "red"}, face_up="GO",
                     deck="CPRRGGOOCC")
    state = play(state, "RR Franken: Lorsch, Fulda")
    assert state.phase == "draw" and state.draws_left == 2
    assert set(legal_moves(state)) == {Draw(DECK), Draw("G"), Draw("O")}
    state = play(state, "draw G")
    assert state.face_up == ("O",), "the taken card is not replaced in the middle of a refill"
    state = play(state, "draw O")
    yellow = seat_of(state, "yellow")
    assert state.hands[yellow] == ("G", "O", "R")
    assert state.face_up == ("C", "P"), "replaced from the deck once the hand holds three"
    assert state.current == seat_of(state, "red") and state.phase == "play"


def test_three_draws_take_at_least_one_from_the_deck():
    """A player drawing three cards takes at least one from the deck (only two lie face up)."""
    state = scenario(hands={"yellow": "RGG"}, monasteries={"Mainz": "red"}, face_up="CO",
                     deck="PPPPPPPP")
    state = play(state, "GGR Franken: Lorsch, advisor")
    assert state.draws_left == 3
    state = play(state, "draw C", "draw O")
    assert state.face_up == () and legal_moves(state) == [Draw(DECK)]
    state = play(state, "draw deck")
    assert state.hands[seat_of(state, "yellow")] == ("C", "O", "P")
    assert state.face_up == ("P", "P") and state.phase == "play"


def test_a_deck_card_is_seen_by_its_drawer_only():
    """A deck card goes to the drawer's hand and into their private record of draws."""
    state = scenario(hands={"yellow": "RGG"}, monasteries={"Mainz": "red"}, face_up="CO",
                     deck="PPCOGR")
    state = play(state, "R Franken: Lorsch", "draw deck")
    yellow = seat_of(state, "yellow")
    assert state.drawn[yellow] == ("P",) and state.hands[yellow] == ("G", "G", "P")


def test_exchange_discards_one_card_and_draws_one():
    """Trade a card: discard one, draw one from the deck or a face-up card (which is then replaced)."""
    state = scenario(hands={"yellow": "RGO"}, face_up="CP", deck="GGRR", discard="")
    state = play(state, "exchange O")
    assert state.discard == ("O",) and state.phase == "draw" and state.draws_left == 1
    with pytest.raises(IllegalMoveError, match="now draw 1 more card"):
        play(state, "exchange R")
    state = play(state, "draw P")
    yellow = seat_of(state, "yellow")
    assert state.hands[yellow] == ("G", "P", "R")
    assert state.face_up == ("C", "G"), "the face-up card taken is replaced from the deck"
    assert state.current == seat_of(state, "red")
    with pytest.raises(IllegalMoveError, match="you hold no purple card"):
        play(state, "exchange P")


def test_deck_running_out_mid_refill_scores_at_once_and_reshuffles_the_discards():
    """Intermediate scoring: at once when the last card is drawn, even mid-refill; discards reshuffled."""
    monasteries = {**fill("Frankreich", green=4, red=2, blue=1), "Mainz": "red"}
    state = scenario(hands={"yellow": "RRG"}, monasteries=monasteries, face_up="CO", deck="P",
                     discard="OOCCG")
    state = play(state, "RR Franken: Lorsch, Fulda", "draw deck")
    assert state.exhaustions == 1
    expected = intermediate_breakdown(BOARD, state.players, state.intermediate).totals()
    assert state.scores == expected and state.scores[seat_of(state, "green")] == 7
    assert state.intermediate[BOARD.field_named("Lorsch").index] == seat_of(state, "yellow")
    assert Counter(state.deck) == Counter("OOCCGRR"), "the discards, with the cards just played"
    assert state.discard == () and state.face_up == ("C", "O"), "face-up cards stay out"
    assert state.phase == "draw" and state.draws_left == 1, "the refill goes on"
    state = play(state, "draw deck")
    assert state.phase == "play" and len(state.deck) == 6


def test_deck_running_out_while_replacing_face_up_cards_scores_too():
    """Drawing the last card to replace a face-up card also triggers the intermediate scoring."""
    state = scenario(hands={"yellow": "RRG"}, monasteries={"Mainz": "red"}, face_up="CO",
                     deck="P", discard="GGOO")
    state = play(state, "R Franken: Lorsch", "draw C")
    assert state.exhaustions == 1 and state.face_up == ("O", "P")
    assert len(state.deck) == 5 and state.scores[seat_of(state, "yellow")] > 0


def test_second_time_the_round_is_played_out_to_the_start_players_right():
    """Game end: the deck runs out again; the round ends with the player right of the start player."""
    state = scenario(hands={"green": "RGG", "purple": "CCO", "blue": "OOP"},
                     monasteries={"Mainz": "red", "Rouen": "red", "Aachen": "red"},
                     face_up="CP", deck="R", discard="", current="green",
                     exhaustions=1, intermediate=(-1,) * len(BOARD.fields))
    assert state.start == 0
    state = play(state, "R Franken: Lorsch", "draw deck")
    assert state.exhaustions == 2 and state.last_seat == seat_of(state, "blue")
    assert state.deck == () and state.current == seat_of(state, "purple")
    state = play(state, "C Lothringen: Trier", "draw C")
    assert state.face_up == ("P",), "nothing is left to replace face-up cards"
    state = play(state, "OO Frankreich: Chartres", "draw P")
    assert state.is_over and "ran out a second time" in state.end_reason
    result = outcome(state)
    final = final_breakdown(BOARD, state.players, state.monasteries, state.advisors).totals()
    assert result.scores == final, "intermediate scored nothing here; all points are final"


def test_hands_may_stay_short_when_nothing_is_left_to_draw():
    """From the second run-out on, hands refill only from what is left and may stay short."""
    state = scenario(hands={"yellow": "RRG"}, monasteries={"Mainz": "red"}, face_up="",
                     deck="", discard="CC", exhaustions=2, last_seat=4,
                     intermediate=(-1,) * len(BOARD.fields))
    state = play(state, "RR Franken: Lorsch, Fulda")
    assert state.hands[0] == ("G",) and state.current == 1, "nothing to draw: the turn ends"


def test_a_seat_that_can_do_nothing_passes():
    """A seat that can neither place a piece nor exchange passes; otherwise it may not pass."""
    state = scenario(hands={"yellow": ""}, face_up="", deck="", exhaustions=2, last_seat=4,
                     intermediate=(-1,) * len(BOARD.fields))
    assert legal_moves(state) == [Pass()]
    after = apply_move(state, Pass())
    assert after.current == 1 and after.ply == state.ply + 1
    with pytest.raises(IllegalMoveError, match="may pass only when"):
        apply_move(scenario(hands={"yellow": "R"}), Pass())


def test_game_ends_when_nobody_can_place_a_piece():
    """The game also ends when it is not possible for anyone to place a piece."""
    supply = {c: (0, 0) for c in ("red", "green", "purple", "blue")}
    supply["yellow"] = (1, 0)
    state = scenario(hands={"yellow": "RRG"}, monasteries={"Mainz": "red"}, supply=supply,
                     deck="PPPP", face_up="CO")
    state = play(state, "R Franken: Lorsch", "draw deck")
    assert state.is_over and state.end_reason == "no player can place a piece"
    assert outcome(state).breakdown.to_dict()["monasteries"]["Franken"] == {"yellow": 2, "red": 2}


def test_ties_go_to_the_most_pieces_left_then_are_shared():
    """Winner: most points; a tie goes to the most pieces left in supply; a tie on that is shared."""
    state = scenario(3, phase="over", end_reason="test", scores=(30, 30, 12),
                     supply={"yellow": (5, 2), "red": (6, 2), "green": (9, 9)})
    assert outcome(state).winners == (1,)
    shared = replace(state, monastery_supply=(6, 6, 9))
    assert outcome(shared).winners == (0, 1)
    assert outcome(replace(state, phase="draw")) is None


def test_moves_out_of_phase_are_refused_with_a_reason():
    """Drawing before playing, playing while drawing, and drawing what is not there are refused."""
    state = scenario(hands={"yellow": "RRG"}, monasteries={"Mainz": "red"}, face_up="CO",
                     deck="PPPP")
    with pytest.raises(IllegalMoveError, match="nothing to draw now"):
        play(state, "draw deck")
    state = play(state, "R Franken: Lorsch")
    with pytest.raises(IllegalMoveError, match="no purple card lies face up"):
        play(state, "draw P")
    with pytest.raises(IllegalMoveError, match="now draw 1 more card"):
        play(state, "R Franken: Fulda")


def test_a_finished_game_takes_no_moves():
    """Nothing can be played once the game is over."""
    state = scenario(phase="over", end_reason="test")
    assert legal_moves(state) == []
    with pytest.raises(IllegalMoveError, match="the game is over"):
        apply_move(state, Exchange("R"))
