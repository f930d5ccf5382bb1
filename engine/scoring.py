"""Scoring as values: monastery majorities, the numbered alliances, and monastery chains.

Every function takes a bare position (who holds each field, how many advisors each seat has in
each country) so that a position typed in by hand scores exactly like one reached in play. The
result is a `Breakdown` a player can check by hand; nothing here changes a game.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, lru_cache

from .board import Board

EMPTY = -1


@dataclass(frozen=True)
class CountryScore:
    """Monastery scoring of one country: counts, dense ranks (0 = no monastery) and points."""

    country: str
    counts: tuple[int, ...]
    ranks: tuple[int, ...]
    points: tuple[int, ...]


@dataclass(frozen=True)
class AllianceScore:
    """One alliance: advisors in each country, who holds each majority, and who scores."""

    number: int
    countries: tuple[str, str]
    advisors: tuple[int, int]
    majorities: tuple[tuple[int, ...], tuple[int, ...]]
    points: tuple[int, ...]


@dataclass(frozen=True)
class ChainScore:
    """The chains one seat scores: each as its fields in road order."""

    seat: int
    chains: tuple[tuple[str, ...], ...]

    @property
    def points(self) -> int:
        return sum(len(chain) for chain in self.chains)


@dataclass(frozen=True)
class Breakdown:
    """A whole scoring (intermediate: monasteries only; final: all three parts)."""

    players: tuple[str, ...]
    final: bool
    monasteries: tuple[CountryScore, ...]
    alliances: tuple[AllianceScore, ...] = ()
    chains: tuple[ChainScore, ...] = ()

    def part_totals(self) -> dict[str, tuple[int, ...]]:
        """Points per seat for each part."""
        n = len(self.players)
        chain_points = [0] * n
        for chain in self.chains:
            chain_points[chain.seat] += chain.points
        return {
            "monasteries": tuple(sum(c.points[s] for c in self.monasteries) for s in range(n)),
            "alliances": tuple(sum(a.points[s] for a in self.alliances) for s in range(n)),
            "chains": tuple(chain_points),
        }

    def totals(self) -> tuple[int, ...]:
        """Points per seat for the whole scoring."""
        parts = self.part_totals().values()
        return tuple(sum(points) for points in zip(*parts))

    def to_dict(self) -> dict:
        """The breakdown as JSON-ready data keyed by player colour (zero entries left out)."""
        colours = self.players

        def by_colour(points):
            return {colours[s]: p for s, p in enumerate(points) if p}

        data = {"monasteries": {c.country: by_colour(c.points) for c in self.monasteries}}
        if self.final:
            data["alliances"] = {str(a.number): by_colour(a.points) for a in self.alliances}
            data["chains"] = by_colour(self.part_totals()["chains"])
        data["total"] = {colour: p for colour, p in zip(colours, self.totals())}
        return data

    def lines(self) -> list[str]:
        """The breakdown in plain words, one line per country, alliance and chain."""
        colours = self.players
        out = ["Final scoring" if self.final else "Intermediate scoring (monasteries only)"]
        for c in self.monasteries:
            held = sorted((s for s in range(len(colours)) if c.counts[s]), key=lambda s: c.ranks[s])
            if not held:
                out.append(f"  {c.country}: no monasteries")
                continue
            parts = [f"{colours[s]} {c.counts[s]} ({_ordinal(c.ranks[s])}) {c.points[s]} pts"
                     for s in held]
            out.append(f"  {c.country}: " + ", ".join(parts))
        for a in self.alliances:
            first, second = a.countries
            head = f"  Alliance {a.number} {first}-{second}:"
            if not a.advisors[0] or not a.advisors[1]:
                out.append(f"{head} no alliance (no advisors in "
                           f"{first if not a.advisors[0] else second})")
                continue
            scorers = [colours[s] for s, p in enumerate(a.points) if p]
            if scorers:
                verb = "holds" if len(scorers) == 1 else "hold"
                out.append(f"{head} {' and '.join(scorers)} {verb} both majorities, "
                           f"{a.advisors[0]}+{a.advisors[1]} = {a.advisors[0] + a.advisors[1]} pts")
            else:
                out.append(f"{head} no one holds both majorities "
                           f"({first}: {_names(a.majorities[0], colours)}; "
                           f"{second}: {_names(a.majorities[1], colours)})")
        for chain in self.chains:
            for fields in chain.chains:
                out.append(f"  Chain of {colours[chain.seat]}: {'-'.join(fields)} = "
                           f"{len(fields)} pts")
        out.append("  Total: " + ", ".join(f"{colours[s]} {p}" for s, p in enumerate(self.totals())))
        return out


def _ordinal(rank: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(rank, f"{rank}th")


def _names(seats, colours) -> str:
    return " and ".join(colours[s] for s in seats) or "nobody"


def score_monasteries(board: Board, monasteries: tuple[int, ...], n: int) -> tuple[CountryScore, ...]:
    """Monastery majorities in every country, in the board's scoring order."""
    result = []
    for country in board.countries:
        counts = [0] * n
        for f in country.fields:
            seat = monasteries[f]
            if seat != EMPTY:
                counts[seat] += 1
        levels = sorted({c for c in counts if c}, reverse=True)
        rank_of = {count: i + 1 for i, count in enumerate(levels)}
        total = sum(counts)
        ranks = tuple(rank_of.get(c, 0) for c in counts)
        # Dense ranks: the leaders score every monastery there; rank k scores the count of rank k-1.
        points = tuple(0 if r == 0 else total if r == 1 else levels[r - 2] for r in ranks)
        result.append(CountryScore(country.name, tuple(counts), ranks, points))
    return tuple(result)


