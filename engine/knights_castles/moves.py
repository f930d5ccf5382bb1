"""Knights & Castles moves as small value objects, and the notation players write and the log
stores.

Every decision is a move, whoever makes it: the turn's player (buy, build, research, play, offer,
done, ...) or another seat asked for a decision (`lose` after a disaster, `accept`/`decline` an
offer). `parse_move(str(move)) == move` always holds. Cards are written by their ids
(`village`, `trade-route`, `storm-at-sea`); names with spaces, plurals and any case are read too.
Whether a move is legal is for `rules` to say. docs/notation.md is the players' guide.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import NotationError
from ..names import UMLAUTS
from ..words import say
from .cards import INDEX, KINDS

COLOURS = ("yellow", "red", "green", "purple", "blue", "orange")
MAX_NOTATION_LENGTH = 300


def _card_order(card: str) -> tuple[int, str]:
    return INDEX.get(card, len(KINDS)), card


def _sorted_cards(cards: Any) -> tuple[str, ...]:
    if isinstance(cards, (list, tuple)) and all(isinstance(c, str) for c in cards):
        return tuple(sorted(cards, key=_card_order))
    return cards  # type: ignore[no-any-return]  # not card names: the move's check says so


@dataclass(frozen=True, slots=True)
class _WordMove:
    """A move that is one word, whose class says everything: written `<verb>`."""

    verb: ClassVar[str]

    def __str__(self) -> str:
        return self.verb


@dataclass(frozen=True, slots=True)
class Done(_WordMove):
    """End the current phase (draw, build, research, event or trade)."""

    verb: ClassVar[str] = "done"


@dataclass(frozen=True, slots=True)
class _CardMove:
    """A move that names one card: written `<verb> <card>`."""

    card: str
    verb: ClassVar[str]

    def __str__(self) -> str:
        return f"{self.verb} {self.card}"


@dataclass(frozen=True, slots=True)
class Buy(_WordMove):
    """Draw phase: buy one more card for 5 gold."""

    verb: ClassVar[str] = "buy"


@dataclass(frozen=True, slots=True)
class Keep(_CardMove):
    """Scholastics: of the two cards just drawn keep `card`; the other is discarded."""

    verb: ClassVar[str] = "keep"


@dataclass(frozen=True, slots=True)
class Build(_CardMove):
    """Build phase: put a resource or leader card from the hand into play."""

    verb: ClassVar[str] = "build"


@dataclass(frozen=True, slots=True)
class Pay(_CardMove):
    """End of the build phase: pay 1 gold to keep an unsupported card in play."""

    verb: ClassVar[str] = "pay"


@dataclass(frozen=True, slots=True)
class Abandon(_CardMove):
    """End of the build phase: discard an unsupported card in play instead of paying."""

    verb: ClassVar[str] = "abandon"


@dataclass(frozen=True, slots=True)
class Research(_CardMove):
    """Research phase: put an advance card from the hand into play for 5 gold."""

    verb: ClassVar[str] = "research"


@dataclass(frozen=True, slots=True)
class Share(_CardMove):
    """Own turn, any phase with a choice: pay 10 gold for an advance another seat has."""

    verb: ClassVar[str] = "share"


@dataclass(frozen=True, slots=True)
class Play:
    """Event phase: play an event, disaster or invasion card; `target` is the opponent's colour
    (None for Caravan, which targets the player)."""

    card: str
    target: str | None = None

    def __str__(self) -> str:
        return f"play {self.card}" if self.target is None else f"play {self.card} at {self.target}"


@dataclass(frozen=True, slots=True)
class War:
    """Event phase: discard a Knights card in play (or, with the knights-from-hand variant, from
    the hand) as an act of war against `target`; it counts as an invasion."""

    target: str
    from_hand: bool = False

    def __str__(self) -> str:
        return f"war at {self.target}" + (" from hand" if self.from_hand else "")


@dataclass(frozen=True, slots=True)
class Lose:
    """The target's choice of cards in play to lose (after a disaster, invasion or event)."""

    cards: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "cards", _sorted_cards(self.cards))

    def __str__(self) -> str:
        return f"lose {_items(0, self.cards)}"


@dataclass(frozen=True, slots=True)
class Offer:
    """Trade phase: offer `target` gold and/or hand cards for gold and/or hand cards."""

    target: str
    give_gold: int
    give: tuple[str, ...]
    ask_gold: int
    ask: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "give", _sorted_cards(self.give))
        object.__setattr__(self, "ask", _sorted_cards(self.ask))

    def __str__(self) -> str:
        return (f"offer {self.target}: {_items(self.give_gold, self.give)} "
                f"for {_items(self.ask_gold, self.ask)}")


