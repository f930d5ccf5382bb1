"""Tournament tables and standings as pure functions (pbem.services.pairings): points by rank,
the tie-breaks of league groups and of events, round-robin coverings, Swiss pairings that
avoid repeats, table sizes, and leagues with promotion and relegation."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.services.pairings import (
    Played,
    TableProblem,
    first_leagues,
    group_rotation,
    lot,
    met,
    moves_between,
    next_leagues,
    round_robin,
    standings,
    swiss_round,
    table_sizes,
)

SEED = "tables-seed"


def names(n):
    return [f"p{i:02d}" for i in range(n)]


def test_points_by_rank_with_ties_shared():
    """n - rank points at a table of n; tied players share the points of their places."""
    assert Played(("a", "b", "c", "d"), (1, 2, 3, 4)).points() == {
        "a": 3, "b": 2, "c": 1, "d": 0}
    assert Played(("a", "b", "c", "d"), (1, 1, 3, 4)).points() == {
        "a": Fraction(5, 2), "b": Fraction(5, 2), "c": 1, "d": 0}
    assert Played(("a", "b", "c"), (2, 1, 2)).points() == {
        "a": Fraction(1, 2), "b": 2, "c": Fraction(1, 2)}


def test_an_aborted_game_gives_no_points_but_counts_as_met():
    game = Played(("a", "b", "c"), None)
    assert game.points() == {"a": 0, "b": 0, "c": 0}
    assert met([game]) == Counter({("a", "b"): 1, ("a", "c"): 1, ("b", "c"): 1})
    table = standings(["a", "b", "c"], [game], SEED)
    assert [s.games for s in table] == [1, 1, 1] and all(s.points == 0 for s in table)


def test_league_tie_break_score_then_head_to_head_then_lot():
    """Points, then total game score, then the points among the tied players, then the lot."""
    games = [Played(("a", "b", "c"), (1, 2, 3), (30, 20, 10)),
             Played(("b", "c", "a"), (1, 2, 3), (30, 20, 10)),
             Played(("c", "a", "b"), (1, 2, 3), (30, 20, 10))]
    table = standings(["a", "b", "c"], games, SEED, league=True)
    # Everyone 3 points and 60 score; head to head is the same: the lot decides.
    assert [s.points for s in table] == [3, 3, 3]
    assert [s.player for s in table] == sorted("abc", key=lambda p: lot(SEED, p))
    # Score breaks a tie in points.
    games[0] = Played(("a", "b", "c"), (1, 2, 3), (40, 20, 10))
    assert standings(["a", "b", "c"], games, SEED, league=True)[0].player == "a"
    # Head to head: a and b tie in points and score; a beat b in their one game together.
    games = [Played(("a", "b", "c", "d"), (1, 2, 3, 4), (10, 10, 10, 10)),
             Played(("b", "c", "d"), (1, 2, 3), (10, 10, 10)),
             Played(("a", "c", "d"), (2, 1, 3), (10, 10, 10))]
    table = {s.player: s for s in standings(list("abcd"), games, SEED, league=True)}
    assert table["a"].points == table["b"].points == 4
    assert table["a"].place < table["b"].place
    assert table["a"].tie_break == 1 and table["b"].tie_break == 0


def test_event_tie_break_buchholz_then_score_then_lot():
    """Points, then the sum of the points of every opponent met, then score, then lot."""
    games = [Played(("a", "x"), (1, 2), (5, 0)), Played(("b", "y"), (1, 2), (9, 0)),
             Played(("x", "z"), (1, 2), (1, 0))]
    table = standings(["a", "b", "x", "y", "z"], games, SEED)
    by = {s.player: s for s in table}
    assert by["a"].points == by["b"].points == by["x"].points == 1
    assert by["a"].tie_break == 1 and by["b"].tie_break == 0  # a met x, who has a point
    assert by["a"].place < by["b"].place  # Buchholz before score (b scored more)
    assert by["x"].tie_break == 1  # x met a (1) and z (0)
    assert [s.place for s in table] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(("players", "size", "least", "most", "expected"), [
    (12, 4, 3, 5, [4, 4, 4]), (13, 4, 3, 5, [4, 3, 3, 3]), (14, 4, 3, 5, [4, 4, 3, 3]),
    (7, 4, 3, 5, [4, 3]), (5, 4, 3, 5, [5]), (4, 3, 3, 5, [4]),
    (9, 2, 2, 6, [3, 2, 2, 2])])
def test_table_sizes_as_equal_as_possible(players, size, least, most, expected):
    assert table_sizes(players, size, least, most) == expected


def test_table_sizes_refused_with_reasons():
    with pytest.raises(TableProblem, match="too few"):
        table_sizes(2, 3, 3, 5)
    with pytest.raises(TableProblem, match="3 to 5"):
        table_sizes(10, 6, 3, 5)


@given(st.integers(3, 40), st.integers(3, 5))
def test_table_sizes_seat_everyone_within_bounds(players, size):
    sizes = table_sizes(players, size, 3, 5)
    assert sum(sizes) == players and all(3 <= s <= 5 for s in sizes)
    assert max(sizes) - min(sizes) <= 2


def test_small_round_robin_is_every_table_once():
    """5 players at tables of 3: all C(5,3) = 10 tables, each pair meets 3 times, each player
    plays 6 games and sits first twice."""
    tables = round_robin(names(5), 3, SEED)
    assert sorted(tuple(sorted(t)) for t in tables) == \
        sorted(itertools.combinations(names(5), 3))
    assert set(met(Played(t, None) for t in tables).values()) == {3}
    assert Counter(t[0] for t in tables) == Counter({p: 2 for p in names(5)})


@settings(deadline=None, max_examples=15)
@given(st.integers(10, 24), st.integers(3, 5))
def test_large_round_robin_covers_every_pair_evenly(players, size):
    """A greedy covering: every pair meets, and players' table counts differ by little."""
    field = names(players)
    tables = round_robin(field, size, SEED)
    pairs = met(Played(t, None) for t in tables)
    assert set(pairs) == set(itertools.combinations(field, 2))
    counts = Counter(p for t in tables for p in t)
    assert all(len(set(t)) == size for t in tables)
    assert max(counts.values()) - min(counts.values()) <= 2
    assert round_robin(field, size, SEED) == tables  # the seed decides, nothing else


