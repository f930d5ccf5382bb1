"""Moves as small value objects, and the text notation players type and the log stores.

A turn is one `Place` or `Exchange` followed by one `Draw` per card the hand takes back, or a
`Pass` when the seat can do neither. The notation is case-insensitive and accepts field and
country names with or without accents; `parse_move(str(move), board) == move` always holds.
This module reads and writes moves; whether a move is legal is for `rules` to say.
docs/notation.md is the players' guide to the notation.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import cache, lru_cache

from ..errors import NotationError
from ..names import fold
from ..words import Phrase, colour, say
from .board import Board, Country, Field

ADVISOR = "advisor"
DECK = "deck"

MAX_NOTATION_LENGTH = 200

# The notation's words in English, German and Spanish (docs/notation.md lists them): a turn file
# or a reply may say `tausche R`, `cambiar R`, `ziehe Stapel` or `robar mazo` as well as
# `exchange R` and `draw deck`. Folded (lower case, no accents) as `names.fold` leaves them.
_PASS_WORDS = {"pass", "passe", "passen", "pasar", "paso"}
_EXCHANGE_WORDS = {"exchange", "swap", "discard", "trade",
                   "tausche", "tauschen", "tausch", "cambiar", "cambio", "cambia", "descartar"}
_DRAW_WORDS = {"draw", "take", "ziehe", "ziehen", "zieh", "nimm", "nehme", "robar", "robo",
               "roba", "tomar", "tomo", "coger", "cojo"}
_ADVISOR_WORDS = {"advisor", "advisors", "adviser", "advisers", "adv", "a", "rat", "berater",
                  "counsellor", "counselor", "councillor", "rate", "consejero", "consejeros"}
_MONASTERY_WORDS = {"monastery", "monasteries", "m", "kloster", "cloister", "abbey",
                    "monasterio", "monasterios"}
_DECK_WORDS = {"deck", "d", "pile", "stack", "stapel", "nachziehstapel", "mazo"}
# Words a player may write for readability; they never change what a move means.
_FILLER_WORDS = {"and", "then", "in", "play", "plays", "played", "place", "places", "on", "at",
                 "to", "with", "card", "cards", "the", "an", "one",
                 "und", "dann", "karte", "karten", "spiele", "setze", "ein", "eine", "einen",
                 "y", "luego", "carta", "cartas", "juego", "jugar", "coloco", "colocar", "en",
                 "un", "una"}
_DRAW_FILLER_WORDS = {"from", "the", "a", "card", "one", "face", "up", "face up", "faceup", "open",
                      "top", "of", "vom", "von", "der", "die", "karte", "eine", "offene",
                      "oberste", "del", "de", "la", "el", "carta", "una", "descubierta",
                      "bocarriba"}
_EXCHANGE_FILLER_WORDS = {"a", "the", "card", "one", "my", "eine", "die", "karte", "meine",
                          "una", "la", "carta", "mi"}
# Card colours in German and Spanish, for the English colour names the board gives.
_COLOUR_WORDS = {"rot": "red", "gruen": "green", "grun": "green", "creme": "cream",
                 "lila": "purple", "violett": "purple",
                 "rojo": "red", "roja": "red", "verde": "green", "crema": "cream",
                 "naranja": "orange", "morado": "purple", "morada": "purple",
                 "purpura": "purple"}

# Separators between words. '.', '-' and apostrophes stay inside words: they are part of names
# ("St. Gallen", "Saint-Denis"), and `names.fold` treats them as spaces when matching.
_SPLIT = re.compile(r"[\s,;:+/&()\[\]{}<>\"“”„«»!?*|=]+")
_MOVE_BREAK = re.compile(r"[;\r\n]+")


@dataclass(frozen=True, slots=True)
class Place:
    """Play `cards` (colour codes) to place `pieces` in `country`.

    A piece is a cloister field's name (a monastery there) or `ADVISOR`. One placement has one
    form, whatever order it was written in: cards sorted, monasteries before advisors, two
    monasteries in name order. Placing a monastery first is never worse under the rules (it
    can only make room on the crest for the advisor, docs/rules-notes.md) and ends in the same
    position, so "advisor, Roma" and "Roma, advisor" are one move, `CC Italien: Roma, advisor`.
    Values that are not text are kept as they are, for `rules` to reject with a message.
    """

    cards: tuple[str, ...]
    country: str
    pieces: tuple[str, ...]

    def __post_init__(self) -> None:
        cards, pieces = self.cards, self.pieces
        if isinstance(cards, (str, list, tuple)) and all(isinstance(c, str) for c in cards):
            object.__setattr__(self, "cards", tuple(sorted(cards)))
        if isinstance(pieces, (list, tuple)) and all(isinstance(p, str) for p in pieces):
            pieces = tuple(pieces)
            if len(pieces) == 2 and piece_order(pieces[0]) > piece_order(pieces[1]):
                pieces = (pieces[1], pieces[0])
            object.__setattr__(self, "pieces", pieces)

    def __str__(self) -> str:
        return f"{''.join(self.cards)} {self.country}: {', '.join(self.pieces)}"


def piece_order(piece: str) -> tuple[bool, tuple[str, str]]:
    """The order of a placement's pieces: monasteries (in `name_order`), then advisors."""
    return (piece == ADVISOR, name_order(piece))


