"""A load run as in real use: many players at once on a multi-process server, over real HTTP.

    python3 bench/load_bench.py                        # 30 players for 30 s on SQLite
    python3 bench/load_bench.py --players 60 --seconds 60
    python3 bench/load_bench.py --database-url postgresql+psycopg://user@host/dbname
    python3 bench/load_bench.py --kill                 # a worker and a scheduler killed mid-run
    python3 bench/load_bench.py --login-flood 8        # and 8 clients flooding the admin login

The app runs under gunicorn with 4 workers (`gunicorn -w 4 wsgi:app`, as the README runs it) and
two `pbem scheduler` processes beside it, all on one database: a SQLite file in a fresh
temporary folder, or the PostgreSQL database given (it is migrated if it is new; the run adds
its own games and checks only those). Every process gets its settings from PBEM_* variables
only. Mail goes over SMTP to an aiosmtpd server in this process, on loopback, which counts each
message by its Message-ID.

The players sit at tables of three; a thread per table plays every seat of its game as fast
as the server answers, each seat through its own token, and when the game ends begins the next
of the table's games, made beforehand (`--games-per-table`; a table alone on an idle server
plays a game in about 2.5 s). A table that runs out of games before the end fails the run: its
idle time would be counted as the server's. A move is made through the
JSON API (`GET /api/v1/seat/<token>`, then `POST .../move` with a legal move and the move
count) or through the web form as a browser sends it (`GET /seat/<token>`, the page's CSRF token
and turn, then `POST /seat/<token>/move`, answered 303), chosen at random per move
(`--form-share`). After `--seconds` the players stop, the schedulers send what is left, the
processes are stopped, and the run is checked:

- every move answered 200 (API) or 303 (form) is in the game's log exactly once, at the
  number it was made for, and the log holds no move nobody was told of;
- every mail in the outbox of the run's games was sent and reached the SMTP server exactly
  once, and the SMTP server got no mail the outbox does not hold.

With `--kill`, halfway through the run one gunicorn worker and one scheduler (with its helper
senders) are killed with SIGKILL, as the kernel's OOM killer or a crash would end them: gunicorn
starts a new worker, and the scheduler is started again at once (as systemd's `Restart=` does).
The mail its senders held goes back to the queue once its claim has made no progress for the
outbox's stuck window (15 minutes, `pbem.scheduler.outbox.stuck_after`), so a `--kill` run waits that long
for the mail to drain (its timers' claims come back after `[scheduler] claim_seconds`, 20 s
here). The same checks follow, and they must hold: no answered move lost or made twice, no gap in a game's log,
every mail delivered. A move whose request the killed worker held has no answer (counted as
unanswered; it may or may not have been made, and a move made without an answer is counted),
and a mail the killed scheduler was handing to the SMTP server when it died is sent again by
the next sender (mail is sent at least once: docs/deploy.md), so "twice" may count it.

It reports moves/s (moves answered, over the time the players ran), the move requests'
latency (p50, p95, p99: the POST, per channel and together), answers 5xx, "database is locked"
seen in answers and in the processes' logs, lost and twice-recorded moves and mail, the time
the mail took to drain, and the CPU seconds each part used (web workers, schedulers, this
process's players and SMTP server), which says where the time goes. The figures are saved as
JSON in bench/results/. The exit status is 1 when a target is missed.

With `--login-flood N`, N more threads post admin logins as fast as the server answers, each
for a made-up account from an address of its own (X-Forwarded-For, which the server believes:
`[serve] trusted_proxies = 1`, as behind a proxy), as the attacker of issue 34 did; their
answers are counted apart (`login_flood`) and the players' figures show what the flood cost.

The board picture in HTML mail (`[mail] board_picture`) is off by default here: rendering it
(resvg and Pillow, pbem.games.picture) takes 10 to 15 ms of CPU a move once a scheduler keeps the
bare board (0.1 to 1 s before 6dbb651), and is done by the schedulers when the mail is sent,
not in the move's request. `--board-picture` turns it on; the
mail then drains long after the players stop.
"""

