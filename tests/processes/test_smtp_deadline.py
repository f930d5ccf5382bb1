"""A mail server whose answer never ends: `250-` lines, each well within the timeout, for ever.

The sender bounds each whole answer (not each read) by `[smtp] timeout_seconds`, so it always
comes back: the mail in hand is recorded (unknown when the server had the whole message), the
others go back to the queue, nothing stays claimed, and a scheduler asked to stop (SIGTERM, or
its `pbem serve` killed) stops. The server is a plain socket server written here, on 127.0.0.1.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime

import pytest
from server import make_app, new_game
from test_hardening_processes import is_running, wait_for
from test_pbem_cli import environment

from pbem.ground.models import QUEUED, SENDING, UNKNOWN
from pbem.scheduler.outbox import deliver_queued

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

TIMEOUT = 5  # [smtp] timeout_seconds: well above a healthy answer on a busy machine
RETURNS_WITHIN = 60  # generous: the sender comes back after a few times TIMEOUT


class EndlessAnswer:
    """An SMTP server that answers normally until `stage` ("greeting", "data": the DATA
    command, "end": the message's final dot), and from there sends `250-` lines, one every
    50 ms, until the client goes away. `endless` is set when such an answer begins."""

    def __init__(self, stage: str):
        self.stage = stage
        self.endless = threading.Event()
        self.stopped = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _forever(self, connection: socket.socket, code: bytes) -> None:
        self.endless.set()
        while not self.stopped.is_set():
            connection.sendall(code + b"-still going\r\n")
            time.sleep(0.05)

    def _serve(self, connection: socket.socket) -> None:
        with connection:
            try:
                if self.stage == "greeting":
                    return self._forever(connection, b"220")
                connection.sendall(b"220 endless.test ESMTP\r\n")
                reader = connection.makefile("rb")
                in_data = False
                for line in reader:
                    if in_data:
                        if line == b".\r\n":
                            in_data = False
                            if self.stage == "end":
                                return self._forever(connection, b"250")
                            connection.sendall(b"250 2.0.0 Accepted\r\n")
                        continue
                    verb = line[:4].upper()
                    if verb == b"DATA":
                        if self.stage == "data":
                            return self._forever(connection, b"250")
                        in_data = True
                        connection.sendall(b"354 Go ahead\r\n")
                    elif verb == b"QUIT":
                        connection.sendall(b"221 Bye\r\n")
                        return None
                    else:  # EHLO, MAIL, RCPT, RSET, NOOP
                        connection.sendall(b"250 OK\r\n")
            except OSError:  # the client gave up: what it should do
                return None
        return None

    def stop(self) -> None:
        self.stopped.set()
        self.listener.close()


@pytest.fixture
def endless(request):
    made: list[EndlessAnswer] = []

    def make(stage: str) -> EndlessAnswer:
        made.append(EndlessAnswer(stage))
        return made[-1]

    yield make
    for one in made:
        one.stop()


def smtp_settings(port: int) -> dict:
    return {"MAIL_BACKEND": "smtp", "SMTP_HOST": "127.0.0.1", "SMTP_PORT": port,
            "SMTP_SECURITY": "none", "SMTP_TIMEOUT_SECONDS": TIMEOUT,
            "MAIL_BOARD_PICTURE": False}


def statuses(app) -> list[str]:
    from test_mail_delivery import rows

    return [row.status for row in rows(app)]


@pytest.mark.parametrize(("stage", "first"), [("greeting", QUEUED), ("data", QUEUED),
                                              ("end", UNKNOWN)])
def test_a_sender_comes_back_from_an_endless_answer(tmp_path, endless, stage, first):
    server = endless(stage)
    app = make_app(tmp_path / "instance", **smtp_settings(server.port))
    new_game(app, 4, "endless")
    outcome: list[dict] = []
    sender = threading.Thread(target=lambda: outcome.append(deliver_queued(
        app, datetime.now(UTC))), daemon=True)
    sender.start()
    sender.join(RETURNS_WITHIN)
    assert not sender.is_alive(), f"the sender was still held after {RETURNS_WITHIN} s"
    assert server.endless.is_set()
    assert statuses(app) == [first] + [QUEUED] * 3, "nothing stays claimed"
    assert SENDING not in statuses(app)
    if first == UNKNOWN:
        assert outcome == [{"sent": 0, "retry": 3, "failed": 0, "unknown": 1}]
    else:
        assert outcome == [{"sent": 0, "retry": 4, "failed": 0, "unknown": 0}]


def held_process(tmp_path, server: EndlessAnswer, *command: str, **extra: str):
    """`python3 -m pbem <command>` on a game whose four invitations wait for `server`."""
    instance = tmp_path / "instance"
    app = make_app(instance, **smtp_settings(server.port))
    new_game(app, 4, "endless")
    settings = {f"PBEM_{key}": str(value).lower() if isinstance(value, bool) else str(value)
                for key, value in smtp_settings(server.port).items()}
    process = subprocess.Popen([sys.executable, "-m", "pbem", *command], cwd=tmp_path,
                               env=environment(instance, **settings, **extra),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return app, process


def test_the_scheduler_stops_on_sigterm_while_an_answer_never_ends(tmp_path, endless):
    server = endless("end")
    app, scheduler = held_process(tmp_path, server, "scheduler")
    try:
        wait_for(lambda: server.endless.is_set() or scheduler.poll() is not None, 120,
                 "the scheduler to reach the endless answer")
        assert scheduler.poll() is None, scheduler.communicate()
        scheduler.send_signal(signal.SIGTERM)
        _out, err = scheduler.communicate(timeout=RETURNS_WITHIN)
    finally:
        if scheduler.poll() is None:
            scheduler.kill()
            scheduler.communicate()
    assert scheduler.returncode == 0, err
    assert "Scheduler stopped." in err
    assert re.search(r"mail \d+ \(invitation, game 1\) may or may not have arrived: .*did not "
                     rf"end within {TIMEOUT} s", err), err
    assert SENDING not in statuses(app) and statuses(app).count(UNKNOWN) == 1


def test_a_killed_serve_leaves_no_scheduler_held_by_an_endless_answer(tmp_path, endless):
    from test_mail_delivery import free_port

    server = endless("end")
    # serve's own sender waits an hour: the scheduler beside it takes the mail.
    app, serve = held_process(tmp_path, server, "serve", "--port", str(free_port()),
                              PBEM_MAIL_SEND_INTERVAL_SECONDS="3600")
    child = None
    try:
        started = next(found for found in (re.search(r"beside it \(process (\d+)\)", line)
                                           for line in serve.stdout) if found)
        child = int(started.group(1))
        wait_for(server.endless.is_set, 120, "the scheduler to reach the endless answer")
        serve.kill()  # SIGKILL: the scheduler hears of it by the parent-death signal
        serve.wait(30)
        wait_for(lambda: not is_running(child), RETURNS_WITHIN, "the scheduler child to stop")
    finally:
        serve.kill()
        serve.communicate()
        if child and is_running(child):
            os.kill(child, signal.SIGKILL)
    assert SENDING not in statuses(app)
