"""Scoring: every worked example of the rule books, and the readings the books leave open."""

import random
from itertools import combinations, pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import final_breakdown, intermediate_breakdown, parse_position
from engine.kardinal_koenig.board import parse_board
from engine.kardinal_koenig.scoring import score_chains, score_monasteries

from helpers import BOARD, fill

COLOURS = ("yellow", "red", "green", "purple", "blue")


def small_board_with_room(fields: int):
    """A one-colour test board whose only country, Franken, has `fields` cloister fields."""
    return parse_board({
        "board": {"format": 1, "id": "test", "name": "test"},
        "cards": [{"colour": "red", "code": "R", "count": 30, "countries": ["Franken"]},
                  {"colour": "green", "code": "G", "count": 30, "countries": ["Aragon"]}],
        "countries": [{"name": "Franken", "fields": [[f"F{i}", 50.0, 9.0 + i / 10]
                                                     for i in range(fields)]},
                      {"name": "Aragon", "fields": [["Jaca", 42.0, 0.0]]}],
        "roads": {"joins": []},
        "alliances": [{"number": 1, "countries": ["Franken", "Aragon"]}],
    })


def score(monasteries=None, advisors=None):
    position = parse_position({"monasteries": monasteries or {}, "advisors": advisors or {}}, BOARD)
    return position.final_breakdown(BOARD).to_dict()


def test_monasteries_four_two_one_score_seven_four_two():
    """Monastery scoring example 1 (Frankreich in English, Franken in German): 7, 4 and 2 points."""
    result = score(fill("Frankreich", green=4, red=2, blue=1))
    assert result["monasteries"]["Frankreich"] == {"green": 7, "red": 4, "blue": 2}
    # Our reconstructed Franken has 6 fields, so the German book's 7 monasteries there cannot
    # stand on it; the arithmetic is the same on a country with room, as this test board shows.
    small = small_board_with_room(7)
    counts = score_monasteries(small, (0, 0, 0, 0, 1, 1, 2, -1), 3)
    assert counts[0].points == (7, 4, 2)


def test_tied_leaders_and_the_next_player_is_second():
    """Monastery scoring example 2 (Lothringen): 2, 2 and 1 score 5, 5 and 2; ties rank densely."""
    result = score(fill("Lothringen", red=2, purple=2, blue=1))
    assert result["monasteries"]["Lothringen"] == {"red": 5, "purple": 5, "blue": 2}


def test_dense_ranks_down_to_fifth_place():
    """Ranks 2 to 5 score the count of the rank above; a player without monastery scores nothing."""
    result = score(fill("Frankreich", yellow=3, red=2, green=1, purple=1, blue=1))
    assert result["monasteries"]["Frankreich"] == {"yellow": 8, "red": 3, "green": 2,
                                                    "purple": 2, "blue": 2}
    breakdown = parse_position({"monasteries": fill("Aragon", red=3, green=2, blue=1, yellow=1)},
                               BOARD).final_breakdown(BOARD)
    aragon = next(c for c in breakdown.monasteries if c.country == "Aragon")
    ranks = dict(zip(breakdown.players, aragon.ranks))
    assert ranks == {"yellow": 4 - 1, "red": 1, "green": 2, "blue": 3}
    assert result["monasteries"]["England"] == {}


def test_alliance_fourteen_doris_scores_six():
    """Advisor example (alliance 14, Italien-Burgund): blue holds both majorities and scores 4+2."""
    result = score(advisors={"Italien": ["blue", "blue", "red", "green"], "Burgund": ["blue", "red"]})
    assert result["alliances"]["14"] == {"blue": 6}
    assert result["total"]["blue"] == 6 and result["total"]["red"] == 0


def test_alliance_fifteen_split_majorities_score_nothing():
    """Advisor example (alliance 15, Italien-Bayern): blue leads Italien, red Bayern: no alliance."""
    result = score(advisors={"Italien": ["blue", "blue", "red", "green"], "Burgund": ["blue", "red"],
                             "Bayern": ["red", "red", "green"]})
    assert result["alliances"]["15"] == {}
    assert result["alliances"]["11"] == {}, "Franken has no advisors: alliance 11 scores nothing"


