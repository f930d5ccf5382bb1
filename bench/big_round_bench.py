"""A player's moves while an organiser makes a big tournament round (issue 42): a round-robin
of 21 players at tables of two (210 games of Knights & Castles) is made in one request while
another thread moves in a game of its own as fast as it can; the slowest move is what a player
waits at worst.

    python3 bench/big_round_bench.py                     # SQLite file in a temporary folder
    python3 bench/big_round_bench.py --database-url postgresql+psycopg://user@host/dbname

Single process, wall-clock time from time.perf_counter.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url")
    parser.add_argument("--players", type=int, default=21)
    options = parser.parse_args()
    from server import make_app

    from pbem.games import rules_for
    from pbem.ground.db import reading
    from pbem.ground.models import Game
    from pbem.services import stewardship, tournaments
    from pbem.services.creating import create_game
    from pbem.services.deadlines import time_control
    from pbem.services.moves import submit_move
    from pbem.services.players import parse_player

    settings = {"MAIL_BOARD_PICTURE": False}
    if options.database_url:
        settings["DATABASE_URL"] = options.database_url
    app = make_app(Path(tempfile.mkdtemp()) / "instance", **settings)
    rules = rules_for("knights-castles")
    with app.app_context():
        admin = stewardship.create_admin("boss@example.org", "a long enough password")
        beside = create_game([parse_player(f"B{i} <b{i}@example.org>") for i in range(2)],
                             "beside", kind="knights-castles", start=0)
    tokens = [link.rsplit("/", 1)[1] for __, __, link in beside.links]
    done = threading.Event()
    lasted: list[float] = []

    def organiser() -> None:
        started = time.perf_counter()
        with app.app_context():
            tournaments.create_tournament(admin, tournaments.Setup(
                "Big", "knights-castles", None, "round-robin",
                time_control(72, "24", False, "UTC"),
                [parse_player(f"P{i} <p{i}@example.org>") for i in range(options.players)], 2))
        lasted.append(time.perf_counter() - started)
        done.set()

    thread = threading.Thread(target=organiser)
    thread.start()
    moves: list[float] = []
    while not done.is_set():
        with app.app_context(), reading() as session:
            game = session.get(Game, beside.game_id)
            state = rules.loads(game.state_json)
        if game.status != "running":
            break
        started = time.perf_counter()
        with app.app_context():
            submit_move(tokens[rules.to_move(state)], min(rules.legal(state)), game.turn)
        moves.append(time.perf_counter() - started)
    thread.join()
    print(f"round made in {lasted[0]:.1f} s; {len(moves)} moves meanwhile, slowest "
          f"{max(moves) * 1000:.0f} ms, median {sorted(moves)[len(moves) // 2] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
