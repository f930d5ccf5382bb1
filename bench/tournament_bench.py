"""How long a tournament's tables take to make (pbem.services.pairings), which the scheduler
does inside the write transaction that starts a round: the slowest Swiss round of a field
played over several rounds (random results), and a whole round-robin.

    python3 bench/tournament_bench.py

Single process, wall-clock time from time.perf_counter; each Swiss line also says how often
the pair that met most met (1: no pair met twice).
"""

from __future__ import annotations

import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pbem.services import pairings

SWISS = ((9, 3, 3), (16, 4, 4), (40, 4, 6), (100, 5, 7), (200, 5, 7))
ROUND_ROBIN = ((8, 4), (20, 4), (40, 5), (60, 5))


def main() -> None:
    for n, size, rounds in SWISS:
        field = [f"p{i:03d}" for i in range(n)]
        games: list[pairings.Played] = []
        starts: Counter = Counter()
        rng = random.Random(1)
        slowest = 0.0
        for _ in range(rounds):
            began = time.perf_counter()
            order = [s.player for s in pairings.standings(field, games, "bench")]
            made = pairings.swiss_round(order, pairings.table_sizes(n, size, 3, 5),
                                      pairings.met(games), starts, "bench")
            slowest = max(slowest, time.perf_counter() - began)
            for t in made:
                ranks = list(range(1, len(t) + 1))
                rng.shuffle(ranks)
                games.append(pairings.Played(t, tuple(ranks), tuple(10 - r for r in ranks)))
        print(f"swiss {n} players at tables of {size}, {rounds} rounds: slowest round "
              f"{slowest * 1000:.0f} ms; the pair that met most met "
              f"{max(pairings.met(games).values())} times")
    for n, size in ROUND_ROBIN:
        began = time.perf_counter()
        made = pairings.round_robin([f"p{i:03d}" for i in range(n)], size, "bench")
        print(f"round-robin {n} players at tables of {size}: {len(made)} tables in "
              f"{(time.perf_counter() - began) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