from __future__ import annotations

import argparse
import html
import json
import math
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from datetime import UTC
from email import message_from_bytes
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import requests
import results_file
from aiosmtpd.controller import Controller
from sqlmodel import select

from pbem import create_app
from pbem.ground import schema
from pbem.ground.db import get_engine, reading, writing
from pbem.ground.models import (
    QUEUED,
    SENDING,
    SENT,
    Game,
    MoveRecord,
    Notice,
    NoticeTarget,
    OutboxMessage,
)
from pbem.scheduler.notices import BATCH as NOTICE_CLAIM
from pbem.scheduler.outbox import stuck_after
from pbem.services.creating import create_game
from pbem.services.players import parse_player

TARGET_RATE = 100  # moves a second
WORKERS = 4
SCHEDULERS = 2
SEATS = 3
GAME_SECONDS = 2  # a table alone on an idle server plays a game of three (~120 moves) in 2.5 s
LOCKED = "database is locked"
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
TURN = re.compile(r'name="turn" value="(\d+)"')
LEGAL = re.compile(r"<li><code>([^<]*)</code></li>")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def quantile(samples: list[float], q: float) -> float | None:
    if not samples:
        return None
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def latency(samples: list[float]) -> dict:
    return {"count": len(samples), **{f"p{round(q * 100)}_ms": round(quantile(samples, q) * 1000, 1)
                                      if samples else None for q in (0.5, 0.95, 0.99)}}


class Sink:
    """The SMTP server's handler: counts every message by its Message-ID."""

    def __init__(self):
        self.received: Counter[str] = Counter()
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        message_id = message_from_bytes(envelope.content)["Message-ID"]
        with self.lock:
            self.received[message_id] += 1
        return "250 2.0.0 Accepted"


class Table(threading.Thread):
    """Three players at a table, playing its games one after the other through HTTP until
    `stop` is set: when a game ends, the next one begins at once. A table that runs out of
    games before `stop` says so (`ran_out`): the run then measured idle tables, not the server.
    """

    def __init__(self, base: str, games: list[tuple[int, list[str]]], form_share: float,
                 seed: str, stop: threading.Event):
        super().__init__(daemon=True, name=f"table-{games[0][0]}")
        self.base, self.games = base, games
        self.form_share, self.stop = form_share, stop
        self.random = random.Random(seed)
        # game id -> (move number, notation) of each move answered as made
        self.moved: dict[int, list[tuple[int, str]]] = {game_id: [] for game_id, _ in games}
        self.latency = {"api": [], "form": []}  # seconds per move POST
        self.refused = Counter()  # 4xx answers to moves, by status (a stale turn: 409)
        self.server_errors: list[str] = []
        self.locked = 0
        self.unanswered = 0
        self.waiting_for: int | None = None
        self.playing = 0  # the index in `games` of the game being played
        self.finished = 0  # games played to their end
        self.ran_out = False

    def run(self) -> None:
        with requests.Session() as http:
            while not self.stop.is_set():
                game_id, tokens = self.games[self.playing]
                try:
                    if self.waiting_for is None:
                        self.waiting_for = self.get(http, f"/api/v1/seat/{tokens[0]}",
                                                    json=True)["waiting_for"]
                    if self.waiting_for is None:  # the game is over: the next one
                        self.finished += 1
                        self.playing += 1
                        if self.playing == len(self.games):
                            self.ran_out = True
                            return
                    elif self.random.random() < self.form_share:
                        self.by_form(http, game_id, tokens[self.waiting_for])
                    else:
                        self.by_api(http, game_id, tokens[self.waiting_for])
                except requests.RequestException:
                    self.unanswered += 1
                    self.waiting_for = None
                    time.sleep(0.05)

    def answered(self, answer: requests.Response) -> None:
        if answer.status_code >= 500:
            self.server_errors.append(f"{answer.request.method} {answer.request.url}: "
                                      f"{answer.status_code} {answer.text[:300]}")
        if LOCKED in answer.text:
            self.locked += 1

    def get(self, http, path: str, json: bool = False):
        answer = http.get(self.base + path, timeout=60)
        self.answered(answer)
        answer.raise_for_status()
        return answer.json() if json else answer.text

    def by_api(self, http, game_id: int, token: str) -> None:
        document = self.get(http, f"/api/v1/seat/{token}", json=True)
        legal = [m for m in document["legal"] if "<" not in m]
        if not legal:
            self.waiting_for = None
            return
        move, number = self.random.choice(legal), document["moves_played"]
        started = time.perf_counter()
        answer = http.post(f"{self.base}/api/v1/seat/{token}/move", timeout=60,
                           json={"move": move, "moves_played": number})
        elapsed = time.perf_counter() - started
        self.answered(answer)
        if answer.status_code == 200:
            self.latency["api"].append(elapsed)
            self.moved[game_id].append((number, answer.json()["applied"]["move"]))
            self.waiting_for = answer.json()["waiting_for"]
        else:
            self.refused[answer.status_code] += 1
            self.waiting_for = None

    def by_form(self, http, game_id: int, token: str) -> None:
        page = self.get(http, f"/seat/{token}")
        legal = [html.unescape(m) for m in LEGAL.findall(page) if "<" not in m]
        csrf, turn = CSRF.search(page), TURN.search(page)
        if not (legal and csrf and turn):
            self.waiting_for = None
            return
        move, number = self.random.choice(legal), int(turn.group(1))
        started = time.perf_counter()
        answer = http.post(f"{self.base}/seat/{token}/move", timeout=60, allow_redirects=False,
                           data={"csrf_token": csrf.group(1), "turn": str(number), "move": move})
        elapsed = time.perf_counter() - started
        self.answered(answer)
        if answer.status_code == 303:
            self.latency["form"].append(elapsed)
            self.moved[game_id].append((number, move))
        else:
            self.refused[answer.status_code] += 1
        self.waiting_for = None  # the redirect does not say who moves next