def test_swiss_rounds_avoid_repeated_meetings():
    """16 players at tables of 4 for 3 rounds: no pair meets twice (it is possible), and the
    first round seats the standings' neighbours together."""
    field = names(16)
    games: list[Played] = []
    starts: Counter = Counter()
    for rnd in range(3):
        order = [s.player for s in standings(field, games, SEED)]
        tables = swiss_round(order, table_sizes(16, 4, 3, 5), met(games), starts, SEED)
        if rnd == 0:
            assert [sorted(t) for t in tables] == [sorted(order[i:i + 4]) for i in (0, 4, 8, 12)]
        for t in tables:  # the first seat of each table wins
            games.append(Played(t, tuple(range(1, len(t) + 1)), tuple(range(len(t), 0, -1))))
    assert max(met(games).values()) == 1
    assert all(s.games == 3 for s in standings(field, games, SEED))


def test_swiss_repeats_only_when_unavoidable():
    """4 players at tables of 2 for 4 rounds: 3 rounds meet everyone once, the 4th must
    repeat, and then each pair at most twice."""
    field = names(4)
    games: list[Played] = []
    starts: Counter = Counter()
    for rnd in range(4):
        order = [s.player for s in standings(field, games, SEED)]
        for t in swiss_round(order, [2, 2], met(games), starts, SEED):
            games.append(Played(t, (1, 2), (1, 0)))
        if rnd == 2:
            assert set(met(games).values()) == {1} and len(met(games)) == 6
    assert max(met(games).values()) == 2


def test_group_rotation_each_player_starts_once():
    games = group_rotation(["a", "b", "c", "d"])
    assert games == [("a", "b", "c", "d"), ("b", "c", "d", "a"), ("c", "d", "a", "b"),
                     ("d", "a", "b", "c")]
    assert len(group_rotation(["a", "b", "c"], 2)) == 6


def test_first_leagues_pyramid_in_the_order_given():
    leagues = first_leagues(names(16), 4, 3, 5)
    assert [len(league) for league in leagues.leagues] == [1, 2, 1]  # 4, 8, 4
    assert leagues.leagues[0] == [names(4)]
    assert sorted(p for g in leagues.leagues[1] for p in g) == names(12)[4:]
    assert leagues.leagues[2] == [names(16)[12:]]
    # 2 left for league 3 of 3+: they join league 2.
    leagues = first_leagues(names(14), 4, 3, 5)
    assert [sum(map(len, league)) for league in leagues.leagues] == [4, 10]


def test_promotion_and_relegation():
    """The best k of each group go up, the worst k down; league 1's best and the lowest
    league's worst stay; leavers go, newcomers join the lowest league."""
    final = [[["a1", "a2", "a3", "a4"]],
             [["b1", "b2", "b3", "b4"], ["c1", "c2", "c3", "c4"]]]
    after = next_leagues(final, 1, {"c2"}, ["new1"], 4, 3, 5)
    league1 = {p for g in after.leagues[0] for p in g}
    league2 = {p for g in after.leagues[1] for p in g}
    assert league1 == {"a1", "a2", "a3", "b1", "c1"}
    assert league2 == {"a4", "b2", "b3", "b4", "c3", "c4", "new1"}
    moves = moves_between(Leagues_of(final), after)
    assert moves["b1"] == moves["c1"] == -1 and moves["a4"] == 1 and moves["a1"] == 0


