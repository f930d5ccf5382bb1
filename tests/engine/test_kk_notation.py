"""The move notation: str/parse round trips, accepted spellings, and the messages for bad input."""

import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import (
    ADVISOR,
    DECK,
    Draw,
    Exchange,
    NotationError,
    Pass,
    Place,
    apply_move,
    default_board,
    legal_moves,
    load_board,
    new_game,
    parse_move,
    parse_moves,
)

BOARD = default_board()
DOC = Path(__file__).resolve().parent.parent.parent / "docs" / "notation.md"


def parse(text):
    return parse_move(text, BOARD)


def error_of(text, reader=parse):
    """The message NotationError gives for `text` (the test fails if the text parses)."""
    with pytest.raises(NotationError) as caught:
        reader(text)
    return str(caught.value)


# --- round trip over real games -------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("seed", range(24))
def test_every_legal_move_round_trips_in_a_seeded_game(seed):
    """parse_move(str(m)) == m for every legal move of every position of a random game."""
    players = 3 + seed % 3
    state, chooser = new_game(players, seed), random.Random(seed)
    checked = 0
    while not state.is_over:
        moves = legal_moves(state)
        for move in moves:
            text = str(move)
            assert parse(text) == move, text
            assert len(text) <= 60 and ";" not in text and "\n" not in text
            checked += 1
        chosen = chooser.choice(moves)
        # The game goes on from the parsed move, so the rules accept what the parser returns.
        state = apply_move(state, parse(str(chosen)))
    assert checked > 1000


def test_seeded_games_cover_every_kind_of_move():
    """The round-trip games above hold each shape of move the notation has to write."""
    kinds = set()
    for seed in range(6):
        state, chooser = new_game(3 + seed % 3, seed), random.Random(seed)
        while not state.is_over:
            moves = legal_moves(state)
            for move in moves:
                if isinstance(move, Place):
                    kinds.add(("place", len(move.cards),
                               tuple(p == ADVISOR for p in move.pieces)))
                else:
                    kinds.add((type(move).__name__, getattr(move, "source", None) == DECK))
            state = apply_move(state, chooser.choice(moves))
    assert {("place", 1, (False,)), ("place", 1, (True,)), ("place", 2, (False,))} <= kinds
    for pieces in [(False, False), (False, True), (True, True)]:
        assert ("place", 3, pieces) in kinds
    # A monastery and an advisor are always written monastery first: one move, one form.
    assert not any(kind[0] == "place" and kind[2] == (True, False) for kind in kinds)
    assert {("Exchange", False), ("Draw", True), ("Draw", False)} <= kinds


def test_turn_written_as_text_replays_a_game():
    """A whole game written turn by turn in the notation replays to the same final state."""
    state, chooser = new_game(4, 11), random.Random(11)
    turns, turn, start = [], [], new_game(4, 11)
    while not state.is_over:
        before = state.current
        move = chooser.choice(legal_moves(state))
        turn.append(str(move))
        state = apply_move(state, move)
        if state.current != before or state.is_over:
            turns.append("; ".join(turn))
            turn = []
    replayed = start
    for text in turns:
        for move in parse_moves(text, BOARD):
            replayed = apply_move(replayed, move)
    assert replayed == state


# --- canonical forms --------------------------------------------------------------------------

@pytest.mark.parametrize("move, text", [
    (Place(("R", "G", "G"), "Franken", ("Mainz", ADVISOR)), "GGR Franken: Mainz, advisor"),
    (Place(("R",), "Franken", ("Würzburg",)), "R Franken: Würzburg"),
    (Place(("G", "G"), "Burgund", ("Cluny", "Cîteaux")), "GG Burgund: Cîteaux, Cluny"),
    (Place(("C", "C"), "Italien", ("Roma", ADVISOR)), "CC Italien: Roma, advisor"),
    (Place(("O", "O"), "Schwaben", (ADVISOR, ADVISOR)), "OO Schwaben: advisor, advisor"),
    (Place(("O",), "Schwaben", ("St. Gallen",)), "O Schwaben: St. Gallen"),
    (Exchange("R"), "exchange R"),
    (Draw(DECK), "draw deck"),
    (Draw("G"), "draw G"),
    (Pass(), "pass"),
])
def test_canonical_form(move, text):
    """str(move) is the short form the log stores, and reads back as the same move."""
    assert str(move) == text
    assert parse(text) == move


