"""Fit the weights of the strong Knights & Castles bot's `worth` to the gold seats really end with.

    python3 bench/kc_worth_fit.py                 # 1000 games of four greedy bots, about a minute
    python3 bench/kc_worth_fit.py --games 3000 --players 4

Plays seeded games of `greedy` bots (the players the strong bot's play-outs assume for the
other seats) and takes, at the start of every turn, each seat's `policy.features`; a least-squares
fit then says how much final gold each feature foretells beyond the gold in hand (whose weight
stays 1; none is fitted below 0). It prints the fitted weights beside the ones in `policy.WEIGHTS` and how well each set
foretells the final gold (R squared, on games left out of the fit), so a change of the features
can be checked before the arena is run. It changes nothing itself.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np

import engine.knights_castles as kc
from engine.knights_castles.bots import choose_move
from engine.knights_castles.bots.policy import FEATURES, WEIGHTS, features, turns_left
from engine.knights_castles.state import BUY


def samples(games: range, players: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features at every turn's start, the final gold of the seat they describe, and the game."""
    rows, finals, which = [], [], []
    for number in games:
        state = kc.new_game(players, f"fit:{number}")
        rngs = [random.Random(f"fit:{number}:{s}") for s in state.seats]
        taken, turn = [], 0
        while not state.is_over:
            if state.turn != turn and state.step == BUY:
                turn = state.turn
                turns = turns_left(state)
                taken += [(s, features(state, s, turns)) for s in state.seats]
            seat = state.to_move
            state = kc.apply_move(state, choose_move("greedy", kc.view_for(state, seat),
                                                     rngs[seat]))
        for seat, row in taken:
            rows.append(row)
            finals.append(state.gold[seat])
            which.append(number)
    return np.array(rows, dtype=float), np.array(finals, dtype=float), np.array(which)


def fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares weights, gold's fixed at 1 (the others foretell the gold still to come),
    none below 0: a feature the fit would weigh below 0 is left out and the rest fitted again
    (holding a card is never worth less than not holding it; the bot plays cards by weights)."""
    used = list(range(1, x.shape[1]))
    while True:
        rest = np.linalg.lstsq(x[:, used], y - x[:, 0], rcond=None)[0]
        if (rest >= 0).all():
            weights = np.zeros(x.shape[1])
            weights[0] = 1.0
            weights[used] = rest
            return weights
        used = [f for f, w in zip(used, rest) if w > 0]


def r_squared(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> float:
    residual = y - x @ weights
    return 1 - float(residual @ residual) / float(((y - y.mean()) ** 2).sum())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--players", type=int, default=4)
    args = parser.parse_args(argv)
    x, y, game = samples(range(args.games), args.players)
    fit_rows = game % 5 != 0  # every fifth game is left out, to judge the fit on
    fitted = fit(x[fit_rows], y[fit_rows])
    held = ~fit_rows
    print(f"{args.games} games of {args.players} greedy bots, {len(y)} seat positions "
          f"({int(held.sum())} left out of the fit)")
    print(f"{'feature':<26} {'in WEIGHTS':>11} {'fitted':>9}")
    for name, now, new in zip(FEATURES, WEIGHTS, fitted):
        print(f"{name:<26} {now:>11.2f} {new:>9.2f}")
    print(f"{'R squared, left-out games':<26} {r_squared(x[held], y[held], np.array(WEIGHTS)):>11.3f}"
          f" {r_squared(x[held], y[held], fitted):>9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
