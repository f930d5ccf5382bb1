"""Tournament tables and standings, as pure functions: no database, no clock, no global random.

Players are keys (their lower-case addresses); a game's result is a `Played`. Everything
random here (the drawn lot that breaks the last tie, the order a covering is built in) comes
from the tournament's seed, so the same tournament always makes the same tables.

**Points of one game** (every format): a player gets a point for each opponent at the table
they finished ahead of and half a point for each they tied with (the game's own ranking:
its score, then its own tie-break, such as pieces left). At a table of n that is n - rank
points, tied players sharing the points of the places they hold (4 players: 3, 2, 1, 0; two
tied first: 2½ each). A game aborted by an organiser counts as played (its players have met)
and gives nobody points or score.

**Standings** order players by points, then:
- a league group: total game score, then head-to-head (the points the tied players took from
  each other in the games they played together, counted as above but among them alone), then
  the lot;
- a Swiss or round-robin event: the Buchholz figure (the sum of the points of every opponent
  met, once per game met), then total game score, then the lot.
The lot is the SHA-256 of the tournament's seed and the player's key: fixed when the
tournament is made, unknown to the players (the seed is never shown).

**Round-robin tables** (`round_robin`): when every table of the field is at most
`ALL_TABLES_LIMIT` games, every table of that size is played once (5 players at tables of 3:
all 10 tables, each pair meets 3 times). A larger field gets a greedy covering: tables are
added one at a time, each started by the player with the fewest tables so far and filled with
the player who meets the most opponents not yet met at this table (then the fewest tables,
then the lot), until every pair has met; so every pair meets at least once and the tables
spread evenly over the players. All tables are one round: correspondence players play
them at the same time, so a field that would give a player more than
`ROUND_ROBIN_MOST_GAMES` games is refused (larger tables, or a Swiss event, instead).

**Swiss tables** (`swiss_round`): the tables with the fewest repeated meetings in all, then
the least spread in the standings at each table (players of similar points together). Two
ways are tried and the better taken: a search in standings order (each table started by the
best-placed player left and filled from the nearest first, with no repeat if it can, else one,
...) bounded to `SWISS_SEARCH_NODES` tables tried, and greedy tables improved by swapping
players between tables. Repeats are avoided wherever the search or the swaps find a way.
The tables come in standings order (table 1 holds the leader, the next the best-placed
player not at table 1, ...), whichever way found them.

**Table sizes** (`table_sizes`): as many tables as the field divided by the chosen size
(rounded up), sizes as equal as possible; fewer tables if that leaves a table below the
game's least number of players.

**Leagues** (`first_leagues`, `next_leagues`): league 1 is one group, league 2 up to two,
league 3 up to four, ... of `group_size` players, filled in the order the organiser listed the
players. After a season the best `k` of each group go up a league (not from league 1), the
worst `k` down (not from the lowest league); players who left are removed, new players join
the lowest league; each league's players are then dealt into its groups (those who came down
first, then those who stayed, then those who came up, each by their place), like cards, so
groups are balanced. A league too small for one group joins the league above.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

ALL_TABLES_LIMIT = 60  # the most tables for "every table once" in a round-robin
ROUND_ROBIN_MOST_GAMES = 20  # the most games a round-robin gives a player (all at once)
SWISS_SEARCH_NODES = 5_000  # the most tables a Swiss round's search tries
LEAGUE, SWISS, ROUND_ROBIN = "league", "swiss", "round-robin"
FORMATS = (LEAGUE, SWISS, ROUND_ROBIN)


class TableProblem(ValueError):
    """A field that cannot be seated as asked; the message says what to change."""


@dataclass(frozen=True)
class Played:
    """One tournament game as the standings need it: the players in seat order, each one's
    rank (1 = first, ties share) and game score; `ranks` None for a game an organiser
    aborted."""

    players: tuple[str, ...]
    ranks: tuple[int, ...] | None
    scores: tuple[int, ...] = ()

    def points(self) -> dict[str, Fraction]:
        """Each player's points from this game (see the module's docstring)."""
        return _points_among(self, self.players)


def _points_among(game: Played, among: Iterable[str]) -> dict[str, Fraction]:
    among = [p for p in game.players if p in set(among)]
    if game.ranks is None:
        return {p: Fraction(0) for p in among}
    rank = dict(zip(game.players, game.ranks))
    return {p: sum((Fraction(1) if rank[p] < rank[q] else Fraction(1, 2)
                    for q in among if q != p and rank[p] <= rank[q]), Fraction(0))
            for p in among}


def lot(seed: str, player: str) -> str:
    """The drawn lot of `player`: the lower comes first when all else is tied."""
    return hashlib.sha256(f"{seed}\0{player}".encode()).hexdigest()


@dataclass(frozen=True)
class Standing:
    player: str
    place: int  # 1 = first; every player has a place of their own (the lot decides last)
    points: Fraction
    games: int  # games played (finished or aborted)
    score: int  # total game score
    tie_break: Fraction  # Buchholz (events) or head-to-head points (league groups)
    lot: str


def standings(players: Sequence[str], games: Iterable[Played], seed: str,
              league: bool = False) -> list[Standing]:
    """`players` in their standings order after `games` (those that are over). `league`:
    the league group's tie-breaks (score, head-to-head), else an event's (Buchholz, score)."""
    games = list(games)
    points = {p: Fraction(0) for p in players}
    score = {p: 0 for p in players}
    count = {p: 0 for p in players}
    for game in games:
        for p, pts in game.points().items():
            if p in points:
                points[p] += pts
                count[p] += 1
        for p, s in zip(game.players, game.scores if game.ranks is not None else ()):
            if p in score:
                score[p] += s
    if league:
        groups: dict[tuple, list[str]] = {}
        for p in players:
            groups.setdefault((points[p], score[p]), []).append(p)
        tie = {p: Fraction(0) for p in players}
        for tied in groups.values():
            if len(tied) > 1:
                for game in games:
                    if sum(p in tied for p in game.players) > 1:
                        for p, pts in _points_among(game, tied).items():
                            tie[p] += pts
        key: dict[str, tuple[Fraction, Fraction | int, Fraction | int, str]]
        key = {p: (-points[p], -score[p], -tie[p], lot(seed, p)) for p in players}
    else:
        tie = {p: Fraction(0) for p in players}
        for game in games:
            for p in game.players:
                if p in tie:
                    tie[p] += sum((points.get(q, Fraction(0)) for q in game.players if q != p),
                                  Fraction(0))
        key = {p: (-points[p], -tie[p], -score[p], lot(seed, p)) for p in players}
    ordered = sorted(players, key=key.__getitem__)
    return [Standing(p, n + 1, points[p], count[p], score[p], tie[p], lot(seed, p))
            for n, p in enumerate(ordered)]


def table_sizes(players: int, size: int, least: int, most: int) -> list[int]:
    """Sizes of the tables that seat `players` at tables of about `size` (each of `least` to
    `most`), largest first."""
    if not least <= size <= most:
        raise TableProblem(f"a table is {least} to {most} players, not {size}")
    if players < least:
        raise TableProblem(f"{players} players are too few for one table of {least}")
    for tables in (math.ceil(players / size), players // size):
        if tables == 0:
            continue
        small, extra = divmod(players, tables)
        sizes = [small + 1] * extra + [small] * (tables - extra)
        if least <= min(sizes) and max(sizes) <= most:
            return sizes
    for tables in range(1, players + 1):  # any fit at all
        small, extra = divmod(players, tables)
        sizes = [small + 1] * extra + [small] * (tables - extra)
        if least <= min(sizes) and max(sizes) <= most:
            return sizes
    raise TableProblem(f"{players} players cannot be seated at tables of {least} to {most}")


def met(games: Iterable[Played]) -> Counter:
    """How often each pair (a sorted tuple) has met."""
    pairs: Counter = Counter()
    for game in games:
        for a, b in itertools.combinations(sorted(game.players), 2):
            pairs[a, b] += 1
    return pairs


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a < b else (b, a)


def seated(table: Sequence[str], starts: Counter, seed: str) -> tuple[str, ...]:
    """The table in seat order: whoever has had the first seat least often sits first (the
    first seat moves first), then by the lot; `starts` is counted on."""
    order = sorted(table, key=lambda p: (starts[p], lot(seed, p)))
    starts[order[0]] += 1
    return tuple(order)


def round_robin(players: Sequence[str], size: int, seed: str) -> list[tuple[str, ...]]:
    """Every table of the round-robin (see the module's docstring), each in seat order."""
    players = sorted(players, key=lambda p: lot(seed, p))
    if len(players) < size:
        raise TableProblem(f"a round-robin at tables of {size} needs at least {size} players")
    starts: Counter = Counter()
    if math.comb(len(players), size) <= ALL_TABLES_LIMIT:
        return [seated(t, starts, seed) for t in itertools.combinations(players, size)]
    if math.ceil((len(players) - 1) / (size - 1)) > ROUND_ROBIN_MOST_GAMES:
        raise TableProblem(f"a round-robin of {len(players)} players at tables of {size} gives "
                           f"each more than {ROUND_ROBIN_MOST_GAMES} games at once; choose "
                           "larger tables, or a Swiss event")
    lots = {p: lot(seed, p) for p in players}
    pairs: Counter = Counter()
    tables: Counter = Counter()
    out = []
    unmet = {_pair(a, b) for a, b in itertools.combinations(players, 2)}
    unmet_of = {p: len(players) - 1 for p in players}  # opponents not met yet
    while unmet:
        first = min(players, key=lambda p: (-unmet_of[p], tables[p], lots[p]))
        table = [first]
        while len(table) < size:
            table.append(min(
                (p for p in players if p not in table),
                key=lambda p: (-sum(_pair(p, q) in unmet for q in table),
                               sum(pairs[_pair(p, q)] for q in table), tables[p], lots[p])))
        for a, b in itertools.combinations(table, 2):
            pairs[_pair(a, b)] += 1
            if _pair(a, b) in unmet:
                unmet.discard(_pair(a, b))
                unmet_of[a] -= 1
                unmet_of[b] -= 1
        for p in table:
            tables[p] += 1
        out.append(seated(table, starts, seed))
    return out


def swiss_round(order: Sequence[str], sizes: Sequence[int], before: Counter,
                starts: Counter, seed: str) -> list[tuple[str, ...]]:
    """The tables of a Swiss round for players in standings `order`, at tables of `sizes`;
    `before` counts the pairs' earlier meetings (`met`), `starts` the first seats so far.

    The tables with the fewest repeated meetings in all, then the least spread in the
    standings at each table: a search (each table started by the best-placed player left,
    filled from the nearest in the standings first) bounded to `SWISS_SEARCH_NODES` tables
    tried, and greedy tables improved by swapping players between tables; the better of
    the two is taken, its tables in standings order (by each table's best-placed player)."""
    if sum(sizes) != len(order):
        raise TableProblem("the tables do not seat every player")
    place = {p: n for n, p in enumerate(order)}

    def repeats(table) -> int:
        return sum(before[_pair(a, b)] for a, b in itertools.combinations(table, 2))

    def cost(table) -> tuple[int, int]:
        spots = [place[p] for p in table]
        return repeats(table), max(spots) - min(spots)

    def total(tables) -> tuple[int, int]:
        costs = [cost(t) for t in tables]
        return sum(c[0] for c in costs), sum(c[1] for c in costs)

    candidates = [found for found in (_searched(order, sizes, repeats),
                                      _swapped(_greedy(order, sizes, before, place), cost))
                  if found is not None]
    best = sorted(min(candidates, key=total), key=lambda t: min(place[p] for p in t))
    return [seated(sorted(t, key=place.__getitem__), starts, seed) for t in best]


def _searched(order: Sequence[str], sizes: Sequence[int], repeats) -> list[tuple] | None:
    """Tables with no more repeated meetings than the least budget the search can meet,
    trying 0, 1, 2... within `SWISS_SEARCH_NODES` tables tried in all; None past the bound."""
    nodes = [0]

    def search(left: list[str], sizes: Sequence[int], budget: int):
        if not sizes:
            return []
        head, rest = left[0], left[1:]
        for others in itertools.combinations(rest, sizes[0] - 1):
            nodes[0] += 1
            if nodes[0] > SWISS_SEARCH_NODES:
                raise _Bound
            cost = repeats((head, *others))
            if cost > budget:
                continue
            chosen = set(others)
            found = search([p for p in rest if p not in chosen], sizes[1:], budget - cost)
            if found is not None:
                return [(head, *others), *found]
        return None

    budget = 0
    try:
        while True:
            found = search(list(order), list(sizes), budget)
            if found is not None:
                return found
            budget += 1
    except _Bound:
        return None


class _Bound(Exception):
    """A bounded search went past its bound."""


def _greedy(order: Sequence[str], sizes: Sequence[int], before: Counter,
            place: dict[str, int]) -> list[list[str]]:
    left, tables = list(order), []
    for size in sizes:
        table = [left.pop(0)]
        while len(table) < size:
            best = min(left, key=lambda p: (sum(before[_pair(p, q)] for q in table), place[p]))
            left.remove(best)
            table.append(best)
        tables.append(table)
    return tables


def _swapped(tables: list[list[str]], cost, passes: int = 6) -> list[tuple]:
    """`tables` improved by swapping two players of two tables, one of which has a repeated
    meeting, while a swap lowers the two tables' cost (repeats, then spread), at most
    `passes` times over."""
    costs = [cost(t) for t in tables]
    for _ in range(passes):
        better = False
        for i, j in itertools.combinations(range(len(tables)), 2):
            if costs[i][0] == costs[j][0] == 0:
                continue  # only swaps that touch a repeat: the greedy kept neighbours together
            for a in range(len(tables[i])):
                for b in range(len(tables[j])):
                    ti, tj = list(tables[i]), list(tables[j])
                    ti[a], tj[b] = tj[b], ti[a]
                    ci, cj = cost(ti), cost(tj)
                    if (ci[0] + cj[0], ci[1] + cj[1]) < (costs[i][0] + costs[j][0],
                                                         costs[i][1] + costs[j][1]):
                        tables[i], tables[j], costs[i], costs[j] = ti, tj, ci, cj
                        better = True
        if not better:
            break
    return [tuple(t) for t in tables]


def group_rotation(group: Sequence[str], cycles: int = 1) -> list[tuple[str, ...]]:
    """A league group's games: as many as it has players (times `cycles`), each player first
    (and so starting) once a cycle, the seats rotated: A B C, B C A, C A B."""
    n = len(group)
    return [tuple(group[(i + j) % n] for j in range(n)) for _ in range(cycles) for i in range(n)]


@dataclass
class Leagues:
    """The groups of a season: leagues[0] is league 1, each a list of groups of players."""

    leagues: list[list[list[str]]] = field(default_factory=list)

    def placed(self) -> list[tuple[int, int, str]]:
        """(league, group, player) for everyone, counted from 1."""
        return [(li + 1, gi + 1, p) for li, league in enumerate(self.leagues)
                for gi, group in enumerate(league) for p in group]


def _deal(players: Sequence[str], size: int, least: int, most: int) -> list[list[str]]:
    """Players dealt into balanced groups like cards, in snake order (1 2 3 3 2 1 ...)."""
    sizes = table_sizes(len(players), min(max(size, least), most), least, most)
    groups: list[list[str]] = [[] for _ in sizes]
    order = list(range(len(sizes)))
    snake = itertools.cycle(order + order[::-1])
    for p in players:
        for g in snake:
            if len(groups[g]) < sizes[g]:
                groups[g].append(p)
                break
    return groups


def first_leagues(players: Sequence[str], size: int, least: int, most: int) -> Leagues:
    """Season 1: league L of up to 2**(L-1) groups of `size`, filled in the order given."""
    if len(players) < least:
        raise TableProblem(f"a league needs at least {least} players")
    rest, tiers, width = list(players), [], 1
    while rest:
        tiers.append(rest[:width * size])
        rest, width = rest[width * size:], width * 2
    return Leagues(_formed(tiers, size, least, most))


def _formed(tiers: list[list[str]], size: int, least: int, most: int) -> list[list[list[str]]]:
    tiers = [t for t in tiers if t]
    while len(tiers) > 1 and any(len(t) < least for t in tiers):  # too small for a group
        small = next(i for i, t in enumerate(tiers) if len(t) < least)
        into = small - 1 if small > 0 else 1  # joins the league above (league 1: below)
        low, high = sorted((small, into))
        tiers[low:high + 1] = [tiers[low] + tiers[high]]
    return [_deal(t, size, least, most) for t in tiers]


def next_leagues(final: Sequence[Sequence[Sequence[str]]], k: int, leaving: set[str],
                 joining: Sequence[str], size: int, least: int, most: int) -> Leagues:
    """The next season's groups from the last one's, each group given in its final standings
    order (see the module's docstring)."""
    count = len(final)
    came_down: list[list[str]] = [[] for _ in range(count)]
    stayed: list[list[str]] = [[] for _ in range(count)]
    came_up: list[list[str]] = [[] for _ in range(count)]
    # By place across the groups: every group's first before any group's second.
    for li, league in enumerate(final):
        ranked = [(place, gi, p, len(group)) for gi, group in enumerate(league)
                  for place, p in enumerate(group)]
        for place, _gi, p, n in sorted(ranked):
            k_here = min(k, n // 2)  # never more up or down than half a group
            if li > 0 and place < k_here:
                came_up[li - 1].append(p)
            elif li < count - 1 and place >= n - k_here:
                came_down[li + 1].append(p)
            else:
                stayed[li].append(p)
    tiers = [came_down[i] + stayed[i] + came_up[i] for i in range(count)]
    tiers = [[p for p in t if p not in leaving] for t in tiers]
    known = {p for t in tiers for p in t}
    tiers[-1] += [p for p in joining if p not in known and p not in leaving]
    if sum(len(t) for t in tiers) < least:
        raise TableProblem(f"a league needs at least {least} players")
    return Leagues(_formed(tiers, size, least, most))


def moves_between(before: Leagues, after: Leagues) -> dict[str, int]:
    """Each player's change of league (-1: up one, +1: down one), for those in both."""
    was = {p: league for league, _g, p in before.placed()}
    return {p: league - was[p] for league, _g, p in after.placed() if p in was}
