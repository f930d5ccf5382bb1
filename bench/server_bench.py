"""How fast the server takes moves: random legal moves through the JSON API, against a floor.

    python3 bench/server_bench.py              # the full run (400 moves a side, 3 times)
    python3 bench/server_bench.py --quick      # a short run (80 moves a side, once)
    python3 bench/server_bench.py --moves 1000 --repeat 5 --profile

One process, one thread, Flask's test client (no sockets: WSGI calls straight into the app),
wall-clock time from time.perf_counter. The database is a SQLite file in a fresh temporary
folder, set up as `pbem.ground.db` sets it up (WAL, synchronous=NORMAL, BEGIN IMMEDIATE for writes).

pbem: several seeded games are played side by side, each move chosen uniformly among the legal
moves the API lists: `GET /api/v1/seat/<token>` for the seat to move, then `POST .../move` with
that move and turn. Outbox mail is queued as in production but not delivered (no sender thread
runs under the test client). A finished game is replaced by a new seeded one, untimed.

floor: the same loop, GET then POST, against a minimal Flask app with one endpoint on an engine
made by the same `pbem.ground.db.make_engine`: the GET reads one row, the POST writes one row in one
BEGIN IMMEDIATE transaction. The ratio pbem / floor says how much of the time is our own work;
on a shared machine it is the figure to compare, as both sides see the same load.

Each measurement (--repeat of them, medians reported) also times GET and POST at move EARLY
and at move LATE of a game: games are brought to just before those moves untimed (through
`submit_move`), then WINDOW moves of early and late games are played in turns through the API.
A request at move LATE should cost no more than FLAT_LIMIT more than at move EARLY. Then the
SQL statements per GET and per POST are counted, the figures saved as JSON in bench/results/,
and, under TARGET_RATIO (or with --profile), one run of move requests is timed part by part and
profiled with cProfile.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import platform
import pstats
import random
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import results_file
from flask import Flask, jsonify, request
from sqlalchemy import event, text

from pbem import create_app, started
from pbem.ground import schema
from pbem.ground.db import make_engine
from pbem.services.creating import create_game
from pbem.services.players import parse_player

TARGET_RATIO = 0.5  # POST alone, pbem / floor
MINIMUM_RATIO = 0.3  # what must be met at least
EARLY, LATE = 10, 120  # the moves of a game whose GET and POST are compared
WINDOW = 5  # moves timed around each of them
FLAT_LIMIT = 0.2  # how much slower a request may be at move LATE than at move EARLY
GAMES = 4
PLAYERS = 4
WARMUP = 10


@dataclass
class Timings:
    """Per iteration: GET and POST seconds."""

    gets: list[float] = field(default_factory=list)
    posts: list[float] = field(default_factory=list)
    handed_on: list[bool] = field(default_factory=list)  # the move ended the seat's turn

    @property
    def total(self) -> float:
        return sum(self.gets) + sum(self.posts)

    def rate(self) -> float:
        return len(self.posts) / self.total

    def post_rate(self) -> float:
        return len(self.posts) / sum(self.posts)


def quantile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# --- pbem ---------------------------------------------------------------------------------------

class Table:
    """Seeded games played through the API, a move at a time, round robin."""

    def __init__(self, folder: Path, games: int, seed: str):
        self.app = create_app({"INSTANCE_PATH": str(folder / "pbem"), "SECRET_KEY": "bench",
                               "BASE_URL": "http://localhost", "TESTING": False})
        schema.upgrade(self.app)
        self.client = self.app.test_client()
        self.rng = random.Random(seed)
        self.seed = seed
        self.started = 0
        self.finished = 0
        self.games = [self._new_game() for _ in range(games)]
        self.next = 0

    def _new_game(self) -> dict:
        players = [parse_player(f"Bench {i} <bench{i}@example.org>") for i in range(PLAYERS)]
        with self.app.app_context():
            created = create_game(players, f"{self.seed}-{self.started}")
        self.started += 1
        tokens = [link.rsplit("/", 1)[1] for _name, _colour, link in created.links]
        document = self.client.get(f"/api/v1/seat/{tokens[0]}").get_json()
        return {"tokens": tokens, "to_move": document["waiting_for"]}

    def move(self, timings: Timings | None) -> None:
        """GET the seat to move, POST a random legal move; the two requests are timed."""
        index = self.next
        self.next = (self.next + 1) % len(self.games)
        game = self.games[index]
        token = game["tokens"][game["to_move"]]
        start = time.perf_counter()
        response = self.client.get(f"/api/v1/seat/{token}")
        got = time.perf_counter()
        document = response.get_json()
        assert response.status_code == 200 and document["to_move"], document
        move = self.rng.choice(document["legal"])
        sent = time.perf_counter()
        response = self.client.post(f"/api/v1/seat/{token}/move",
                                    json={"move": move, "turn": document["turn"]})
        done = time.perf_counter()
        after = response.get_json()
        assert response.status_code == 200, after
        if timings is not None:
            timings.gets.append(got - start)
            timings.posts.append(done - sent)
            timings.handed_on.append(after["waiting_for"] != game["to_move"])
        if after["status"] != "running":
            self.finished += 1
            self.games[index] = self._new_game()
        else:
            game["to_move"] = after["waiting_for"]


# --- the floor: one endpoint, one write -----------------------------------------------------------

def minimal_app(folder: Path) -> Flask:
    app = Flask("minimal")
    engine = make_engine(f"sqlite:///{folder / 'minimal' / 'minimal.sqlite3'}")
    writer = engine.execution_options(pbem_write=True)
    with writer.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE move (id INTEGER PRIMARY KEY, token TEXT, "
                                   "turn INTEGER, notation TEXT)")
        connection.exec_driver_sql("INSERT INTO move (token, turn, notation) VALUES "
                                   "('t', -1, 'start')")

    @app.route("/api/v1/seat/<token>/move", methods=["GET", "POST"])
    def move(token: str):
        if request.method == "GET":
            with engine.connect() as connection:
                turn = connection.execute(text("SELECT turn FROM move ORDER BY id DESC "
                                                "LIMIT 1")).scalar()
            return jsonify(turn=turn + 1, legal=["draw deck"], to_move=True)
        body = request.get_json()
        with writer.begin() as connection:
            connection.execute(text("INSERT INTO move (token, turn, notation) "
                                    "VALUES (:token, :turn, :move)"),
                               {"token": token, "turn": body["turn"], "move": body["move"]})
        return jsonify(applied=body["move"], turn=body["turn"] + 1)

    return app


def floor_move(client, rng: random.Random, timings: Timings | None) -> None:
    url = "/api/v1/seat/minimal/move"
    start = time.perf_counter()
    document = client.get(url).get_json()
    got = time.perf_counter()
    move = rng.choice(document["legal"])
    sent = time.perf_counter()
    response = client.post(url, json={"move": move, "turn": document["turn"]})
    done = time.perf_counter()
    assert response.status_code == 200
    if timings is not None:
        timings.gets.append(got - start)
        timings.posts.append(done - sent)


# --- report -------------------------------------------------------------------------------------

def line(label: str, figure: str, detail: str = "") -> None:
    print(f"{label:<44} {figure:>14}" + (f"   ({detail})" if detail else ""), flush=True)


def report(name: str, timings: Timings) -> None:
    ms = [t * 1000 for t in timings.posts]
    line(f"{name}: GET+POST loop", f"{timings.rate():.1f} moves/s",
         f"{len(timings.posts)} moves in {timings.total:.2f} s")
    line(f"{name}: POST alone", f"{timings.post_rate():.1f} posts/s",
         f"median {statistics.median(ms):.2f} ms, p95 {quantile(ms, 0.95):.2f} ms, "
         f"max {max(ms):.2f} ms")
    gets = [t * 1000 for t in timings.gets]
    line(f"{name}: GET alone", f"{len(gets) / sum(gets) * 1000:.1f} gets/s",
         f"median {statistics.median(gets):.2f} ms, p95 {quantile(gets, 0.95):.2f} ms")
    if timings.handed_on:
        for handed_on, label in ((True, "POST ending a turn (mails)"),
                                 (False, "POST, same seat goes on")):
            part = [t for t, h in zip(ms, timings.handed_on) if h == handed_on]
            if part:
                line(f"{name}: {label}", f"{statistics.median(part):.2f} ms",
                     f"median of {len(part)}, p95 {quantile(part, 0.95):.2f} ms")


# --- where the time goes --------------------------------------------------------------------------

class Stopwatch:
    """Wall-clock time and calls of chosen functions (inclusive), and SQL statements per view."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.statements: dict[str, int] = defaultdict(int)
        self.labels: list[str] = []
        self._undo: list[tuple[object, str, object]] = []
        self._view: str | None = None

    def wrap(self, owner, name: str, label: str, view: bool = False) -> None:
        original = owner[name] if isinstance(owner, dict) else getattr(owner, name)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            if view:
                self._view = label
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[label] += time.perf_counter() - start
                self.calls[label] += 1
                if view:
                    self._view = None

        self._set(owner, name, timed)
        self._undo.append((owner, name, original))
        self.labels.append(label)

    @staticmethod
    def _set(owner, name, value) -> None:
        if isinstance(owner, dict):
            owner[name] = value
        else:
            setattr(owner, name, value)

    def count_statements(self, engine) -> None:
        def before(*_args):
            self.statements[self._view or "outside the views (new games)"] += 1

        event.listen(engine, "before_cursor_execute", before)
        self._undo.append((None, "", lambda: event.remove(engine, "before_cursor_execute",
                                                           before)))

    def undo(self) -> None:
        for owner, name, original in reversed(self._undo):
            if owner is None:
                original()
            else:
                self._set(owner, name, original)
        self._undo.clear()


