"""`pbem ingest-mail` as a mail server's pipe runs it: a fresh process per mail, the mail on
standard input, the envelope on the command line (issue 29, points 2, 3, 5, 8; issue 34,
point 9). Its exit status is what the mail server acts on: 0 handled, 75 try again later.

The command runs with a settings file, as the Postfix recipe in deploy/postfix does: as a real
process (`python -m pbem ingest-mail`, `Club.ingest`) where the test is about how the mail
server runs it (its command line, the environment it gives), and through its entry in this
process (`Club.ingest_here`: the same environment, standard input, exit status and output)
where the test is about what it decides (tests/processes/test_deploy_postfix.py has real Postfix run the
real command). The hand-over to a running `mail-listener` is tested against the real listener
(aiosmtpd in this process) on the same database.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import smtplib
import socket
import subprocess
import sys
import threading
import time
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import make_msgid
from pathlib import Path

import pytest
from server import (
    Mailbox,
    database_url,
    game_state,
    in_process,
    make_app,
    new_game,
    text_of,
)
from sqlmodel import func, select

import engine
from pbem.ground.db import reading
from pbem.ground.models import IncomingMail, MoveRecord, OutboxMessage
from pbem.mailin.listener import start_listener

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parent.parent.parent
DOMAIN = "games.example.org"
HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


class Club:
    """A server's settings file and database with a game whose seat to move has a reply key,
    as a pipe sees them: the settings name the database; the secret key sits apart."""

    def __init__(self, tmp_path: Path, **settings):
        self.instance = tmp_path / "instance"
        self.app = make_app(self.instance, MAIL_REPLY_DOMAIN=DOMAIN)
        new_game(self.app)
        self.url = self.app.config["DATABASE_URL"]
        self.listen_port = free_port()  # nothing listens there unless a test starts it
        self.config = tmp_path / "config.toml"
        # Without a database_url the settings name the SQLite file of their instance folder:
        # here another one, empty, as when a pipe reads other settings than the server.
        self.pipe_instance = self.instance if settings.get("database", True) \
            else tmp_path / "pipe-instance"
        self.pipe_instance.mkdir(mode=0o700, exist_ok=True)
        lines = [f'instance_path = "{self.pipe_instance}"', 'base_url = "http://localhost"',
                 "[mail]", f'reply_domain = "{DOMAIN}"', f"listen_port = {self.listen_port}"]
        if settings.get("database", True):
            lines.insert(0, f'database_url = "{self.url}"')
        self.config.write_text("\n".join(lines) + "\n")

    def reply(self, *, to: str | None = None, text: str | None = None, **headers) -> bytes:
        """A reply from the seat to move to its newest mail's Reply-To, with a legal move."""
        _, state = game_state(self.app)
        address = f"p{state.current}@example.org"
        keyed = [m for m in Mailbox(self.app).to(address) if m["Reply-To"]]
        message = EmailMessage()
        message["From"] = address
        message["To"] = to or str(keyed[-1]["Reply-To"])
        message["Subject"] = "Re: your turn"
        message["Message-ID"] = make_msgid(domain="example.org")
        for name, value in headers.items():
            message[name.replace("_", "-")] = value
        message.set_content(text if text is not None else str(engine.legal_moves(state)[0]))
        self.reply_to = str(keyed[-1]["Reply-To"])
        return message.as_bytes()

    def environment(self, env: dict | None) -> dict[str, str]:
        environment = {k: v for k, v in os.environ.items()
                       if not k.startswith(("PBEM_", "FLASK_"))}
        environment.update(PBEM_CONFIG=str(self.config), **(env or {}))
        return environment

    def ingest(self, raw: bytes, *args: str, env: dict | None = None
               ) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pbem", "ingest-mail", *args], input=raw,
                              cwd=ROOT, env=self.environment(env), capture_output=True,
                              timeout=120, check=False)

    def ingest_here(self, raw: bytes, *args: str, env: dict | None = None
                    ) -> subprocess.CompletedProcess:
        """`ingest` through the command's entry (what pbem.entry calls) in this process."""
        from pbem import create_app
        from pbem.mailin.pipe import main

        return in_process(lambda: main(list(args), create_app), self.environment(env), ROOT,
                          ["pbem", "ingest-mail", *args], stdin=raw, binary=True)

    def counts(self) -> dict[str, int]:
        with reading(self.app) as session:
            return {model.__name__: session.exec(select(func.count()).select_from(model)).one()
                    for model in (MoveRecord, IncomingMail, OutboxMessage)}