class LoginFlood(threading.Thread):
    """A client posting admin logins until `stop`: each for a made-up account, from an address
    of its own (X-Forwarded-For; made up too), with the login page's CSRF token."""

    def __init__(self, base: str, number: int, stop: threading.Event):
        super().__init__(name=f"flood-{number}", daemon=True)
        self.base, self.number, self.stop = base, number, stop
        self.answers: Counter[int] = Counter()
        self.latency: list[float] = []

    def run(self) -> None:
        chooser = random.Random(self.number)
        with requests.Session() as client:
            token = None
            while not self.stop.is_set():
                try:
                    if token is None:
                        token = CSRF.search(client.get(f"{self.base}/admin/login",
                                                       timeout=60).text).group(1)
                    address = (f"10.{self.number}.{chooser.randrange(256)}."
                               f"{chooser.randrange(1, 255)}")
                    began = time.perf_counter()
                    status = client.post(f"{self.base}/admin/login", timeout=60, data={
                        "csrf_token": token, "email": f"x{chooser.randrange(10**9)}@example.org",
                        "password": "guess guess guess"}, headers={"X-Forwarded-For": address},
                        allow_redirects=False).status_code
                    self.latency.append(time.perf_counter() - began)
                except requests.RequestException:
                    status = 0
                self.answers[status] += 1


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process and its waited-for children, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    """The processes `pid` started that are still running (a scheduler's helper senders)."""
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


