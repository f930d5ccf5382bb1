"""Time GET /players/<id> for an address with 200 finished games (in-process, SQLite): issue
42 point 7, before and after paging. Run from a checkout:
PYTHONPATH=$PWD python3 bench/public_page_bench.py $PWD"""

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, sys.argv[1] + "/tests")
from server import finish_game, make_app
from sqlmodel import select

from pbem.ground.db import utcnow, writing
from pbem.ground.models import Game, Profile
from pbem.services.creating import create_game
from pbem.services.players import bot_player, parse_player

KIND = "knights-castles"


def main() -> None:
    app = make_app(Path(tempfile.mkdtemp()) / "instance", MAIL_BOARD_PICTURE=False)
    with app.app_context():
        ids = [create_game([parse_player("Pia <pia@example.org>"), bot_player("random", KIND)],
                           f"s{n}", kind=KIND).game_id for n in range(200)]
    for n, game_id in enumerate(ids):
        finish_game(app, game_id, f"f{n}")
    with app.app_context(), writing() as session:
        for game in session.exec(select(Game).where(Game.id.in_(ids))):
            game.finished_at = utcnow()
            session.add(game)
        profile = Profile(email="pia@example.org", name="Pia")
        session.add(profile)
        session.flush()
        public_id = profile.public_id
    client = app.test_client()
    times = []
    for _ in range(30):
        start = time.perf_counter()
        answer = client.get(f"/players/{public_id}")
        times.append((time.perf_counter() - start) * 1000)
        assert answer.status_code == 200
    print(f"GET /players/<id>, 200 finished games: median {statistics.median(times):.1f} ms, "
          f"max {max(times):.1f} ms, {len(answer.data)} bytes")


if __name__ == "__main__":
    main()