@dataclass(frozen=True, slots=True)
class Accept(_WordMove):
    """The offer's target takes the trade."""

    verb: ClassVar[str] = "accept"


@dataclass(frozen=True, slots=True)
class Decline(_WordMove):
    """The offer's target refuses the trade."""

    verb: ClassVar[str] = "decline"


@dataclass(frozen=True, slots=True)
class Discard(_CardMove):
    """End phase: discard a hand card (a hand over 7 cards goes down to 7)."""

    verb: ClassVar[str] = "discard"


Move = (Done | Buy | Keep | Build | Pay | Abandon | Research | Share | Play | War | Lose | Offer
        | Accept | Decline | Discard)


def _items(gold: int, cards: tuple[str, ...]) -> str:
    """`5 gold, 2 village, town`, or `nothing`."""
    parts = [f"{gold} gold"] if gold else []
    i = 0
    while i < len(cards):
        j = i
        while j < len(cards) and cards[j] == cards[i]:
            j += 1
        parts.append(cards[i] if j - i == 1 else f"{j - i} {cards[i]}")
        i = j
    return ", ".join(parts) if parts else "nothing"


# --- reading --------------------------------------------------------------------------------

# The cards' German and Spanish names (docs/notation.md lists them; the catalogs use the same),
# and a few plurals: a turn file or a reply may name a card in any of the three languages.
CARD_NAMES = {
    "village": ("Dorf", "Aldea"), "town": ("Stadt", "Pueblo"), "mine": ("Mine", "Mina"),
    "castle": ("Burg", "Castillo"), "city": ("Großstadt", "Ciudad"),
    "knights": ("Ritter", "Caballeros"), "ships": ("Schiffe", "Barcos"),
    "trade-route": ("Handelsroute", "Ruta comercial"), "bishop": ("Bischof", "Obispo"),
    "prince": ("Prinz", "Príncipe"), "duke": ("Herzog", "Duque"),
    "artist": ("Künstler", "Artista"), "inventor": ("Erfinder", "Inventor"),
    "crop-rotation": ("Fruchtwechsel", "Rotación de cultivos"),
    "cartography": ("Kartografie", "Cartografía"), "printing-press": ("Buchdruck", "Imprenta"),
    "gun-powder": ("Schießpulver", "Pólvora"), "masonry": ("Maurerkunst", "Cantería"),
    "irrigation": ("Bewässerung", "Regadío"), "scholastics": ("Scholastik", "Escolástica"),
    "mongols": ("Mongolen", "Mongoles"), "vikings": ("Wikinger", "Vikingos"),
    "saracens": ("Sarazenen", "Sarracenos"), "moors": ("Mauren", "Moros"),
    "celts": ("Kelten", "Celtas"), "plague": ("Pest", "Peste"),
    "pestilence": ("Seuche", "Pestilencia"), "famine": ("Hungersnot", "Hambruna"),
    "epidemic": ("Epidemie", "Epidemia"), "volcanic-eruption": ("Vulkanausbruch",
                                                                "Erupción volcánica"),
    "caravan": ("Karawane", "Caravana"), "storm-at-sea": ("Seesturm", "Tormenta en el mar"),
    "untimely-end": ("Jäher Tod", "Muerte prematura"), "crusades": ("Kreuzzüge", "Cruzadas"),
    "mined-out": ("Erschöpfte Mine", "Mina agotada"),
}
_FOREIGN_PLURALS = {
    "doerfer": "village", "dorfer": "village", "staedte": "town", "stadte": "town",
    "minen": "mine", "burgen": "castle", "grossstaedte": "city", "grossstadte": "city",
    "handelsrouten": "trade-route", "kreuzzug": "crusades",
    "aldeas": "village", "pueblos": "town", "minas": "mine", "castillos": "castle",
    "ciudades": "city", "caballero": "knights", "barco": "ships", "cruzada": "crusades",
    "caravanas": "caravan",
}
# The notation's words in German and Spanish, each read as the English word (folded: lower
# case, no accents, ä as a or ae).
_FOREIGN_WORDS = {
    "buy": ("kaufe", "kaufen", "kauf", "comprar", "compro", "compra"),
    "build": ("baue", "bauen", "bau", "construir", "construyo", "construye"),
    "done": ("fertig", "weiter", "ende", "listo", "hecho", "terminar", "termino", "paso",
             "pasar"),
    "keep": ("behalte", "behalten", "quedarse", "quedar", "quedo", "guardar", "guardo"),
    "pay": ("zahle", "zahlen", "bezahle", "bezahlen", "pagar", "pago", "paga"),
    "abandon": ("aufgeben", "abandonar", "abandono"),
    "research": ("erforsche", "erforschen", "forsche", "investigar", "investigo"),
    "share": ("teile", "teilen", "compartir", "comparto"),
    "play": ("spiele", "spielen", "spiel", "jugar", "juego", "juega"),
    "war": ("krieg", "angriff", "guerra", "atacar", "ataque"),
    "lose": ("verliere", "verlieren", "perder", "pierdo"),
    "offer": ("biete", "bieten", "angebot", "ofrecer", "ofrezco", "oferta"),
    "accept": ("annehmen", "ja", "aceptar", "acepto", "si"),
    "decline": ("ablehnen", "lehne", "rechazar", "rechazo"),
    "discard": ("abwerfen", "wirf", "werfe", "descartar", "descarto"),
    "at": ("auf", "gegen", "contra"),
    "for": ("fuer", "fur", "por"),
    "gold": ("oro",),
    "nothing": ("nichts", "nada"),
    "and": ("und", "y"),
    "the": ("der", "die", "das", "den", "ein", "eine", "einen", "karte", "karten", "meine",
            "el", "la", "los", "las", "un", "una", "carta", "cartas", "mi", "de"),
    "yellow": ("gelb", "amarillo"), "red": ("rot", "rojo"), "green": ("gruen", "grun", "verde"),
    "purple": ("lila", "violett", "morado", "purpura"), "blue": ("blau", "azul"),
    "orange": ("naranja",),
}
_FOREIGN = {word: english for english, words in _FOREIGN_WORDS.items() for word in words}
_FROM_HAND = re.compile(r"\b(?:aus\s+der\s+hand|desde\s+la\s+mano|de\s+la\s+mano)\b")
_OFFER_WORDS = {"offer", *_FOREIGN_WORDS["offer"]}


