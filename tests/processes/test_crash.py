"""Crash safety, for real: the app under gunicorn (4 workers) and two `pbem scheduler` processes
on one database, players moving through the JSON API without pause, mail going out to an
aiosmtpd server. In the middle of it the whole server (master and workers) and the scheduler
that is handing a mail to the SMTP server are killed with SIGKILL at the same moment; both are
started again and the players carry on.

Afterwards: the database passes its own checks (`PRAGMA integrity_check` on SQLite; on
PostgreSQL amcheck's `verify_heapam` on every table and `bt_index_check` on every index), each
game's stored state is what its move log replays to, every move answered 200 is in the log
exactly once at the number it was played at, and every mail reached the SMTP server exactly
once, the one in hand when its scheduler died included (its claim is taken back once stale,
which the test jumps to instead of waiting the quarter of an hour).

It runs over 10 s because it starts gunicorn twice and schedulers three times, which is most of
its time (35 to 65 s a database on the shared 2-core machine at a load average of 15; the
moves and mail themselves take a few seconds). Everything is waited for by polling.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import threading
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
import requests
from server import make_app, new_game
from sqlmodel import select
from test_mail_delivery import Recorder, SmtpServer
from test_processes import Cluster, _settings

import engine
from pbem.ground.db import get_engine, reading, utcnow
from pbem.ground.models import QUEUED, SENDING, SENT, Game, MoveRecord, OutboxMessage, Seat
from pbem.scheduler.outbox import deliver_all_due, stuck_after

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

GAMES = 6
BEFORE = 20  # moves answered 200 before the crash
AFTER = 10  # and after the restart
WAIT = 120  # seconds any one stage may take before the test fails instead of hanging


def wait_for(check, what, seconds: float = WAIT):
    """Poll `check` until it gives something true; `what` (or what it returns) for the error."""
    deadline = time.monotonic() + seconds
    while not (value := check()):
        assert time.monotonic() < deadline, \
            f"timed out waiting for {what() if callable(what) else what}"
        time.sleep(0.02)
    return value


class Sink(Recorder):
    """The SMTP server. Once `hold_next` is set, the next message waits before its answer
    until its sender's connection is gone (`dropped` is set then): a mail whose sender died
    before the server's 250 was not taken, as with a real mail server. Its client's address
    is `held_peer`."""

    def __init__(self):
        super().__init__()
        self.hold_next = False
        self.held_peer: tuple[str, int] | None = None
        self.dropped = threading.Event()

    async def handle_DATA(self, server, session, envelope):
        if not self.hold_next:
            return await super().handle_DATA(server, session, envelope)
        self.hold_next = False
        self.held_peer = session.peer
        try:
            while not server.transport.is_closing():
                await asyncio.sleep(0.005)
            return "421 4.4.2 Connection lost"  # reaches nobody
        finally:
            self.dropped.set()


def process_with_port(pids: list[int], port: int) -> int:
    """Which of `pids` holds the loopback TCP socket whose local port is `port`."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                if os.readlink(fd) in inodes:
                    return pid
            except FileNotFoundError:
                continue
    raise AssertionError(f"no process of {pids} holds port {port}")


class Player(threading.Thread):
    """Plays one game through the API as fast as the server answers: asks whose turn it is,
    takes a legal move of that seat, sends it. Keeps every move answered 200."""

    def __init__(self, base: str, game_id: int, tokens: list[str], stop: threading.Event):
        super().__init__(daemon=True)
        self.base, self.game_id, self.tokens, self.stop = base, game_id, tokens, stop
        self.acknowledged: list[tuple[int, int, str]] = []  # (game, move number, notation)
        self.server_errors: list[str] = []
        self.unanswered = 0  # requests cut off by the crash (or sent while it was down)
        self.random = random.Random(game_id)

    def run(self) -> None:
        with requests.Session() as http:
            while not self.stop.is_set():
                try:
                    self.play_one(http)
                except requests.HTTPError:
                    raise
                except requests.RequestException:  # no answer, or one cut off
                    self.unanswered += 1
                    time.sleep(0.02)  # the server is down: try again until it is back

    def get(self, http, token: str) -> dict:
        answer = http.get(f"{self.base}/api/v1/seat/{token}", timeout=30)
        if answer.status_code >= 500:
            self.server_errors.append(f"GET {answer.status_code} {answer.text[:200]}")
        answer.raise_for_status()
        return answer.json()

    def play_one(self, http) -> None:
        seat = self.get(http, self.tokens[0])["waiting_for"]
        document = self.get(http, self.tokens[seat])
        playable = [m for m in document["legal"] if "<" not in m]
        if not playable:
            return
        number = document["moves_played"]
        answer = http.post(f"{self.base}/api/v1/seat/{self.tokens[seat]}/move", timeout=30,
                           json={"move": self.random.choice(playable), "moves_played": number})
        if answer.status_code == 200:
            self.acknowledged.append((self.game_id, number, answer.json()["applied"]["move"]))
        elif answer.status_code >= 500:
            self.server_errors.append(f"POST {answer.status_code} {answer.text[:200]}")


