"""Views: a seat sees its own hand and draws, sizes of the others' hands, and the public board."""

import json

import pytest

from engine import apply_move, new_game, parse_move, view_for

from helpers import BOARD, scenario, seat_of


def test_a_seat_sees_its_hand_and_only_the_sizes_of_the_others():
    """A seat's view holds its own hand and the other seats' hand sizes, never their cards."""
    state = new_game(4, 3)
    for seat in state.seats:
        data = view_for(state, seat).to_dict()
        assert data["hand"] == list(state.hands[seat])
        assert data["hand_sizes"] == {c: 3 for c in state.players}
        assert data["colour"] == state.players[seat]
        assert data["face_up"] == list(state.face_up) and data["deck_size"] == len(state.deck)


def test_the_spectator_sees_no_hand():
    """The spectator view holds no hand and no drawn card."""
    view = view_for(new_game(5, 9), None)
    assert view.hand is None and view.drawn is None and view.colour is None
    assert not view.is_my_turn


def test_no_view_holds_the_deck_order_or_the_seed():
    """Views hold the deck's size, not its order, and never the seed."""
    state = new_game(3, 123456789)
    for seat in (0, 1, 2, None):
        text = json.dumps(view_for(state, seat).to_dict())
        assert "123456789" not in text
        assert set(view_for(state, seat).to_dict()) >= {"deck_size", "hand_sizes"}
        assert "deck" not in view_for(state, seat).to_dict()


def test_what_this_seat_drew_is_its_own_secret():
    """The card drawn from the deck shows in the drawer's view only."""
    state = scenario(hands={"yellow": "RGG"}, monasteries={"Mainz": "red"}, face_up="CO",
                     deck="PPC")
    state = apply_move(state, parse_move("R Franken: Lorsch", BOARD))
    state = apply_move(state, parse_move("draw deck", BOARD))
    yellow, red = seat_of(state, "yellow"), seat_of(state, "red")
    assert view_for(state, yellow).drawn == ("P",)
    assert view_for(state, red).drawn == ()
    assert view_for(state, red).hand_sizes[yellow] == 3


def test_public_board_in_the_view():
    """Monasteries by field, advisors by country and colour, supplies and scores are public."""
    state = scenario(monasteries={"Mainz": "red", "Würzburg": "blue"},
                     advisors={"Franken": ["blue"]})
    data = view_for(state, 0).to_dict()
    assert data["monasteries"] == {"Mainz": "red", "Würzburg": "blue"}
    assert data["advisors"]["Franken"] == {"blue": 1}
    assert data["supply"]["blue"] == {"monasteries": 19, "advisors": 7}
    assert data["to_move"] == "yellow" and data["start_player"] == "yellow"


def test_a_view_of_a_missing_seat_is_refused():
    """Asking for the view of a seat that does not exist is an error."""
    with pytest.raises(ValueError, match="no seat 3"):
        view_for(new_game(3, 1), 3)