def test_place_keeps_cards_sorted_and_two_monasteries_in_name_order():
    a = Place(("R", "G", "G"), "Franken", ("Mainz", "Fulda"))
    b = Place(("G", "R", "G"), "Franken", ("Fulda", "Mainz"))
    assert a == b and hash(a) == hash(b)
    assert a.cards == ("G", "G", "R") and a.pieces == ("Fulda", "Mainz")
    # Accents do not push a name to the end: Cîteaux sorts as Citeaux.
    assert Place(("G",), "Burgund", ("Cluny", "Cîteaux")).pieces == ("Cîteaux", "Cluny")


def test_an_advisor_and_a_monastery_in_either_order_are_one_move():
    """Written advisor first or monastery first, it is one move: the monastery goes first."""
    first = Place(("C", "C"), "Italien", (ADVISOR, "Roma"))
    second = Place(("C", "C"), "Italien", ("Roma", ADVISOR))
    assert first == second and hash(first) == hash(second)
    assert str(first) == "CC Italien: Roma, advisor"
    assert parse("CC Italien: advisor, Roma") == second
    assert parse("CC Italien: Roma, advisor") == second


def test_place_from_lists_is_a_hashable_value():
    move = Place(["R", "G", "G"], "Franken", ["Mainz", ADVISOR])
    assert move == Place(("G", "G", "R"), "Franken", ("Mainz", ADVISOR))
    assert hash(move) == hash(Place(("G", "G", "R"), "Franken", ("Mainz", ADVISOR)))


def test_place_of_junk_data_is_refused_by_the_rules_not_by_a_crash():
    """A Place built from data that is not text is a value; apply_move reports it."""
    state = new_game(3, 1)
    for move in (Place(None, "Franken", ("Mainz",)), Place(("R",), "Franken", None),
                 Place((1, "R"), "Franken", (ADVISOR, 2))):
        with pytest.raises(NotationError):
            apply_move(state, move)


# --- accepted spellings -----------------------------------------------------------------------

WUERZBURG = Place(("R",), "Franken", ("Würzburg",))
CITEAUX = Place(("G",), "Burgund", ("Cîteaux",))
ST_GALLEN = Place(("O",), "Schwaben", ("St. Gallen",))
SAINT_DENIS = Place(("P",), "Frankreich", ("Saint-Denis",))
MAINZ_ADVISOR = Place(("G", "G", "R"), "Franken", ("Mainz", ADVISOR))


@pytest.mark.parametrize("text, move", [
    ("R Franken: Würzburg", WUERZBURG),
    ("R Franken: Wurzburg", WUERZBURG),
    ("R Franken: Wuerzburg", WUERZBURG),
    ("r franken: WÜRZBURG", WUERZBURG),
    ("R FRANKEN: wuerzburg", WUERZBURG),
    ("G Burgund: Cîteaux", CITEAUX),
    ("G Burgund: Citeaux", CITEAUX),
    ("g burgund: CITEAUX", CITEAUX),
    ("O Schwaben: St. Gallen", ST_GALLEN),
    ("O Schwaben: St Gallen", ST_GALLEN),
    ("O Schwaben: st.gallen", ST_GALLEN),
    ("O Schwaben: ST  GALLEN", ST_GALLEN),
    ("P Frankreich: Saint-Denis", SAINT_DENIS),
    ("P Frankreich: saint denis", SAINT_DENIS),
    ("G Burgund: Besancon", Place(("G",), "Burgund", ("Besançon",))),
    ("R Franken: Nurnberg", Place(("R",), "Franken", ("Nürnberg",))),
])
def test_names_with_or_without_accents_and_in_any_case(text, move):
    assert parse(text) == move