def test_shared_advisor_majorities_each_score_in_full():
    """Reading: every player tied for most advisors holds the majority; all with both score in full."""
    result = score(advisors={"Frankreich": ["red", "blue", "green"], "Aragon": ["red", "blue"]})
    assert result["alliances"]["4"] == {"red": 5, "blue": 5}


def test_advisor_majority_needs_an_advisor():
    """Reading: a country without advisors gives nobody a majority, so its alliances score nothing."""
    result = score(monasteries=fill("England", red=3), advisors={"Franken": ["red"]})
    assert result["alliances"]["1"] == {}


def test_alliances_are_scored_in_number_order_with_sea_alliances():
    """Alliances 1-15 are scored in order; sea alliances are alliances like any other."""
    breakdown = parse_position({"advisors": {"England": ["green"], "Franken": ["green"]}},
                               BOARD).final_breakdown(BOARD)
    assert [a.number for a in breakdown.alliances] == list(range(1, 16))
    assert breakdown.to_dict()["alliances"]["1"] == {"green": 2}


def test_chain_of_five_with_a_branch_scores_five():
    """Chain example: Cluny-Lyon-Milano-Verona-Firenze with a branch to Tegernsee scores 5."""
    fields = ["Cluny", "Lyon", "Milano", "Verona", "Firenze", "Tegernsee"]
    result = score({f: "purple" for f in fields})
    assert result["chains"] == {"purple": 5}
    breakdown = parse_position({"monasteries": {f: "purple" for f in fields}},
                               BOARD).final_breakdown(BOARD)
    (chain,) = breakdown.chains[0].chains
    assert len(chain) == 5 and set(chain) < set(fields)


def test_a_chain_needs_four_monasteries_in_a_row():
    """A chain scores only with 4 or more of one player's monasteries along roads."""
    assert score({f: "red" for f in ["Cluny", "Lyon", "Milano"]})["chains"] == {}
    assert score({f: "red" for f in ["Durham", "York", "Westminster", "Canterbury"]})["chains"] \
        == {"red": 4}
    interrupted = {"Durham": "red", "York": "red", "Westminster": "blue", "Canterbury": "red",
                   "Winchester": "red"}
    assert score(interrupted)["chains"] == {}


def test_sea_alliances_are_not_roads():
    """Sea links carry no chain: England's fields join no other country."""
    fields = {f: "green" for f in ["Glastonbury", "Winchester", "Westminster"]}
    fields.update({"Mainz": "green", "Trier": "green"})
    assert score(fields)["chains"] == {}


def test_two_chains_that_share_no_monastery_both_score():
    """Reading: each monastery scores in one chain at most; disjoint chains all count."""
    fields = ["Durham", "York", "Westminster", "Canterbury", "Jaca", "Huesca", "Zaragoza", "Lleida"]
    assert score({f: "yellow" for f in fields})["chains"] == {"yellow": 8}


def test_best_choice_of_disjoint_chains_in_one_network():
    """Reading: a player scores the best choice of disjoint chains, not just the longest one."""
    # The longest single chain here has 7 monasteries; two disjoint chains of 4 make 8.
    fields = ["Besançon", "Freising", "Hirsau", "Lorsch", "Passau", "Regensburg", "Reichenau",
              "St. Gallen", "Ulm"]
    breakdown = parse_position({"monasteries": {f: "blue" for f in fields}},
                               BOARD).final_breakdown(BOARD)
    assert breakdown.to_dict()["chains"] == {"blue": 8}
    assert sorted(len(c) for c in breakdown.chains[0].chains) == [4, 4]


def test_a_ring_scores_every_monastery_once():
    """A closed ring of monasteries is one chain through all of them."""
    ring = ["Saint-Denis", "Chartres", "Fleury"]  # a triangle: too short
    assert score({f: "red" for f in ring})["chains"] == {}
    square = ["Aachen", "Trier", "Metz", "Verdun"]  # Aachen-Trier-Metz-Verdun-Aachen
    assert score({f: "red" for f in square})["chains"] == {"red": 4}


