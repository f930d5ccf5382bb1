"""Moves as small value objects, and the text notation players type and the log stores.

A turn is one `Place` or `Exchange` followed by one `Draw` per card the hand takes back, or a
`Pass` when the seat can do neither. The notation is case-insensitive and accepts field and
country names with or without accents; `parse_move(str(move), board) == move` always holds.
This module reads and writes moves; whether a move is legal is for `engine.rules` to say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .board import Board
from .errors import NotationError
from .names import fold

ADVISOR = "advisor"
DECK = "deck"

_ADVISOR_WORDS = {"advisor", "advisors", "adviser", "adv", "a", "rat", "counsellor"}
_MONASTERY_WORDS = {"monastery", "m", "kloster", "cloister"}
_FILLER_WORDS = {"and", "then", "in", "play", "plays", "on", "at", "to", "with"}
_DECK_WORDS = {"deck", "d", "pile", "stack"}
MAX_NOTATION_LENGTH = 200


@dataclass(frozen=True, slots=True)
class Place:
    """Play `cards` (colour codes) to place `pieces` in `country`, in the order listed.

    A piece is a cloister field's name (a monastery there) or `ADVISOR`. Two monasteries are
    kept in name order, since their order changes nothing.
    """

    cards: tuple[str, ...]
    country: str
    pieces: tuple[str, ...]

    def __post_init__(self) -> None:
        cards = tuple(sorted(self.cards))
        if cards != self.cards:
            object.__setattr__(self, "cards", cards)
        if len(self.pieces) == 2 and ADVISOR not in self.pieces and self.pieces[0] > self.pieces[1]:
            object.__setattr__(self, "pieces", (self.pieces[1], self.pieces[0]))

    def __str__(self) -> str:
        return f"{''.join(self.cards)} {self.country}: {', '.join(self.pieces)}"


@dataclass(frozen=True, slots=True)
class Exchange:
    """Discard one card instead of playing; a `Draw` follows."""

    card: str

    def __str__(self) -> str:
        return f"exchange {self.card}"


@dataclass(frozen=True, slots=True)
class Draw:
    """Take one card into the hand: the face-up card of colour `source`, or `DECK`."""

    source: str

    def __str__(self) -> str:
        return "draw deck" if self.source == DECK else f"draw {self.source}"


@dataclass(frozen=True, slots=True)
class Pass:
    """The seat can neither place a piece nor exchange a card."""

    def __str__(self) -> str:
        return "pass"


Move = Place | Exchange | Draw | Pass

_SPLIT = re.compile(r"[\s,;:+/&()]+")


def _words(text: str) -> list[str]:
    return [w for w in _SPLIT.split(text.strip()) if w]


def _card_codes(word: str, board: Board) -> list[str] | None:
    """The card codes a word stands for ("RGG", "red"), or None if it is not a card word."""
    card = board.find_card(word)
    if card is not None:
        return [card.code]
    codes = [board.find_card(letter) for letter in word]
    if all(c is not None and len(letter) == 1 for c, letter in zip(codes, word)):
        return [c.code for c in codes]
    return None


def _card_list(board: Board) -> str:
    return ", ".join(f"{c.code} = {c.label}" for c in board.cards)


def _one_card(words: list[str], board: Board, verb: str) -> str:
    codes = _card_codes(words[0], board) if len(words) == 1 else None
    if not codes or len(codes) != 1:
        raise NotationError(f"'{verb}' needs exactly one card, for example '{verb} "
                            f"{board.cards[0].code}' (cards: {_card_list(board)})")
    return codes[0]


def parse_move(text: str, board: Board) -> Move:
    """Read one move in the notation; raise NotationError saying what to write instead."""
    if not isinstance(text, str):
        raise NotationError("a move must be text, for example 'pass' or 'draw deck'")
    if len(text) > MAX_NOTATION_LENGTH:
        raise NotationError(f"a move is at most {MAX_NOTATION_LENGTH} characters long")
    words = _words(text)
    if not words:
        raise NotationError("the move is empty; write for example 'R Franken: Mainz' or 'pass'")
    verb = fold(words[0])
    rest = words[1:]
    if verb == "pass":
        if rest:
            raise NotationError("'pass' takes nothing after it")
        return Pass()
    if verb in ("exchange", "swap", "discard", "trade"):
        if not rest:
            raise NotationError(f"say which card to exchange, for example 'exchange "
                                f"{board.cards[0].code}' (cards: {_card_list(board)})")
        return Exchange(_one_card(rest, board, "exchange"))
    if verb in ("draw", "take"):
        if len(rest) == 1 and fold(rest[0]) in _DECK_WORDS:
            return Draw(DECK)
        if not rest:
            raise NotationError("say where to draw from: 'draw deck' or a face-up card such "
                                f"as 'draw {board.cards[0].code}'")
        return Draw(_one_card(rest, board, "draw"))
    return _parse_place(words, board)


def _parse_place(words: list[str], board: Board) -> Place:
    words = [w for w in words if fold(w) not in _FILLER_WORDS]
    cards: list[str] = []
    while words:
        codes = _card_codes(words[0], board)
        if codes is None:
            break
        cards.extend(codes)
        words.pop(0)
    if not cards:
        first = words[0] if words else ""
        raise NotationError(f"'{first}' is not a move; start a placement with the cards you play "
                            f"({_card_list(board)}), for example 'R Franken: Mainz', or write "
                            "'exchange R', 'draw deck' or 'pass'")
    country = None
    found, used = _longest_name(words, board.find_country)
    if found is not None:
        country = found
        words = words[used:]
    pieces: list[str] = []
    while words:
        if fold(words[0]) in _MONASTERY_WORDS:
            words.pop(0)
            continue
        if fold(words[0]) in _ADVISOR_WORDS:
            pieces.append(ADVISOR)
            words.pop(0)
            continue
        field, used = _longest_name(words, board.find_field)
        if field is None:
            where = f" (fields in {country.name}: {', '.join(board.fields[f].name for f in country.fields)})" \
                if country else ""
            raise NotationError(f"'{words[0]}' is not a cloister field or 'advisor'{where}")
        pieces.append(field.name)
        words = words[used:]
    if not pieces:
        raise NotationError("say what to place: a cloister field's name for a monastery, or "
                            "'advisor', for example 'R Franken: Mainz, advisor'")
    if country is None:
        fields = [board.find_field(p) for p in pieces if p != ADVISOR]
        if not fields:
            raise NotationError("say in which country the advisor goes, for example "
                                "'R Franken: advisor'")
        country = board.country(fields[0].country)
    return Place(tuple(cards), country.name, tuple(pieces))


def _longest_name(words: list[str], find):
    """The longest run of leading words that names something `find` knows, and its length."""
    for end in range(min(len(words), 4), 0, -1):
        found = find(" ".join(words[:end]))
        if found is not None:
            return found, end
    return None, 0


def parse_moves(text: str, board: Board) -> list[Move]:
    """Read several moves separated by ';' or new lines (a whole turn in one message)."""
    parts = [p for p in re.split(r"[;\n]+", text) if p.strip()]
    return [parse_move(p, board) for p in parts]