class Processes:
    """gunicorn and the schedulers, their logs in `folder`."""

    def __init__(self, folder: Path, env: dict, port: int):
        self.folder, self.env, self.port = folder, env, port
        self.running: dict[str, subprocess.Popen] = {}
        self.cpu: Counter[str] = Counter()

    def start(self) -> None:
        for i in range(1, SCHEDULERS + 1):
            self._start(f"scheduler-{i}", [sys.executable, "-m", "pbem", "scheduler"])
        self._start("web", [sys.executable, "-m", "gunicorn", "-w", str(WORKERS), "-b",
                            f"127.0.0.1:{self.port}", "wsgi:app"])
        deadline = time.monotonic() + 180
        while True:
            for name, process in self.running.items():
                if process.poll() is not None:
                    raise SystemExit(f"{name} stopped at start:\n{self.log(name)[-3000:]}")
            try:
                if requests.get(f"http://127.0.0.1:{self.port}/health", timeout=5).ok and \
                        all("running the job" in self.log(f"scheduler-{i}")
                            for i in range(1, SCHEDULERS + 1)):
                    return
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("the processes did not start within 180 s")
            time.sleep(0.1)

    def _start(self, name: str, command: list[str]) -> None:
        with (self.folder / f"{name}.log").open("ab") as log:
            self.running[name] = subprocess.Popen(command, cwd=ROOT, env=self.env, stdout=log,
                                                  stderr=subprocess.STDOUT)

    def workers(self) -> list[int]:
        pid = self.running["web"].pid
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]

    def sample_cpu(self) -> dict[str, float]:
        """CPU seconds so far: the web workers together, the schedulers together (with their
        helper senders, which live as long as they do)."""
        web = sum(cpu_seconds(p) for p in self.workers()) + cpu_seconds(self.running["web"].pid)
        schedulers = sum(cpu_seconds(pid) for n, p in self.running.items() if n != "web"
                         for pid in (p.pid, *children(p.pid)))
        # With the time of the processes killed so far (--kill).
        return {"web": web + self.cpu["web"], "schedulers": schedulers + self.cpu["schedulers"]}

    def kill_worker(self) -> int:
        """SIGKILL to one gunicorn worker (gunicorn starts another); its pid."""
        pid = self.workers()[0]
        self.cpu["web"] += cpu_seconds(pid)  # its time so far, which the samples then lose
        os.kill(pid, signal.SIGKILL)
        return pid

    def kill_scheduler(self, name: str) -> int:
        """SIGKILL to a scheduler and its helper senders, then start it again; the old pid."""
        process = self.running[name]
        helpers = children(process.pid)
        self.cpu["schedulers"] += sum(cpu_seconds(pid) for pid in (process.pid, *helpers))
        process.send_signal(signal.SIGKILL)
        for pid in helpers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        process.wait(30)
        self._start(name, [sys.executable, "-m", "pbem", "scheduler"])
        return process.pid

    def stop(self) -> None:
        for process in self.running.values():
            process.send_signal(signal.SIGTERM)
        for process in self.running.values():
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def log(self, name: str) -> str:
        path = self.folder / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""


MAIL_CLAIM = 10  # mails a sender over SMTP claims at a time (docs/deploy.md)
KILL_CLAIM_SECONDS = 20  # a killed scheduler's claims come back this soon in a --kill run


def settings(folder: Path, database_url: str, smtp_port: int, web_port: int,
             board_picture: bool, senders: int | None = None, kill: bool = False,
             behind_proxy: bool = False, notices: bool = False) -> dict:
    chosen = {"MAIL_SENDERS": senders} if senders is not None else {}
    if notices:  # the receiver is on this machine; no hourly limit in a run this short
        chosen.update(NOTIFY_ALLOW_HOSTS="127.0.0.1", NOTIFY_PER_HOUR=3600)
    if kill:
        chosen["SCHEDULER_CLAIM_SECONDS"] = KILL_CLAIM_SECONDS
    if behind_proxy:  # the login flood's addresses come in X-Forwarded-For
        chosen["SERVE_TRUSTED_PROXIES"] = 1
    return {"SECRET_KEY": "load-bench", "INSTANCE_PATH": str(folder / "instance"),
            "DATABASE_URL": database_url, "BASE_URL": f"http://127.0.0.1:{web_port}",
            "MAIL_BACKEND": "smtp", "SMTP_HOST": "127.0.0.1", "SMTP_PORT": smtp_port,
            "SMTP_SECURITY": "none", "SCHEDULER_TICK_SECONDS": 1,
            "MAIL_BOARD_PICTURE": board_picture, **chosen}


