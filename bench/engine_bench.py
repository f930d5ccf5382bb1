"""How fast the engine is: random games per second, legal_moves on busy positions, final scoring.

    python3 bench/engine_bench.py            # the full run, about 10 seconds
    python3 bench/engine_bench.py --quick    # a short run, for a first look
    python3 bench/engine_bench.py --worst    # also the slowest final scoring we know of
    python3 bench/engine_bench.py --game knights-castles   # only the second game

Knights & Castles is timed the same way: whole random 4-player games as `python -m engine
playout --game knights-castles` plays them, over a fixed range of seeds; the CPU time of the
process is printed beside the wall-clock rate, since a shared machine slows the wall clock.

Single process, wall-clock time from time.perf_counter. Games are played as `python -m engine
playout` plays them: 5 players, each move chosen uniformly among the legal moves with the same
seeded chooser, over a fixed range of seeds, so two runs do the same work. Scoring is timed
cold: every functools cache in Kardinal & König's scoring is cleared before each call, because a
server scores a finished game once and a cache hit would hide the real cost.
"""

from __future__ import annotations

import argparse
import heapq
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import results_file

from engine import default_board, legal_moves, parse_position
from engine.kardinal_koenig import scoring
from engine.kardinal_koenig.playout import random_playout

TARGET_GAMES_PER_SECOND = 50
TARGET_SCORING_US = 1000
PLAYERS = 5
KC_PLAYERS = 4

# Every field taken, as late in a crowded game: each colour holds long roads of its own, with
# loops (Huesca-Zaragoza-Lleida, Aachen-Trier-Metz-Verdun, Milano-Pavia-Pisa-Firenze-Verona)
# that make the chain search try many paths.
CROWDED = {
    "purple": ["Rouen", "Saint-Denis", "Chartres", "Tours", "Poitiers", "Limoges", "Jaca",
               "Huesca", "Zaragoza", "Lleida", "Poblet", "Barcelona", "Ripoll"],
    "red": ["Durham", "York", "Westminster", "Canterbury", "Winchester", "Glastonbury", "Fleury",
            "Bourges"],
    "green": ["Aachen", "Trier", "Verdun", "Metz", "Mainz", "Lorsch", "Fulda", "Würzburg",
              "Bamberg", "Nürnberg", "Regensburg", "Passau", "Melk", "Salzburg"],
    "blue": ["Cîteaux", "Besançon", "Cluny", "Lyon", "Vienne", "Arles", "Milano", "Pavia",
             "Verona", "Pisa", "Firenze", "Roma"],
    "yellow": ["Toul", "Hirsau", "Ulm", "Reichenau", "St. Gallen", "Freising", "Tegernsee"],
}
CROWDED_ADVISORS = {
    "England": ["red", "red", "purple"], "Frankreich": ["purple", "purple", "red", "blue"],
    "Lothringen": ["green", "green", "yellow"], "Burgund": ["blue", "blue", "green"],
    "Italien": ["blue", "blue", "purple"], "Bayern": ["green", "green", "yellow"],
    "Aragon": ["purple", "purple", "red"], "Schwaben": ["yellow", "yellow"],
    "Franken": ["green", "red"],
}

# The slowest final scoring a random search found: 20 monasteries of one colour joined by roads
# into one knotted component. Listing every path took 11.5 s on it; the frontier search that
# replaced it for such groups takes milliseconds.
WORST = {"purple": ["Mainz", "Lorsch", "Milano", "Saint-Denis", "Chartres", "Fleury", "Bourges",
                    "Aachen", "Trier", "Verdun", "Metz", "Toul", "Hirsau", "Ulm", "Reichenau",
                    "St. Gallen", "Cîteaux", "Besançon", "Cluny", "Lyon"]}


def clear_scoring_caches() -> None:
    for value in vars(scoring).values():
        if callable(getattr(value, "cache_clear", None)):
            value.cache_clear()


def play_games(seeds: range, keep: int):
    """Play one random game per seed; return seconds, moves, the `keep` busiest positions, ends."""
    busiest: list[tuple[int, int, object]] = []  # a min-heap on the number of legal moves
    ends, moves_applied, tie = [], 0, 0
    start = time.perf_counter()
    for seed in seeds:
        for state, moves, _, after in random_playout(PLAYERS, seed):  # as `engine playout` plays
            tie += 1
            if len(busiest) < keep:
                heapq.heappush(busiest, (len(moves), tie, state))
            elif len(moves) > busiest[0][0]:
                heapq.heapreplace(busiest, (len(moves), tie, state))
            moves_applied += 1
        ends.append(after)
    return time.perf_counter() - start, moves_applied, [s for _, _, s in busiest], ends


def time_us(call, repeat: int, cold: bool = False) -> list[float]:
    samples = []
    for _ in range(repeat):
        if cold:
            clear_scoring_caches()
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1e6)
    return samples


def position_of(monasteries: dict[str, list[str]], advisors: dict[str, list[str]], board):
    return parse_position({"monasteries": {f: c for c, fs in monasteries.items() for f in fs},
                           "advisors": advisors}, board)


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def line(label: str, figure: str, detail: str = "", target: str = "") -> None:
    text = f"{label:<38} {figure:>14}"
    if target:
        text += f"   {target}"
    if detail:
        text += f"   ({detail})"
    print(text, flush=True)


