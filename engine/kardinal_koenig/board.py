"""The board as data: countries, card colours, cloister fields, roads and alliances.

This module owns loading and validating a board file into frozen objects. It knows nothing of
players or turns; another map is another file of the same format, never a code change.
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

from ..errors import BoardError
from ..names import fold, keys

BOARD_FORMAT = 1


@dataclass(frozen=True)
class CardColour:
    """One colour of card: which countries a card of it shows, and how many the deck holds."""

    colour: str
    code: str
    count: int
    countries: tuple[str, ...]

    @property
    def label(self) -> str:
        return "/".join(self.countries)


@dataclass(frozen=True)
class Field:
    """A cloister field: room for one monastery."""

    index: int
    name: str
    country: str
    lat: float
    lon: float


@dataclass(frozen=True)
class Country:
    """A country: its cloister fields, its crest, and the colour of card that shows it."""

    index: int
    name: str
    fields: tuple[int, ...]
    card: str


@dataclass(frozen=True)
class Alliance:
    """A numbered alliance square between two countries."""

    number: int
    countries: tuple[str, str]
    sea: bool


@dataclass(frozen=True, eq=False)
class Board:
    """A whole validated board; lookups by name accept any spelling `names.fold` accepts."""

    id: str
    name: str
    cards: tuple[CardColour, ...]
    countries: tuple[Country, ...]
    fields: tuple[Field, ...]
    roads: tuple[tuple[int, int], ...]
    alliances: tuple[Alliance, ...]
    digest: str
    neighbours: tuple[tuple[int, ...], ...] = field(repr=False)
    _country_index: Mapping[str, int] = field(repr=False)
    _field_index: Mapping[str, int] = field(repr=False)
    _card_index: Mapping[str, int] = field(repr=False)
    by_name: Mapping[str, Field | Country] = field(repr=False)
    by_code: Mapping[str, CardColour] = field(repr=False)

    def country(self, name: str) -> Country:
        """The country called `name` (any accepted spelling); KeyError if there is none."""
        return self.countries[self._country_index[fold(name)]]

    def field_named(self, name: str) -> Field:
        """The cloister field called `name` (any accepted spelling); KeyError if there is none."""
        return self.fields[self._field_index[fold(name)]]

    def card(self, code_or_colour: str) -> CardColour:
        """The card colour with this code ("R") or colour name ("red"); KeyError if none."""
        return self.cards[self._card_index[fold(code_or_colour)]]

    def find_country(self, name: str) -> Country | None:
        index = self._country_index.get(fold(name))
        return None if index is None else self.countries[index]

    def find_field(self, name: str) -> Field | None:
        index = self._field_index.get(fold(name))
        return None if index is None else self.fields[index]

    def find_card(self, name: str) -> CardColour | None:
        index = self._card_index.get(fold(name))
        return None if index is None else self.cards[index]

    def cards_for(self, country: str) -> CardColour:
        """The card colour that shows `country`."""
        return self.card(self.country(country).card)


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise BoardError(message)


_NOTATION_MARKS = set(',;:+/&()[]{}<>"!?*|=\n\r\t')


def _text(value: Any, what: str) -> str:
    _require(isinstance(value, str) and value.strip() == value and value != "",
             f"{what} must be a non-empty text without surrounding spaces, not {value!r}")
    return cast(str, value)


def _name(value: Any, what: str) -> str:
    """A country or field name: text that the move notation can read back."""
    _text(value, what)
    marks = sorted(_NOTATION_MARKS & set(value))
    if marks:
        raise BoardError(f"{what} {value!r} contains {marks[0]!r}, which the move notation uses "
                         "to separate words")
    return cast(str, value)


def _number(value: Any, what: str, low: float, high: float) -> float:
    _require(isinstance(value, (int, float)) and not isinstance(value, bool)
             and math.isfinite(value) and low <= value <= high,
             f"{what} must be a number from {low} to {high}, not {value!r}")
    return float(value)


def _list(value: Any, what: str) -> list[Any]:
    _require(isinstance(value, list), f"{what} must be a list")
    return cast(list[Any], value)


def parse_board(data: Mapping[str, Any]) -> Board:
    """Validate the parsed contents of a board file and build the frozen board."""
    _require(isinstance(data, Mapping), "a board file must be a table of sections")
    head: Any = data.get("board")
    _require(isinstance(head, Mapping), "the [board] section is missing")
    _require(head.get("format") == BOARD_FORMAT,
             f"[board] format must be {BOARD_FORMAT}, not {head.get('format')!r}")
    board_id = _text(head.get("id"), "[board] id")
    board_name = _text(head.get("name"), "[board] name")
    cards, shown_by = _parse_cards(data)
    countries, fields = _parse_countries(data, shown_by)
    country_index = _index((c.name for c in countries), "country")
    field_index = _index((f.name for f in fields), "cloister field")
    clash = {fold(c.name) for c in countries} & {fold(f.name) for f in fields}
    _require(not clash, f"a country and a cloister field share the name {', '.join(clash)}")
    card_index = _index([c.code for c in cards] + [c.colour for c in cards], "card colour",
                        targets=list(range(len(cards))) * 2)
    roads = _parse_roads(data, field_index)
    neighbours: list[list[int]] = [[] for _ in fields]
    for a, b in sorted(roads):
        neighbours[a].append(b)
        neighbours[b].append(a)
    alliances = _parse_alliances(data, countries, country_index)
    digest = _digest(board_id, board_name, cards, countries, fields, roads, alliances)
    return Board(board_id, board_name, tuple(cards), tuple(countries), tuple(fields),
                 tuple(sorted(roads)), tuple(alliances), digest,
                 tuple(tuple(n) for n in neighbours),
                 MappingProxyType(country_index), MappingProxyType(field_index),
                 MappingProxyType(card_index),
                 MappingProxyType({**{c.name: c for c in countries}, **{f.name: f for f in fields}}),
                 MappingProxyType({c.code: c for c in cards}))




def _parse_cards(data: Mapping[str, Any]) -> tuple[list[CardColour], dict[str, str]]:
    """The [[cards]] section, and the code of the card colour that shows each country."""
    cards: list[CardColour] = []
    shown_by: dict[str, str] = {}
    for i, raw in enumerate(_list(data.get("cards"), "[[cards]]")):
        _require(isinstance(raw, Mapping), f"card colour {i + 1} must be a table")
        colour = _text(raw.get("colour"), f"card colour {i + 1}: colour")
        code = _text(raw.get("code"), f"card colour {colour}: code")
        _require(len(code) == 1 and code.isalpha() and code.isupper(),
                 f"card colour {colour}: code must be one capital letter, not {code!r}")
        count = raw.get("count")
        _require(isinstance(count, int) and not isinstance(count, bool) and 2 <= count <= 200,
                 f"card colour {colour}: count must be a whole number from 2 to 200")
        shows = tuple(_text(c, f"card colour {colour}: country")
                      for c in _list(raw.get("countries"), f"card colour {colour}: countries"))
        _require(1 <= len(shows) <= 2, f"card colour {colour} must show one or two countries")
        for name in shows:
            if name in shown_by:
                raise BoardError(f"{name} is shown by two card colours ({shown_by[name]} and {code})")
            shown_by[name] = code
        cards.append(CardColour(colour, code, count, shows))
    _require(len(cards) >= 2, "a board needs at least two card colours")
    _unique([c.colour for c in cards] + [c.code for c in cards], "card colour or code")
    return cards, shown_by


def _parse_countries(data: Mapping[str, Any], shown_by: dict[str, str]
                     ) -> tuple[list[Country], list[Field]]:
    """The [[countries]] section with their cloister fields, numbered in board order."""
    countries: list[Country] = []
    fields: list[Field] = []
    for i, raw in enumerate(_list(data.get("countries"), "[[countries]]")):
        _require(isinstance(raw, Mapping), f"country {i + 1} must be a table")
        name = _name(raw.get("name"), f"country {i + 1}: name")
        _require(name in shown_by, f"country {name} is shown by no card colour")
        indices = []
        for j, spec in enumerate(_list(raw.get("fields"), f"country {name}: fields")):
            where = f"country {name}, field {j + 1}"
            _require(isinstance(spec, list) and len(spec) == 3,
                     f"{where} must be [name, latitude, longitude]")
            fields.append(Field(len(fields), _name(spec[0], f"{where}: name"), name,
                                _number(spec[1], f"{where}: latitude", -90, 90),
                                _number(spec[2], f"{where}: longitude", -180, 180)))
            indices.append(len(fields) - 1)
        _require(bool(indices), f"country {name} has no cloister field")
        countries.append(Country(i, name, tuple(indices), shown_by[name]))
    missing = set(shown_by) - {c.name for c in countries}
    _require(not missing, f"cards show countries the board lacks: {', '.join(sorted(missing))}")
    return countries, fields


def _parse_roads(data: Mapping[str, Any], field_index: dict[str, int]) -> set[tuple[int, int]]:
    """The [roads] section: pairs of field indices, the lower first."""
    roads: set[tuple[int, int]] = set()
    road_section: Any = data.get("roads")
    _require(isinstance(road_section, Mapping), "the [roads] section is missing")
    for i, pair in enumerate(_list(road_section.get("joins"), "[roads] joins")):
        _require(isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair),
                 f"road {i + 1} must be a pair of field names")
        ends = []
        for end in pair:
            _require(fold(end) in field_index, f"road {i + 1} names an unknown field {end!r}")
            ends.append(field_index[fold(end)])
        a, b = sorted(ends)
        _require(a != b, f"road {i + 1} joins {pair[0]} to itself")
        _require((a, b) not in roads, f"road {pair[0]}-{pair[1]} is listed twice")
        roads.add((a, b))
    return roads


def _parse_alliances(data: Mapping[str, Any], countries: list[Country],
                     country_index: dict[str, int]) -> list[Alliance]:
    """The [[alliances]] section, numbered 1, 2, 3 ... in order."""
    alliances: list[Alliance] = []
    for i, raw in enumerate(_list(data.get("alliances"), "[[alliances]]")):
        _require(isinstance(raw, Mapping), f"alliance {i + 1} must be a table")
        number = raw.get("number")
        _require(number == i + 1, f"alliances must be numbered 1, 2, 3 … in order; "
                                  f"entry {i + 1} has number {number!r}")
        pair = _list(raw.get("countries"), f"alliance {number}: countries")
        _require(len(pair) == 2 and all(isinstance(p, str) and fold(p) in country_index for p in pair),
                 f"alliance {number} must name two known countries, not {pair!r}")
        _require(fold(pair[0]) != fold(pair[1]), f"alliance {number} joins a country to itself")
        sea = raw.get("sea", False)
        _require(isinstance(sea, bool), f"alliance {number}: sea must be true or false")
        alliances.append(Alliance(number, (countries[country_index[fold(pair[0])]].name,
                                           countries[country_index[fold(pair[1])]].name), sea))
    _unique([frozenset(a.countries) for a in alliances], "alliance between the same countries")
    return alliances


def _digest(board_id: str, board_name: str, cards: list[CardColour], countries: list[Country],
            fields: list[Field], roads: set[tuple[int, int]], alliances: list[Alliance]) -> str:
    """A short hash of the board's canonical contents: two files of the same board agree."""
    canonical = {
        "id": board_id, "name": board_name,
        "cards": [[c.colour, c.code, c.count, list(c.countries)] for c in cards],
        "countries": [[c.name, [[fields[f].name, fields[f].lat, fields[f].lon] for f in c.fields]]
                      for c in countries],
        "roads": sorted(roads),
        "alliances": [[a.number, list(a.countries), a.sea] for a in alliances],
    }
    return hashlib.sha256(json.dumps(canonical, sort_keys=True, ensure_ascii=False)
                          .encode()).hexdigest()[:16]


def _unique(values: list[Any], what: str) -> None:
    seen: set[Any] = set()
    for value in values:
        _require(value not in seen, f"duplicate {what}: {value}")
        seen.add(value)


def _index(names: Iterable[str], what: str, targets: list[int] | None = None) -> dict[str, int]:
    """Map every accepted spelling of each name to its position; two names may not collide."""
    index: dict[str, int] = {}
    names = list(names)
    for position, name in enumerate(names):
        target = position if targets is None else targets[position]
        for key in keys(name):
            other = index.get(key)
            if other is not None and other != target:
                raise BoardError(f"the {what} names {name!r} and {names[other]!r} are too alike "
                                 "to tell apart")
            index[key] = target
    return index


def load_board(path: str | Path) -> Board:
    """Read and validate a board file (TOML)."""
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise BoardError(f"{path} is not valid TOML: {exc}") from None
    return parse_board(data)


@cache
def default_board() -> Board:
    """The board the engine ships: Kardinal & König, reconstructed from the published rules."""
    text = resources.files(__package__).joinpath("data/kardinal-koenig.toml").read_text("utf-8")
    return parse_board(tomllib.loads(text))
