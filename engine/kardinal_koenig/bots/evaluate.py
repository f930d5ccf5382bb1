"""A fast projection of each seat's final score, for the bots to rank moves by.

The projection is "the game ends now": the points already banked, the monastery majorities (twice
while the intermediate scoring is still to come), the alliances and the chains, all by the rules
of `scoring`, but kept per country, per alliance and per seat so that the effect of one
placement is recomputed only where it lands. Nothing here reads a hidden card.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..board import Board
from ..moves import ADVISOR, Place
from ..scoring import LONG, _best_chains, _components
from ..state import EMPTY, GameState


@dataclass(frozen=True, eq=False)
class BoardInfo:
    """The board as the evaluator needs it: fields per country, alliances by country."""

    board: Board
    country_fields: tuple[tuple[int, ...], ...]
    field_country: tuple[int, ...]
    alliances: tuple[tuple[int, int], ...]
    alliances_of: tuple[tuple[int, ...], ...]  # per country: the alliances it is part of
    country_index: dict[str, Any]
    field_index: dict[str, Any]


@lru_cache(maxsize=8)
def board_info(board: Board) -> BoardInfo:
    field_country = [0] * len(board.fields)
    for c in board.countries:
        for f in c.fields:
            field_country[f] = c.index
    alliances = tuple((board.country(a.countries[0]).index, board.country(a.countries[1]).index)
                      for a in board.alliances)
    alliances_of = tuple(tuple(i for i, pair in enumerate(alliances) if c.index in pair)
                         for c in board.countries)
    return BoardInfo(board, tuple(c.fields for c in board.countries), tuple(field_country),
                     alliances, alliances_of, {c.name: c.index for c in board.countries},
                     {f.name: f.index for f in board.fields})


@lru_cache(maxsize=65536)
def monastery_points(counts: tuple[int, ...]) -> tuple[int, ...]:
    """Points per seat for one country's monastery counts (dense ranks, as scoring)."""
    levels = sorted({c for c in counts if c}, reverse=True)
    total = sum(counts)
    rank = {count: i for i, count in enumerate(levels)}
    return tuple(0 if c == 0 else total if rank[c] == 0 else levels[rank[c] - 1] for c in counts)


