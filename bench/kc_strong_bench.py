"""How strong and how quick the strong Knights & Castles bot is: arenas against three random and
against three greedy bots, with the issue's targets.

    python3 bench/kc_strong_bench.py                    # 200 games each, seed 1 (long: minutes)
    python3 bench/kc_strong_bench.py --workers 2        # the same games spread over 2 processes
    python3 bench/kc_strong_bench.py --games 20         # a first look
    python3 bench/kc_strong_bench.py --opponents greedy

Each arena is `python3 -m engine arena --game knights-castles --bots strong,X,X,X --games N
--seed S` game for game (`engine.arena.play_game`: game g is dealt from "S:g" and the seating
rotates by g places, so strong sits in every seat equally often): the same seed gives the same
games and win rates on any machine, however many workers share them. A decision's time is the
CPU time of the process that made it (one core), whatever else the machine runs. Targets:
strong wins at least 90% against three random bots and at least 50% against three greedy ones
(25% is par in a 4-player game), and no decision takes 2 s. The figures are saved under
bench/results/ unless --no-save.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import results_file

from engine.arena import MoveTimes, play_game, summarise

GAME = "knights-castles"
TARGETS = {"random": 0.90, "greedy": 0.50}
MOST_SECONDS = 2.0


def _games(bots: list[str], seed: str, numbers: list[int]):
    """Play the arena games `numbers`; their results and strong's decision times (CPU s)."""
    times: dict[str, MoveTimes] = {}
    results = []
    for n in numbers:
        result = play_game(bots, seed, n, times, GAME)
        results.append(result)
        strong, others = result.scores[0], result.scores[1:]
        print(f"  {bots[1]} arena, game {n}: strong {'won' if 0 in result.winners else 'lost'}, "
              f"{strong} gold against {max(others)}", file=sys.stderr, flush=True)
    return results, times["strong"].samples if "strong" in times else []


def arena(opponent: str, games: int, seed: str, workers: int) -> dict:
    """One arena, strong against three `opponent`s, its games shared among `workers`."""
    bots = ["strong", opponent, opponent, opponent]
    shares = [list(range(w, games, workers)) for w in range(workers)]
    if workers == 1:
        parts = [_games(bots, seed, shares[0])]
    else:
        with ProcessPoolExecutor(workers) as pool:
            parts = list(pool.map(_games, [bots] * workers, [seed] * workers, shares))
    results = sorted((r for part, _ in parts for r in part), key=lambda r: r.number)
    seconds = sorted(s for _, part in parts for s in part)
    strong, *others = summarise(bots, results)
    low, high = strong.interval
    return {"opponent": opponent, "games": games, "seed": seed,
            "strong_wins": strong.wins, "strong_win_rate": strong.rate, "ci95": [low, high],
            "strong_mean_gold": strong.mean_score,
            "opponents_mean_gold": sum(o.mean_score for o in others) / len(others),
            "target_win_rate": TARGETS[opponent],
            "decisions": len(seconds), "decision_mean_s": sum(seconds) / len(seconds),
            "decision_p95_s": seconds[min(len(seconds) - 1, int(0.95 * len(seconds)))],
            "decision_max_s": seconds[-1], "target_max_s": MOST_SECONDS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--seed", default="1")
    parser.add_argument("--workers", type=int, default=1,
                        help="processes to share the games (the results do not change)")
    parser.add_argument("--opponents", default="random,greedy",
                        help="comma-separated: random, greedy or both (the default)")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    opponents = [o.strip() for o in args.opponents.split(",")]
    if not opponents or any(o not in TARGETS for o in opponents):
        parser.error("--opponents names random and/or greedy")
    if args.games < 1 or args.workers < 1:
        parser.error("--games and --workers must be at least 1")
    figures, met = {}, True
    for opponent in opponents:
        a = arena(opponent, args.games, args.seed, min(args.workers, args.games))
        figures[opponent] = a
        won = a["strong_win_rate"] >= a["target_win_rate"]
        quick = a["decision_max_s"] < MOST_SECONDS
        met = met and won and quick
        low, high = a["ci95"]
        print(f"strong,{opponent},{opponent},{opponent}: {a['games']} games, seed {a['seed']}: "
              f"strong wins {a['strong_wins']:.1f} = {a['strong_win_rate']:.1%} "
              f"(95% CI {low:.1%}-{high:.1%}); target >= {a['target_win_rate']:.0%}: "
              f"{'ok' if won else 'MISSED'}", flush=True)
        print(f"  mean gold: strong {a['strong_mean_gold']:.1f}, each {opponent} "
              f"{a['opponents_mean_gold']:.1f}", flush=True)
        print(f"  strong's decisions, CPU s on one core: mean {a['decision_mean_s']:.3f}, "
              f"p95 {a['decision_p95_s']:.3f}, max {a['decision_max_s']:.3f} "
              f"({a['decisions']} decisions); target < {MOST_SECONDS:g} s: "
              f"{'ok' if quick else 'MISSED'}", flush=True)
    if not args.no_save:
        print(f"figures saved in {results_file.save('kc_strong_bench', figures).relative_to(ROOT)}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