class CrashCluster(Cluster):
    """The processes, with mail sent without the board's picture: rendering it takes most of
    a mail's time (0.1 to 1 s), which tells nothing about crashes."""

    def __init__(self, *args):
        super().__init__(*args)
        self.env["PBEM_MAIL_BOARD_PICTURE"] = "false"

    def start_all(self, *schedulers: str) -> None:
        """The web server and `schedulers`, started side by side; returns once the server
        answers and each scheduler runs its job."""
        runs = {}
        for name in schedulers:
            log = self.logs / f"{name}.log"
            runs[name] = log.read_text().count("running the job") if log.exists() else 0
            self.start_scheduler(name)
        self.start_web()
        for name in schedulers:
            wait_for(lambda name=name: self.check_alive() or (self.logs / f"{name}.log").read_text()
                     .count("running the job") > runs[name], f"{name} to start")

    def kill_web(self) -> None:
        """SIGKILL to gunicorn's master and every worker, as a power cut would stop them."""
        master = self.processes.pop("web")
        workers = Path(f"/proc/{master.pid}/task/{master.pid}/children").read_text().split()
        master.send_signal(signal.SIGKILL)  # first, so that it starts no new worker
        for pid in workers:
            os.kill(int(pid), signal.SIGKILL)
        master.wait(10)
        for pid in workers:
            wait_for(lambda pid=pid: not Path(f"/proc/{pid}").exists()
                     or Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
                     in "ZX", f"worker {pid} to die", 10)


def check_database(app) -> None:
    with get_engine(app).connect() as connection:
        if connection.dialect.name == "sqlite":
            assert connection.exec_driver_sql("PRAGMA integrity_check").all() == [("ok",)]
            assert connection.exec_driver_sql("PRAGMA foreign_key_check").all() == []
            return
        connection.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS amcheck")
        tables = connection.exec_driver_sql(
            "SELECT c.oid, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = "
            "c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'").all()
        assert len(tables) >= 5
        for oid, name in tables:
            problems = connection.exec_driver_sql(
                f"SELECT * FROM verify_heapam({oid}, check_toast => true)").all()
            assert problems == [], f"table {name}: {problems}"
        indexes = connection.exec_driver_sql(
            "SELECT c.oid, c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam "
            "WHERE n.nspname = 'public' AND a.amname = 'btree'").all()
        assert len(indexes) >= len(tables)
        for oid, _ in indexes:  # raises on a damaged index
            connection.exec_driver_sql(f"SELECT bt_index_check({oid}, true)")
        connection.rollback()