def make_games(app, tables: int, per_table: int,
               seed: str) -> list[list[tuple[int, list[str]]]]:
    """`per_table` new games for each table, each as (game id, its seats' tokens)."""
    made = []
    with app.app_context():
        for t in range(tables):
            players = [parse_player(f"Player {t}-{s} <load{t}-{s}@example.org>")
                       for s in range(SEATS)]
            games = []
            for g in range(per_table):
                created = create_game(players, f"{seed}-{t}-{g}", title=f"load {seed} {t}.{g}")
                games.append((created.game_id,
                              [link.rsplit("/", 1)[1] for _, _, link in created.links]))
            made.append(games)
    return made


def drain(app, games: list[int], seconds: float) -> float | None:
    """Wait until no mail of `games` is queued or being sent; the seconds it took, or None."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        with reading(app) as session:
            left = session.exec(select(OutboxMessage.id).where(
                OutboxMessage.game_id.in_(games),
                OutboxMessage.status.in_([QUEUED, SENDING]))).first()
        if left is None:
            return time.monotonic() - started
        time.sleep(0.2)
    return None


def check_moves(app, tables: list[Table]) -> dict:
    lost = twice = untold = gaps = 0
    with reading(app) as session:
        for table in tables:
            for game_id, moved in table.moved.items():
                game = session.get(Game, game_id)
                log = session.exec(select(MoveRecord).where(MoveRecord.game_id == game_id)
                                   .order_by(MoveRecord.number)).all()
                logged = Counter((r.number, r.notation) for r in log)
                told = Counter(moved)
                twice += sum(n - 1 for n in logged.values() if n > 1)
                twice += sum(n - 1 for n in told.values() if n > 1)  # one number answered twice
                lost += sum(1 for key in told if key not in logged)
                untold += sum(1 for key in logged if key not in told)
                numbers = [r.number for r in log]
                if numbers != list(range(game.turn)):  # a gap or a repeat in the log's numbers
                    gaps += len(set(range(game.turn)) - set(numbers))
                    twice += len(numbers) - len(set(numbers))
    return {"lost": lost, "twice": twice, "gaps": gaps, "applied_without_answer": untold}


def check_mail(app, games: list[int], sink: Sink) -> dict:
    with reading(app) as session:
        rows = session.exec(select(OutboxMessage).where(OutboxMessage.game_id.in_(games))).all()
    ids = {r.message_id if r.message_id.startswith("<") else f"<{r.message_id}>": r
           for r in rows}
    received = dict(sink.received)
    return {
        "outbox": len(rows),
        "not_sent": sum(r.status != SENT for r in rows),
        "lost": sum(1 for mid in ids if received.get(mid, 0) == 0),
        "twice": sum(n - 1 for mid, n in received.items() if mid in ids and n > 1),
        "unknown_at_server": sum(n for mid, n in received.items() if mid not in ids),
    }


def database_figures(app) -> dict:
    with get_engine(app).connect() as connection:
        name = connection.dialect.name
        figures = {"database": name}
        if name == "sqlite":
            figures["integrity_check"] = connection.exec_driver_sql(
                "PRAGMA integrity_check").scalar()
        else:
            figures["server_version"] = connection.exec_driver_sql("SHOW server_version").scalar()
    return figures


class NoticeReceiver:
    """A local ntfy server for --notices: records the topic and the arrival time of every
    notice (ntfy's JSON publish: {"topic", "title", "message"})."""

    def __init__(self):
        self.arrived: dict[str, list[float]] = defaultdict(list)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                receiver.arrived[body["topic"]].append(time.time())
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def add_notice_targets(app, made, port: int) -> dict[int, str]:
    """An ntfy target at the receiver for every player, getting every kind; their topics by
    target id."""
    topics = {}
    with app.app_context(), writing() as session:
        for t in range(len(made)):
            for seat in range(SEATS):
                topic = f"load-{t}-{seat}"
                target = NoticeTarget(email=f"load{t}-{seat}@example.org", shown="ntfy://127.0.0.1",
                                      url=f"ntfy://127.0.0.1:{port}/{topic}",
                                      kinds="turn,reminder,timeout,end")
                session.add(target)
                session.flush()
                topics[target.id] = topic
    return topics


def drain_notices(app, games: list[int], seconds: float) -> float | None:
    """Wait until no notice of `games` is queued or being sent; the seconds it took, or None."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        with reading(app) as session:
            left = session.exec(select(Notice.id).where(
                Notice.game_id.in_(games), Notice.status.in_([QUEUED, SENDING]))).first()
        if left is None:
            return time.monotonic() - started
        time.sleep(0.2)
    return None


def check_notices(app, games: list[int], topics: dict[int, str],
                  receiver: NoticeReceiver) -> dict:
    """Each target's notices against what its topic received: lost, twice, and the time from
    the move to the arrival (the n-th notice of a target paired with its n-th arrival)."""
    with reading(app) as session:
        rows = session.exec(select(Notice).where(Notice.game_id.in_(games))
                            .order_by(Notice.id)).all()
    by_target = defaultdict(list)
    for row in rows:
        by_target[row.target_id].append(row)
    lost = twice = 0
    delays = []
    for target_id, topic in topics.items():
        queued, arrived = by_target.get(target_id, []), receiver.arrived.get(topic, [])
        lost += max(0, len(queued) - len(arrived))
        twice += max(0, len(arrived) - len(queued))
        for row, at in zip(queued, sorted(arrived)):
            created = row.created_at if row.created_at.tzinfo else row.created_at.replace(
                tzinfo=UTC)
            delays.append(at - created.timestamp())
    return {"outbox": len(rows), "not_sent": sum(r.status != SENT for r in rows),
            "received": sum(len(v) for v in receiver.arrived.values()), "lost": lost,
            "twice": twice, "move_to_arrival_seconds": latency(delays),
            "kinds": dict(Counter(r.kind for r in rows))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=30,
                        help="players, at tables of three (default 30)")
    parser.add_argument("--seconds", type=float, default=30, help="how long they play")
    parser.add_argument("--database-url", help="a PostgreSQL database (default: a new SQLite "
                        "file in a temporary folder)")
    parser.add_argument("--form-share", type=float, default=0.5,
                        help="the share of moves made through the web form (default 0.5)")
    parser.add_argument("--board-picture", action="store_true",
                        help="render the board picture into HTML mail, as the default settings "
                             "do (slow; see above)")
    parser.add_argument("--drain-seconds", type=float, default=None,
                        help="how long the mail may take to drain afterwards (default 600 s; "
                             "with --kill, the outbox's stuck window and 300 s more)")
    parser.add_argument("--games-per-table", type=int, default=None, metavar="K",
                        help="games made for each table, played one after the other "
                             f"(default: 2 + one per {GAME_SECONDS} s of --seconds)")
    parser.add_argument("--senders", type=int, metavar="N",
                        help="[mail] senders of each scheduler (default: the product's)")
    parser.add_argument("--kill", action="store_true",
                        help="halfway through, SIGKILL one web worker and one scheduler (started "
                             "again at once), then check that nothing was lost")
    parser.add_argument("--login-flood", type=int, default=0, metavar="N",
                        help="N clients posting admin logins for made-up accounts from "
                             "addresses of their own beside the players (default 0)")
    parser.add_argument("--notices", action="store_true",
                        help="an ntfy target for every player (a local receiver in this "
                             "process): the scheduler delivers turn notices beside the mail; "
                             "prints the notice outbox's figures")
    parser.add_argument("--seed", default="load")
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/")
    args = parser.parse_args()
    tables_count = max(1, args.players // SEATS)

    load_at_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    folder = Path(tempfile.mkdtemp(prefix="pbem-load-"))
    sink = Sink()
    smtp = Controller(sink, hostname="127.0.0.1", port=free_port(), ready_timeout=10)
    smtp.start()
    port = free_port()
    database_url = args.database_url or f"sqlite:///{folder / 'instance' / 'pbem.sqlite3'}"
    config = settings(folder, database_url, smtp.port, port, args.board_picture, args.senders,
                      args.kill, behind_proxy=args.login_flood > 0, notices=args.notices)
    receiver = NoticeReceiver() if args.notices else None
    if receiver is not None:
        config["NOTIFY_ALLOW_HOSTS"] = "127.0.0.1"
    app = create_app({**config, "TESTING": False})
    schema.upgrade(app)
    per_table = args.games_per_table or 2 + math.ceil(args.seconds / GAME_SECONDS)
    made = make_games(app, tables_count, per_table, f"{args.seed}-{int(time.time())}")
    games = [game_id for table_games in made for game_id, _ in table_games]
    topics = add_notice_targets(app, made, receiver.server.server_port) if receiver else {}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PBEM_", "FLASK_"))}
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH")] if p)
    env.update({f"PBEM_{k}": str(v).lower() if isinstance(v, bool) else str(v)
                for k, v in config.items()})
    processes = Processes(folder, env, port)
    stop = threading.Event()
    killed: dict = {}
    tables = [Table(f"http://127.0.0.1:{port}", table_games, args.form_share,
                    f"{args.seed}-{table_games[0][0]}", stop) for table_games in made]
    floods = [LoginFlood(f"http://127.0.0.1:{port}", n, stop) for n in range(args.login_flood)]
    print(f"{len(tables) * SEATS} players at {len(tables)} tables for {args.seconds:g} s; "
          f"gunicorn -w {WORKERS} and {SCHEDULERS} schedulers on {database_url.split(':')[0]}; "
          f"logs in {folder}", flush=True)
    try:
        processes.start()
        cpu_before = processes.sample_cpu()
        own_before = time.process_time()
        started = time.perf_counter()
        for table in tables:
            table.start()
        for flood in floods:
            flood.start()
        if args.kill:
            stop.wait(args.seconds / 2)
            killed["at_seconds"] = round(time.perf_counter() - started, 1)
            killed["worker"] = processes.kill_worker()
            killed["scheduler"] = processes.kill_scheduler("scheduler-1")
            print(f"killed worker {killed['worker']} and scheduler-1 ({killed['scheduler']}) "
                  f"at {killed['at_seconds']} s; scheduler-1 started again", flush=True)
            stop.wait(args.seconds - (time.perf_counter() - started))
        else:
            stop.wait(args.seconds)
        stop.set()
        for table in tables:
            table.join(120)
        for flood in floods:
            flood.join(120)
        ran = time.perf_counter() - started
        own = time.process_time() - own_before
        cpu_after = processes.sample_cpu()
        drain_seconds = args.drain_seconds or (
            stuck_after(app).total_seconds() + 300 if args.kill else 600)
        drained = drain(app, list(games), drain_seconds)
        notices_drained = drain_notices(app, list(games), drain_seconds) if receiver else None
        cpu_drained = processes.sample_cpu()
    finally:
        stop.set()
        processes.stop()
        smtp.stop()
        if receiver is not None:
            receiver.stop()

    logs = "".join(processes.log(name) for name in processes.running)
    moves = sum(len(moved) for t in tables for moved in t.moved.values())
    api = [s for t in tables for s in t.latency["api"]]
    form = [s for t in tables for s in t.latency["form"]]
    figures = {
        "players": len(tables) * SEATS, "tables": len(tables), "seconds": round(ran, 2),
        "workers": WORKERS, "schedulers": SCHEDULERS, "form_share": args.form_share,
        "board_picture": args.board_picture, "senders": app.config["MAIL_SENDERS"],
        **database_figures(app),
        "moves": moves, "moves_per_second": round(moves / ran, 1),
        "games": {"made": len(games), "finished": sum(t.finished for t in tables),
                  "tables_out_of_games": sum(t.ran_out for t in tables)},
        "latency": {"all": latency(api + form), "api": latency(api), "form": latency(form)},
        "refused": dict(sum((t.refused for t in tables), Counter())),
        "server_errors": sum(len(t.server_errors) for t in tables),
        "unanswered": sum(t.unanswered for t in tables),
        "database_locked": {"answers": sum(t.locked for t in tables),
                            "logs": logs.count(LOCKED)},
        "tracebacks_in_logs": logs.count("Traceback"),
        "moves_check": check_moves(app, tables),
        "mail": {**check_mail(app, list(games), sink),
                 "drain_seconds": round(drained, 1) if drained is not None else None},
        "cpu_seconds": {
            "web_while_playing": round(cpu_after["web"] - cpu_before["web"], 1),
            "schedulers_while_playing": round(cpu_after["schedulers"]
                                              - cpu_before["schedulers"], 1),
            "players_and_smtp_while_playing": round(own, 1),
            "schedulers_draining": round(cpu_drained["schedulers"] - cpu_after["schedulers"],
                                         1)},
        "notices": {**check_notices(app, list(games), topics, receiver),
                    "drain_seconds": round(notices_drained, 1)
                    if notices_drained is not None else None} if receiver else None,
        "target_moves_per_second": TARGET_RATE,
        "killed": killed or None,
        "load_average_at_start": load_at_start,
    }
    if floods:
        attempts = [s for f in floods for s in f.latency]
        figures["login_flood"] = {
            "clients": len(floods),
            "attempts_per_second": round(sum(sum(f.answers.values()) for f in floods) / ran, 1),
            "answers": {str(k): v for k, v in sorted(sum((f.answers for f in floods),
                                                         Counter()).items())},
            "latency": latency(attempts)}
    used = cpu_after["web"] - cpu_before["web"] + cpu_after["schedulers"] \
        - cpu_before["schedulers"] + own
    figures["cpu_seconds"].update({
        "web_per_move_ms": round((cpu_after["web"] - cpu_before["web"]) / max(moves, 1) * 1000,
                                 1),
        # Below 1: the run waited for the CPU, which other work on the machine held.
        "share_of_machine": round(used / (ran * os.cpu_count()), 2)})
    get_engine(app).dispose()
    errors = [e for t in tables for e in t.server_errors][:5]
    print(json.dumps(figures, indent=2))
    for error in errors:
        print("5xx:", error)
    problems = []
    if figures["server_errors"]:
        problems.append(f"{figures['server_errors']} answers 5xx")
    if figures["database_locked"]["answers"] or figures["database_locked"]["logs"]:
        problems.append("'database is locked' seen")
    check = figures["moves_check"]
    if check["lost"] or check["twice"] or check["gaps"]:
        problems.append(f"moves lost {check['lost']}, twice {check['twice']}, gaps in the logs "
                        f"{check['gaps']}")
    mail = figures["mail"]
    # After a kill, a mail the killed sender was handing over is sent again (at least once).
    # At most the mails the killed scheduler's senders held: MAIL_CLAIM for each.
    held = MAIL_CLAIM * max(1, app.config["MAIL_SENDERS"])
    twice_allowed = mail["twice"] if args.kill and mail["twice"] <= held else 0
    if mail["not_sent"] or mail["lost"] or mail["twice"] > twice_allowed or \
            mail["unknown_at_server"]:
        problems.append(f"mail not sent {mail['not_sent']}, lost {mail['lost']}, twice "
                        f"{mail['twice']}, unknown {mail['unknown_at_server']}")
    notices = figures["notices"]
    if notices and (notices["not_sent"] or notices["lost"]
                    or notices["twice"] > (NOTICE_CLAIM * SCHEDULERS if args.kill else 0)):
        problems.append(f"notices not sent {notices['not_sent']}, lost {notices['lost']}, "
                        f"twice {notices['twice']}")
    if figures["games"]["tables_out_of_games"]:
        problems.append(f"{figures['games']['tables_out_of_games']} tables ran out of games "
                        f"before the end (more with --games-per-table)")
    if figures["moves_per_second"] < TARGET_RATE:
        problems.append(f"{figures['moves_per_second']} moves/s, under the target of "
                        f"{TARGET_RATE}")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not args.no_save:
        print("saved", results_file.save("load_bench", figures).relative_to(ROOT))
    print("targets met" if not problems else "targets missed: " + "; ".join(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