def _plain(text: str) -> str:
    """Lower case without accents ('Großstadt' -> 'grossstadt', 'Pólvora' -> 'polvora')."""
    text = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in text if not unicodedata.combining(ch))


_ALIASES: dict[str, str] = {}
for _i, _k in enumerate(KINDS):
    for _form in {_k.id, _k.name.lower(), _k.id.replace("-", ""), *map(_plain, CARD_NAMES[_k.id]),
                  *(_plain(n.casefold().translate(UMLAUTS)) for n in CARD_NAMES[_k.id])}:
        _ALIASES[_form.replace(" ", "-")] = _k.id
for _plural, _id in {"villages": "village", "towns": "town", "mines": "mine",
                     "castles": "castle", "cities": "city", "knight": "knights",
                     "ship": "ships", "trade-routes": "trade-route", "traderoutes": "trade-route",
                     "crusade": "crusades", "caravans": "caravan",
                     "gunpowder": "gun-powder", **_FOREIGN_PLURALS}.items():
    _ALIASES[_plural] = _id
# Names of more than one word, read with any spacing: "Trade Route", "storm at  sea",
# "Ruta comercial".
_MULTI = re.compile("|".join(
    r"\b" + r"[\s_-]+".join(map(re.escape, _plain(n).split())) + r"s?\b"
    for n in sorted({*(k.name for k in KINDS), *(n for pair in CARD_NAMES.values()
                                                 for n in pair)}, key=lambda n: -len(n))
    if " " in n))
_SPLIT = re.compile(r"[\s,;:+&()]+")
_BREAK = re.compile(r"[;\r\n]+")
_GOLD = re.compile(r"^(\d{1,6})\s*(?:g|gold|gp)$")
_COUNT = re.compile(r"^(\d{1,2})x?$")

_DONE = {"done", "end", "next", "pass", "finish", "skip"}
_CARD_VERBS = {kind.verb: kind for kind in (Keep, Build, Pay, Abandon, Research, Share, Discard)}
_FILLER = {"a", "an", "the", "one", "card", "my", "for", "1", "gold"}
EXAMPLES = say("'buy', 'build village', 'play plague at red', 'offer red: 5 gold for town' or "
                "'done'")


def _card(word: str) -> str:
    card = _ALIASES.get(word)
    if card is None:
        raise NotationError(say("'%(word)s' is not a card; cards are written like village, "
                                "trade-route, storm-at-sea (see the card list)", word=word[:40]))
    return card


def _colour(word: str | None) -> str:
    if word not in COLOURS:
        raise NotationError(say("'%(word)s' is not a player; name a player by colour "
                                "(%(colours)s)", word=(word or "")[:40],
                                colours=", ".join(COLOURS)))
    return word


