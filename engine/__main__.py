"""The engine's command line: `playout`, `score`, `demo` and `arena` (python -m engine --help)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable

from .arena import report_lines, run_arena
from .errors import SetupError
from .games import DEFAULT, NAMES, game_package
from .kardinal_koenig.cli import MAX_POSITION_BYTES, score_file

__all__ = ["MAX_POSITION_BYTES", "main"]


def cmd_playout(args: argparse.Namespace) -> int:
    rules = game_package(args.game)
    variants = tuple(args.variant or ())
    if not rules.MIN_PLAYERS <= args.players <= rules.MAX_PLAYERS:
        args.parser.error(f"{rules.TITLE} is for {rules.MIN_PLAYERS} to {rules.MAX_PLAYERS} "
                          f"players")
    known = getattr(rules, "VARIANTS", ())
    if any(v not in known for v in variants):
        args.parser.error(f"{rules.TITLE} has no --variant" if not known else
                          f"{rules.TITLE}'s variants are {', '.join(known)}")
    try:
        result = rules.playout_result(args.players, args.seed, variants)
    except SetupError as exc:  # a set-up the rules refuse (a variant with three players)
        args.parser.error(str(exc))
    print(json.dumps(result, ensure_ascii=False))
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    return score_file(args.file)


def cmd_demo(args: argparse.Namespace) -> int:
    rules = game_package(args.game)
    if not rules.MIN_PLAYERS <= args.players <= rules.MAX_PLAYERS:
        args.parser.error(f"{rules.TITLE} is for {rules.MIN_PLAYERS} to {rules.MAX_PLAYERS} "
                          f"players")
    first = rules.new_game(args.players, args.seed)
    print(f"{rules.TITLE}: {len(first.players)} players ({', '.join(first.players)}), seed "
          f"{args.seed}; {first.players[first.start]} starts.")
    print("Every move is chosen at random among the legal moves; the log is a spectator's.\n")
    for before, _, move, after in rules.random_playout(args.players, args.seed):
        print(f"{after.ply:4d}  {before.players[before.to_move]:<7} {move}")
        for line in rules.describe(before, move, after, None):
            print(f"        {line}")
    return 0


def cmd_arena(args: argparse.Namespace) -> int:
    try:
        report = run_arena(args.game, args.bots, args.games, args.seed)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        print("\n".join(report_lines(report)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    playout = commands.add_parser("playout", help="play a random seeded game; print JSON")
    playout.add_argument("--game", choices=NAMES, default=DEFAULT)
    playout.add_argument("--players", type=int, choices=range(2, 7), required=True,
                         help="3-5 for kardinal-koenig, 2-6 for knights-castles")
    playout.add_argument("--seed", type=int, required=True)
    playout.add_argument("--variant", action="append",
                         help="a variant switch of the game (knights-castles: catch-up, "
                              "no-buying, knights-from-hand); repeat for several")
    playout.set_defaults(run=cmd_playout, parser=playout)
    score = commands.add_parser("score", help="score a Kardinal & König position file; print "
                                              "the breakdown JSON")
    score.add_argument("file")
    score.set_defaults(run=cmd_score)
    demo = commands.add_parser("demo", help="play a seeded game in the terminal with its log")
    demo.add_argument("--game", choices=NAMES, default=DEFAULT)
    demo.add_argument("--players", type=int, choices=range(2, 7), default=4)
    demo.add_argument("--seed", type=int, default=2026)
    demo.set_defaults(run=cmd_demo, parser=demo)
    arena = commands.add_parser("arena", help="bots against bots: win rates and move times")
    arena.add_argument("--game", default=DEFAULT, help=f"the game ({', '.join(NAMES)})")
    arena.add_argument("--bots", required=True,
                       help="one bot per seat, comma-separated: random, greedy or strong")
    arena.add_argument("--games", type=int, default=200)
    arena.add_argument("--seed", default="1")
    arena.add_argument("--json", action="store_true", help="print one JSON object")
    arena.set_defaults(run=cmd_arena)
    args = parser.parse_args(argv)
    try:
        run: Callable[[argparse.Namespace], int] = args.run
        return run(args)
    except BrokenPipeError:
        # The reader stopped early (`python -m engine demo | head`); that is not our error, and
        # pointing stdout at devnull keeps Python from failing again when it flushes at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