@pytest.mark.parametrize("text", [
    "GGR Franken: Mainz, advisor",
    "RGG Franken: Mainz, advisor",
    "GRG Franken: Mainz, advisor",
    "G G R Franken: Mainz, advisor",
    "R+G+G Franken: Mainz, advisor",
    "r,g,g franken: mainz, advisor",
    "red green green Franken: Mainz, advisor",
    "Red, Green, GREEN Franken: Mainz, advisor",
    "ggr franken: mainz, ADVISOR",
    "GGR Franken:Mainz,advisor",
    "  GGR   Franken :  Mainz ,  advisor  ",
    "GGR\tFranken:\tMainz,\tadvisor",
    "GGR Franken Mainz advisor",
    "GGR Franken: Mainz and advisor",
    "GGR Franken: Mainz and an advisor",
    "play GGR in Franken: Mainz, advisor",
    '"GGR Franken: Mainz, advisor"',
    "GGR Franken: Mainz, advisor.",
    "GGR Franken: monastery Mainz, advisor",
    "GGR Franken: Mainz monastery, advisor",
    "GGR Franken: a monastery at Mainz and an advisor",
    "GGR Mainz, advisor",
    "GGR Mainz advisor",
])
def test_spelling_variants_of_one_placement(text):
    assert parse(text) == MAINZ_ADVISOR


@pytest.mark.parametrize("word", ["advisor", "Advisor", "ADVISORS", "adviser", "adv", "a", "A",
                                  "an advisor", "Rat", "Berater", "counsellor", "counselor"])
def test_advisor_words(word):
    assert parse(f"GGR Franken: Mainz, {word}") == MAINZ_ADVISOR
    assert parse(f"OO Schwaben: {word}, {word}") == Place(("O", "O"), "Schwaben",
                                                          (ADVISOR, ADVISOR))


@pytest.mark.parametrize("text", ["R Franken: monastery Mainz", "R Franken: m Mainz",
                                  "R Franken: Kloster Mainz", "R Franken: Mainz monastery",
                                  "R Franken: a monastery at Mainz",
                                  "R Franken: cloister Mainz"])
def test_monastery_words_place_no_advisor(text):
    """'a monastery' is an article and a monastery, never an advisor."""
    assert parse(text) == Place(("R",), "Franken", ("Mainz",))


@pytest.mark.parametrize("text, move", [
    ("R Mainz", Place(("R",), "Franken", ("Mainz",))),
    ("r wurzburg", WUERZBURG),
    ("R Wuerzburg", WUERZBURG),
    ("G Citeaux", CITEAUX),
    ("O St Gallen", ST_GALLEN),
    ("GG Cîteaux, Cluny", Place(("G", "G"), "Burgund", ("Cîteaux", "Cluny"))),
    ("CC advisor, Roma", Place(("C", "C"), "Italien", ("Roma", ADVISOR))),
    ("CC Roma, advisor", Place(("C", "C"), "Italien", ("Roma", ADVISOR))),
    ("R Mainz in Franken", Place(("R",), "Franken", ("Mainz",))),
])
def test_country_may_be_left_out_when_a_monastery_names_it(text, move):
    assert parse(text) == move


def test_a_stated_country_is_kept_even_if_the_field_lies_elsewhere():
    """The parser reads what was written; the rules then say that Mainz is not in Bayern."""
    move = parse("G Bayern: Mainz")
    assert move == Place(("G",), "Bayern", ("Mainz",))
    assert parse(str(move)) == move


@pytest.mark.parametrize("text, move", [
    ("draw deck", Draw(DECK)),
    ("Draw Deck", Draw(DECK)),
    ("DRAW DECK", Draw(DECK)),
    ("draw d", Draw(DECK)),
    ("draw pile", Draw(DECK)),
    ("draw from the deck", Draw(DECK)),
    ("take deck", Draw(DECK)),
    ("draw G", Draw("G")),
    ("draw g", Draw("G")),
    ("draw green", Draw("G")),
    ("draw the face-up green card", Draw("G")),
    ("take the face up green card", Draw("G")),
    ("draw P", Draw("P")),
    ("exchange R", Exchange("R")),
    ("Exchange r", Exchange("R")),
    ("exchange red", Exchange("R")),
    ("swap a red card", Exchange("R")),
    ("discard O", Exchange("O")),
    ("pass", Pass()),
    ("PASS", Pass()),
    ("Pass.", Pass()),
    ("  pass!  ", Pass()),
])
def test_draw_exchange_and_pass_variants(text, move):
    assert parse(text) == move