def _words(text: str) -> list[str]:
    """The words of `text` in lower case, a card name of several words as one, and German or
    Spanish words of the notation read as the English ones."""
    text = _FROM_HAND.sub(" from hand ", _plain(text))
    text = _MULTI.sub(lambda m: "-".join(m.group(0).split()).replace("_", "-"), text)
    return [_FOREIGN.get(w, w) for w in _SPLIT.split(text) if w]


def parse_move(text: str) -> Move:
    """Read one move in the notation; raise NotationError saying what to write instead."""
    verb, args, rest = _verb_and_args(text)
    parse = _PARSERS.get(verb)
    if parse is None:
        raise NotationError(say("'%(word)s' is not a move; write for example %(examples)s",
                                word=verb[:40], examples=EXAMPLES))
    return parse(verb, args, rest)


def _verb_and_args(text: object) -> tuple[str, list[str], str]:
    """The first word of one move's text, the words after it, and what follows an offer's
    colon; NotationError for anything but the text of one move."""
    if not isinstance(text, str):
        raise NotationError(say("a move must be text, for example %(examples)s",
                                examples=EXAMPLES))
    if len(text) > MAX_NOTATION_LENGTH:
        raise NotationError(say("a move is at most %(most)d characters long; write one move "
                                "a line", most=MAX_NOTATION_LENGTH))
    if len([p for p in _BREAK.split(text) if p.strip()]) > 1:
        raise NotationError(say("write one move here; several moves go on separate lines"))
    if ":" in text and (_words(text.partition(":")[0]) or [""])[0] not in _OFFER_WORDS:
        text = text.replace(":", " ")
    head, _, rest = text.partition(":")
    words = _words(head)
    if not words:
        raise NotationError(say("the move is empty; write for example %(examples)s",
                                examples=EXAMPLES))
    return words[0], words[1:], rest


# One small reader per verb: (the verb, the words after it, the text after an offer's colon).

def _parse_done(verb: str, args: list[str], rest: str) -> Done:
    _nothing_after(verb, args)
    return Done()


def _parse_accept(verb: str, args: list[str], rest: str) -> Accept:
    _nothing_after(verb, args)
    return Accept()


def _parse_decline(verb: str, args: list[str], rest: str) -> Decline:
    _nothing_after(verb, args)
    return Decline()


def _parse_buy(verb: str, args: list[str], rest: str) -> Buy:
    if [w for w in args if w not in _FILLER]:
        raise NotationError(say("'buy' buys one card for 5 gold; write it once per card"))
    return Buy()


def _parse_card_move(verb: str, args: list[str], rest: str) -> Move:
    cards = [w for w in args if w not in _FILLER]
    if len(cards) != 1:
        raise NotationError(say("'%(verb)s' takes one card, for example '%(example)s'",
                                verb=verb, example=f"{verb} " + (
                                    "irrigation" if verb in ("research", "share")
                                    else "village")))
    move: Move = _CARD_VERBS[verb](_card(cards[0]))
    return move


def _parse_war(verb: str, args: list[str], rest: str) -> War:
    from_hand = args[-2:] == ["from", "hand"]
    if from_hand:
        args = args[:-2]
    args = [w for w in args if w not in ("at", "on", "against", "knights", "with", "a",
                                         "the")]
    if len(args) != 1:
        raise NotationError(say("write an act of war as 'war at red' (a Knights card in "
                                "play) or 'war at red from hand'"))
    return War(_colour(args[0]), from_hand)


def _parse_lose(verb: str, args: list[str], rest: str) -> Lose:
    gold, cards = _parse_items(args, "lose")
    if gold:
        raise NotationError(say("losses are cards in play, not gold; write 'lose village, "
                                "town'"))
    return Lose(tuple(cards))


def _nothing_after(verb: str, args: list[str]) -> None:
    if args:
        raise NotationError(say("'%(verb)s' takes nothing after it", verb=verb))


def _parse_play(args: list[str]) -> Play:
    target = None
    if len(args) >= 2 and args[-2] in ("at", "on", "against", "vs", "to"):
        target = _colour(args[-1])
        args = args[:-2]
    elif args and args[-1] in COLOURS:
        target = args[-1]
        args = args[:-1]
    cards = [w for w in args if w not in _FILLER]
    if len(cards) != 1:
        raise NotationError(say("write 'play caravan' or 'play plague at red': one card, and "
                                "the player it targets"))
    return Play(_card(cards[0]), target)


