"""How names typed by people are matched: case, accents, dots, hyphens and German umlauts."""

import re
import unicodedata

UMLAUTS = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss"})
_SEPARATORS = re.compile(r"[\s.\-'’_]+")


def fold(text: str) -> str:
    """The matching key of a name: "Würzburg", "wurzburg" and "WURZBURG" give the same key."""
    text = unicodedata.normalize("NFKD", text.casefold())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return _SEPARATORS.sub(" ", text).strip()


def keys(name: str) -> set[str]:
    """Every key a name answers to: its folded form and its German transliteration (Wuerzburg)."""
    return {fold(name), fold(name.casefold().translate(UMLAUTS))}