# --- whole turns ------------------------------------------------------------------------------

TURN = [MAINZ_ADVISOR, Draw(DECK), Draw("G"), Draw(DECK)]


@pytest.mark.parametrize("text", [
    "RGG Franken: Mainz, advisor; draw deck; draw G; draw deck",
    "RGG Franken: Mainz, advisor\ndraw deck\ndraw G\ndraw deck",
    "RGG Franken: Mainz, advisor\r\ndraw deck\r\ndraw G\r\ndraw deck\r\n",
    "\n\nRGG Franken: Mainz, advisor;\n\n draw deck ;draw G;;draw deck;\n",
])
def test_parse_moves_reads_a_whole_turn(text):
    assert parse_moves(text, BOARD) == TURN


def test_parse_moves_of_blank_text_is_no_moves():
    assert parse_moves("", BOARD) == [] and parse_moves(" ;\n ; ", BOARD) == []


def test_parse_moves_says_which_move_is_wrong():
    message = error_of("R Franken: Mainz; drwa deck; draw G", lambda t: parse_moves(t, BOARD))
    assert message.startswith("move 2 ('drwa deck'):")
    assert "did you mean draw" in message


def test_parse_move_refuses_several_moves_and_says_so():
    message = error_of("R Mainz; draw deck")
    assert "one move" in message and "'R Mainz'" in message and "'draw deck'" in message


def test_a_move_word_inside_a_placement_asks_for_a_separator():
    assert "separate moves with ';'" in error_of("R Franken: Mainz draw deck")


# --- bad input --------------------------------------------------------------------------------

@pytest.mark.parametrize("junk", [
    None, 5, 3.5, True, b"pass", ["pass"], ("R", "Franken"), {"move": "pass"}, object(),
    "", " ", "\n", ";", "...", "-", "\x00", "\x1b[31mR Mainz", "pass\x00", "\u200b",
    "🂡 🂢", "Ｆｒａｎｋｅｎ", "R" * 201, "x" * 100_000,
    "R Franken: Mainz, " * 20, "\ud800", "R Fran\u0000ken: Mainz", "draw 7", "exchange -",
    "12 34", "R 💥", "GGR Franken: 2 advisors", "draw deck deck", "draw deck G",
])
def test_garbage_raises_notation_error(junk):
    with pytest.raises(NotationError) as caught:
        parse_move(junk, BOARD)
    assert isinstance(caught.value, ValueError)
    message = str(caught.value)
    assert 10 < len(message) < 600 and message.isprintable()


@pytest.mark.parametrize("junk", [None, 7, b"draw deck", ["pass"]])
def test_parse_moves_refuses_what_is_not_text(junk):
    assert "text" in error_of(junk, lambda t: parse_moves(t, BOARD))


def test_a_move_that_is_not_text_says_so():
    assert "must be text" in error_of(None) and "must be text" in error_of(42)


def test_too_long_a_move_says_how_long_it_may_be():
    assert "at most 200 characters" in error_of("R Franken: " + "Mainz " * 50)


def test_control_characters_are_quoted_back_escaped():
    message = error_of("R Franken: Mai\x00nz")
    assert "\\x00" in message and "\x00" not in message


def test_a_long_unknown_word_is_quoted_back_short():
    message = error_of("R Franken: " + "q" * 150)
    assert "q" * 39 + "…" in message and "q" * 41 not in message


# --- messages for common mistakes ------------------------------------------------------------

def test_placement_without_cards_asks_for_the_cards_first():
    message = error_of("Franken: Mainz")
    assert message.startswith("a placement starts with the cards you play")
    assert "'R Franken: Mainz'" in message and "R (red: Franken/Aragon)" in message


def test_field_without_cards_suggests_that_field():
    assert "'O Schwaben: St. Gallen'" in error_of("St Gallen")


def test_unknown_card_letter_is_named():
    message = error_of("RGY Franken: Mainz")
    assert message.startswith("'Y' in 'RGY' is not a card")
    assert "P (purple: Frankreich)" in message


def test_misspelt_country_gets_a_suggestion():
    assert "(did you mean Franken?)" in error_of("R Frankn: Mainz")


