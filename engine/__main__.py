"""The engine's command line: `playout`, `score`, `demo` and `arena` (python -m engine --help)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from .arena import report_lines, run_arena
from .board import default_board
from .errors import StateError
from .knights_castles.state import VARIANTS as KC_VARIANTS
from .narrate import describe
from .outcome import outcome
from .playout import random_playout
from .position import Position, check_reachable, parse_position_json
from .state import new_game

MAX_POSITION_BYTES = 1_000_000


def cmd_playout(args) -> int:
    if args.game == "knights-castles":
        from .knights_castles.playout import playout_result
        print(json.dumps(playout_result(args.players, args.seed, args.variant or ())))
        return 0
    if args.players not in (3, 4, 5) or args.variant:
        args.parser.error("Kardinal & König is for 3 to 5 players and has no --variant")
    moves, state = 0, None
    for _, _, _, state in random_playout(args.players, args.seed):
        moves += 1
    result = outcome(state)
    print(json.dumps({
        "players": list(state.players),
        "moves": moves,
        "scores": dict(zip(state.players, result.scores)),
        "winners": [state.players[s] for s in result.winners],
        "breakdown": result.breakdown.to_dict(),
        "intermediate": result.intermediate.to_dict() if result.intermediate else None,
        "end_reason": result.reason,
    }, ensure_ascii=False))
    return 0


def read_position(path: str) -> Position:
    """The position in a file; StateError or OSError names what is wrong in one line."""
    with open(path, "rb") as handle:
        raw = handle.read(MAX_POSITION_BYTES + 1)
    if len(raw) > MAX_POSITION_BYTES:
        raise StateError(f"the file is larger than {MAX_POSITION_BYTES} bytes; a position "
                         f"file is a few lines")
    position = parse_position_json(raw, default_board())
    check_reachable(position, default_board())
    return position


def cmd_score(args) -> int:
    # A file name may hold a line break or undecodable bytes; the error must stay one line.
    name = args.file if args.file.isprintable() else ascii(args.file)
    try:
        position = read_position(args.file)
    except OSError as exc:
        print(f"error: {name}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except StateError as exc:
        print(f"error: {name}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(position.final_breakdown(default_board()).to_dict(), ensure_ascii=False))
    return 0


def cmd_demo(args) -> int:
    board = default_board()
    first = new_game(args.players, args.seed)
    print(f"Kardinal & König on the board '{board.name}': {len(first.players)} players "
          f"({', '.join(first.players)}), seed {args.seed}; {first.players[first.start]} starts.")
    print("Every move is chosen at random among the legal moves; the log is a spectator's.\n")
    for before, _, move, after in random_playout(args.players, args.seed):
        print(f"{after.ply:4d}  {before.players[before.current]:<7} {move}")
        for line in describe(before, move, after, None):
            print(f"        {line}")
    return 0


def cmd_arena(args) -> int:
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
    playout.add_argument("--game", choices=("kardinal-koenig", "knights-castles"),
                         default="kardinal-koenig")
    playout.add_argument("--players", type=int, choices=range(2, 7), required=True,
                         help="3-5 for kardinal-koenig, 2-6 for knights-castles")
    playout.add_argument("--seed", type=int, required=True)
    playout.add_argument("--variant", action="append",
                         choices=KC_VARIANTS,
                         help="knights-castles only; repeat for several")
    playout.set_defaults(run=cmd_playout, parser=playout)
    score = commands.add_parser("score", help="score a position file; print the breakdown JSON")
    score.add_argument("file")
    score.set_defaults(run=cmd_score)
    demo = commands.add_parser("demo", help="play a seeded game in the terminal with its log")
    demo.add_argument("--players", type=int, choices=(3, 4, 5), default=4)
    demo.add_argument("--seed", type=int, default=2026)
    demo.set_defaults(run=cmd_demo)
    arena = commands.add_parser("arena", help="bots against bots: win rates and move times")
    arena.add_argument("--game", default="kardinal-koenig", help="the game (kardinal-koenig)")
    arena.add_argument("--bots", required=True,
                       help="one bot per seat, comma-separated: random, greedy or strong")
    arena.add_argument("--games", type=int, default=200)
    arena.add_argument("--seed", default="1")
    arena.add_argument("--json", action="store_true", help="print one JSON object")
    arena.set_defaults(run=cmd_arena)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except BrokenPipeError:
        # The reader stopped early (`python -m engine demo | head`); that is not our error, and
        # pointing stdout at devnull keeps Python from failing again when it flushes at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