@pytest.fixture
def club(tmp_path):
    return Club(tmp_path)


def test_reply_to_all_is_applied_once_and_never_bounced(club):
    """Postfix runs the pipe with every recipient of a reply to all: `--recipient a b` (the
    `${recipient}` argument expanded without a recipient limit), repeated options, or plain
    addresses. The play+ address's mail is applied; a delivery to the other address alone
    (with `pbem_destination_recipient_limit = 1`) is a copy, left alone and unanswered."""
    raw = club.reply()
    judge = f"judge@{DOMAIN}"
    done = club.ingest(raw, "--recipient", club.reply_to, judge)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith("applied"), done.stdout
    before = club.counts()
    copy = club.ingest(raw, "--recipient", judge)
    assert copy.returncode == 0, copy.stderr
    assert copy.stdout.decode().startswith("copy"), copy.stdout
    assert club.counts() == before  # no answer, no record, no move
    again = club.ingest(club.reply(), f"--recipient={judge}", f"--recipient={club.reply_to}")
    assert again.returncode == 0 and again.stdout.decode().startswith("applied"), again


def test_a_wrong_command_line_defers_the_mail(club):
    """A usage error is 75, not 2: Postfix keeps the mail while the recipe is fixed."""
    done = club.ingest_here(club.reply(), "--no-such-option")
    assert done.returncode == 75, done
    assert club.counts()["MoveRecord"] == 0


def test_a_missing_database_defers_the_mail_and_is_never_created(tmp_path):
    """Settings that name no database: the SQLite file is not made (an empty one would take
    every reply for an unknown key), no secret_key file is written, the exit status is 75 and
    the log line names the database it tried."""
    club = Club(tmp_path, database=False)
    if not club.url.startswith("sqlite"):
        pytest.skip("an SQLite file that is not there")
    raw = club.reply()
    done = club.ingest_here(raw, club.reply_to)
    assert done.returncode == 75, done
    expected = club.pipe_instance / "pbem.sqlite3"
    assert f"no database at {expected}" in done.stderr.decode()
    assert not expected.exists()
    assert not (club.pipe_instance / "secret_key").exists()


def test_an_unreachable_database_defers_the_mail(club):
    """The database cannot be reached: 75, and the mail server delivers it again."""
    port = free_port()
    done = club.ingest_here(club.reply(), club.reply_to, env={
        "PBEM_DATABASE_URL": f"postgresql+psycopg://pbem@{HOST}:{port}/nowhere"})
    assert done.returncode == 75, done
    assert f"{HOST}:{port}" in done.stderr.decode() and "failed" in done.stderr.decode()
    assert club.counts()["MoveRecord"] == 0


def test_a_database_mid_upgrade_defers_the_mail(club):
    """Schema behind this server's (init-db not run yet), or ahead of it (made by a newer
    server): 75, saying what to do; once the versions agree, the same mail is applied."""
    from sqlalchemy import text

    from pbem.ground import schema
    from pbem.ground.db import get_engine

    raw = club.reply()
    with club.app.app_context():
        head = schema.head_revision(club.app)
    for version, says in (("5a1e7c0b9d20", "does not know"), (None, "pbem init-db")):
        with get_engine(club.app).begin() as connection:
            connection.execute(text("DELETE FROM alembic_version"))
            if version:
                connection.execute(text(f"INSERT INTO alembic_version VALUES ('{version}')"))
        done = club.ingest_here(raw, club.reply_to)
        assert done.returncode == 75, done
        assert says in done.stderr.decode()
    with get_engine(club.app).begin() as connection:
        connection.execute(text(f"INSERT INTO alembic_version VALUES ('{head}')"))
    done = club.ingest_here(raw, club.reply_to)
    assert done.returncode == 0 and done.stdout.decode().startswith("applied"), done