def test_misspelt_field_gets_a_suggestion_and_the_country_fields():
    message = error_of("R Franken: Wurtzburg")
    assert "'Wurtzburg' is not a cloister field in Franken" in message
    assert "(did you mean Würzburg?)" in message
    assert "Mainz, Lorsch, Fulda, Würzburg, Bamberg, Nürnberg" in message


def test_misspelt_verb_gets_a_suggestion():
    message = error_of("drwa deck")
    assert message.startswith("'drwa' is not a move (did you mean draw?)")
    assert "'draw deck'" in message and "'pass'" in message


def test_placement_without_pieces_lists_the_fields():
    message = error_of("R Franken")
    assert message.startswith("say what to place in Franken")
    assert "Würzburg" in message and "'advisor'" in message


def test_advisor_without_country_asks_for_the_country():
    assert error_of("GG advisor") == ("say in which country to place, for example "
                                      "'GG Bayern: advisor'")


def test_two_countries_are_refused():
    assert "one country, not both Franken and Bayern" in error_of("R Franken Bayern: Mainz")


def test_card_after_the_country_is_refused():
    assert "write all the cards first" in error_of("R Franken: Mainz G")


@pytest.mark.parametrize("text, expected", [
    ("draw", "say where to draw from: 'draw deck'"),
    ("draw GR", "draw one card per move, for example 'draw G; draw R'"),
    ("draw X", "'X' is not a card"),
    ("draw face-up", "say where to draw from"),
    ("exchange", "say which card to exchange"),
    ("exchange RG", "exchange exactly one card"),
    ("exchange deck", "'deck' is not a card"),
    ("pass now", "'pass' takes nothing after it"),
])
def test_draw_exchange_and_pass_mistakes(text, expected):
    assert expected in error_of(text)


# --- properties -------------------------------------------------------------------------------

VOCABULARY = (["R", "G", "C", "O", "P", "GGR", "RR", "red", "green", "Franken", "Burgund",
               "Mainz", "Würzburg", "Wuerzburg", "St.", "St", "Gallen", "Cîteaux", "advisor", "a",
               "m", "monastery", "draw", "deck", "exchange", "pass", "the", "and", "X", "2"]
              + [":", ",", ";", "\n", "-", ".", "+", "\x00", "ü"])


def _check_parse(text):
    try:
        move = parse(text)
    except NotationError as exc:
        assert str(exc)
        return
    assert isinstance(move, (Place, Exchange, Draw, Pass))
    assert parse(str(move)) == move


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=300))
def test_any_text_parses_or_raises_notation_error(text):
    _check_parse(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(VOCABULARY), max_size=10).map(" ".join))
def test_any_text_of_notation_words_parses_or_raises_notation_error(text):
    """Text made of real notation words reaches every branch of the parser."""
    _check_parse(text)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.floats(), st.binary(), st.lists(st.text())))
def test_parse_of_anything_but_text_raises_notation_error(value):
    with pytest.raises(NotationError):
        parse_move(value, BOARD)
    with pytest.raises(NotationError):
        parse_moves(value, BOARD)


@st.composite
def places(draw):
    country = draw(st.sampled_from(BOARD.countries))
    fields = [BOARD.fields[f].name for f in country.fields]
    pieces = draw(st.lists(st.sampled_from(fields + [ADVISOR]), min_size=1, max_size=3))
    cards = draw(st.lists(st.sampled_from([c.code for c in BOARD.cards]), min_size=1,
                          max_size=3))
    return Place(tuple(cards), country.name, tuple(pieces))


@settings(max_examples=300, deadline=None)
@given(st.one_of(places(), st.sampled_from([c.code for c in BOARD.cards]).map(Exchange),
                 st.sampled_from([DECK] + [c.code for c in BOARD.cards]).map(Draw),
                 st.just(Pass())))
def test_every_well_formed_move_round_trips(move):
    """Legal or not, a move made of the board's cards and names reads back as itself."""
    assert parse(str(move)) == move
    assert parse(str(move).lower()) == move
    assert parse(str(move).upper()) == move


# --- another board ----------------------------------------------------------------------------

OTHER_BOARD = Path(__file__).resolve().parent.parent / "data" / "test-board.toml"


