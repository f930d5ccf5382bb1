"""Positions written by hand: the JSON a player or a test types to have a board scored.

`{"monasteries": {"<field>": "<colour>", ...}, "advisors": {"<country>": ["<colour>", ...]}}`
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .board import Board
from .errors import StateError
from .scoring import Breakdown, final_breakdown
from .state import ADVISORS_EACH, EMPTY, MONASTERIES_EACH, PLAYER_COLOURS


@dataclass(frozen=True)
class Position:
    """Who holds which field and how many advisors each colour has on each crest."""

    players: tuple[str, ...]
    monasteries: tuple[int, ...]
    advisors: tuple[tuple[int, ...], ...]

    def final_breakdown(self, board: Board) -> Breakdown:
        return final_breakdown(board, self.players, self.monasteries, self.advisors)


def _colour(value: Any, where: str) -> str:
    if value not in PLAYER_COLOURS:
        raise StateError(f"{where}: {value!r} is not a player colour "
                         f"({', '.join(PLAYER_COLOURS)})")
    return value


def parse_position(data: Any, board: Board) -> Position:
    """Check a hand-written position against the board; StateError names the first problem."""
    if not isinstance(data, dict):
        raise StateError("the position must be a JSON object with 'monasteries' and 'advisors'")
    unknown = set(data) - {"monasteries", "advisors"}
    if unknown:
        raise StateError(f"unknown key {sorted(unknown)[0]!r}; a position has only "
                         "'monasteries' and 'advisors'")
    monasteries = data.get("monasteries", {})
    advisors = data.get("advisors", {})
    if not isinstance(monasteries, dict):
        raise StateError("'monasteries' must map field names to colours")
    if not isinstance(advisors, dict):
        raise StateError("'advisors' must map country names to lists of colours")
    placed: dict[int, str] = {}
    for name, colour in monasteries.items():
        field = board.find_field(name)
        if field is None:
            raise StateError(f"monasteries: {name!r} is not a cloister field on the {board.id} board")
        if field.index in placed:
            raise StateError(f"monasteries: {field.name} is listed twice")
        placed[field.index] = _colour(colour, f"monasteries: {field.name}")
    crests: dict[int, list[str]] = {}
    for name, colours in advisors.items():
        country = board.find_country(name)
        if country is None:
            raise StateError(f"advisors: {name!r} is not a country on the {board.id} board")
        if country.index in crests:
            raise StateError(f"advisors: {country.name} is listed twice")
        if not isinstance(colours, list):
            raise StateError(f"advisors: {country.name} must have a list of colours")
        crests[country.index] = [_colour(c, f"advisors: {country.name}") for c in colours]
    used = set(placed.values()) | {c for cs in crests.values() for c in cs}
    players = tuple(c for c in PLAYER_COLOURS if c in used)
    seat = {c: i for i, c in enumerate(players)}
    for colour in players:
        built = sum(1 for c in placed.values() if c == colour)
        if built > MONASTERIES_EACH:
            raise StateError(f"{colour} has {built} monasteries; a player has only {MONASTERIES_EACH}")
        sent = sum(cs.count(colour) for cs in crests.values())
        if sent > ADVISORS_EACH:
            raise StateError(f"{colour} has {sent} advisors; a player has only {ADVISORS_EACH}")
    fields = tuple(seat[placed[f]] if f in placed else EMPTY for f in range(len(board.fields)))
    counts = tuple(tuple(crests.get(c.index, []).count(colour) for colour in players)
                   for c in board.countries)
    return Position(players, fields, counts)