def test_the_secrets_come_from_the_env_file(tmp_path):
    """The pipe's environment is empty but for what the recipe gives: `--env-file` reads the
    same secrets file as the systemd units (database URL and secret key there, not in the
    settings). Without it the database is not found; an unreadable file defers the mail."""
    club = Club(tmp_path, database=False)
    secrets_file = tmp_path / "secrets.env"
    secrets_file.write_text(f"# the systemd units' EnvironmentFile\nPBEM_SECRET_KEY=s3cret\n"
                            f"PBEM_DATABASE_URL={club.url}\n")
    secrets_file.chmod(0o600)
    raw = club.reply()
    missing = club.ingest(raw, "--env-file", str(tmp_path / "nope.env"), club.reply_to)
    assert missing.returncode == 75 and b"nope.env" in missing.stderr, missing
    done = club.ingest(raw, "--env-file", str(secrets_file), club.reply_to)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith("applied"), done.stdout
    assert not (club.pipe_instance / "secret_key").exists()


def test_an_oversized_mail_reports_its_true_size(club):
    raw = club.reply(text="x" * 70 + "\n" * 8000 + "y" * 300_000)
    done = club.ingest_here(raw, club.reply_to)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith(f"oversized: {len(raw)} bytes"), done.stdout


def test_with_the_listener_running_the_pipe_hands_the_mail_over(club):
    """The listener answers on [mail] listen_port: the pipe hands the mail to it (no app of
    its own), and exits with what it answered."""
    controller = start_listener(club.app, HOST, club.listen_port)
    try:
        done = club.ingest_here(club.reply(), club.reply_to)
        assert done.returncode == 0, done.stderr
        assert done.stdout.decode().startswith("handed to the mail listener"), done.stdout
        assert club.counts()["MoveRecord"] == 1
    finally:
        controller.stop()
    # Down: the pipe handles the mail itself.
    done = club.ingest_here(club.reply(), club.reply_to)
    assert done.returncode == 0 and done.stdout.decode().startswith("applied"), done


def test_a_listener_that_cannot_reach_its_database_defers_the_pipe_mail(club, tmp_path,
                                                                       caplog):
    """451 from the listener (its database is down) is 75 for the pipe; the listener's log
    line says so without the reply key (issue 34, point 7: it logged the live key)."""
    broken = make_app(tmp_path / "broken", MAIL_REPLY_DOMAIN=DOMAIN,
                      DATABASE_URL=database_url(tmp_path / "broken"))
    broken.config["DATABASE_URL"] = "unused"
    from pbem.ground import db

    broken.extensions["pbem_db"] = db.make_engine(
        f"postgresql+psycopg://pbem@{HOST}:{free_port()}/nowhere")
    broken.extensions["pbem_db_writer"] = broken.extensions["pbem_db"].execution_options(
        pbem_write=True)
    controller = start_listener(broken, HOST, club.listen_port)
    try:
        done = club.ingest_here(club.reply(), club.reply_to)
    finally:
        controller.stop()
    assert done.returncode == 75, done
    assert b"451" in done.stderr
    assert club.counts()["MoveRecord"] == 0
    key = club.reply_to.split("+", 1)[1].split("@", 1)[0]
    failed = [r for r in caplog.records if r.name == "pbem.mailin.listener"]
    assert failed and "answered 451" in failed[-1].getMessage()
    assert key not in caplog.text


# --- issue 41, points 1 and 2: nothing lost between the pipe and the listener; a line per mail