@pytest.fixture(scope="module")
def other_board():
    return load_board(OTHER_BOARD)


def test_country_names_with_or_without_accents(other_board):
    move = Place(("D",), "Österreich", ("Zwettl",))
    for text in ("D Österreich: Zwettl", "D Osterreich: Zwettl", "D Oesterreich: Zwettl",
                 "d ÖSTERREICH zwettl", "D Zwettl"):
        assert parse_move(text, other_board) == move


def test_long_field_names_and_a_card_coded_d_round_trip(other_board):
    """A five-word field name reads back, and 'draw D' is the card D, not the deck."""
    moves = [Place(("D", "D"), "Österreich", ("Stift Sankt Florian bei Linz", "Zwettl")),
             Place(("B", "B"), "Österreich", (ADVISOR, "Stift Sankt Florian bei Linz")),
             Draw("D"), Draw(DECK), Exchange("D"), Exchange("B")]
    for move in moves:
        assert parse_move(str(move), other_board) == move
    assert parse_move("draw white", other_board) == Draw("D")
    assert parse_move("draw deck", other_board) == Draw(DECK)


# --- the players' guide -----------------------------------------------------------------------

def _blocks(info: str) -> list[list[str]]:
    """The lines of every fenced block in docs/notation.md opened with ```info."""
    text = DOC.read_text(encoding="utf-8")
    found = re.findall(rf"^```{info}\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    return [[line for line in block.splitlines() if line.strip()] for block in found]


def test_every_move_in_the_guide_parses():
    lines = [line for block in _blocks("moves") for line in block]
    assert len(lines) >= 30
    for line in lines:
        moves = parse_moves(line, BOARD)
        assert moves, line
        for move in moves:
            assert parse(str(move)) == move


def test_every_error_in_the_guide_is_the_real_message():
    lines = [line for block in _blocks("errors") for line in block]
    pairs = list(zip(lines[::2], lines[1::2]))
    assert len(pairs) >= 10 and len(lines) == 2 * len(pairs)
    for written, answer in pairs:
        assert written.startswith("> ") and not answer.startswith(">"), written
        message = error_of(written[2:])
        if answer.endswith("…"):
            assert message.startswith(answer[:-1].rstrip()), (written, message)
        else:
            assert message == answer, (written, message)


def test_guide_examples_of_a_whole_turn_read_as_one_turn():
    single, per_line = _blocks("moves")[:2]
    assert parse_moves(single[0], BOARD) == parse_moves("\n".join(per_line), BOARD) == TURN


def _table(first_header: str) -> list[list[str]]:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"| {first_header} |")
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_guide_card_table_matches_the_board():
    rows = _table("Code")
    assert rows == [[c.code, c.colour, ", ".join(c.countries)] for c in BOARD.cards]


def test_guide_field_table_matches_the_board():
    rows = _table("Country")
    assert rows == [[c.name, c.card, ", ".join(BOARD.fields[f].name for f in c.fields)]
                    for c in BOARD.countries]


def test_every_move_written_in_german_and_spanish_reads_back_as_itself():
    """The legal moves a German or Spanish seat's turn file and page list are in its words
    (issue 32, points 5 and 8: 'G Bayern: Rat', 'ziehe Stapel', never 'advisor' or 'draw
    deck'), and each reads back as the same move."""
    import engine
    from engine.kardinal_koenig.moves import written

    seen = set()
    for game in range(4):
        chooser = random.Random(game)
        state = engine.new_game(4, f"words-{game}")
        for _ in range(300):
            moves = engine.legal_moves(state)
            if not moves:
                break
            seen.update(str(m) for m in moves)
            state = engine.apply_move(state, chooser.choice(moves))
    assert any("advisor" in m for m in seen) and "draw deck" in seen
    assert any(m.startswith("exchange ") for m in seen)
    for language in ("de", "es"):
        for notation in sorted(seen):
            text = written(notation, language)
            assert not re.search(r"\b(advisor|exchange|draw|deck)\b", text), (notation, text)
            assert engine.parse_move(text, state.board) == engine.parse_move(notation,
                                                                              state.board)
    assert written("G Bayern: advisor", "de") == "G Bayern: Rat"
    assert written("draw deck", "es") == "robar mazo"