def _parse_items(words: list[str], what: str) -> tuple[int, list[str]]:
    """`5 gold, 2 village, town` as (gold, cards); `nothing` is (0, [])."""
    gold, cards, count = 0, [], None
    i = 0
    while i < len(words):
        w = words[i]
        if w in ("and", "a", "an", "one", "card", "cards", "the"):
            i += 1
            continue
        if w == "nothing" or w == "none":
            i += 1
            continue
        m = _GOLD.match(w)
        if m:
            gold += int(m.group(1))
            i += 1
            continue
        if i + 1 < len(words) and words[i + 1] in ("gold", "g", "gp") and w.isdigit() \
                and len(w) <= 6:
            gold += int(w)
            i += 2
            continue
        m = _COUNT.match(w)
        if m and i + 1 < len(words):
            count = int(m.group(1))
            if count == 0:
                raise NotationError(say("'%(verb)s': a count of 0 cards means nothing; leave "
                                        "it out", verb=what))
            cards.extend([_card(words[i + 1])] * count)
            i += 2
            continue
        cards.append(_card(w))
        i += 1
    return gold, cards


def _parse_offer(args: list[str], rest: str) -> Offer:
    usage = say("write an offer as 'offer red: 5 gold, village for town' (what you give for "
                "what you ask)")
    if len(args) != 1 or not rest.strip():
        raise NotationError(usage)
    target = _colour(args[0])
    words = _words(rest)
    if words.count("for") != 1:
        raise NotationError(usage)
    cut = words.index("for")
    give_gold, give = _parse_items(words[:cut], "offer")
    ask_gold, ask = _parse_items(words[cut + 1:], "offer")
    return Offer(target, give_gold, tuple(give), ask_gold, tuple(ask))


_PARSERS: dict[str, Callable[[str, list[str], str], Move]] = {
    "offer": lambda verb, args, rest: _parse_offer(args, rest),
    **{verb: _parse_done for verb in _DONE},
    "accept": _parse_accept, "yes": _parse_accept,
    **{verb: _parse_decline for verb in ("decline", "no", "refuse", "reject")},
    "buy": _parse_buy,
    **{verb: _parse_card_move for verb in _CARD_VERBS},
    "play": lambda verb, args, rest: _parse_play(args),
    "war": _parse_war, "attack": _parse_war,
    "lose": _parse_lose,
}


def parse_moves(text: str) -> list[Move]:
    """Read several moves separated by ';' or new lines (a whole turn in one message)."""
    if not isinstance(text, str):
        raise NotationError(say("moves must be text, for example %(examples)s",
                                examples=EXAMPLES))
    return [parse_move(part) for part in _BREAK.split(text) if part.strip()]


# --- writing in German or Spanish -------------------------------------------------------------

# The words a move is written with in each language, each read back by parse_move as the
# English one (the first of its _FOREIGN_WORDS, or a form it reads).
_WRITTEN = {
    "de": {"buy": "kaufe", "build": "baue", "done": "fertig", "keep": "behalte", "pay": "zahle",
           "abandon": "aufgeben", "research": "erforsche", "share": "teile", "play": "spiele",
           "war": "Krieg", "lose": "verliere", "offer": "biete", "accept": "annehmen",
           "decline": "ablehnen", "discard": "abwerfen", "at": "gegen", "for": "für",
           "gold": "Gold", "nothing": "nichts", "from hand": "aus der Hand",
           # A player named by colour is a noun in German: "gegen Gelb", as the pages name it.
           "yellow": "Gelb", "red": "Rot", "green": "Grün", "purple": "Lila", "blue": "Blau",
           "orange": "Orange"},
    "es": {"buy": "comprar", "build": "construir", "done": "listo", "keep": "quedarse",
           "pay": "pagar", "abandon": "abandonar", "research": "investigar",
           "share": "compartir", "play": "jugar", "war": "guerra", "lose": "perder",
           "offer": "ofrecer", "accept": "aceptar", "decline": "rechazar",
           "discard": "descartar", "at": "contra", "for": "por", "gold": "oro",
           "nothing": "nada", "from hand": "de la mano", "yellow": "amarillo", "red": "rojo",
           "green": "verde", "purple": "morado", "blue": "azul", "orange": "naranja"},
}
_WRITTEN_TOKEN = re.compile(r"from hand|[a-z][a-z-]*")


def written(notation: str, language: str) -> str:
    """A move of the notation (English, as `str(move)` writes it) in `language`'s words and
    card names, which parse_move reads as the same move: 'build village' -> 'baue Dorf',
    'construir Aldea'. English, and any language without words here, stays as it is."""
    words = _WRITTEN.get(language)
    if words is None:
        return notation
    column = ("de", "es").index(language)

    def word(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in CARD_NAMES:
            return CARD_NAMES[token][column]
        return str(words.get(token, token))

    return _WRITTEN_TOKEN.sub(word, notation)
