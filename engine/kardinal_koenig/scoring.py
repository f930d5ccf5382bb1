"""Scoring as values: monastery majorities, the numbered alliances, and monastery chains.

Every function takes a bare position (who holds each field, how many advisors each seat has in
each country) so that a position typed in by hand scores exactly like one reached in play. The
result is a `Breakdown` a player can check by hand; nothing here changes a game.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from typing import Any

from ..words import Phrase, both, player, say, say_n
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

    def to_dict(self) -> dict[str, Any]:
        """The breakdown as JSON-ready data keyed by player colour (zero entries left out)."""
        colours = self.players

        def by_colour(points: Sequence[int]) -> dict[str, int]:
            return {colours[s]: p for s, p in enumerate(points) if p}

        data: dict[str, Any] = {
            "monasteries": {c.country: by_colour(c.points) for c in self.monasteries}}
        if self.final:
            data["alliances"] = {str(a.number): by_colour(a.points) for a in self.alliances}
            data["chains"] = by_colour(self.part_totals()["chains"])
        data["total"] = {colour: p for colour, p in zip(colours, self.totals())}
        return data

    def lines(self) -> list[Phrase]:
        """The breakdown in plain words, one line per country, alliance and chain."""
        colours = self.players
        out = [say("Final scoring") if self.final else
               say("Intermediate scoring (monasteries only)")]
        for c in self.monasteries:
            held = sorted((s for s in range(len(colours)) if c.counts[s]), key=lambda s: c.ranks[s])
            if not held:
                out.append(say("  %(country)s: no monasteries", country=c.country))
                continue
            parts = [say("%(colour)s %(count)d (%(rank)s) %(points)s", colour=player(colours[s]),
                         count=c.counts[s], rank=_ordinal(c.ranks[s]),
                         points=say_n("%(num)d point", "%(num)d points", c.points[s]))
                     for s in held]
            out.append(say("  %(country)s: %(parts)s", country=c.country, parts=parts))
        for a in self.alliances:
            first, second = a.countries
            head = say("  Alliance %(number)d %(first)s-%(second)s:", number=a.number,
                       first=first, second=second)
            if not a.advisors[0] or not a.advisors[1]:
                out.append(say("%(head)s no alliance (no advisors in %(country)s)", head=head,
                               country=first if not a.advisors[0] else second))
                continue
            scorers = [player(colours[s]) for s, p in enumerate(a.points) if p]
            if scorers:
                out.append(say_n("%(head)s %(names)s holds both majorities, %(sum)s = %(points)s",
                                 "%(head)s %(names)s hold both majorities, %(sum)s = %(points)s",
                                 len(scorers), head=head, names=both(scorers),
                                 sum=f"{a.advisors[0]}+{a.advisors[1]}",
                                 points=say_n("%(num)d point", "%(num)d points",
                                              a.advisors[0] + a.advisors[1])))
            else:
                out.append(say("%(head)s no one holds both majorities (%(first)s: %(first_names)s; "
                               "%(second)s: %(second_names)s)", head=head, first=first,
                               first_names=_names(a.majorities[0], colours), second=second,
                               second_names=_names(a.majorities[1], colours)))
        for chain in self.chains:
            for fields in chain.chains:
                out.append(say("  Chain of %(colour)s: %(fields)s = %(points)s",
                               colour=player(colours[chain.seat]), fields="-".join(fields),
                               points=say_n("%(num)d point", "%(num)d points", len(fields))))
        out.append(say("  Total: %(totals)s", totals=[say("%(colour)s %(points)d",
                                                          colour=player(colours[s]), points=p)
                                                      for s, p in enumerate(self.totals())]))
        return out


def _ordinal(rank: int) -> Phrase:
    if rank in (1, 2, 3):
        return (say("1st"), say("2nd"), say("3rd"))[rank - 1]
    return say("%(rank)dth", rank=rank)


def _names(seats: Sequence[int], colours: Sequence[str]) -> Phrase:
    return both([player(colours[s]) for s in seats]) if seats else say("nobody")


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


LONG = 4  # a path of this many monasteries scores; longer ones need no exact length in the search


def _elimination_order(component: tuple[int, ...], adjacency: dict[int, set[int]]) -> list[int]:
    """An order of the fields that keeps the search's frontier small: each next field is the one
    with the most roads to fields already taken, then the fewest roads onward."""
    left = set(component)
    start = min(component, key=lambda f: (len(adjacency[f]), f))
    order, taken = [start], {start}
    left.remove(start)
    while left:
        nxt = min(left, key=lambda f: (-len(adjacency[f] & taken), len(adjacency[f] - taken), f))
        order.append(nxt)
        taken.add(nxt)
        left.remove(nxt)
    return order


PATH_LIMIT = 400  # beyond this many candidate chains, the frontier search is the faster one


@lru_cache(maxsize=4096)
def _pack(board: Board, component: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """The best set of disjoint chains (simple paths of 4+ fields) in one connected component.

    Two exact methods: listing every candidate chain is fastest on small, sparse groups; the
    frontier search keeps its time bounded on any group.
    """
    found = _pack_by_paths(board, component, PATH_LIMIT)
    return found if found is not None else _pack_by_frontier(board, component)


def _pack_by_paths(board: Board, component: tuple[int, ...],
                   limit: int) -> tuple[tuple[int, ...], ...] | None:
    """Best packing from the list of every simple path of 4+ fields; None past `limit` paths."""
    paths_by_node = _paths_by_node(board, component, limit)
    if paths_by_node is None:
        return None
    _, chosen = _best_packing(paths_by_node, (1 << len(component)) - 1)
    return tuple(tuple(component[i] for i in path) for path in chosen)


_Paths = list[list[tuple[int, tuple[int, ...]]]]
"""Per field of a component (by its index there), every chain through it as (mask, path)."""


def _paths_by_node(board: Board, component: tuple[int, ...], limit: int) -> _Paths | None:
    """Every simple path of 4+ fields in `component`, listed at each of its fields, the long
    ones first; None past `limit` paths."""
    local = {f: i for i, f in enumerate(component)}
    adjacency = [[local[g] for g in board.neighbours[f] if g in local] for f in component]
    paths_by_node: _Paths = [[] for _ in component]
    count = 0

    def extend(path: list[int], mask: int) -> bool:
        nonlocal count
        if len(path) >= LONG and path[0] < path[-1]:
            count += 1
            if count > limit:
                return False
            entry = (mask, tuple(path))
            for node in path:
                paths_by_node[node].append(entry)
        for nxt in adjacency[path[-1]]:
            if not mask >> nxt & 1:
                path.append(nxt)
                ok = extend(path, mask | 1 << nxt)
                path.pop()
                if not ok:
                    return False
        return True

    for node in range(len(component)):
        if not extend([node], 1 << node):
            return None
    for paths in paths_by_node:
        paths.sort(key=lambda entry: -len(entry[1]))  # long chains first: a full cover ends early
    return paths_by_node


def _best_packing(paths_by_node: _Paths, full: int) -> tuple[int, tuple[tuple[int, ...], ...]]:
    """The most fields disjoint chains of `paths_by_node` cover among the fields of mask
    `full`, and those chains."""
    memo: dict[int, tuple[int, tuple[tuple[int, ...], ...]]] = {}

    def best(mask: int) -> tuple[int, tuple[tuple[int, ...], ...]]:
        size = mask.bit_count()
        if size < LONG:
            return 0, ()
        if mask in memo:
            return memo[mask]
        low = (mask & -mask).bit_length() - 1
        top: tuple[int, tuple[tuple[int, ...], ...]] = (0, ())
        for path_mask, path in paths_by_node[low]:
            if path_mask & mask == path_mask:
                points, chosen = best(mask & ~path_mask)
                if points + len(path) > top[0]:
                    top = (points + len(path), chosen + (path,))
                    if top[0] == size:
                        break  # every field left is in a chain: nothing can beat this
        if top[0] < size - 1:
            rest = best(mask & ~(1 << low))  # the lowest field left outside every chain
            if rest[0] > top[0]:
                top = rest
        memo[mask] = top
        return top

    return best(full)


def _pack_by_frontier(board: Board, component: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """Best packing by an exact dynamic programme over the fields in a fixed order, choosing for each field which
    roads back to earlier fields its chains use (at most two). The state is the frontier: the
    earlier fields that are still path ends with roads to fields not yet reached, each with its
    path's label and the roads it uses, plus each path's length (capped at LONG: a long path's
    fields are counted already). Its size follows the width of the map, not the number of
    paths, so even a player with all 20 monasteries in one tangle scores in milliseconds.
    """
    members = set(component)
    adjacency = {f: set(board.neighbours[f]) & members for f in component}
    order = _elimination_order(component, adjacency)
    position = {f: i for i, f in enumerate(order)}
    earlier = [{position[g] for g in adjacency[f] if position[g] < i} for i, f in enumerate(order)]
    last_needed = [max(position[g] for g in adjacency[f] | {f}) for f in order]
    # A state is (ends, lengths): ends is a tuple of (position, label, roads used) in position
    # order, labels numbered by first appearance; lengths[label] is the path's capped length.
    layers: list[dict[Any, Any]] = []
    states: dict[Any, Any] = {((), ()): (0, None, ())}
    for i in range(len(order)):
        following: dict[Any, Any] = {}
        for state, (value, _, _) in states.items():
            ends = state[0]
            open_ends = [e for e in ends if e[0] in earlier[i]]
            choices = [()] + [(e,) for e in open_ends] + [
                pair for pair in combinations(open_ends, 2) if pair[0][1] != pair[1][1]]
            for chosen in choices:  # (a pair of ends of one path would close a loop)
                nxt, gain = _step(state, i, chosen, last_needed)
                total = value + gain
                if nxt not in following or total > following[nxt][0]:
                    following[nxt] = (total, state, tuple(e[0] for e in chosen))
        layers.append(following)
        states = following
    # Walk back through the layers to the roads chosen, then read the chains off them.
    state = max(states, key=lambda st: states[st][0])
    roads: dict[int, list[int]] = {f: [] for f in component}
    for i in range(len(order) - 1, -1, -1):
        _, previous, chosen = layers[i][state]
        for other in chosen:
            roads[order[i]].append(order[other])
            roads[order[other]].append(order[i])
        state = previous
    chains: list[Any] = []
    seen: set[Any] = set()
    for f in component:
        if f not in seen and len(roads[f]) <= 1:
            path = _walk(f, roads)
            seen.update(path)
            if len(path) >= LONG:
                chains.append(path)
    return tuple(chains)


def _step(state: Any, i: int, chosen: Any, last_needed: Any) -> tuple[Any, int]:
    """The frontier after field `i` joins the paths ending at `chosen`, and the points gained.

    Ends that can take no more roads (two used, or no road left to a later field) are dropped.
    """
    ends, lengths = state
    merged: Collection[int]
    touched: Collection[int]
    if chosen:
        merged = {e[1] for e in chosen}
        before = [lengths[label] for label in merged]
        short = sum(n for n in before if n < LONG)
        if any(n >= LONG for n in before):
            new_length, gain = LONG, 1 + short  # the long path's own fields are counted already
        else:
            new_length = short + 1
            gain = new_length if new_length >= LONG else 0
        keep = chosen[0][1]
        touched = {e[0] for e in chosen}
    else:
        merged, touched, keep, new_length, gain = (), (), -1, 1, 0
    kept = []
    for at, label, used in ends:
        if at in touched:
            used += 1
        if used < 2 and last_needed[at] > i:
            kept.append((at, keep if label in merged else label, used))
    if len(chosen) < 2 and last_needed[i] > i:
        kept.append((i, keep, len(chosen)))
    relabel: dict[int, int] = {}
    new_lengths: list[int] = []
    out = []
    for at, label, used in kept:
        new = relabel.get(label)
        if new is None:
            new = relabel[label] = len(new_lengths)
            new_lengths.append(min(new_length, LONG) if label == keep else lengths[label])
        out.append((at, new, used))
    return (tuple(out), tuple(new_lengths)), gain


def final_breakdown(board: Board, players: tuple[str, ...], monasteries: tuple[int, ...],
                    advisors: tuple[tuple[int, ...], ...]) -> Breakdown:
    """The final scoring of a position: monasteries, then alliances 1-N, then chains."""
    n = len(players)
    return Breakdown(players, True, score_monasteries(board, monasteries, n),
                     score_alliances(board, advisors, n), score_chains(board, monasteries, n))


@lru_cache(maxsize=256)
def intermediate_breakdown(board: Board, players: tuple[str, ...],
                           monasteries: tuple[int, ...]) -> Breakdown:
    """The intermediate scoring: monastery majorities only. Kept once made: a game shows it on
    every view from the first deck run-out on, and it never changes (a Breakdown is frozen)."""
    return Breakdown(players, False, score_monasteries(board, monasteries, len(players)))