def test_a_reply_with_lines_longer_than_smtp_s_is_handed_over_and_applied(club):
    """A mail server gives the pipe LF line ends (the whole mail was one line too long for
    the listener, refused "500 Line too long" and counted as handled: lost); and real mail
    programs write lines longer than SMTP's 1,000 bytes (an HTML part on one line)."""
    raw = club.reply()
    message = BytesParser(policy=policy.default).parsebytes(raw)
    move = message.get_content().strip()
    message.add_alternative("<html><body><p>" + move + "</p>" + "<span>quoted</span>" * 400
                            + "</body></html>", subtype="html", cte="8bit")
    raw = message.as_bytes()
    assert b"\r\n" not in raw and max(map(len, raw.split(b"\n"))) > 5000
    controller = start_listener(club.app, HOST, club.listen_port)
    try:
        done = club.ingest_here(raw, club.reply_to)
    finally:
        controller.stop()
    assert done.returncode == 0, done
    assert done.stdout.decode().startswith("handed to the mail listener"), done.stdout
    assert club.counts()["MoveRecord"] == 1


class NotOurs:
    """An SMTP server on the listener's port that greets as the listener does but answers a
    mail's DATA with `answer` and decides nothing (or never answers, `answer` None)."""

    def __init__(self, answer: str | None):
        self.answer = answer
        self.release = threading.Event()

    async def handle_DATA(self, server, session, envelope):
        if self.answer is None:
            await asyncio.get_running_loop().run_in_executor(None, self.release.wait, 30)
            return "250 2.0.0 too late"
        return self.answer


@pytest.mark.parametrize("answer", [
    "500 Line too long (see RFC5321 4.5.3.1.6)", "554 5.6.0 Message refused",
    "552 Error: Too much mail data", "250 OK", "250 2.0.0 Accepted", None],
    ids=["line-too-long", "554", "too-much", "250-ok", "250-not-ours", "timeout"])
def test_only_the_listener_s_own_decision_counts_as_handled(club, answer, monkeypatch):
    """Whatever answers on the port without the listener's words for its decision (a 5xx or
    250 of aiosmtpd or of another server, no answer in time) makes the pipe exit 75: the
    mail server keeps the mail and delivers it again. Before, every 5xx and 250 was 0."""
    from aiosmtpd.controller import Controller

    from pbem.mailin import pipe

    monkeypatch.setattr(pipe, "HAND_OVER_TIMEOUT_SECONDS", 3)
    handler = NotOurs(answer)
    server = Controller(handler, hostname=HOST, port=club.listen_port,
                        ident=pipe.LISTENER_IDENT, ready_timeout=30)
    server.start()
    try:
        done = club.ingest_here(club.reply(), club.reply_to)
    finally:
        handler.release.set()
        server.stop()
    assert done.returncode == 75, done
    said = done.stderr.decode()
    assert "the mail is left to the mail server to deliver again" in said, said
    assert (answer.split()[0] if answer else "timed out") in said, said
    assert club.counts()["MoveRecord"] == 0


def test_the_listener_s_answers_are_its_decisions():
    from pbem.mailin.listener import ACCEPTED, REFUSED
    from pbem.mailin.pipe import is_decision

    for answer in (ACCEPTED, *REFUSED.values()):
        _code, text = answer.split(" ", 1)
        assert is_decision(text), answer
    for text in ("Line too long (see RFC5321 4.5.3.1.6)", "OK", "2.0.0 Accepted",
                 "Error: Too much mail data", "2.0.0 pbem decided:", "5.3.4 pbem decided: x\ny"):
        assert not is_decision(text), text


class SyslogSocket:
    """A syslog socket (as the journal's /dev/log); the lines it received."""

    def __init__(self, path: Path):
        self.path = path
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind(str(path))
        self.socket.setblocking(False)

    def lines(self) -> list[str]:
        got = []
        while True:
            try:
                got.append(self.socket.recv(65536).decode("utf-8", "replace"))
            except BlockingIOError:
                return got