def breakdown(table: Table, moves: int) -> None:
    """Time the parts of `moves` move requests without a profiler (its overhead skews ORM code)."""
    import pbem.services.mail
    import pbem.services.moves
    import pbem.services.seats
    import pbem.web.api
    from pbem.games import rules_for
    from pbem.ground.db import get_engine

    watch = Stopwatch()
    views = table.app.view_functions
    watch.wrap(views, "api.seat", "GET /api/v1/seat/<token> (view)", view=True)
    watch.wrap(views, "api.move", "POST /api/v1/seat/<token>/move (view)", view=True)
    watch.wrap(pbem.web.api, "submit_move", "  submit_move")
    watch.wrap(pbem.services.moves, "_notify", "    _notify (mails of the move)")
    watch.wrap(pbem.services.moves, "_Recent", "      _Recent (the latest moves, read once)")
    watch.wrap(pbem.services.mail, "render_template", "      render mail templates")
    watch.wrap(pbem.web.api, "load_seat", "  load_seat (GET)")
    watch.wrap(pbem.services.seats, "seat_game_seats",
               "    seat_game_seats (seat, game, seats; any caller)")
    watch.wrap(pbem.services.seats, "log_for", "    log_for (the log in one reader's words)")
    watch.wrap(pbem.web.api, "seat_document", "  seat_document")
    watch.wrap(pbem.web.api, "jsonify", "  jsonify")
    rules = type(rules_for("kardinal-koenig"))
    for name in ("loads", "dumps", "legal", "describe", "view_dict", "position_lines"):
        watch.wrap(rules, name, f"  rules.{name} (engine, any caller)")
    watch.count_statements(get_engine(table.app))
    try:
        start = time.perf_counter()
        for _ in range(moves):
            table.move(None)
        total = time.perf_counter() - start
    finally:
        watch.undo()
    print(f"\nWhere the time of {moves} moves goes (wall clock, inclusive, ms per move; "
          f"{total / moves * 1000:.2f} ms a move in all):")
    for label in watch.labels:
        print(f"  {label:<50} {watch.seconds[label] / moves * 1000:7.2f} ms"
              f"   {watch.calls[label] / moves:4.1f} calls")
    for view, count in watch.statements.items():
        print(f"  SQL statements per move, {view.split(' (')[0]:<30} {count / moves:5.1f}")