@cache
def name_order(name: str) -> tuple[str, str]:
    """The order of two monasteries in a move: by the name as a reader sees it ("Cîteaux"
    before "Cluny"), then exactly, to be total."""
    return fold(name), name


def trusted_place(cards: tuple[str, ...], country: str, pieces: tuple[str, ...]) -> Place:
    """A `Place` from parts already in canonical form (sorted cards, pieces in `piece_order`),
    built without normalising: the engine's fast path for `legal_moves`."""
    move = object.__new__(Place)
    object.__setattr__(move, "cards", cards)
    object.__setattr__(move, "country", country)
    object.__setattr__(move, "pieces", pieces)
    return move


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


# --- reading --------------------------------------------------------------------------------

def parse_move(text: str, board: Board) -> Move:
    """Read one move in the notation; raise NotationError saying what to write instead."""
    if not isinstance(text, str):
        raise NotationError(say("a move must be text, for example 'pass' or 'draw deck'"))
    if len(text) > MAX_NOTATION_LENGTH:
        raise NotationError(say("a move is at most %(most)d characters long; write one move at a "
                                "time", most=MAX_NOTATION_LENGTH))
    parts = [p for p in _MOVE_BREAK.split(text) if p.strip()]
    if len(parts) > 1:
        raise NotationError(say("write one move here; this is %(count)d moves: %(moves)s",
                                count=len(parts),
                                moves="; ".join(f"'{_shown(p.strip())}'" for p in parts[:4])))
    words = _SPLIT.split(text)
    words = [w for w in words if w and fold(w)]
    if not words:
        raise NotationError(say("the move is empty; write for example '%(example)s', 'draw deck' "
                                "or 'pass'", example=_example(board)))
    verb, rest = fold(words[0]), words[1:]
    if verb in _PASS_WORDS:
        if rest:
            raise NotationError(say("'pass' takes nothing after it"))
        return Pass()
    if verb in _EXCHANGE_WORDS:
        return Exchange(_parse_one_card(rest, board, "exchange", _EXCHANGE_FILLER_WORDS))
    if verb in _DRAW_WORDS:
        return _parse_draw(rest, board)
    return _parse_place(words, board)


def parse_moves(text: str, board: Board) -> list[Move]:
    """Read several moves separated by ';' or new lines (a whole turn in one message)."""
    if not isinstance(text, str):
        raise NotationError(say("moves must be text, for example 'R Franken: Mainz; draw deck'"))
    parts = [p.strip() for p in _MOVE_BREAK.split(text) if p.strip()]
    moves = []
    for number, part in enumerate(parts, 1):
        try:
            moves.append(parse_move(part, board))
        except NotationError as exc:
            if len(parts) == 1:
                raise
            raise NotationError(say("move %(number)d ('%(move)s'): %(reason)s", number=number,
                                        move=_shown(part), reason=exc.args[0])) from None
    return moves


def _parse_draw(words: list[str], board: Board) -> Draw:
    words = [w for w in words if fold(w) not in _DRAW_FILLER_WORDS]
    if not words:
        raise NotationError(say("say where to draw from: 'draw deck', or a face-up card such as "
                                "'draw %(card)s'", card=board.cards[0].code))
    # A card beats a deck word, so that a board with a card coded D still reads 'draw D'.
    if len(words) == 1 and board.find_card(words[0]) is None and fold(words[0]) in _DECK_WORDS:
        return Draw(DECK)
    return Draw(_parse_one_card(words, board, "draw", _DRAW_FILLER_WORDS))