def test_every_mail_the_pipe_handles_has_its_line_in_the_server_s_log(club, tmp_path):
    """Postfix keeps only the start of what the pipe says; its line for each mail goes to the
    system log too ([log] syslog, the journal's /dev/log): the outcome, the Message-ID and
    never the key. One mail of each outcome, one line each."""
    syslog = SyslogSocket(tmp_path / "log.sock")
    env = {"PBEM_LOG_SYSLOG": str(syslog.path)}
    applied = club.reply()
    key = club.reply_to.split("+", 1)[1].split("@", 1)[0]
    unknown = f"play+{'A' * 32}@{DOMAIN}"
    mails = {  # each made when it is sent, to the newest mail
        "applied": lambda: (applied, club.reply_to),
        "duplicate": lambda: (applied, club.reply_to),
        "refused": lambda: (club.reply(text="GG Nowhere: Atlantis"), club.reply_to),
        "automatic": lambda: (club.reply(Auto_Submitted="auto-replied"), club.reply_to),
        "unknown": lambda: (club.reply(to=unknown), unknown),
        "unreadable": lambda: (nested(club, 100), club.reply_to),
    }
    for outcome, make in mails.items():
        raw, to = make()
        done = club.ingest_here(raw, to, env=env)
        assert done.returncode == 0, done
        message_id = BytesParser(policy=policy.default).parsebytes(raw)["Message-ID"]
        lines = [line for line in syslog.lines() if "pbem.mailin.inbox: incoming mail" in line]
        assert len(lines) == 1, (outcome, lines)
        assert re.search(rf"pbem-ingest-mail\[\d+\]: (INFO|WARNING) pbem\.mailin\.inbox: "
                         rf"incoming mail {re.escape(message_id)}( for seat \d+)?: "
                         rf"{outcome}\b", lines[0]), (outcome, lines[0])
        assert key not in lines[0]
    syslog.socket.close()


# --- issue 42, point 5: a hostile mail is answered once and dropped, not retried for days

def nested(club, depth: int, flat: int = 0) -> bytes:
    """A reply to the seat's key whose body is `depth` multiparts nested in each other (and
    `flat` more parts in the innermost), LF line ends as a mail server gives them."""
    club.reply()
    lines = ["From: p0@example.org", f"To: {club.reply_to}", "Subject: Re: your turn",
             f"Message-ID: {make_msgid(domain='example.org')}", "MIME-Version: 1.0"]
    for level in range(depth):
        lines += [f'Content-Type: multipart/mixed; boundary="b{level}"', "", f"--b{level}"]
    lines += ["Content-Type: text/plain", "", "GG Franken: Mainz"]
    for _ in range(flat):
        lines += [f"--b{depth - 1}", "Content-Type: text/plain", "", "x"]
    lines += [f"--b{level}--" for level in reversed(range(depth))]
    return "\n".join(lines).encode() + b"\n"


def unreadable_answers(club) -> list[str]:
    texts = [" ".join(text_of(m).split()) for m in Mailbox(club.app).to("p0@example.org")]
    return [text for text in texts if "its text could not be read" in text]


@pytest.mark.parametrize("depth,flat", [(2500, 0), (30, 0), (1, 1000)],
                         ids=["2500-nested", "30-nested", "1000-parts"])
def test_a_mail_of_too_many_or_too_deep_parts_is_answered_once_and_dropped(club, depth, flat):
    """2,500 nested parts to a player's own key made ingest-mail exit 75 (an AttributeError
    after the parser gave up) and cost seconds of CPU a try, for days. Now the parts are
    counted on the bytes before anything parses them: the mail is dropped (0), the seat told
    once what to do; the same mail again is not answered again."""
    raw = nested(club, depth, flat)
    started = time.process_time()
    done = club.ingest_here(raw, club.reply_to)
    assert done.returncode == 0, done
    assert done.stdout.decode().startswith("unreadable: "), done.stdout
    assert "not parsed" in done.stdout.decode()
    counts = club.counts()
    assert counts["MoveRecord"] == 0 and counts["IncomingMail"] == 1
    answers = unreadable_answers(club)
    assert len(answers) == 1
    assert "Reply again as plain text" in answers[0]
    again = club.ingest_here(raw, club.reply_to)
    assert again.returncode == 0 and again.stdout.decode().startswith("duplicate"), again
    assert len(unreadable_answers(club)) == 1
    # Both deliveries and the answers in this process: far below the parser's seconds.
    assert time.process_time() - started < 2


