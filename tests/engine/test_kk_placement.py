"""Placing pieces: the rule books' card-play and placement examples, and the readings of them."""

from dataclasses import replace

import pytest

from engine import (
    ADVISOR,
    IllegalMoveError,
    Place,
    SetupError,
    apply_move,
    describe,
    legal_moves,
    parse_move,
)

from helpers import BOARD, fill, scenario, seat_of


def places(state, country=None):
    return [m for m in legal_moves(state) if isinstance(m, Place)
            and (country is None or m.country == country)]


def test_andreas_first_piece_in_an_empty_country_is_one_monastery():
    """Example 1 (card play): in an empty country one card places one monastery, and that is all."""
    state = scenario(hands={"yellow": "PRR"})
    franken = places(state, "Franken")
    assert franken, "Andreas can build in Franken"
    assert all(len(m.pieces) == 1 and m.pieces[0] != ADVISOR for m in franken)
    assert {m.cards for m in franken} == {("R",)}, "two red cards would place two pieces: too many"
    after = apply_move(state, parse_move("R Franken: Mainz", BOARD))
    assert after.monasteries[BOARD.field_named("Mainz").index] == seat_of(state, "yellow")
    assert after.phase == "draw", "his placement is over; he refills"
    with pytest.raises(IllegalMoveError, match="only one piece"):
        apply_move(state, parse_move("RR Franken: Mainz, Lorsch", BOARD))
    with pytest.raises(IllegalMoveError, match="no monastery yet"):
        apply_move(state, parse_move("R Franken: advisor", BOARD))


def test_barbara_places_a_monastery_and_a_joker_advisor():
    """Example 2 (card play): one Franken card for a monastery, two green cards as a joker for an advisor."""
    state = scenario(hands={"red": "RGG"}, monasteries={"Mainz": "yellow"}, current="red")
    move = parse_move("RGG Franken: Lorsch, advisor", BOARD)
    assert move in legal_moves(state)
    after = apply_move(state, move)
    red = seat_of(state, "red")
    assert after.monasteries[BOARD.field_named("Lorsch").index] == red
    assert after.advisors[BOARD.country("Franken").index][red] == 1
    assert after.hands[red] == () and after.draws_left == 3


def test_chris_with_three_frankreich_cards_plays_two_of_them():
    """Example 3 (card play): three Frankreich cards place two pieces there, or make a joker elsewhere."""
    state = scenario(hands={"green": "PPP"}, monasteries=fill("Frankreich", yellow=1),
                     current="green")
    moves = places(state)
    assert all(len(m.cards) <= 2 for m in moves), "the 3-2-1 rule: three cards cannot all be used"
    assert any(m.cards == ("P", "P") and m.country == "Frankreich" and len(m.pieces) == 2
               for m in moves)
    joker_countries = {m.country for m in moves if m.cards == ("P", "P") and len(m.pieces) == 1}
    assert joker_countries == {c.name for c in BOARD.countries} - {"Frankreich"}
    with pytest.raises(IllegalMoveError, match="at most 2"):
        apply_move(state, Place(("P", "P", "P"), "Frankreich", ("Rouen", "Tours")))


def test_a_joker_plus_a_third_card_only_in_the_third_cards_country():
    """The 3-2-1 rule: a joker and a third card place two pieces in the third card's country only."""
    state = scenario(hands={"yellow": "GGP"}, monasteries={**fill("Frankreich", red=1),
                                                          **fill("Franken", red=1)})
    three_card = [m for m in places(state) if len(m.cards) == 3]
    assert three_card and {m.country for m in three_card} == {"Frankreich"}
    with pytest.raises(IllegalMoveError, match="cannot place a piece in Franken"):
        apply_move(state, Place(("G", "G", "P"), "Franken", ("Lorsch", ADVISOR)))


def test_a_card_that_places_no_piece_cannot_be_played():
    """Each card places a piece: playing a mismatched card, or more cards than pieces, is refused."""
    state = scenario(hands={"yellow": "RRC"}, monasteries=fill("Franken", red=1))
    with pytest.raises(IllegalMoveError, match="cannot place a piece in Franken"):
        apply_move(state, Place(("C", "R"), "Franken", ("Lorsch",)))
    with pytest.raises(IllegalMoveError, match="place 2 pieces"):
        apply_move(state, Place(("R", "R"), "Franken", ("Lorsch",)))


def test_one_monastery_per_field_and_a_full_country_takes_no_more():
    """Monasteries: one per cloister field; when every field is taken, none more in that country."""
    state = scenario(hands={"yellow": "OOR"}, monasteries=fill("Schwaben", red=2, green=2))
    assert not [m for m in places(state, "Schwaben") if ADVISOR not in m.pieces]
    with pytest.raises(IllegalMoveError, match="already holds a monastery"):
        apply_move(state, parse_move("O Schwaben: Ulm", BOARD))
    state = scenario(hands={"yellow": "RR"}, monasteries={"Mainz": "red"})
    with pytest.raises(IllegalMoveError, match="only one monastery"):
        apply_move(state, Place(("R", "R"), "Franken", ("Lorsch", "Lorsch")))