def advisor_majority(counts: tuple[int, ...]) -> tuple[int, ...]:
    """Seats tied for the most advisors in a country (none when it has no advisor)."""
    most = max(counts, default=0)
    return tuple(s for s, c in enumerate(counts) if most and c == most)


def score_alliances(board: Board, advisors: tuple[tuple[int, ...], ...], n: int) -> tuple[AllianceScore, ...]:
    """The alliances in number order: every seat with both majorities scores all their advisors."""
    result = []
    for alliance in board.alliances:
        a = board.country(alliance.countries[0]).index
        b = board.country(alliance.countries[1]).index
        major_a, major_b = advisor_majority(advisors[a]), advisor_majority(advisors[b])
        value = sum(advisors[a]) + sum(advisors[b])
        both = set(major_a) & set(major_b)
        points = tuple(value if s in both else 0 for s in range(n))
        result.append(AllianceScore(alliance.number, alliance.countries,
                                    (sum(advisors[a]), sum(advisors[b])), (major_a, major_b), points))
    return tuple(result)


def score_chains(board: Board, monasteries: tuple[int, ...], n: int) -> tuple[ChainScore, ...]:
    """For each seat, the best set of disjoint chains (simple road paths of 4+ own monasteries)."""
    result = []
    for seat in range(n):
        own = frozenset(f for f, s in enumerate(monasteries) if s == seat)
        chains = []
        for component in _components(board, own):
            if len(component) >= 4:
                chains.extend(_best_chains(board, component))
        chains.sort(key=lambda chain: (-len(chain), chain))
        result.append(ChainScore(seat, tuple(tuple(board.fields[f].name for f in chain)
                                             for chain in chains)))
    return tuple(result)


def _components(board: Board, own: frozenset[int]) -> list[tuple[int, ...]]:
    seen: set[int] = set()
    components = []
    for start in sorted(own):
        if start in seen:
            continue
        stack, component = [start], []
        seen.add(start)
        while stack:
            f = stack.pop()
            component.append(f)
            for g in board.neighbours[f]:
                if g in own and g not in seen:
                    seen.add(g)
                    stack.append(g)
        components.append(tuple(sorted(component)))
    return components


def _best_chains(board: Board, component: tuple[int, ...]) -> list[tuple[int, ...]]:
    members = set(component)
    edges = {f: [g for g in board.neighbours[f] if g in members] for f in component}
    ends = [f for f in component if len(edges[f]) == 1]
    if len(ends) == 2 and all(len(e) <= 2 for e in edges.values()):
        return [_walk(ends[0], edges)]  # already a simple path: the whole component scores
    return list(_pack(board, component))


def _walk(start: int, edges: dict[int, list[int]]) -> tuple[int, ...]:
    path, previous = [start], None
    while True:
        step = [g for g in edges[path[-1]] if g != previous]
        if not step:
            return tuple(path)
        previous = path[-1]
        path.append(step[0])


@lru_cache(maxsize=4096)
def _pack(board: Board, component: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Exhaustive best packing of disjoint simple paths (4+ fields) in one small component."""
    local = {f: i for i, f in enumerate(component)}
    adjacency = [[local[g] for g in board.neighbours[f] if g in local] for f in component]
    paths_by_node: list[list[tuple[int, tuple[int, ...]]]] = [[] for _ in component]

    def extend(path: list[int], mask: int) -> None:
        if len(path) >= 4 and path[0] < path[-1]:
            entry = (mask, tuple(path))
            for node in path:
                paths_by_node[node].append(entry)
        for nxt in adjacency[path[-1]]:
            if not mask >> nxt & 1:
                path.append(nxt)
                extend(path, mask | 1 << nxt)
                path.pop()

    for node in range(len(component)):
        extend([node], 1 << node)

    @cache
    def best(mask: int) -> tuple[int, tuple[tuple[int, ...], ...]]:
        if mask.bit_count() < 4:
            return 0, ()
        low = (mask & -mask).bit_length() - 1
        top = best(mask & ~(1 << low))  # the lowest field left outside every chain
        for path_mask, path in paths_by_node[low]:
            if path_mask & mask == path_mask:
                points, chosen = best(mask & ~path_mask)
                if points + len(path) > top[0]:
                    top = (points + len(path), chosen + (path,))
        return top

    return tuple(tuple(component[i] for i in path) for path in best((1 << len(component)) - 1)[1])


def final_breakdown(board: Board, players: tuple[str, ...], monasteries: tuple[int, ...],
                    advisors: tuple[tuple[int, ...], ...]) -> Breakdown:
    """The final scoring of a position: monasteries, then alliances 1-N, then chains."""
    n = len(players)
    return Breakdown(players, True, score_monasteries(board, monasteries, n),
                     score_alliances(board, advisors, n), score_chains(board, monasteries, n))


def intermediate_breakdown(board: Board, players: tuple[str, ...],
                           monasteries: tuple[int, ...]) -> Breakdown:
    """The intermediate scoring: monastery majorities only."""
    return Breakdown(players, False, score_monasteries(board, monasteries, len(players)))