def knights_castles(quick: bool) -> None:
    """Whole random 4-player Knights & Castles games a second, and the time of one move."""
    from engine.knights_castles.playout import random_playout as kc_playout

    seeds = range(20) if quick else range(200)
    print(f"Knights & Castles engine benchmark ({'quick' if quick else 'full'} run; "
          f"{platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine() or 'unknown machine'})")
    moves, wall, cpu = 0, time.perf_counter(), time.process_time()
    for seed in seeds:
        for _ in kc_playout(KC_PLAYERS, seed):
            moves += 1
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    # The target is for one core: the process's CPU time is what one core spent on the games,
    # whatever else the machine runs; the wall-clock rate is printed beside it.
    rate = len(seeds) / cpu
    line(f"random {KC_PLAYERS}-player games, CPU time", f"{rate:.1f} games/s",
         f"{len(seeds)} games, seeds {seeds.start}-{seeds.stop - 1}, {moves} moves in "
         f"{cpu:.2f} s CPU, {cpu / moves * 1e6:.0f} us a move (legal_moves and apply_move)",
         f"target >= {TARGET_GAMES_PER_SECOND} games/s: {verdict(rate >= TARGET_GAMES_PER_SECOND)}")
    line(f"random {KC_PLAYERS}-player games, wall clock", f"{len(seeds) / wall:.1f} games/s",
         f"{wall:.2f} s; below the CPU figure when other processes share the cores")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short run (about a second)")
    parser.add_argument("--worst", action="store_true",
                        help="also time the slowest known final scoring once (takes seconds)")
    parser.add_argument("--game", choices=("all", "kardinal-koenig", "knights-castles"),
                        default="all")
    parser.add_argument("--no-save", action="store_true",
                        help="do not write the Kardinal & König figures to bench/results/")
    args = parser.parse_args(argv)
    if args.game != "kardinal-koenig":
        knights_castles(args.quick)
        if args.game == "knights-castles":
            return 0
    seeds = range(40) if args.quick else range(500)
    repeat = 5 if args.quick else 20
    board = default_board()

    print(f"Kardinal & König engine benchmark ({'quick' if args.quick else 'full'} run; "
          f"{platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine() or 'unknown machine'})")

    seconds, moves, busiest, ends = play_games(seeds, keep=100)
    rate = len(seeds) / seconds
    line(f"random {PLAYERS}-player games", f"{rate:.1f} games/s",
         f"{len(seeds)} games, seeds {seeds.start}-{seeds.stop - 1}, {moves} moves in "
         f"{seconds:.2f} s, {seconds / moves * 1e6:.0f} us a move",
         f"target >= {TARGET_GAMES_PER_SECOND} games/s: {verdict(rate >= TARGET_GAMES_PER_SECOND)}")

    counts = [len(legal_moves(s)) for s in busiest]
    samples = [t for s in busiest for t in time_us(lambda s=s: legal_moves(s), repeat)]
    line(f"legal_moves, {len(busiest)} busiest positions", f"{statistics.median(samples):.0f} us",
         f"{min(counts)}-{max(counts)} legal moves, median {statistics.median(counts):.0f}; "
         f"{repeat} runs each")

    samples, worst = [], 0.0
    for end in ends:
        runs = time_us(lambda end=end: scoring.final_breakdown(
            board, end.players, end.monasteries, end.advisors), repeat, cold=True)
        samples.extend(runs)
        worst = max(worst, statistics.median(runs))
    median = statistics.median(samples)
    figures = {"games_per_second": rate, "target_games_per_second": TARGET_GAMES_PER_SECOND,
               "games_ratio_to_target": rate / TARGET_GAMES_PER_SECOND,
               "final_scoring_us": median, "target_final_scoring_us": TARGET_SCORING_US,
               "scoring_ratio_to_target": TARGET_SCORING_US / median, "quick": args.quick}
    line("final scoring, end-of-game positions", f"{median:.0f} us",
         f"{len(ends)} positions, slowest {worst:.0f} us; cold caches",
         f"target < {TARGET_SCORING_US} us: {verdict(median < TARGET_SCORING_US)}")

    crowded = position_of(CROWDED, CROWDED_ADVISORS, board)
    chains = crowded.final_breakdown(board).to_dict()["chains"]
    samples = time_us(lambda: crowded.final_breakdown(board), repeat * 5, cold=True)
    median = statistics.median(samples)
    line("final scoring, crowded position", f"{median:.0f} us",
         f"all {len(board.fields)} fields taken, chain points "
         + ", ".join(f"{c} {p}" for c, p in chains.items()) + "; cold caches",
         f"stress case, {'under' if median < TARGET_SCORING_US else 'over'} "
         f"{TARGET_SCORING_US} us")

    if args.worst:
        slow = position_of(WORST, {}, board)
        (once,) = time_us(lambda: slow.final_breakdown(board), 1, cold=True)
        line("final scoring, slowest known position", f"{once:.0f} us",
             "20 joined monasteries of one colour; one run",
             f"stress case, {'under' if once < TARGET_SCORING_US else 'over'} "
             f"{TARGET_SCORING_US} us")
    line("ratio to target, games/s", f"{figures['games_ratio_to_target']:.2f}",
         target=">= 1 meets it")
    line("ratio to target, final scoring", f"{figures['scoring_ratio_to_target']:.2f}",
         target=">= 1 meets it")
    if not args.no_save:
        print(f"figures saved in {results_file.save('engine_bench', figures).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