def test_a_mail_the_parser_gives_up_on_is_unreadable_not_a_crash(club, monkeypatch):
    """Within the limits, a mail the standard library's parser still cannot take (here made
    to fail) is read as unreadable and answered, never a fault that the mail server retries."""
    from pbem.mailin import inbox

    monkeypatch.setattr(inbox, "MIME_MAX_CONTAINERS", 10_000)
    monkeypatch.setattr(inbox, "MIME_MAX_PARTS", 10_000)
    done = club.ingest_here(nested(club, 1200), club.reply_to)  # RecursionError in the parser
    assert done.returncode == 0, done
    assert done.stdout.decode().startswith("unreadable: the mail could not be parsed"), done
    assert club.counts()["IncomingMail"] == 1


def test_a_hostile_mail_to_an_unknown_key_is_dropped_unanswered(club):
    raw = nested(club, 2500).replace(club.reply_to.encode(), f"play+{'B' * 32}@{DOMAIN}".encode())
    done = club.ingest_here(raw, f"play+{'B' * 32}@{DOMAIN}")
    assert done.returncode == 0, done
    assert done.stdout.decode().startswith("unknown"), done.stdout
    assert club.counts() == {"MoveRecord": 0, "IncomingMail": 0,
                             "OutboxMessage": club.counts()["OutboxMessage"]}


def test_a_hostile_mail_while_the_database_is_down_is_kept(club):
    """Only a temporary cause is 75: the same mail with the database unreachable."""
    done = club.ingest_here(nested(club, 2500), club.reply_to, env={
        "PBEM_DATABASE_URL": f"postgresql+psycopg://pbem@{HOST}:{free_port()}/nowhere"})
    assert done.returncode == 75, done


def test_a_hostile_mail_handed_to_the_listener_is_its_decision(club):
    """Through the listener: 250 with its words, the pipe exits 0, the seat told once."""
    controller = start_listener(club.app, HOST, club.listen_port)
    try:
        done = club.ingest_here(nested(club, 2500), club.reply_to)
    finally:
        controller.stop()
    assert done.returncode == 0 and done.stdout.decode().startswith("handed to"), done
    assert club.counts()["IncomingMail"] == 1


# --- issue 43, point 18: aiosmtpd's chatter kept out of the log at INFO

def test_the_listener_logs_one_line_per_mail_and_none_of_aiosmtpd_s_chatter(club, caplog):
    caplog.set_level(logging.INFO)
    controller = start_listener(club.app, HOST, club.listen_port)
    try:
        raw = club.reply()
        with smtplib.SMTP(HOST, club.listen_port, timeout=30) as client:
            client.sendmail("p0@example.org", [club.reply_to], raw.replace(b"\n", b"\r\n"))
    finally:
        controller.stop()
    assert club.counts()["MoveRecord"] == 1
    chatter = [r.getMessage() for r in caplog.records if r.name.startswith("mail.")]
    assert not chatter, chatter
    ours = [r for r in caplog.records if r.name == "pbem.mailin.inbox"]
    assert len(ours) == 1 and ": applied (" in ours[0].getMessage()


def test_a_mail_just_under_the_limit_is_never_refused_by_the_listener_s_smtp_layer(club):
    """Its size as SMTP carries it (CRLF, dots doubled) is what the listener counts: a mail
    under the limit with LF ends but over it as sent is read by the pipe itself, never left
    to aiosmtpd's "552 Too much mail data" (which is no decision: the mail would be retried
    for days)."""
    from pbem.mailin.pipe import as_crlf, smtp_size

    limit = club.app.config["MAIL_MAX_INCOMING_BYTES"]
    reply = club.reply()
    # Short lines starting with a dot, as many as fit with CRLF ends: the dots that SMTP
    # doubles take the mail thousands of bytes over the limit.
    raw = reply + b".xxxxxxxx\n" * ((limit - len(as_crlf(reply))) // 11)
    assert len(as_crlf(raw)) <= limit < smtp_size(raw) - 10_000
    controller = start_listener(club.app, HOST, club.listen_port)
    try:
        done = club.ingest_here(raw, club.reply_to)
    finally:
        controller.stop()
    assert done.returncode == 0, done
    # Read here (its lines of dots are no orders: refused, and answered).
    assert done.stdout.decode().startswith("refused: "), done.stdout
