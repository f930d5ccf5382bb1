"""Counted words in the engine's English sentences, by the language's plural rules (CLDR, from
Babel), never by a hand-made `'s' if n != 1`. The server translates its own words through
Flask-Babel; the engine's are English.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, Self, overload

from babel import Locale


@cache
def _locale(language: str) -> Locale:
    return Locale.parse(language)


def plural(n: int, one: str, other: str, language: str = "en") -> str:
    """`one` or `other`, as `language`'s plural rule asks for with the number `n`."""
    return one if _locale(language).plural_form(n) == "one" else other


def count(n: int, one: str, other: str) -> str:
    """'1 point', '7 points': the number and its word in the form the number asks for."""
    return f"{n} {plural(n, one, other)}"


class Phrase(str):
    """A sentence of the engine: its English text (the str itself) and what it is made of, a
    message id and its parameters, so that a server can write it in another language.

    `key` is the English message with `%(name)s` placeholders, or a pair (one, other) for a
    counted message whose number is `n`; a parameter may be a Phrase itself (a card, a
    colour). The engine names countries and fields as the board does; those stay as they are.
    """

    key: str | tuple[str, str]
    params: dict[str, Any]
    n: int | None

    def __new__(cls, key: str | tuple[str, str], params: dict[str, Any] | None = None,
                n: int | None = None) -> Self:
        params = dict(params or {})
        shown = {name: ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else value
                 for name, value in params.items()}
        if isinstance(key, tuple):
            assert n is not None, "a counted message needs its number"
            template = plural(n, *key)
            text = template % {"num": n, **shown}
        else:
            text = key % shown if params else key
        self = super().__new__(cls, text)
        self.key, self.params, self.n = key, params, n
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (Phrase, (self.key, self.params, self.n))


def term(text: str, key: str) -> Phrase:
    """A word the engine writes as `text` (a card's id in the notation, 'trade-route') and a
    server shows as the message `key` (its printed name, 'Trade Route', translated)."""
    self = str.__new__(Phrase, text)
    self.key, self.params, self.n = key, {}, None
    return self


def say(key: str, **params: Any) -> Phrase:
    """A sentence (or part of one) with its parameters: `say("%(who)s passed.", who="red")`."""
    return Phrase(key, params)


def say_n(one: str, other: str, n: int, **params: Any) -> Phrase:
    """A counted sentence: `say_n("%(num)d card", "%(num)d cards", 2)`."""
    return Phrase((one, other), params, n)


class PlayerWord(Phrase):
    """A player named by their colour ('green'). The engine knows no names; a server that does
    writes the player's name beside the colour (pbem.ground.i18n.phrase_data)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (player, (str(self),))


def player(name: str) -> Phrase:
    """A player, by their colour: written as the colour ('red'), or by a server as the
    player's name and colour ('Chiara (red)')."""
    self = str.__new__(PlayerWord, name)
    self.key, self.params, self.n = name, {}, None
    return self


def colour(name: str) -> Phrase:
    """A player's or a card's colour, as a word a server translates ('red')."""
    return Phrase(name)


@overload
def both(items: Sequence[Phrase]) -> Phrase: ...
@overload
def both(items: Sequence[Phrase | str]) -> Phrase | str: ...
def both(items: Sequence[Phrase | str]) -> Phrase | str:
    """'red', 'red and blue', 'red and blue and green': items joined by 'and'."""
    joined: Phrase | str = items[0]
    for item in items[1:]:
        joined = say("%(first)s and %(second)s", first=joined, second=item)
    return joined