def _parse_one_card(words: list[str], board: Board, verb: str, fillers: set[str]) -> str:
    words = [w for w in words if fold(w) not in fillers]
    code = board.cards[0].code
    example = (say("'draw %(card)s' or 'draw deck'", card=code) if verb == "draw"
               else say("'exchange %(card)s'", card=code))
    if not words:
        raise NotationError(
            say("say which card to draw, for example %(example)s (cards: %(cards)s)",
                example=example, cards=_card_list(board)) if verb == "draw" else
            say("say which card to exchange, for example %(example)s (cards: %(cards)s)",
                example=example, cards=_card_list(board)))
    codes: list[str] = []
    for word in words:
        found = _card_codes(word, board)
        if found is None:
            raise NotationError(say("'%(word)s' is not a card; write %(example)s (cards: "
                                    "%(cards)s)", word=_shown(word), example=example,
                                    cards=_card_list(board)))
        codes.extend(found)
    if len(codes) > 1:
        if verb == "draw":
            raise NotationError(say("draw one card per move, for example '%(moves)s'",
                                    moves="; ".join(f"draw {c}" for c in codes[:3])))
        raise NotationError(say("exchange exactly one card, for example 'exchange %(card)s'",
                                card=codes[0]))
    return codes[0]


def _parse_place(words: list[str], board: Board) -> Place:
    cards: list[str] = []
    i = 0
    while i < len(words):
        if fold(words[i]) in _FILLER_WORDS:
            i += 1
            continue
        codes = _card_codes(words[i], board)
        if codes is None:
            break
        cards.extend(codes)
        i += 1
    if not cards:
        raise _not_a_move(words[i:] or words, board)
    country: Country | None = None
    pieces: list[str] = []
    while i < len(words):
        word, key = words[i], fold(words[i])
        found, used = _longest_name(words[i:], board)
        if isinstance(found, Country):
            if country is not None and found != country:
                raise NotationError(say("a placement goes to one country, not both %(first)s "
                                        "and %(second)s; write a second placement next turn",
                                        first=country.name, second=found.name))
            country = found
        elif isinstance(found, Field):
            pieces.append(found.name)
        elif key in _ADVISOR_WORDS:
            if not (key == "a" and i + 1 < len(words) and _is_piece_word(words[i + 1])):
                pieces.append(ADVISOR)  # else "a" is the article of "a monastery"
        elif key not in _MONASTERY_WORDS and key not in _FILLER_WORDS:
            raise _not_a_piece(word, country, board)
        i += used or 1
    if country is None:
        fields = [f for f in (board.find_field(p) for p in pieces if p != ADVISOR) if f is not None]
        if not fields:
            raise NotationError(say("say in which country to place, for example '%(move)s'",
                                    move=f"{''.join(sorted(cards))} "
                                    f"{_example_country(cards, board)}: "
                                    f"{', '.join(pieces) or ADVISOR}"))
        country = board.country(fields[0].country)
    if not pieces:
        raise NotationError(say("say what to place in %(country)s: the name of a cloister "
                                "field for a monastery (%(fields)s), or 'advisor', for example "
                                "'%(move)s'", country=country.name,
                                fields=_field_list(country, board),
                                move=f"{''.join(sorted(cards))} {country.name}: "
                                f"{board.fields[country.fields[0]].name}"))
    return Place(tuple(cards), country.name, tuple(pieces))


def _is_piece_word(word: str) -> bool:
    key = fold(word)
    return key in _MONASTERY_WORDS or (key in _ADVISOR_WORDS and key != "a")


def _card_codes(word: str, board: Board) -> list[str] | None:
    """The card codes a word stands for ("RGG", "red"), or None if it is not a card word."""
    card = board.find_card(_COLOUR_WORDS.get(fold(word), word))
    if card is not None:
        return [card.code]
    cards = [board.find_card(letter) for letter in word]
    codes = [c.code for c in cards if c is not None]
    return codes if len(codes) == len(cards) else None


@lru_cache(maxsize=8)
def _most_words(board: Board) -> int:
    """The most words any country or field name of the board has."""
    return max(len(fold(name).split()) for name in board.by_name)


def _longest_name(words: list[str], board: Board) -> tuple[Country | Field | None, int]:
    """The country or cloister field named by the most leading words, and how many it took."""
    for end in range(min(len(words), _most_words(board)), 0, -1):
        name = " ".join(words[:end])
        found = board.find_country(name) or board.find_field(name)
        if found is not None:
            return found, end
    return None, 0


# --- messages -------------------------------------------------------------------------------

def _shown(text: str, limit: int = 40) -> str:
    """A piece of the player's text, safe to quote back in a message."""
    if not text.isprintable():
        text = text.encode("unicode_escape", "backslashreplace").decode("ascii")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _card_list(board: Board) -> list[Phrase]:
    return [say("%(code)s (%(colour)s: %(countries)s)", code=c.code, colour=colour(c.colour),
                countries=c.label) for c in board.cards]


