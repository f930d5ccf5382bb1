"""What the whole game's picture (`pbem.games.picture.whole_game`, issue 46) costs: bytes and
time to make, for a 50-turn game of Kardinal & König and a whole game of Knights & Castles.

    python3 bench/game_picture_bench.py
    python3 bench/game_picture_bench.py --turns 30    # a shorter K&K game, for a first look

The games are played by the weakest computer player from fixed seeds, three players each; a
frame is the position after each turn (as players count them, pbem.services.turns) and the
set-up, as pbem.services.game_picture gives them. Time is the process's CPU time and the wall
clock for the picture alone (the replay through the rules aside), in a process that has drawn
no picture before (the bare board's first rendering included), in English.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def played(kind: str, turns: int | None) -> tuple[list, str, list[tuple]]:
    """A game of `kind` played by the weakest bot until `turns` turns (None: its end): the
    states a picture shows, the stored final state, and the log as the server keeps it."""
    import orjson

    from pbem.games import rules_for
    from pbem.ground import i18n
    from pbem.services import game_picture
    from pbem.services.turns import numbered

    rules = rules_for(kind)
    state = rules.new_state(list(rules.colours)[:3], f"picture-bench-{kind}", 0)
    log: list[tuple] = []
    while rules.to_move(state) is not None:
        notation = rules.bot_move(state, rules.bots[0], f"move {len(log)}")
        move = rules.parse(state, notation)
        after = rules.apply(state, move)
        # Stored as the server stores a move's lines: message ids and parameters, in JSON.
        lines = orjson.dumps({"-1": [i18n.phrase_data(line, {}, None) for line in
                                     rules.describe(state, move, after, None)]}).decode()
        trial = [*log, (len(log), notation, lines)]
        if turns is not None and numbered(rules, 0, trial)[-1] > turns:
            break
        log, state = trial, after
    return game_picture.frames(kind, rules.dumps(state), log), rules.dumps(state), log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=50, help="Kardinal & König's turns")
    args = parser.parse_args()

    from pbem import create_app
    from pbem.games import picture

    with tempfile.TemporaryDirectory() as folder, create_app(
            {"INSTANCE_PATH": folder, "SECRET_KEY": "bench"}).app_context():
        for kind, turns in (("kardinal-koenig", args.turns), ("knights-castles", None)):
            states, _, log = played(kind, turns)
            cpu, wall = time.process_time(), time.perf_counter()
            png = picture.whole_game(kind, states, "en")
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            print(f"{kind}: {len(states) - 1} turns ({len(log)} moves), {len(states)} frames, "
                  f"{len(png):,} bytes ({len(png) / 1024:.0f} KB; "
                  f"{len(png) * 4 / 3 / 1024:.0f} KB in base64), made in {wall:.1f} s "
                  f"({cpu:.1f} s CPU)")


if __name__ == "__main__":
    main()
