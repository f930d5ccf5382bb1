"""What a feed program's poll costs: the Atom feeds and the calendar, written out (200) and
answered from their validators (304), through the app in one process on a real SQLite file.

    python3 bench/feeds_bench.py              # 3 players, 120 moves, 200 polls of each kind
    python3 bench/feeds_bench.py --moves 300 --polls 500

A feed reader polls every few minutes and almost always finds nothing new: the 304 answer is
made from the game rows alone (pbem.web.feeds), before the log is read or the feed written.
Prints the median and 95th percentile of each in milliseconds (time.perf_counter).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _timed(client, url: str, polls: int, headers: dict | None = None,
           status: int = 200) -> list[float]:
    times = []
    for __ in range(polls):
        start = time.perf_counter()
        response = client.get(url, headers=headers or {})
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == status, (url, response.status_code)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--moves", type=int, default=120)
    parser.add_argument("--polls", type=int, default=200)
    args = parser.parse_args()

    import engine
    from pbem import create_app
    from pbem.ground.db import reading, writing
    from pbem.ground.models import Game
    from pbem.ground.schema import upgrade
    from pbem.services.creating import create_game
    from pbem.services.feeds import new_calendar_feed, new_seat_feed
    from pbem.services.mail import mint_player_key
    from pbem.services.moves import submit_move
    from pbem.services.players import parse_player

    folder = Path(tempfile.mkdtemp(prefix="feeds-bench-"))
    app = create_app({"INSTANCE_PATH": str(folder), "SECRET_KEY": "bench",
                      "BASE_URL": "http://localhost", "GAMES_SECRET_SEEDS": False,
                      "DATABASE_URL": f"sqlite:///{folder / 'pbem.sqlite3'}"})
    with app.app_context():
        upgrade(app)
        created = create_game([parse_player(f"P{i} <p{i}@example.org>") for i in range(3)],
                              "feeds-bench", start=0)
        tokens = [link.rsplit("/", 1)[1] for __, __, link in created.links]
        for __ in range(args.moves):
            with reading() as session:
                game = session.get(Game, created.game_id)
            state = engine.from_json(game.state_json)
            if state.is_over:
                break
            submit_move(tokens[state.current], str(engine.legal_moves(state)[0]), game.turn)
        seat_key = new_seat_feed(tokens[0])
        with writing() as session:
            games_token = mint_player_key(session, "p0@example.org")
        calendar_key = new_calendar_feed(games_token)
        with reading() as session:
            game = session.get(Game, created.game_id)
    client = app.test_client()
    feeds = {"public Atom": f"/watch/{game.watch_id}/feed.atom",
             "seat Atom": f"/feeds/{seat_key}/moves.atom",
             "calendar": f"/feeds/{calendar_key}/deadlines.ics"}
    print(f"{game.turn} moves logged; {args.polls} polls each; SQLite; one process")
    print(f"{'feed':<12} {'answer':<6} {'median ms':>10} {'p95 ms':>8} {'bytes':>7}")
    for name, url in feeds.items():
        first = client.get(url)
        etag = first.headers["ETag"]
        for label, headers, status in (("200", None, 200),
                                       ("304", {"If-None-Match": etag}, 304)):
            times = _timed(client, url, args.polls, headers, status)
            size = len(first.data) if status == 200 else 0
            p95 = statistics.quantiles(times, n=20)[-1]
            print(f"{name:<12} {label:<6} {statistics.median(times):>10.2f} {p95:>8.2f} "
                  f"{size:>7}")


if __name__ == "__main__":
    main()
