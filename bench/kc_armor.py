"""What counting defence points does for greedy Knights & Castles play: the figures behind
`bots.strong.ARMOR`.

    python3 bench/kc_armor.py                       # armor 0 and 0.2, 2,000 games each arena
    python3 bench/kc_armor.py --armor 0,0.1,0.2,0.3 --games 500

One seat plays `greedy` whose worth counts `armor` gold a turn for each defence point in play
(`players.worth`; 0 is plain greedy), against three plain `greedy` bots and against three
`random` ones. Game g is dealt from "<seed>:<g>" and the tested seat moves round the table one
place a game, as in the arena; every bot plays from its own seat's view. Par is 25%.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import results_file

from engine.arena import wilson
from engine.knights_castles import apply_move, new_game, outcome, view_for
from engine.knights_castles.bots import choose_move
from engine.knights_castles.bots.players import greedy_move
from engine.knights_castles.bots.view_state import sampled_state

SEATS = 4


def play(armor: float, opponent: str, games: int, seed: str) -> dict:
    """`games` games of armoured greedy against three `opponent`s: its wins and mean gold."""
    wins, gold, others = 0.0, 0, 0
    for g in range(games):
        state = new_game(SEATS, f"{seed}:{g}")
        tested = g % SEATS
        rngs = [random.Random(f"armor:{seed}:{g}:{s}") for s in range(SEATS)]
        while not state.is_over:
            seat = state.to_move
            view = view_for(state, seat)
            if seat == tested:
                move = greedy_move(sampled_state(view, rngs[seat]), rngs[seat], armor=armor)
            else:
                move = choose_move(opponent, view, rngs[seat])
            state = apply_move(state, move)
        result = outcome(state)
        if tested in result.winners:
            wins += 1 / len(result.winners)
        gold += state.gold[tested]
        others += sum(state.gold) - state.gold[tested]
    low, high = wilson(wins, games)
    return {"armor": armor, "opponent": opponent, "games": games, "seed": seed, "wins": wins,
            "win_rate": wins / games, "ci95": [low, high], "mean_gold": gold / games,
            "opponents_mean_gold": others / games / (SEATS - 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--armor", default="0,0.2", help="comma-separated gold a turn per DP")
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--seed", default="1")
    parser.add_argument("--opponents", default="greedy,random")
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args(argv)
    try:
        armors = [float(a) for a in args.armor.split(",")]
    except ValueError:
        parser.error("--armor takes numbers separated by commas, such as 0,0.2")
    opponents = [o.strip() for o in args.opponents.split(",")]
    if any(o not in ("greedy", "random") for o in opponents):
        parser.error("--opponents names greedy and/or random")
    if args.games < 1:
        parser.error("--games must be at least 1")
    figures = []
    for opponent in opponents:
        for armor in armors:
            f = play(armor, opponent, args.games, args.seed)
            figures.append(f)
            low, high = f["ci95"]
            print(f"armor {armor:g} against three {opponent}: {f['games']} games, seed "
                  f"{f['seed']}: wins {f['win_rate']:.1%} (95% CI {low:.1%}-{high:.1%}), "
                  f"mean gold {f['mean_gold']:.1f} against {f['opponents_mean_gold']:.1f}",
                  flush=True)
    if not args.no_save:
        saved = results_file.save("kc_armor", {"runs": figures})
        print(f"figures saved in {saved.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