def package_of(filename: str, function: str) -> str:
    """'pbem', 'engine', 'sqlalchemy', 'json', ... for a profiled function's file."""
    if filename == "~":  # a built-in: tell the SQLite driver's calls apart
        return "sqlite3 (C)" if "sqlite3" in function else "builtins"
    path = Path(filename)
    if path.is_relative_to(ROOT):
        return path.relative_to(ROOT).parts[0]
    parts = path.parts
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1].removesuffix(".py")
    stdlib = Path(io.__file__).parent
    if path.is_relative_to(stdlib):
        return "stdlib " + path.relative_to(stdlib).parts[0].removesuffix(".py")
    return "other"


def profile(table: Table, moves: int, top: int) -> None:
    """cProfile `moves` move requests (GET and POST): our costliest functions, time by package."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(moves):
        table.move(None)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(re.escape(str(ROOT)) + r"/(pbem|engine)/", top)
    listing = out.getvalue()
    print(f"\ncProfile of {moves} moves (GET seat + POST move), pbem and engine functions, "
          f"top {top} by cumulative time (profiler overhead included):")
    print(listing[listing.index("   ncalls"):].rstrip())
    own: dict[str, float] = defaultdict(float)
    for (filename, _line, function), row in stats.stats.items():  # type: ignore[attr-defined]
        own[package_of(filename, function)] += row[2]
    whole = sum(own.values())
    ranked = sorted(own.items(), key=lambda item: -item[1])
    ranked = ranked[:12] + [("the rest", sum(seconds for _, seconds in ranked[12:]))]
    print("\nOwn time (tottime) by package, profiler overhead included:")
    for package, seconds in ranked:
        print(f"  {package:<20} {seconds / whole:6.1%}   {seconds / moves * 1000:6.2f} ms a move")


# --- a cost that stays flat as a game gets longer -------------------------------------------------

class Lengths:
    """Games brought to just before move EARLY or LATE (untimed, through `submit_move`), then
    WINDOW moves of each played through the API, early and late games taking turns."""

    def __init__(self, table: Table, count: int, seed: str):
        self.table = table
        self.rng = random.Random(seed)
        self.seed = seed
        self.made = 0
        self.games = {point: [self._prepare(point) for _ in range(count)]
                      for point in (EARLY, LATE)}

    def _prepare(self, point: int) -> dict:
        from pbem.games import rules_for
        from pbem.ground.db import reading
        from pbem.ground.models import Game
        from pbem.services.moves import submit_move

        app = self.table.app
        while True:  # a game long enough for the late window, its moves chosen in advance
            players = [parse_player(f"Long {i} <long{i}@example.org>") for i in range(PLAYERS)]
            with app.app_context():
                created = create_game(players, f"{self.seed}-long-{self.made}")
                with reading() as session:
                    game = session.get(Game, created.game_id)
                rules = rules_for(game.kind)
                state = rules.loads(game.state_json)
            self.made += 1
            moves = []
            while rules.to_move(state) is not None:
                move = self.rng.choice(rules.legal(state))
                moves.append((rules.to_move(state), move))
                state = rules.apply(state, rules.parse(state, move))
            if len(moves) > LATE + WINDOW:
                break
        tokens = [link.rsplit("/", 1)[1] for _name, _colour, link in created.links]
        first = point - WINDOW // 2
        with app.app_context():
            for turn, (seat, move) in enumerate(moves[:first]):
                submit_move(tokens[seat], move, turn, via="api")
        return {"tokens": tokens, "moves": moves, "next": first}

    def _move(self, game: dict, timings: Timings) -> None:
        client = self.table.client
        seat, move = game["moves"][game["next"]]
        token = game["tokens"][seat]
        start = time.perf_counter()
        response = client.get(f"/api/v1/seat/{token}")
        got = time.perf_counter()
        document = response.get_json()
        assert response.status_code == 200 and document["turn"] == game["next"], document
        sent = time.perf_counter()
        response = client.post(f"/api/v1/seat/{token}/move",
                               json={"move": move, "turn": document["turn"]})
        done = time.perf_counter()
        after = response.get_json()
        assert response.status_code == 200, after
        timings.gets.append(got - start)
        timings.posts.append(done - sent)
        timings.handed_on.append(after["waiting_for"] != seat)
        game["next"] += 1

    def run(self) -> dict[int, Timings]:
        timings = {EARLY: Timings(), LATE: Timings()}
        for _ in range(WINDOW):
            for early, late in zip(self.games[EARLY], self.games[LATE]):
                self._move(early, timings[EARLY])
                self._move(late, timings[LATE])
        return timings


def length_figures(timings: dict[int, Timings]) -> dict[str, dict[str, float]]:
    """Median milliseconds of GET and of each kind of POST at EARLY and LATE, and late/early."""
    figures = {}
    for label, pick in (("GET", lambda t: [x for x in t.gets]),
                        ("POST ending a turn", lambda t: [p for p, h in zip(t.posts, t.handed_on)
                                                          if h]),
                        ("POST, same seat goes on", lambda t: [p for p, h in
                                                               zip(t.posts, t.handed_on)
                                                               if not h])):
        early, late = pick(timings[EARLY]), pick(timings[LATE])
        if early and late:
            e, l_ = statistics.median(early) * 1000, statistics.median(late) * 1000
            figures[label] = {f"ms_at_{EARLY}": e, f"ms_at_{LATE}": l_, "late_over_early": l_ / e,
                              "samples": min(len(early), len(late))}
    return figures


# --- SQL statements per request -------------------------------------------------------------------

def statement_counts(table: Table, moves: int) -> dict[str, float]:
    """Mean statements sent to the database per GET and per POST (BEGIN counted, COMMIT not:
    it is a call of the driver, not a statement)."""
    from pbem.ground.db import get_engine

    engine = get_engine(table.app)
    sent = [0]

    def before(*_args):
        sent[0] += 1

    client = table.client
    original = client.get, client.post
    last: dict[str, int] = {}

    def counting(method, key):
        def call(*args, **kwargs):
            start = sent[0]
            try:
                return method(*args, **kwargs)
            finally:
                last[key] = sent[0] - start
        return call

    per: dict[str, list[int]] = defaultdict(list)
    timings = Timings()
    event.listen(engine, "before_cursor_execute", before)
    client.get, client.post = counting(client.get, "get"), counting(client.post, "post")
    try:
        for _ in range(moves):
            table.move(timings)
            per["GET"].append(last["get"])
            per["POST ending a turn" if timings.handed_on[-1] else
                "POST, same seat goes on"].append(last["post"])
            per["POST"].append(last["post"])
    finally:
        client.get, client.post = original
        event.remove(engine, "before_cursor_execute", before)
    return {label: statistics.mean(counts) for label, counts in per.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=None,
                        help="timed moves on each side per repeat (default 400, or 80 with "
                             "--quick)")
    parser.add_argument("--quick", action="store_true", help="a short run, for a first look")
    parser.add_argument("--repeat", type=int, default=None,
                        help="measurements, each against its own floor; medians are reported "
                             "(default 3, or 1 with --quick)")
    parser.add_argument("--games", type=int, default=GAMES, help="games played side by side")
    parser.add_argument("--seed", default="server-bench", help="seed of games and choices")
    parser.add_argument("--profile", action="store_true",
                        help="profile move requests even when the ratio meets the target")
    parser.add_argument("--no-save", action="store_true",
                        help="do not write the figures to bench/results/")
    args = parser.parse_args(argv)
    if args.moves is not None and args.moves < 1 or args.games < 1 or \
            args.repeat is not None and args.repeat < 1:
        parser.error("--moves, --games and --repeat must be at least 1")
    moves = args.moves or (80 if args.quick else 400)
    repeats = args.repeat or (1 if args.quick else 3)
    long_games = 4 if args.quick else 8

    print(f"pbem server benchmark ({moves} timed moves a side, {repeats} times; {args.games} "
          f"{PLAYERS}-player games; Flask test client, one thread; "
          f"{platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine() or 'unknown machine'})")
    runs = []
    with tempfile.TemporaryDirectory(prefix="pbem-bench-") as temporary:
        folder = Path(temporary)
        table = Table(folder, args.games, args.seed)
        floor = minimal_app(folder).test_client()
        rng = random.Random(args.seed)
        for _ in range(WARMUP):  # templates compiled, connections opened, caches filled
            table.move(None)
            floor_move(floor, rng, None)
        started()  # as the server's entry points do (wsgi.py, `pbem serve`)

        for repeat in range(repeats):
            ours, theirs = Timings(), Timings()
            for _ in range(moves):  # interleaved, so both see the same machine load
                table.move(ours)
                floor_move(floor, rng, theirs)
            lengths = Lengths(table, long_games, f"{args.seed}-{repeat}").run()
            run = {"loop_ratio": ours.rate() / theirs.rate(),
                   "post_ratio": ours.post_rate() / theirs.post_rate(),
                   "pbem_post_ms_mean": 1000 / ours.post_rate(),
                   "floor_post_ms_mean": 1000 / theirs.post_rate(),
                   "pbem_get_ms_median": statistics.median(ours.gets) * 1000,
                   "lengths": length_figures(lengths)}
            runs.append(run)
            print(f"\n-- measurement {repeat + 1} of {repeats}")
            report("pbem", ours)
            report("floor", theirs)
            line("ratio pbem/floor, GET+POST loop", f"{run['loop_ratio']:.3f}")
            line("ratio pbem/floor, POST alone", f"{run['post_ratio']:.3f}")
            for label, figure in run["lengths"].items():
                line(f"{label}, move {LATE} / move {EARLY}",
                     f"{figure['late_over_early']:.3f}",
                     f"median {figure[f'ms_at_{EARLY}']:.2f} ms at move {EARLY}, "
                     f"{figure[f'ms_at_{LATE}']:.2f} ms at move {LATE}, "
                     f"{figure['samples']} moves each")
        print(f"games: {table.started} started, {table.finished} finished during the runs")

        statements = statement_counts(table, max(40, moves // 4))
        loop_ratio = statistics.median(r["loop_ratio"] for r in runs)
        post_ratio = statistics.median(r["post_ratio"] for r in runs)
        flat = {label: statistics.median(r["lengths"][label]["late_over_early"] for r in runs
                                         if label in r["lengths"])
                for label in runs[0]["lengths"]}
        ok = post_ratio >= TARGET_RATIO
        print(f"\n== summary: medians of {repeats} measurement(s)")
        line("ratio pbem/floor, GET+POST loop", f"{loop_ratio:.3f}")
        line("ratio pbem/floor, POST alone", f"{post_ratio:.3f}",
             f"target >= {TARGET_RATIO}: {'ok' if ok else 'MISSED'}; at least "
             f"{MINIMUM_RATIO}: {'ok' if post_ratio >= MINIMUM_RATIO else 'MISSED'}")
        for label, ratio in flat.items():
            line(f"{label}, move {LATE} / move {EARLY}", f"{ratio:.3f}",
                 f"limit {1 + FLAT_LIMIT:.2f}: "
                 f"{'ok' if abs(ratio - 1) <= FLAT_LIMIT else 'MISSED'}")
        for label, count in statements.items():
            line(f"SQL statements per {label}", f"{count:.1f}")
        if not args.no_save:
            saved = results_file.save("server_bench", {
                "moves": moves, "repeats": repeats, "games": args.games,
                "target_post_ratio": TARGET_RATIO, "minimum_post_ratio": MINIMUM_RATIO,
                "flat_limit": FLAT_LIMIT, "post_ratio": post_ratio, "loop_ratio": loop_ratio,
                "late_over_early": flat, "statements": statements, "runs": runs})
            print(f"figures saved in {saved.relative_to(ROOT)}")
        if not ok or args.profile:
            breakdown(table, max(50, moves // 2))
            profile(table, max(50, moves // 2), top=25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
