"""Knights & Castles notation: every move round-trips, the documented spellings read, bad text
gets an answer saying what to write."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.errors import NotationError
from engine.knights_castles import (
    Abandon,
    Accept,
    Build,
    Buy,
    Decline,
    Discard,
    Done,
    Keep,
    Lose,
    Offer,
    Pay,
    Play,
    Research,
    Share,
    War,
    parse_move,
    parse_moves,
)

DOCS = Path(__file__).resolve().parent.parent.parent / "docs" / "notation.md"

EVERY_KIND = [Done(), Buy(), Keep("town"), Build("trade-route"), Pay("castle"), Abandon("city"),
              Research("crop-rotation"), Share("gun-powder"), Play("caravan"),
              Play("volcanic-eruption", "orange"), War("red"), War("blue", True),
              Lose(("town", "village", "village")), Lose(()),
              Offer("green", 12, ("city", "village"), 0, ("storm-at-sea",)),
              Offer("red", 0, ("mine",), 3, ()), Accept(), Decline(), Discard("untimely-end")]


@pytest.mark.parametrize("move", EVERY_KIND, ids=str)
def test_every_move_round_trips(move):
    """Notation: parse_move(str(move)) == move for every kind of move."""
    assert parse_move(str(move)) == move
    assert parse_move(str(move).upper()) == move


def test_the_documented_spellings_read_as_documented():
    """docs/notation.md: each line of the kc-moves blocks (English, then German and Spanish)
    reads as the move given."""
    blocks = re.findall(r"```kc-moves\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 2
    lines = [line for block in blocks for line in block.splitlines() if line.strip()]
    assert len(lines) >= 20 and any(line.startswith("baue Großstadt") for line in lines)
    for line in lines:
        written, canonical = (part.strip() for part in line.split("->"))
        move = parse_move(written)
        assert str(move) == canonical, line
        assert parse_move(canonical) == move


def test_a_whole_turn_in_one_message():
    """Notation: several moves, one a line or separated by ';'."""
    assert parse_moves("buy\nbuild village; build town\n\ndone") == [
        Buy(), Build("village"), Build("town"), Done()]


@pytest.mark.parametrize("text,answer", [
    ("", "empty"),
    ("build palace", "'palace' is not a card"),
    ("build village town", "one card"),
    ("fly", "'fly' is not a move"),
    ("play plague at pink", "not a player"),
    ("offer red 5 gold for town", "write an offer as"),
    ("offer red: 5 gold", "write an offer as"),
    ("lose 3 gold", "not gold"),
    ("war", "write an act of war"),
    ("done now", "takes nothing after it"),
    ("buy village", "'buy' buys one card"),
    ("x" * 400, "at most 300 characters"),
    ("build village\nbuild town", "one move here"),
])
def test_unreadable_moves_say_what_to_write(text, answer):
    """Notation: a NotationError (a ValueError) with a message a player can act on."""
    with pytest.raises(NotationError, match=answer):
        parse_move(text)


def test_a_move_that_is_not_text_is_refused():
    """Notation: data that is not text is refused, not crashed on."""
    for value in (None, 3, ["buy"]):
        with pytest.raises(NotationError):
            parse_move(value)


def test_every_move_written_in_german_and_spanish_reads_back_as_itself():
    """A move shown in the reader's words (the seat page's buttons, the turn file's list: issue
    32, point 5) is the same move when the reader sends it back; no English word is left in it."""
    import random

    from engine.knights_castles import legal_moves, new_game
    from engine.knights_castles.moves import CARD_NAMES, Offer, War, written
    from engine.knights_castles.rules import apply_move

    seen = {"offer red: 5 gold, 2 village, town for storm-at-sea",
            "offer green: nothing for 3 gold", "lose 2 village, trade-route"}
    seen.add(str(War("purple", True)))
    seen.add(str(Offer("yellow", 0, ("untimely-end", "mined-out"), 2, ("crop-rotation",))))
    for game in range(6):
        chooser = random.Random(game)
        # Four players, and two with the variant that discards knights from the hand.
        state = (new_game(("yellow", "red", "green", "purple"), game) if game % 2 else
                 new_game(("purple", "green"), game, ("knights-from-hand",)))
        for _ in range(400):
            if state.is_over:
                break
            moves = legal_moves(state).moves
            seen.update(str(m) for m in moves)
            state = apply_move(state, chooser.choice(moves))
    assert {m.split()[0] for m in seen} >= {"done", "buy", "build", "lose", "play", "war",
                                            "discard", "pay", "research", "offer"}
    english = {"done", "buy", "build", "keep", "pay", "abandon", "research", "share", "play",
               "war", "lose", "offer", "accept", "decline", "discard", "at", "for",
               "nothing", "from", "hand", "yellow", "red", "green", "purple", *CARD_NAMES}
    for language in ("de", "es"):
        for notation in sorted(seen):
            text = written(notation, language)
            assert str(parse_move(text)) == str(parse_move(notation)), (notation, text)
            left = [w for w in re.findall(r"[a-zäöüß-]+", text.lower()) if w in english
                    and w not in ("mine", "hand", "inventor")]  # German or Spanish too
            assert not left, (language, notation, text, left)
    assert written("build village", "de") == "baue Dorf"
    assert written("play plague at red", "es") == "jugar Peste contra rojo"
    assert written("build village", "en") == "build village"