def test_intermediate_scoring_counts_monasteries_only():
    """Intermediate scoring: only the monastery majorities of the nine countries score."""
    position = parse_position({"monasteries": fill("Frankreich", green=4, red=2, blue=1),
                               "advisors": {"Frankreich": ["green"], "Aragon": ["green"]}}, BOARD)
    middle = intermediate_breakdown(BOARD, position.players, position.monasteries).to_dict()
    assert middle == {"monasteries": {**{c.name: {} for c in BOARD.countries},
                                      "Frankreich": {"red": 4, "green": 7, "blue": 2}},
                      "total": {"red": 4, "green": 7, "blue": 2}}
    final = final_breakdown(BOARD, position.players, position.monasteries, position.advisors)
    # 7 for Frankreich, 2 for alliance 4, 4 for the chain Rouen-Saint-Denis-Chartres-Fleury.
    assert final.to_dict()["total"]["green"] == 7 + 2 + 4


def test_breakdown_lines_can_be_checked_by_hand():
    """The breakdown in words names counts, ranks and points for each country."""
    lines = parse_position({"monasteries": fill("Lothringen", red=2, purple=2, blue=1)},
                           BOARD).final_breakdown(BOARD).lines()
    assert ("  Lothringen: red 2 (1st) 5 points, purple 2 (1st) 5 points, blue 1 (2nd) 2 points"
            in lines)


# --- chains against an independent brute force ---------------------------------------------

def random_group(rng, size):
    start = rng.randrange(len(BOARD.fields))
    fields, frontier = {start}, [start]
    while len(fields) < size and frontier:
        f = rng.choice(frontier)
        options = [g for g in BOARD.neighbours[f] if g not in fields]
        if not options:
            frontier.remove(f)
            continue
        g = rng.choice(options)
        fields.add(g)
        frontier.append(g)
    return tuple(sorted(fields))


def brute_force_chain_points(fields: set[int]) -> int:
    paths = set()

    def walk(path):
        if len(path) >= 4:
            paths.add(frozenset(path))
        for nxt in BOARD.neighbours[path[-1]]:
            if nxt in fields and nxt not in path:
                walk(path + [nxt])

    for f in fields:
        walk([f])
    paths = sorted(paths, key=len, reverse=True)
    best = 0
    for size in range(1, len(fields) // 4 + 1):
        for chosen in combinations(paths, size):
            union = frozenset().union(*chosen)
            if len(union) == sum(len(p) for p in chosen):
                best = max(best, len(union))
    return best


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**9))
def test_chain_scoring_matches_brute_force(seed):
    """Chains score the best packing of disjoint simple paths (checked against brute force)."""
    rng = random.Random(seed)
    fields = set(random_group(rng, rng.randint(4, 11)))
    monasteries = tuple(0 if f in fields else -1 for f in range(len(BOARD.fields)))
    (scored,) = score_chains(BOARD, monasteries, 1)
    assert scored.points == brute_force_chain_points(fields)
    used = [name for chain in scored.chains for name in chain]
    assert len(used) == len(set(used)), "a monastery scores in one chain at most"
    for chain in scored.chains:
        indices = [BOARD.field_named(n).index for n in chain]
        assert all(b in BOARD.neighbours[a] for a, b in pairwise(indices))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**9), st.integers(8, 20))
def test_both_chain_searches_agree_on_large_groups(seed, size):
    """The two exact chain searches (listing paths, and the frontier programme) agree."""
    from engine.kardinal_koenig.scoring import _pack_by_frontier, _pack_by_paths

    group = random_group(random.Random(seed), size)
    by_paths = _pack_by_paths(BOARD, group, 10**7)
    by_frontier = _pack_by_frontier(BOARD, group)
    assert sum(map(len, by_paths)) == sum(map(len, by_frontier))
    for chains in (by_paths, by_frontier):
        flat = [f for chain in chains for f in chain]
        assert len(flat) == len(set(flat)) and set(flat) <= set(group)
        for chain in chains:
            assert len(chain) >= 4
            assert all(b in BOARD.neighbours[a] for a, b in pairwise(chain))


def test_twenty_monasteries_in_one_tangle_all_score():
    """A player's whole supply in one knotted group: every monastery ends up in some chain."""
    tangle = ["Mainz", "Lorsch", "Milano", "Saint-Denis", "Chartres", "Fleury", "Bourges",
              "Aachen", "Trier", "Verdun", "Metz", "Toul", "Hirsau", "Ulm", "Reichenau",
              "St. Gallen", "Cîteaux", "Besançon", "Cluny", "Lyon"]
    assert score({f: "purple" for f in tangle})["chains"] == {"purple": 20}