def test_advisor_cap_andreas_fills_frankreich_to_four():
    """Advisor example 1: Barbara's 4 monasteries allow 4 advisors; two present, Andreas adds two."""
    state = scenario(hands={"yellow": "OOP"},
                     monasteries=fill("Frankreich", red=4, green=1),
                     advisors={"Frankreich": ["green", "red"]})
    move = parse_move("OOP Frankreich: advisor, advisor", BOARD)
    assert move in legal_moves(state)
    after = apply_move(state, move)
    assert sum(after.advisors[BOARD.country("Frankreich").index]) == 4
    fuller = scenario(hands={"yellow": "OOP"}, monasteries=fill("Frankreich", red=4, green=1),
                      advisors={"Frankreich": ["green", "red", "blue"]})
    with pytest.raises(IllegalMoveError) as error:
        apply_move(fuller, move)
    assert "Frankreich already holds 4 advisors, the most monasteries any player has there" \
        in str(error.value)


def test_advisor_cap_three_red_two_blue_two_yellow_allows_three():
    """The cap example: three red, two blue and two yellow monasteries allow three advisors."""
    state = scenario(hands={"green": "PP"}, monasteries=fill("Frankreich", red=3, blue=2, yellow=2),
                     advisors={"Frankreich": ["red", "red"]}, current="green")
    assert parse_move("P Frankreich: advisor", BOARD) in legal_moves(state)
    assert parse_move("PP Frankreich: advisor, advisor", BOARD) not in legal_moves(state)
    with pytest.raises(IllegalMoveError, match="Frankreich already holds 3 advisors"):
        apply_move(state, parse_move("PP Frankreich: advisor, advisor", BOARD))


def test_advisor_cap_italien_shared_majority():
    """Advisor example 2: Barbara and Doris with 2 each allow two advisors, or a monastery and one."""
    base = {"monasteries": fill("Italien", red=2, blue=2), "current": "red"}
    state = scenario(hands={"red": "CC"}, **base)
    legal = legal_moves(state)
    for text in ("CC Italien: advisor, advisor", "CC Italien: Firenze, Roma",
                 "CC Italien: Roma, advisor", "CC Italien: advisor, Roma"):
        assert parse_move(text, BOARD) in legal, text
    after = apply_move(state, parse_move("CC Italien: Roma, advisor", BOARD))
    assert max(after.monastery_counts(BOARD.country("Italien").index)) == 3
    assert after.advisor_room(BOARD.country("Italien").index) == 2, "three monasteries, one advisor"


def test_advisor_cap_is_checked_with_the_monastery_placed_first():
    """Reading: a monastery placed in the same turn raises the cap for the advisor, whichever
    order the player wrote them in; the two orders are one move, listed once."""
    state = scenario(hands={"red": "CC"}, monasteries=fill("Italien", red=2, blue=1),
                     advisors={"Italien": ["blue", "blue"]}, current="red")
    first_monastery = parse_move("CC Italien: Pisa, advisor", BOARD)
    first_advisor = parse_move("CC Italien: advisor, Pisa", BOARD)
    assert "Pisa" not in fill("Italien", red=2, blue=1)
    assert first_advisor == first_monastery
    assert first_monastery in legal_moves(state)
    after = apply_move(state, first_advisor)
    italien = BOARD.country("Italien").index
    assert after.advisors[italien][seat_of(state, "red")] == 1
    # Someone else's monastery does not raise the cap when the leader is another player.
    blue = scenario(hands={"blue": "CC"}, monasteries=fill("Italien", red=2, blue=1),
                    advisors={"Italien": ["blue", "blue"]}, current="blue")
    assert parse_move("CC Italien: Pisa, advisor", BOARD) not in legal_moves(blue)
    with pytest.raises(IllegalMoveError, match="Italien already holds 2 advisors"):
        apply_move(blue, parse_move("CC Italien: advisor, Pisa", BOARD))


def test_legal_moves_list_each_placement_once():
    """No two legal moves are the same placement (same cards, country and pieces in any
    order), in any position of many seeded games."""
    import random

    from engine import Place, new_game

    for seed in range(6):
        rng = random.Random(seed)
        state = new_game(("yellow", "red", "green", "purple"), f"once-{seed}", BOARD)
        while not state.is_over:
            legal = legal_moves(state)
            keys = [(m.cards, m.country, tuple(sorted(m.pieces))) if isinstance(m, Place)
                    else str(m) for m in legal]
            assert len(keys) == len(set(keys)), [str(m) for m in legal]
            assert [str(m) for m in legal] == [str(parse_move(str(m), BOARD)) for m in legal]
            state = apply_move(state, rng.choice(legal))


def test_advisors_may_go_where_the_player_has_no_monastery():
    """A player may place an advisor in a country where they have no monastery."""
    state = scenario(hands={"purple": "R"}, monasteries=fill("Franken", red=1), current="purple")
    after = apply_move(state, parse_move("R Franken: advisor", BOARD))
    assert after.advisors[BOARD.country("Franken").index][seat_of(state, "purple")] == 1