def test_killing_the_server_and_a_scheduler_mid_moves_and_mail_loses_and_repeats_nothing(
        tmp_path):
    smtp = SmtpServer()
    smtp.handler = sink = Sink()
    smtp.start()
    app = make_app(tmp_path / "instance", **_settings(smtp.port))  # no board pictures either
    cluster = CrashCluster(app, smtp, tmp_path)
    stop = threading.Event()
    players: list[Player] = []

    def acknowledged() -> int:
        return sum(len(p.acknowledged) for p in players)

    try:
        starting = threading.Thread(target=cluster.start_all, args=("scheduler-1", "scheduler-2"))
        starting.start()  # the games are made while the processes start
        games = {}
        for i in range(GAMES):
            created, tokens = new_game(app, 3, seed=f"crash-{i}", title=f"crash {i}")
            games[created.game_id] = tokens
            players.append(Player(f"http://127.0.0.1:{cluster.port}", created.game_id, tokens,
                                  stop))
        starting.join(WAIT)
        cluster.check_alive()
        assert not starting.is_alive() and cluster.web_workers() == 4
        for player in players:
            player.start()
        wait_for(lambda: acknowledged() >= BEFORE and len(sink.received) >= 5,
                 "moves and mail before the crash")

        # Hold the next mail at the SMTP server before its answer, then kill the scheduler
        # sending it and the whole web server together, while the players keep moving.
        sink.hold_next = True
        peer = wait_for(lambda: sink.held_peer, "a scheduler to send a mail")
        schedulers = {name: p.pid for name, p in cluster.processes.items() if name != "web"}
        victim_pid = process_with_port(list(schedulers.values()), peer[1])
        victim = next(name for name, pid in schedulers.items() if pid == victim_pid)
        cluster.kill(victim)
        cluster.kill_web()
        wait_for(sink.dropped.is_set, "the SMTP server to see the connection drop")
        at_crash = acknowledged()
        with reading(app) as session:
            left_claimed = session.exec(select(OutboxMessage).where(
                OutboxMessage.status == SENDING, OutboxMessage.claim.like(f"{victim_pid}@%"))
            ).all()
        assert left_claimed, "the killed scheduler held no mail"

        cluster.start_all(victim)  # both started again, as systemd would
        wait_for(lambda: acknowledged() >= at_crash + AFTER, "moves after the restart")
        stop.set()
        for player in players:
            player.join(WAIT)
            assert not player.is_alive()

        def settled() -> bool:  # all mail out but what the dead scheduler still holds
            with reading(app) as session:
                rows = session.exec(select(OutboxMessage).where(
                    OutboxMessage.status.in_([QUEUED, SENDING]))).all()
            return all(r.status == SENDING and r.claim.startswith(f"{victim_pid}@")
                       for r in rows)

        def unsettled() -> str:
            with reading(app) as session:
                rows = session.exec(select(OutboxMessage).where(
                    OutboxMessage.status.in_([QUEUED, SENDING]))).all()
            return "the schedulers to send the mail: " + "; ".join(
                f"{r.id} {r.status} {r.claim} {r.next_attempt_at} {r.last_error}"
                for r in rows)[:2000]

        wait_for(settled, unsettled)
        cluster.check_alive()
    finally:
        stop.set()
        if "web" in cluster.processes:  # no request is left: no need to wait for any
            cluster.processes["web"].send_signal(signal.SIGINT)
        cluster.stop()
    # The dead scheduler's claim, once stale, goes back to the queue and is sent.
    deliver_all_due(app, utcnow() + stuck_after(app) + timedelta(seconds=1))
    smtp.stop()
    for name in ("web", "scheduler-1", "scheduler-2"):
        log = cluster.log(name)
        assert "Traceback" not in log and "locked" not in log, f"{name}: {log}"

    assert sum(p.unanswered for p in players) >= 1, "no request was cut off by the crash"
    assert [e for p in players for e in p.server_errors] == []
    check_database(app)

    # Every move answered 200 is in the log once, at its number; each game is its log replayed.
    moves = {(g, n): notation for p in players for g, n, notation in p.acknowledged}
    assert len(moves) == acknowledged() >= BEFORE + AFTER, "a number answered 200 twice"
    with reading(app) as session:
        for game_id in games:
            game = session.get(Game, game_id)
            log = session.exec(select(MoveRecord).where(MoveRecord.game_id == game_id)
                               .order_by(MoveRecord.number)).all()
            assert [r.number for r in log] == list(range(game.turn))
            by_number = {r.number: r.notation for r in log}
            for (g, number), notation in moves.items():
                if g == game_id:
                    assert by_number.get(number) == notation, (game_id, number)
            seats = sorted(session.exec(select(Seat).where(Seat.game_id == game_id)).all(),
                           key=lambda s: s.number)
            replayed = engine.replay([s.colour for s in seats], game.seed,
                                     [r.notation for r in log], start=game.start_seat)
            assert game.state_json == engine.to_json(replayed), game_id
        mail = session.exec(select(OutboxMessage)).all()

    # Every mail sent, and received exactly once: the one in hand at the crash included.
    assert mail and {m.status for m in mail} == {SENT}
    received = Counter(r["message"]["Message-ID"] for r in sink.received)
    expected = {m.message_id if m.message_id.startswith("<") else f"<{m.message_id}>"
                for m in mail}
    assert set(received) == expected
    assert [mid for mid, count in received.items() if count != 1] == []
    assert any(m.attempts == 1 and m.id in {r.id for r in left_claimed} for m in mail)
