"""Counted words in the engine's English sentences, by the language's plural rules (CLDR, from
Babel), never by a hand-made `'s' if n != 1`. The server translates its own words through
Flask-Babel; the engine's are English.
"""

from __future__ import annotations

from functools import cache

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
