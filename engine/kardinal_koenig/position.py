"""Positions written by hand: the JSON a player or a test types to have a board scored.

`{"monasteries": {"<field>": "<colour>", ...}, "advisors": {"<country>": ["<colour>", ...]}}`

This module reads and checks such a position; it does not open files (the command line does).
`parse_position` checks only what scoring needs (known names, colours, the box's supply), so a
test may score a bare what-if; `check_reachable` adds what play can never produce (more
advisors on a crest than the most monasteries one player has in that country).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..errors import StateError
from .board import Board
from .scoring import Breakdown, final_breakdown
from .state import ADVISORS_EACH, EMPTY, MONASTERIES_EACH, PLAYER_COLOURS

_SHOWN = 60  # longest quoted value an error message repeats, so it stays one readable line


@dataclass(frozen=True)
class Position:
    """Who holds which field and how many advisors each colour has on each crest."""

    players: tuple[str, ...]
    monasteries: tuple[int, ...]
    advisors: tuple[tuple[int, ...], ...]

    def final_breakdown(self, board: Board) -> Breakdown:
        return final_breakdown(board, self.players, self.monasteries, self.advisors)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN - 3] + "..."


def _kind(value: Any) -> str:
    """What a JSON value is, in words."""
    if isinstance(value, bool):
        return "true or false"
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a text", int: "a number",
            float: "a number"}.get(type(value), type(value).__name__)


def _colour(value: Any, where: str) -> str:
    if not isinstance(value, str) or value not in PLAYER_COLOURS:
        raise StateError(f"{where}: {_shown(value)} is not a player colour "
                         f"({', '.join(PLAYER_COLOURS)})")
    return value


def parse_position(data: Any, board: Board) -> Position:
    """Check a hand-written position against the board; StateError names the first problem."""
    if not isinstance(data, dict):
        raise StateError(f"the position must be a JSON object with 'monasteries' and 'advisors', "
                         f"not {_kind(data)}")
    unknown = [key for key in data if key not in ("monasteries", "advisors")]
    if unknown:
        raise StateError(f"unknown key {_shown(unknown[0])}; a position has only "
                         "'monasteries' and 'advisors'")
    monasteries = data.get("monasteries", {})
    advisors = data.get("advisors", {})
    if not isinstance(monasteries, dict):
        raise StateError(f"'monasteries' must be an object mapping field names to colours, "
                         f"not {_kind(monasteries)}")
    if not isinstance(advisors, dict):
        raise StateError(f"'advisors' must be an object mapping country names to lists of "
                         f"colours, not {_kind(advisors)}")
    placed = _monasteries(monasteries, board)
    crests = _advisors(advisors, board)
    used = set(placed.values()) | {c for cs in crests.values() for c in cs}
    players = tuple(c for c in PLAYER_COLOURS if c in used)
    seat = {c: i for i, c in enumerate(players)}
    _check_supplies(players, placed, crests)
    fields = tuple(seat[placed[f]] if f in placed else EMPTY for f in range(len(board.fields)))
    counts = tuple(tuple(crests.get(c.index, []).count(colour) for colour in players)
                   for c in board.countries)
    return Position(players, fields, counts)


def _monasteries(monasteries: dict[Any, Any], board: Board) -> dict[int, str]:
    """The 'monasteries' object: each field's index and the colour of its monastery."""
    placed: dict[int, str] = {}
    for name, colour in monasteries.items():
        field = board.find_field(name) if isinstance(name, str) else None
        if field is None:
            raise StateError(f"monasteries: {_shown(name)} is not a cloister field on the "
                             f"{board.id} board")
        if field.index in placed:
            raise StateError(f"monasteries: {field.name} is listed twice")
        placed[field.index] = _colour(colour, f"monasteries: {field.name}")
    return placed


def _advisors(advisors: dict[Any, Any], board: Board) -> dict[int, list[str]]:
    """The 'advisors' object: each country's index and the colours of its advisors."""
    crests: dict[int, list[str]] = {}
    for name, colours in advisors.items():
        country = board.find_country(name) if isinstance(name, str) else None
        if country is None:
            raise StateError(f"advisors: {_shown(name)} is not a country on the {board.id} board")
        if country.index in crests:
            raise StateError(f"advisors: {country.name} is listed twice")
        if not isinstance(colours, list):
            raise StateError(f"advisors: {country.name} must have a list of colours, "
                             f"not {_kind(colours)}")
        crests[country.index] = [_colour(c, f"advisors: {country.name}") for c in colours]
    return crests


def _check_supplies(players: tuple[str, ...], placed: dict[int, str],
                    crests: dict[int, list[str]]) -> None:
    """StateError when a colour has more pieces out than a player has."""
    for colour in players:
        built = sum(1 for c in placed.values() if c == colour)
        if built > MONASTERIES_EACH:
            raise StateError(f"{colour} has {built} monasteries; a player has only "
                             f"{MONASTERIES_EACH}")
        sent = sum(cs.count(colour) for cs in crests.values())
        if sent > ADVISORS_EACH:
            raise StateError(f"{colour} has {sent} advisors; a player has only {ADVISORS_EACH}")


def check_reachable(position: Position, board: Board) -> None:
    """StateError when the position cannot arise in play: a crest holding more advisors than the
    most monasteries one player has in its country (so none where no monastery stands)."""
    for country in board.countries:
        advisors = sum(position.advisors[country.index])
        counts = [0] * len(position.players)
        for f in country.fields:
            if position.monasteries[f] != EMPTY:
                counts[position.monasteries[f]] += 1
        most = max(counts, default=0)
        if advisors > most:
            why = (f"{country.name} has no monastery, so no advisor can stand there" if not most
                   else f"{country.name} holds {advisors} advisors, but the most monasteries "
                        f"one player has there is {most}, and the crest takes no more advisors "
                        f"than that")
            raise StateError(f"impossible position: {why}")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # The json module keeps the last of two equal keys silently; a position must not.
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise StateError(f"the key {_shown(key)} appears twice in one JSON object")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise StateError(f"{name} is not a JSON value")


def _integer(digits: str) -> int:
    # A position holds no numbers at all; refuse absurd ones before Python's own digit limit does.
    if len(digits) > 20:
        raise StateError(f"a number of {len(digits)} digits is not a colour or a list")
    return int(digits)


def parse_position_json(raw: bytes | str, board: Board) -> Position:
    """Read a position from its file contents: UTF-8 JSON (a byte-order mark is allowed).

    StateError names the first problem in one line: the encoding, the JSON syntax (with line and
    column), a key given twice in one object, or anything `parse_position` rejects.
    """
    if isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            raise StateError(f"not UTF-8 text: byte 0x{raw[exc.start]:02x} on line {line} "
                             f"cannot be read ({exc.reason}); save the file as UTF-8") from None
    else:
        text = raw
    text = text.removeprefix("\ufeff")  # some editors start UTF-8 files with a byte-order mark
    if not text.strip():
        raise StateError("the file is empty; a position is a JSON object with 'monasteries' "
                         "and 'advisors'")
    try:
        data = json.loads(text, object_pairs_hook=_object, parse_constant=_constant,
                          parse_int=_integer)
    except StateError:
        raise
    except RecursionError:
        raise StateError("not valid JSON: lists or objects are nested too deeply") from None
    except ValueError as exc:  # a syntax error, with its line and column
        raise StateError(f"not valid JSON: {exc}") from None
    return parse_position(data, board)
