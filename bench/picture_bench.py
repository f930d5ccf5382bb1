"""What the mail's board picture (`pbem.games.picture.png_of`) costs a position, cold and warm, and
how many bytes it is.

    python3 bench/picture_bench.py                   # the 1,000 positions of a burst
    python3 bench/picture_bench.py --positions 200   # fewer, for a first look

The positions are those of the scheduler benchmark's burst (bench/scheduler_bench.py, part
(b)): Kardinal & König with three players, game N (N = 100, 200, ...) 10 + 7N mod 60 random
legal moves in from seed "bench-due-N", each mailed in English.

Figures (CPU time of the process from time.process_time, and wall-clock time):
  cold: every position drawn once, in order, in a process started for it (spawned), as in a
        scheduler's burst after a restart: the first picture (what a process makes once: the
        bare board, and a palette where there is one) on its own, then the others (each new
        piece rendered once, then kept); with the pieces resvg rendered;
  warm: every position drawn again (its pieces and board kept, the picture itself not):
        the median of --passes passes, per picture, and the part of it that is the engine's SVG
        of the position's pieces (`picture_pieces`);
  size: bytes per picture (PNG), and in base64 as a mail carries it (76-character lines).
The figures are saved as JSON in bench/results/ (unless --no-save).
"""

from __future__ import annotations

import argparse
import base64
import multiprocessing
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import results_file

KIND = "kardinal-koenig"
COLOURS = ["yellow", "red", "green"]
DUE_SHARE = 100  # as in the scheduler benchmark: game N is due when N is a multiple of this


def positions(count: int) -> list[str]:
    """The state JSON of the scheduler benchmark's first `count` due games."""
    from pbem.games import rules_for

    rules = rules_for(KIND)
    states = []
    for game_id in range(DUE_SHARE, DUE_SHARE * (count + 1), DUE_SHARE):
        seed = f"bench-due-{game_id}"
        state = rules.new_state(COLOURS, seed, None)
        chooser = random.Random(seed)
        for _ in range(10 + game_id * 7 % 60):
            after = rules.apply(state, rules.parse(state, chooser.choice(rules.legal(state))))
            if rules.to_move(after) is None:  # over: stop before the end
                break
            state = after
        states.append(rules.dumps(state))
    return states


def _measure(count: int, passes: int, folder: str, pipe) -> None:
    """Both runs in this (newly started) process; sends back the figures."""
    try:
        pipe.send(_figures(count, passes, folder))
    except BaseException as exc:
        import traceback

        pipe.send({"error": f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"})
        raise


def _figures(count: int, passes: int, folder: str) -> dict:
    from flask_babel import force_locale

    from pbem import create_app
    from pbem.games import picture, rules_for

    app = create_app({"INSTANCE_PATH": folder, "SECRET_KEY": "bench"})
    rules = rules_for(KIND)
    with app.app_context():
        states = positions(count)
        pngs = []
        cpu, wall = time.process_time(), time.perf_counter()
        pngs.append(picture.png_of(KIND, states[0], "en"))
        first_cpu, first_wall = time.process_time() - cpu, time.perf_counter() - wall
        cpu, wall = time.process_time(), time.perf_counter()
        pngs += [picture.png_of(KIND, state, "en") for state in states[1:]]
        rest_cpu, rest_wall = time.process_time() - cpu, time.perf_counter() - wall
        rendered = picture._piece.cache_info().misses
        warm = []
        for _ in range(passes):
            cpu = time.process_time()
            for state in states:
                picture.png_of.__wrapped__(KIND, state, "en")
            warm.append((time.process_time() - cpu) / len(states))
        with force_locale("en"):
            parsed = [rules.loads(state) for state in states]
            cpu = time.process_time()
            for state in parsed:
                rules.picture_pieces(state, picture.WIDTH / picture.BOARD_UNITS)
            pieces_svg = (time.process_time() - cpu) / len(states)
    sizes = [len(png) for png in pngs]
    encoded = [len(base64.encodebytes(png)) for png in pngs]
    return {"positions": len(states), "cold_first_cpu_s": first_cpu,
            "cold_first_wall_s": first_wall, "cold_rest_cpu_s": rest_cpu,
            "cold_rest_wall_s": rest_wall, "cold_total_cpu_s": first_cpu + rest_cpu,
            "pieces_rendered": rendered, "warm_cpu_ms": statistics.median(warm) * 1000,
            "warm_passes_cpu_ms": [x * 1000 for x in warm],
            "warm_pieces_svg_cpu_ms": pieces_svg * 1000,
            "png_bytes_mean": statistics.fmean(sizes), "png_bytes_max": max(sizes),
            "base64_bytes_mean": statistics.fmean(encoded)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--positions", type=int, default=1000)
    parser.add_argument("--passes", type=int, default=3, help="warm passes (the median counts)")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    print(f"load average (1, 5, 15 minutes; 2 cores shared): "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        context = multiprocessing.get_context("spawn")
        receiving, sending = context.Pipe(duplex=False)
        process = context.Process(target=_measure,
                                  args=(args.positions, args.passes, folder, sending))
        process.start()
        figures = receiving.recv()
        process.join()
    if "error" in figures:
        raise SystemExit(f"the measuring process failed: {figures['error']}")
    n = figures["positions"]
    print(f"{n:,} positions of the scheduler benchmark's burst, in English")
    print(f"cold (a new process): first picture {figures['cold_first_cpu_s'] * 1000:.0f} ms CPU "
          f"({figures['cold_first_wall_s'] * 1000:.0f} ms wall); the other {n - 1:,} "
          f"{figures['cold_rest_cpu_s']:.2f} s CPU ({figures['cold_rest_wall_s']:.2f} s wall), "
          f"{figures['cold_rest_cpu_s'] / max(n - 1, 1) * 1000:.2f} ms a picture; "
          f"{figures['pieces_rendered']:,} pieces rendered by resvg; all "
          f"{figures['cold_total_cpu_s']:.2f} s CPU, "
          f"{figures['cold_total_cpu_s'] / n * 1000:.2f} ms a picture")
    print(f"warm (board and pieces kept): {figures['warm_cpu_ms']:.2f} ms CPU a picture (median "
          f"of {len(figures['warm_passes_cpu_ms'])} passes), of which the engine's SVG of the "
          f"pieces {figures['warm_pieces_svg_cpu_ms']:.2f} ms")
    print(f"size: {figures['png_bytes_mean']:,.0f} bytes a picture on average (at most "
          f"{figures['png_bytes_max']:,}), {figures['base64_bytes_mean']:,.0f} in base64")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not args.no_save:
        path = results_file.save("picture_bench", figures)
        print(f"figures saved in {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
