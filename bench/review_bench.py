"""What the strong computer player's review of a finished game costs (engine.review), in CPU
seconds per reviewed turn and per game, for both games.

    python3 bench/review_bench.py                     # 48 play-outs, every 3rd turn timed
    python3 bench/review_bench.py --every 1           # every turn: the whole game (minutes)
    python3 bench/review_bench.py --playouts 16 --players 4

Each game is a seeded game played to its end by the bots (seat 0 `greedy`, the others `random`,
as tests/engine/test_review_engine.py plays it), reviewed as the scheduler reviews it
(pbem.services.reviews: one decision a turn, `review_decision` with the same seeds). With
`--every N` only every N-th turn is reviewed and timed, spread over the whole game, and the
game's cost is the mean per turn times its turns (the cost of a turn falls as the game nears
its end: fewer moves to play out). CPU time is the process's (one core), whatever else the
machine runs. The budget (docs/running-games.md, "Reviews"): a 40-turn Kardinal & König
game within 3 CPU minutes at the default 48 play-outs.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from engine import review
from engine.games import NAMES, game_package

BUDGET_SECONDS = 180.0  # a 40-turn Kardinal & König game, at the default play-outs
BUDGET_TURNS = 40


def played(game: str, players: int, seed: int):
    """A seeded game to its end: its set-up and its moves in notation."""
    package = game_package(game)
    first = state = package.new_game(players, seed)
    board = getattr(state, "board", None)
    rng = random.Random(seed)
    notations = []
    while not state.is_over:
        seat = state.to_move
        view = package.view_for(state, seat)
        name = "greedy" if seat == 0 else "random"
        move = (package.bots.choose_move(name, view, rng) if board is None
                else package.bots.choose_move(name, view, rng, board))
        notations.append(str(move))
        state = package.apply_move(state, move)
    return first, notations


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--playouts", type=int, default=48)
    parser.add_argument("--players", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--every", type=int, default=3, help="time every N-th turn")
    parser.add_argument("--games", default=",".join(NAMES))
    args = parser.parse_args(argv)
    over = []
    for game in args.games.split(","):
        first, notations = played(game, args.players, args.seed)
        todo = review.decisions(game, first, notations)
        timed = todo[::args.every]
        began = time.process_time()
        for index, state in timed:
            review.review_decision(game, state, notations[index], f"bench:{index}",
                                   args.playouts)
        spent = time.process_time() - began
        per_turn = spent / len(timed)
        per_game = per_turn * len(todo)
        print(f"{game}: {args.players} players, {len(notations)} moves, {len(todo)} turns "
              f"reviewed ({len(timed)} timed), {args.playouts} play-outs: "
              f"{per_turn:.2f} CPU s a turn, {per_game:.1f} CPU s a game, "
              f"{per_turn * BUDGET_TURNS:.1f} CPU s for {BUDGET_TURNS} turns")
        if game == "kardinal-koenig" and per_turn * BUDGET_TURNS > BUDGET_SECONDS:
            over.append(game)
    if over:
        print(f"over the budget of {BUDGET_SECONDS:.0f} CPU s for {BUDGET_TURNS} turns: "
              f"{', '.join(over)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