def _field_list(country: Country, board: Board) -> str:
    return ", ".join(board.fields[f].name for f in country.fields)


def _example(board: Board) -> str:
    country = board.countries[0]
    return f"{country.card} {country.name}: {board.fields[country.fields[0]].name}"


def _example_country(cards: list[str], board: Board) -> str:
    shown = [c for c in board.countries if c.card in cards]
    return (shown or board.countries)[0].name


def _suggestion(word: str, names: list[str]) -> Phrase | str:
    """' (did you mean X?)' for a near miss among `names`, else ''."""
    by_key = {fold(name): name for name in names}
    close = difflib.get_close_matches(fold(word), list(by_key), n=1, cutoff=0.75)
    return say(" (did you mean %(name)s?)", name=by_key[close[0]]) if close else ""


def _not_a_move(words: list[str], board: Board) -> NotationError:
    found, _ = _longest_name(words, board)
    word, key = words[0], fold(words[0])
    if found is not None or key in _ADVISOR_WORDS or key in _MONASTERY_WORDS:
        if isinstance(found, Field):
            country, field = board.country(found.country), found
        else:
            country = found if isinstance(found, Country) else board.countries[0]
            field = board.fields[country.fields[0]]
        return NotationError(say("a placement starts with the cards you play, for example "
                                 "'%(move)s' (cards: %(cards)s)",
                                 move=f"{country.card} {country.name}: {field.name}",
                                 cards=_card_list(board)))
    if word.isalpha() and len(word) <= 3 and any(board.find_card(ch) for ch in word):
        bad = "".join(ch for ch in word if board.find_card(ch) is None)
        return NotationError(say("'%(bad)s' in '%(word)s' is not a card; the cards are "
                                 "%(cards)s", bad=_shown(bad), word=_shown(word),
                                 cards=_card_list(board)))
    verbs = ["pass", "exchange", "draw"]
    hint = _suggestion(word, verbs + [n for n in board.by_name])
    return NotationError(say("'%(word)s' is not a move%(hint)s; write a placement such as "
                             "'%(example)s' (the cards you play, the country, then a cloister "
                             "field or 'advisor'), or 'exchange %(card)s', 'draw deck', "
                             "'draw %(card)s' or 'pass'", word=_shown(word), hint=hint,
                             example=_example(board), card=board.cards[0].code))


def _not_a_piece(word: str, country: Country | None, board: Board) -> NotationError:
    if _card_codes(word, board) is not None:
        return NotationError(say("write all the cards first, before the country: '%(word)s' "
                                 "comes too late", word=_shown(word)))
    if fold(word) in _DRAW_WORDS | _EXCHANGE_WORDS | _PASS_WORDS:
        return NotationError(say("'%(word)s' starts a new move; separate moves with ';' or a "
                                 "new line", word=_shown(word)))
    if country is None:
        return NotationError(say("'%(word)s' is not a country, a cloister field or "
                                 "'advisor'%(hint)s", word=_shown(word),
                                 hint=_suggestion(word, list(board.by_name))))
    names = [board.fields[f].name for f in country.fields]
    return NotationError(say("'%(word)s' is not a cloister field in %(country)s or "
                             "'advisor'%(hint)s; the fields in %(country)s are %(fields)s",
                             word=_shown(word), country=country.name,
                             hint=_suggestion(word, names), fields=_field_list(country, board)))


# --- writing in German or Spanish -------------------------------------------------------------

# The notation's words in each language, each read back by parse_move as the English one.
_WRITTEN = {"de": {"exchange": "tausche", "draw": "ziehe", "deck": "Stapel", "pass": "passe",
                   "advisor": "Rat"},
            "es": {"exchange": "cambiar", "draw": "robar", "deck": "mazo", "pass": "pasar",
                   "advisor": "consejero"}}
_WRITTEN_WORD = re.compile(r"(?<![\w-])(exchange|draw|deck|pass|advisor)(?![\w-])")


def written(notation: str, language: str) -> str:
    """A move of the notation (as `str(move)` writes it) in `language`'s words, which
    parse_move reads as the same move: 'G Bayern: advisor' -> 'G Bayern: Rat'; country and
    field names and the card letters stay. English stays as it is."""
    words = _WRITTEN.get(language)
    if words is None:
        return notation
    head, colon, rest = notation.partition(":")
    if colon:  # a placement: only its pieces are words; the country is a name
        return head + colon + _WRITTEN_WORD.sub(lambda m: words[m.group(1)], rest)
    return _WRITTEN_WORD.sub(lambda m: words[m.group(1)], notation)