def Leagues_of(final):
    from pbem.services.pairings import Leagues
    return Leagues([[list(g) for g in league] for league in final])


@settings(deadline=None, max_examples=30)
@given(st.integers(3, 40), st.integers(3, 5), st.integers(1, 2), st.randoms())
def test_leagues_keep_everyone_in_valid_groups(players, size, k, rnd):
    """Season after season: everybody placed once, every group 3 to 5, nobody moves more than
    one league, leavers gone and newcomers in the lowest league."""
    field = names(players)
    leagues = first_leagues(field, size, 3, 5)
    for season in range(3):
        final = [[rnd.sample(g, len(g)) for g in league] for league in leagues.leagues]
        leaving = set(rnd.sample(field, min(2, len(field) - 6))) if len(field) > 8 else set()
        joining = [f"new{season}"]
        after = next_leagues(final, k, leaving, joining, size, 3, 5)
        placed = [p for _l, _g, p in after.placed()]
        assert sorted(placed) == sorted((set(field) - leaving) | set(joining))
        assert all(3 <= len(g) <= 5 for league in after.leagues for g in league)
        assert all(abs(m) <= 1 for m in moves_between(leagues, after).values()
                   ) or len(after.leagues) < len(leagues.leagues)
        assert f"new{season}" in {p for g in after.leagues[-1] for p in g}
        field, leagues = placed, after


def test_swiss_takes_the_fewest_repeats_when_some_are_unavoidable():
    """12 players at tables of 4: after round 1, any table of 4 holds two who met (3 earlier
    tables); round 2 has exactly one repeated pair at each table, no more."""
    field = names(12)
    first = [tuple(field[i:i + 4]) for i in (0, 4, 8)]
    before = met(Played(t, None) for t in first)
    tables = swiss_round(field, [4, 4, 4], before, Counter(), SEED)
    assert sorted(p for t in tables for p in t) == field
    assert [sum(before[tuple(sorted(pair))] for pair in itertools.combinations(t, 2))
            for t in tables] == [1, 1, 1]


def test_a_larger_swiss_field_meets_nobody_twice():
    """40 players at tables of 4 for 6 rounds with random results: no pair meets twice (the
    greedy tables alone repeat; the swaps between tables take the repeats out)."""
    field = names(40)
    games: list[Played] = []
    starts: Counter = Counter()
    rng = random.Random(5)
    for _ in range(6):
        order = [s.player for s in standings(field, games, SEED)]
        for t in swiss_round(order, table_sizes(40, 4, 3, 5), met(games), starts, SEED):
            ranks = list(range(1, 5))
            rng.shuffle(ranks)
            games.append(Played(t, tuple(ranks), tuple(ranks)))
    assert max(met(games).values()) == 1
    assert max(starts.values()) - min(starts.values()) <= 1  # the first seat goes round


def test_swiss_tables_come_in_standings_order_when_swaps_found_them():
    """9 players at tables of 3, round 3 after these results: the swapped greedy tables
    (spread 12) beat the search's (spread 16), and the swaps left the leader at the last
    table; the tables are numbered from the top all the same: table 1 holds the leader,
    table 2 the best-placed of the rest, and so on."""
    played = [Played(("p0", "p4", "p1"), (2, 1, 3), (7, 26, 2)),
              Played(("p7", "p8", "p6"), (2, 1, 2), (10, 13, 10)),
              Played(("p3", "p5", "p2"), (1, 2, 3), (30, 27, 24)),
              Played(("p4", "p8", "p3"), (1, 1, 3), (23, 23, 2)),
              Played(("p5", "p0", "p7"), (1, 2, 3), (26, 23, 16)),
              Played(("p1", "p6", "p2"), (3, 1, 2), (0, 29, 13))]
    order = [s.player for s in standings([f"p{i}" for i in range(9)], played, "s167")]
    assert order[:2] == ["p8", "p4"]
    tables = swiss_round(order, [3, 3, 3], met(played), Counter(), "s167")
    assert max(met([*played, *(Played(t, None) for t in tables)]).values()) == 1
    best = [min(order.index(p) for p in t) for t in tables]
    assert best == sorted(best) and best[0] == 0


def test_a_round_robin_too_large_to_play_at_once_is_refused():
    with pytest.raises(TableProblem, match="more than 20 games"):
        round_robin(names(100), 5, SEED)