def test_limited_supply_leaves_only_exchanges():
    """Supplies are limited: with no pieces left, the only action is to exchange a card."""
    state = scenario(hands={"yellow": "RGP"}, monasteries=fill("Franken", red=1),
                     supply={"yellow": (0, 0)})
    assert {type(m).__name__ for m in legal_moves(state)} == {"Exchange"}
    one_monastery = scenario(hands={"yellow": "RR"}, monasteries=fill("Franken", red=1),
                             supply={"yellow": (1, 0)})
    assert all(len(m.pieces) == 1 and m.pieces[0] != ADVISOR for m in places(one_monastery))
    with pytest.raises(IllegalMoveError, match="no monasteries left"):
        apply_move(one_monastery, parse_move("RR Franken: Lorsch, Fulda", BOARD))
    with pytest.raises(IllegalMoveError, match="no advisors left"):
        apply_move(one_monastery, parse_move("R Franken: advisor", BOARD))


def test_all_pieces_go_to_one_country():
    """Pieces of one turn go to one country only."""
    state = scenario(hands={"yellow": "RR"}, monasteries={"Mainz": "red", "Jaca": "red"})
    with pytest.raises(IllegalMoveError, match="Jaca is in Aragon, not in Franken"):
        apply_move(state, Place(("R", "R"), "Franken", ("Jaca", "Lorsch")))


def test_cards_must_be_in_the_hand():
    """You can only play cards you hold; the message shows your hand."""
    state = scenario(hands={"yellow": "RGO"})
    with pytest.raises(IllegalMoveError, match="your hand is"):
        apply_move(state, parse_move("P Frankreich: Rouen", BOARD))


# --- the joker: the German book's reading (default) and the English and Spanish books' ----------

def test_german_book_chris_joker_only_in_another_country():
    """German example 3 (Chris): three Frankreich cards place two pieces there, or a joker in
    another country ("in ein beliebiges anderes Land"); never all three cards."""
    state = scenario(hands={"green": "PPP"}, monasteries=fill("Frankreich", yellow=1),
                     current="green")
    assert state.joker == "other"
    moves = places(state)
    assert not [m for m in moves if m.cards == ("P", "P", "P")]
    assert not [m for m in moves if m.cards == ("P", "P") and m.country == "Frankreich"
                and len(m.pieces) == 1]
    with pytest.raises(IllegalMoveError, match="at most 2"):
        apply_move(state, Place(("P", "P", "P"), "Frankreich", ("Chartres", "Tours")))


def test_english_and_spanish_books_joker_in_any_country():
    """English v1.3 and Spanish example 3 (Chris / Pedro): a joker places a piece in *any*
    country, so three Frankreich cards place two pieces in Frankreich (one card and a joker)."""
    base = scenario(hands={"green": "PPP"}, monasteries=fill("Frankreich", yellow=1),
                    current="green")
    state = replace(base, joker="any")
    moves = places(state)
    three = [m for m in moves if m.cards == ("P", "P", "P")]
    assert three and {m.country for m in three} == {"Frankreich"}
    assert all(len(m.pieces) == 2 for m in three)
    joker_countries = {m.country for m in moves if m.cards == ("P", "P") and len(m.pieces) == 1}
    assert joker_countries == {c.name for c in BOARD.countries}, "any country, Frankreich too"
    move = Place(("P", "P", "P"), "Frankreich", ("Chartres", "Tours"))
    after = apply_move(state, move)
    assert after.hands[seat_of(state, "green")] == () and after.draws_left == 3
    assert "two purple cards (Frankreich) as a joker" in " ".join(describe(state, move, after, None))
    # Barbara's example reads the same in both books: one Franken card and a green joker.
    barbara = replace(scenario(hands={"red": "RGG"}, monasteries={"Mainz": "yellow"},
                               current="red"), joker="any")
    assert parse_move("RGG Franken: Lorsch, advisor", BOARD) in legal_moves(barbara)


def test_the_joker_reading_is_kept_when_a_game_is_saved_and_replayed():
    """The switch lives in the state: it survives saving, and old saved games read as German."""
    from engine import from_json, new_game, replay, to_json
    from engine.kardinal_koenig.serialize import to_dict

    state = new_game(4, 3, joker="any")
    assert from_json(to_json(state)).joker == "any"
    old = to_dict(new_game(4, 3))
    del old["joker"]  # a game saved before the switch existed
    import json
    assert from_json(json.dumps(old)).joker == "other"
    assert replay(4, 3, [], joker="any").joker == "any"
    with pytest.raises(SetupError, match="joker rule"):
        new_game(4, 3, joker="both")


def test_refusal_names_only_the_card_that_cannot_be_used():
    """`OOR Frankreich: Chartres`: OO is a valid joker there, so only R is blamed."""
    state = scenario(hands={"yellow": "OOR"}, monasteries=fill("Frankreich", red=1))
    with pytest.raises(IllegalMoveError) as error:
        apply_move(state, parse_move("OOR Frankreich: Chartres", BOARD))
    message = str(error.value)
    assert message.startswith("R (Franken/Aragon) cannot place a piece in Frankreich")
    assert "OO is a valid joker there" in message
    assert "O (England/Schwaben)" not in message