@lru_cache(maxsize=65536)
def alliance_points(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """Points per seat for one alliance with advisors `a` and `b` in its two countries."""
    most_a, most_b = max(a), max(b)
    if not most_a or not most_b:
        return (0,) * len(a)
    value = sum(a) + sum(b)
    return tuple(value if x == most_a and y == most_b else 0 for x, y in zip(a, b))


@lru_cache(maxsize=65536)
def _chain_points(board: Board, own: frozenset[int]) -> int:
    points = 0
    for component in _components(board, own):
        if len(component) >= LONG:
            points += sum(len(chain) for chain in _best_chains(board, component))
    return points


def chain_points(board: Board, monasteries: Sequence[int], seat: int) -> int:
    return _chain_points(board, frozenset(f for f, s in enumerate(monasteries) if s == seat))


@lru_cache(maxsize=4096)
def placement_parts(info: BoardInfo, move: Place) -> tuple[int, tuple[int, ...], int]:
    """A placement as (country index, field indices, number of advisors)."""
    fields = tuple(info.field_index[p] for p in move.pieces if p != ADVISOR)
    return info.country_index[move.country], fields, len(move.pieces) - len(fields)


class Projection:
    """Each seat's projected final score in one position, updatable one placement at a time."""

    __slots__ = (
        "_shared",
        "advisor_supply",
        "advisors",
        "alliance_pts",
        "chain_pts",
        "country_pts",
        "info",
        "monasteries",
        "monastery_supply",
        "mult",
        "n",
        "own",
        "totals",
    )
    info: BoardInfo
    n: int
    monasteries: list[int]
    advisors: list[tuple[int, ...]]
    mult: int
    country_pts: list[tuple[int, ...]]
    alliance_pts: list[tuple[int, ...]]
    chain_pts: list[int]
    totals: list[float]
    monastery_supply: list[int]
    advisor_supply: list[int]
    own: list[frozenset[int]]
    _shared: dict[tuple[int, int, int, int], list[float]]

    @classmethod
    def of(cls, state: GameState) -> Projection:
        self = cls()
        info = self.info = board_info(state.board)
        n = self.n = len(state.players)
        self.monasteries = list(state.monasteries)
        self.advisors = [tuple(a) for a in state.advisors]
        self.mult = 2 if state.exhaustions == 0 else 1
        self.monastery_supply = list(state.monastery_supply)
        self.advisor_supply = list(state.advisor_supply)
        self.country_pts = [monastery_points(self._counts(c)) for c in range(len(info.country_fields))]
        self.alliance_pts = [alliance_points(self.advisors[a], self.advisors[b])
                             for a, b in info.alliances]
        self.own = [frozenset(f for f, x in enumerate(self.monasteries) if x == s)
                    for s in range(n)]
        self.chain_pts = [_chain_points(info.board, own) for own in self.own]
        totals = [float(x) for x in state.scores]
        for pts in self.country_pts:
            for s in range(n):
                totals[s] += self.mult * pts[s]
        for pts in self.alliance_pts:
            for s in range(n):
                totals[s] += pts[s]
        for s in range(n):
            totals[s] += self.chain_pts[s]
        self.totals = totals
        self._shared = {}
        return self

    def _counts(self, country: int) -> tuple[int, ...]:
        counts = [0] * self.n
        for f in self.info.country_fields[country]:
            s = self.monasteries[f]
            if s != EMPTY:
                counts[s] += 1
        return tuple(counts)

    def copy(self) -> Projection:
        other = Projection()
        other.info, other.n, other.mult = self.info, self.n, self.mult
        other.monasteries = list(self.monasteries)
        other.advisors = list(self.advisors)
        other.country_pts = list(self.country_pts)
        other.alliance_pts = list(self.alliance_pts)
        other.chain_pts = list(self.chain_pts)
        other.own = list(self.own)
        other.totals = list(self.totals)
        other.monastery_supply = list(self.monastery_supply)
        other.advisor_supply = list(self.advisor_supply)
        other._shared = {}
        return other

    def after(self, seat: int, move: Place) -> list[float]:
        """The totals after `seat` plays `move`, without changing this projection."""
        country, fields, advisors = placement_parts(self.info, move)
        # Only the chains depend on which fields: the rest is shared by the country's moves.
        key = (seat, country, len(fields), advisors)
        shared = self._shared.get(key)
        if shared is None:
            shared = self._shared[key] = self._after_counts(seat, country, len(fields), advisors)
        if not fields:
            return shared
        totals = list(shared)
        totals[seat] += _chain_points(self.info.board, self.own[seat].union(fields)) \
            - self.chain_pts[seat]
        return totals

    def _after_counts(self, seat: int, country: int, monasteries: int,
                      advisors: int) -> list[float]:
        totals = list(self.totals)
        n, mult = self.n, self.mult
        if monasteries:
            counts = list(self._counts(country))
            counts[seat] += monasteries
            old, new = self.country_pts[country], monastery_points(tuple(counts))
            for s in range(n):
                totals[s] += mult * (new[s] - old[s])
        if advisors:
            added = list(self.advisors[country])
            added[seat] += advisors
            row = tuple(added)
            for i in self.info.alliances_of[country]:
                a, b = self.info.alliances[i]
                new = alliance_points(row if a == country else self.advisors[a],
                                      row if b == country else self.advisors[b])
                old = self.alliance_pts[i]
                for s in range(n):
                    totals[s] += new[s] - old[s]
        return totals

    def play(self, seat: int, move: Place) -> None:
        """Apply `seat`'s placement to this projection."""
        country, fields, advisors = placement_parts(self.info, move)
        self.totals = list(self.after(seat, move))
        self._shared = {}
        if fields:
            for f in fields:
                self.monasteries[f] = seat
            self.country_pts[country] = monastery_points(self._counts(country))
            self.own[seat] = self.own[seat].union(fields)
            self.chain_pts[seat] = _chain_points(self.info.board, self.own[seat])
            self.monastery_supply[seat] -= len(fields)
        if advisors:
            row = list(self.advisors[country])
            row[seat] += advisors
            self.advisors[country] = tuple(row)
            for i in self.info.alliances_of[country]:
                a, b = self.info.alliances[i]
                self.alliance_pts[i] = alliance_points(self.advisors[a], self.advisors[b])
            self.advisor_supply[seat] -= advisors


def margin(totals: list[float], seat: int) -> float:
    """How far `seat` is ahead of the best other seat (negative: behind)."""
    return totals[seat] - max(totals[:seat] + totals[seat + 1:])


@lru_cache(maxsize=65536)
def _chain_prospect(board: Board, own: frozenset[int], free: frozenset[int]) -> float:
    """Points a seat's groups of 2 or 3 monasteries may yet bring as chains: a group with a
    free field on a road beside it can grow into one."""
    prospect = 0.0
    for component in _components(board, own):
        if 2 <= len(component) < LONG and any(g in free for f in component
                                               for g in board.neighbours[f]):
            prospect += 0.5 * len(component) - 0.5
    return prospect


def prospects(p: Projection, advisor_weight: float = 0.4) -> list[float]:
    """Points each seat may yet score that "the game ends now" does not count: advisor
    majorities whose allied country has no advisor yet, and chains about to form."""
    n = p.n
    extra = [0.0] * n
    for a, b in p.info.alliances:
        for lead, empty in ((a, b), (b, a)):
            row = p.advisors[lead]
            if not any(p.advisors[empty]) and max(row):
                most = max(row)
                for s in range(n):
                    if row[s] == most:
                        extra[s] += advisor_weight * sum(row)
    free = frozenset(f for f, s in enumerate(p.monasteries) if s == EMPTY)
    board = p.info.board
    for s in range(n):
        extra[s] += _chain_prospect(board, p.own[s], free)
    return extra
