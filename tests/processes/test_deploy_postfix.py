"""The Postfix recipe of deploy/postfix, run for real (issue 29, points 2 to 5 and 7).

A private Postfix instance (its own config_directory, queue and log in a temporary folder,
smtpd on a free port of 127.0.0.1, started as root with `postfix -c DIR start`) gets the
recipe's files as they are, with only paths, the port and the pipe's user put in: its
main.cf lines, its transport map (postmap'ed) and its pipe service, which runs `pbem
ingest-mail` with `--env-file` and `--recipient ${recipient}` as an unprivileged user. Mail goes
in over SMTP on the instance's port from 127.0.0.1, which the instance does not count as its
own network (mynetworks is elsewhere): to Postfix it is mail from the Internet, so
relay_domains is what lets it in.

The settings file the pipe reads names no database: the database URL and the secret key come
from the secrets file, as in deploy/. Postfix writes its log to a file (maillog_file) that a
failure shows. Without postfix, or not as root, the module is skipped, saying so.

The Python that runs the pipe must be reachable by the pipe's user: where it lives under a
folder others cannot enter (/root here, for pyenv), the test lets others traverse (not
read) that folder while it runs and puts its mode back afterwards.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import re
import shutil
import smtplib
import socket
import stat
import subprocess
import sys
import sysconfig
import tempfile
import time
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

import pytest
from parts import require
from server import Mailbox, game_state, make_app, new_game, text_of
from sqlalchemy import text
from sqlmodel import func, select

import engine
from pbem.ground.db import get_engine, reading
from pbem.ground.models import IncomingMail, MoveRecord, OutboxMessage
from pbem.mailin.listener import start_listener

ROOT = Path(__file__).resolve().parent.parent.parent
RECIPE = ROOT / "deploy" / "postfix"
DOMAIN = "games.example.org"  # the recipe's own
HOST = "127.0.0.1"
PIPE_USER = "nobody"
WAIT = 120  # seconds for Postfix to act; a hang fails the test

POSTFIX = require("postfix")  # the module skipped without it (failed in CI): tests/parts.py
pytestmark = [
    pytest.mark.usefixtures("database"),  # on SQLite and PostgreSQL
    pytest.mark.skipif(os.geteuid() != 0, reason="a private Postfix instance starts as root"),
]

# The instance around the recipe: where it keeps its queue and log, who it runs as, and that
# 127.0.0.1 is not its own network. No DNS: mail to the reply domain goes to the pipe.
INSTANCE_MAIN = """\
compatibility_level = 3.6
queue_directory = {root}/queue
data_directory = {root}/data
mail_owner = postfix
setgid_group = postdrop
default_privs = nobody
myhostname = mx.test.localhost
mydomain = test.localhost
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 192.0.2.0/24
smtp_host_lookup = native
disable_dns_lookups = yes
maillog_file = {root}/maillog
maillog_file_prefixes = {root}
alias_maps =
alias_database =
relayhost =
biff = no
"""
INSTANCE_MASTER = """\
{host}:{port} inet n - n - - smtpd
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
smtp      unix  -       -       n       -       -       smtp
relay     unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def pbem_command() -> str:
    """The installed `pbem` command, as the recipe's /srv/pbem/venv/bin/pbem."""
    found = Path(sysconfig.get_path("scripts")) / "pbem"
    if found.exists():
        return str(found)
    which = shutil.which("pbem")
    if which is None:
        pytest.skip("no installed `pbem` command (pip install -e .)")
    return which


TRAVERSE_STATE = Path(tempfile.gettempdir()) / "pbem-postfix-traverse.json"


@contextlib.contextmanager
def traversable(paths: list[Path]):
    """Let others enter (x, not r) every folder above `paths` that they cannot; put the modes
    back once no test process that asked is running any more. Test processes run side by side
    (pytest-xdist): the folders and their old modes are shared in a file under a lock, with the
    processes that use them, so one that ends does not lock the others' pipes out."""
    with _traverse_state() as state:
        if not state["users"]:
            for folder, mode in state["modes"].items():  # left by a process that died
                Path(folder).chmod(mode)
            state["modes"] = {}
            for path in paths:
                for folder in reversed(path.parents):
                    mode = folder.stat().st_mode
                    if str(folder) not in state["modes"] and not mode & stat.S_IXOTH:
                        state["modes"][str(folder)] = stat.S_IMODE(mode)
                        folder.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
        state["users"].append(os.getpid())
    try:
        yield
    finally:
        with _traverse_state() as state:
            state["users"] = [pid for pid in state["users"] if pid != os.getpid()]
            if not state["users"]:
                for folder, mode in state["modes"].items():
                    Path(folder).chmod(mode)
                state["modes"] = {}


@contextlib.contextmanager
def _traverse_state():
    import fcntl
    import json

    with open(TRAVERSE_STATE.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = json.loads(TRAVERSE_STATE.read_text()) if TRAVERSE_STATE.exists() else {}
        state.setdefault("users", [])
        state.setdefault("modes", {})
        state["users"] = [pid for pid in state["users"] if _alive(pid)]
        yield state
        TRAVERSE_STATE.write_text(json.dumps(state))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def render(root: Path, port: int, pbem: str, config: Path, secrets: Path) -> None:
    """The instance's files: its own lines, then the recipe's with only paths, the port and the
    pipe's user put in."""
    etc = root / "etc"
    main = (RECIPE / "main.cf").read_text().replace("/etc/postfix/", f"{etc}/")
    (etc / "main.cf").write_text(INSTANCE_MAIN.format(root=root) + "\n" + main)
    master = (RECIPE / "master.cf").read_text()
    for old, new in (("/srv/pbem/venv/bin/pbem", pbem), ("/etc/pbem/config.toml", str(config)),
                     ("/etc/pbem/secrets.env", str(secrets)), ("user=pbem", f"user={PIPE_USER}")):
        assert old in master, f"deploy/postfix/master.cf no longer says {old}"
        master = master.replace(old, new)
    (etc / "master.cf").write_text(INSTANCE_MASTER.format(host=HOST, port=port) + "\n" + master)
    shutil.copy(RECIPE / "transport", etc / "transport")
    subprocess.run(["postmap", "-c", str(etc), str(etc / "transport")], check=True,
                   capture_output=True, timeout=60)


class Postfix:
    def __init__(self, root: Path, port: int, app):
        self.root, self.port, self.app = root, port, app
        self.etc = root / "etc"
        self.log = root / "maillog"

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([POSTFIX, "-c", str(self.etc), *args], capture_output=True,
                              text=True, timeout=120, check=False)

    def logged(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def send(self, message: EmailMessage, recipients: list[str],
             sender: str = "p0@example.org") -> str:
        """Send over SMTP as a mail server on the Internet would; the queue id Postfix gave."""
        with smtplib.SMTP(HOST, self.port, timeout=30) as client:
            client.sendmail(sender, recipients, message.as_bytes())
        return self.queue_id(str(message["Message-ID"]))

    def queue_id(self, message_id: str) -> str:
        pattern = re.compile(rf"postfix/cleanup\[\d+\]: ([0-9A-F]+): message-id={re.escape(message_id)}")
        return self.wait(lambda: (m := pattern.search(self.logged())) and m.group(1),
                         f"cleanup of {message_id}")

    def statuses(self, queue_id: str) -> list[str]:
        return re.findall(rf"{queue_id}: to=<[^>]*>,.* status=(\w+)", self.logged())

    def wait(self, probe, what: str):
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            found = probe()
            if found:
                return found
            time.sleep(0.2)
        raise AssertionError(f"waited {WAIT} s for {what}; Postfix's log:\n{self.logged()[-6000:]}")


class Syslog:
    """A syslog socket (as journald's /dev/log) that the pipe's user may write to; what it
    received, as text."""

    def __init__(self, path: Path):
        self.path = path
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.socket.bind(str(path))
        self.socket.setblocking(False)
        path.chmod(0o666)
        self.lines: list[str] = []

    def text(self) -> str:
        while True:
            try:
                self.lines.append(self.socket.recv(65536).decode("utf-8", "replace"))
            except BlockingIOError:
                return "\n".join(self.lines)

    def wait_for(self, part: str) -> str:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            found = [line for line in self.text().splitlines() if part in line]
            if found:
                return found[0]
            time.sleep(0.1)
        raise AssertionError(f"waited {WAIT} s for {part} in the syslog: {self.text()[-3000:]}")

    def close(self) -> None:
        self.socket.close()


@pytest.fixture(scope="module")
def postfix(database, tmp_path_factory):
    """The recipe's Postfix in front of a club with one game, its settings and secrets apart."""
    root = Path(tempfile.mkdtemp(prefix="pbem-postfix-"))
    root.chmod(0o755)
    user = pwd.getpwnam(PIPE_USER)
    group = grp.getgrgid(user.pw_gid)
    instance = root / "club"
    app = make_app(instance, MAIL_REPLY_DOMAIN=DOMAIN)
    new_game(app, 3, "postfix", start=0)
    for path in [instance, *instance.rglob("*")]:
        os.chown(path, user.pw_uid, user.pw_gid)  # the club's files are the pipe user's
    config = root / "config.toml"  # no database_url, no secret key: those are secrets
    syslog = Syslog(root / "syslog.sock")  # the server's log, where the pipe writes too
    config.write_text(f'instance_path = "{instance}"\nbase_url = "http://localhost"\n'
                      f'[log]\nsyslog = "{syslog.path}"\n'
                      f'[mail]\nreply_domain = "{DOMAIN}"\nlisten_port = {free_port()}\n')
    secrets = root / "secrets.env"  # as the systemd units read it: root:pbem, 0640
    secrets.write_text(f"PBEM_SECRET_KEY=postfix-test-secret\n"
                       f"PBEM_DATABASE_URL={app.config['DATABASE_URL']}\n")
    os.chown(secrets, 0, group.gr_gid)
    secrets.chmod(0o640)
    for folder in ("etc", "queue", "data"):
        (root / folder).mkdir()
    os.chown(root / "data", pwd.getpwnam("postfix").pw_uid, -1)
    port = free_port()
    pbem = pbem_command()
    render(root, port, pbem, config, secrets)
    server = Postfix(root, port, app)
    server.syslog = syslog
    with traversable([Path(os.path.realpath(sys.executable)), Path(pbem), ROOT]):
        started = server.run("start")
        try:
            assert started.returncode == 0, (started.stdout, started.stderr, server.logged())
            server.wait(lambda: "daemon started" in server.logged(), "Postfix to start")
            yield server
        finally:
            server.run("stop")
            server.wait(lambda: server.run("status").returncode != 0, "Postfix to stop")
            syslog.close()
            shutil.rmtree(root, ignore_errors=True)


def counts(app) -> dict[str, int]:
    with reading(app) as session:
        return {model.__name__: session.exec(select(func.count()).select_from(model)).one()
                for model in (MoveRecord, IncomingMail, OutboxMessage)}


def reply(app, *, cc: str | None = None, **headers) -> tuple[EmailMessage, str]:
    """A reply of the seat to move to its newest mail as a mail program writes it: a legal
    move on top, then the whole mail quoted under an attribution line (several kilobytes);
    and its address. Postfix hands it to the pipe with LF line ends."""
    _, state = game_state(app)
    address = f"p{state.current}@example.org"
    mails = [m for m in Mailbox(app).to(address) if m["Reply-To"]]
    keyed = mails[-1]
    # The thread is quoted whole: the newest mail, and under it the turn's own mail ("Your
    # turn", or the invitation of the seat that starts) where that came first.
    turn = [m for m in mails if not str(m["Subject"]).startswith("Re:")
            and ("Your turn" in str(m["Subject"]) or "you start" in str(m["Subject"]))][-1]
    thread = [(keyed, "> ")] + ([(turn, ">> ")] if turn is not keyed else [])
    message = EmailMessage()
    message["From"] = address
    message["To"] = str(keyed["Reply-To"])
    if cc:
        message["Cc"] = cc
    message["Subject"] = "Re: " + str(keyed["Subject"])
    message["Message-ID"] = make_msgid(domain="example.org")
    message["In-Reply-To"] = str(keyed["Message-ID"])
    for name, value in headers.items():
        message[name.replace("_", "-")] = value
    quoted = "\n".join(f"{mark[:-2]} On {mail['Date']}, {mail['From']} wrote:\n".lstrip() +
                       "\n".join(f"{mark}{line}".rstrip() for line in text_of(mail).splitlines())
                       for mail, mark in thread)
    message.set_content(f"{engine.legal_moves(state)[0]}\n\n{quoted}\n")
    assert len(message.as_bytes()) > 2000, "a reply quoting its thread: kilobytes, no few lines"
    return message, address


def applied_answer(app, address: str, before: int) -> str:
    """The text of the answer "Your orders were applied" queued for `address` after the
    first `before` rows of the outbox."""
    with reading(app) as session:
        queued = session.exec(select(OutboxMessage).where(OutboxMessage.id > before)
                              .order_by(OutboxMessage.id)).all()
    answers = [row for row in queued if address in row.to_addr]
    assert answers, "no answer was queued"
    return " ".join(text_of(Mailbox(app).to(address)[-1]).split())


def last_outbox_id(app) -> int:
    with reading(app) as session:
        return session.exec(select(func.max(OutboxMessage.id))).one() or 0


def moves(app) -> int:
    return counts(app)["MoveRecord"]


def test_a_reply_goes_through_postfix_and_is_applied(postfix):
    """No listener: the pipe handles the reply itself; its line for the mail is in the
    server's log (the syslog socket, [log] syslog), not only in Postfix's."""
    app = postfix.app
    before, outbox = moves(app), last_outbox_id(app)
    message, address = reply(app)
    key = str(message["To"]).split("+", 1)[1].split("@", 1)[0]
    queue_id = postfix.send(message, [str(message["To"])], sender=address)
    postfix.wait(lambda: moves(app) == before + 1, "the move")
    postfix.wait(lambda: postfix.statuses(queue_id) == ["sent"], "the delivery")
    assert "delivered via pbem service" in postfix.logged()
    assert "Your orders were applied." in applied_answer(app, address, outbox)
    line = postfix.syslog.wait_for(str(message["Message-ID"]))
    assert re.search(r"pbem-ingest-mail\[\d+\]: INFO pbem\.mailin\.inbox: incoming mail "
                     + re.escape(str(message["Message-ID"])) + r" for seat \d+: applied \(\S",
                     line), line
    assert key not in postfix.syslog.text()  # (Postfix logs it: the reply key is for that)


def test_reply_to_all_is_applied_once_and_nothing_bounces(postfix):
    """To the play+ address and the From address (of the reply domain): two runs of the pipe,
    one recipient each; one move, one answer, no bounce."""
    app = postfix.app
    before = counts(app)
    judge = f"judge@{DOMAIN}"
    message, address = reply(app, cc=judge)
    queue_id = postfix.send(message, [str(message["To"]), judge], sender=address)
    postfix.wait(lambda: postfix.statuses(queue_id) == ["sent", "sent"], "both deliveries")
    after = counts(app)
    assert after["MoveRecord"] == before["MoveRecord"] + 1
    assert after["IncomingMail"] == before["IncomingMail"] + 1
    texts = [" ".join(text_of(m).split()) for m in Mailbox(app).to(address)]
    assert "already read" not in texts[-1]
    assert "bounced" not in postfix.logged()


def test_an_automatic_reply_is_delivered_and_ignored(postfix):
    app = postfix.app
    before = counts(app)
    message, address = reply(app, Auto_Submitted="auto-replied")
    queue_id = postfix.send(message, [str(message["To"])], sender=address)
    postfix.wait(lambda: postfix.statuses(queue_id) == ["sent"], "the delivery")
    assert counts(app) == before


def test_internet_mail_to_the_reply_domain_is_accepted_and_nothing_else_is_relayed(postfix):
    """relay_domains: 127.0.0.1 is not this instance's network, so without it the reply domain
    is refused (454 Relay access denied); another domain stays refused with it."""
    with smtplib.SMTP(HOST, postfix.port, timeout=30) as client:
        client.ehlo()
        assert client.mail("someone@example.net")[0] == 250
        assert client.rcpt(f"play+{'A' * 32}@{DOMAIN}")[0] == 250
        code, answer = client.rcpt("someone@elsewhere.example")
        assert code in (454, 554) and b"Relay access denied" in answer


def test_a_database_outage_defers_the_reply_until_it_is_back(postfix):
    """Mid-upgrade (the schema's version gone, as while init-db runs): the pipe exits 75, the
    mail waits in Postfix's queue and nothing changes; once the database is back, a flush of
    the queue delivers it and the move is made."""
    app = postfix.app
    before = counts(app)
    with get_engine(app).begin() as connection:
        version = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
        connection.execute(text("DELETE FROM alembic_version"))
    try:
        message, address = reply(app)
        queue_id = postfix.send(message, [str(message["To"])], sender=address)
        postfix.wait(lambda: postfix.statuses(queue_id) == ["deferred"], "the deferral")
        assert counts(app) == before
    finally:
        with get_engine(app).begin() as connection:
            connection.execute(text("INSERT INTO alembic_version VALUES (:v)"), {"v": version})
    flushed = subprocess.run(["postqueue", "-c", str(postfix.etc), "-f"], capture_output=True,
                             text=True, timeout=60, check=False)
    assert flushed.returncode == 0, flushed.stderr
    postfix.wait(lambda: moves(app) == before["MoveRecord"] + 1, "the move after the outage")
    postfix.wait(lambda: postfix.statuses(queue_id) == ["deferred", "sent"], "the delivery")


def test_with_the_mail_listener_running_the_pipe_hands_the_reply_over(postfix, caplog):
    """The recipe's optional service: `pbem mail-listener` on [mail] listen_port. The pipe
    then hands each mail to it instead of loading the server (pbem.mailin.pipe), CRLF line
    ends put in (issue 41: with Postfix's LF ends any reply quoting its mail was one line
    too long for the listener, refused 500, and the pipe said "sent": the move was lost)."""
    import logging

    caplog.set_level(logging.INFO, logger="pbem")
    app = postfix.app
    before, outbox = moves(app), last_outbox_id(app)
    port = int(re.search(r"listen_port = (\d+)", (postfix.root / "config.toml").read_text())
               .group(1))
    controller = start_listener(app, HOST, port)
    try:
        message, address = reply(app)
        queue_id = postfix.send(message, [str(message["To"])], sender=address)
        postfix.wait(lambda: postfix.statuses(queue_id), "the delivery")
        postfix.wait(lambda: moves(app) == before + 1, "the move")
        assert "Your orders were applied." in applied_answer(app, address, outbox)
    finally:
        controller.stop()
    assert postfix.statuses(queue_id) == ["sent"]
    assert "handed to the mail listener" in postfix.logged()
    assert any(str(message["Message-ID"]) in r.getMessage() and ": applied" in r.getMessage()
               for r in caplog.records if r.name == "pbem.mailin.inbox"), "handled by the listener"


def test_a_refusal_that_is_not_the_listener_s_decision_keeps_the_mail(postfix):
    """Anything on the listener's port that answers the mail without deciding about it (here
    aiosmtpd's own "500 Line too long", of a listener that reads lines as RFC 5321 allows)
    makes the pipe exit 75: Postfix keeps the mail, and delivers it once a listener takes
    it."""
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import SMTP

    from pbem.mailin.listener import IncomingHandler
    from pbem.mailin.pipe import LISTENER_IDENT

    class Strict(Controller):
        def factory(self):
            server = SMTP(self.handler, **self.SMTP_kwargs)
            server.line_length_limit = 100  # the reply's quoted lines are longer with "> "
            return server

    app = postfix.app
    before = counts(app)
    port = int(re.search(r"listen_port = (\d+)", (postfix.root / "config.toml").read_text())
               .group(1))
    strict = Strict(IncomingHandler(app), hostname=HOST, port=port, ident=LISTENER_IDENT,
                    ready_timeout=30)
    strict.start()
    try:
        message, address = reply(app)
        message.set_content(message.get_content() + "x" * 200 + "\n")
        queue_id = postfix.send(message, [str(message["To"])], sender=address)
        postfix.wait(lambda: postfix.statuses(queue_id) == ["deferred"], "the deferral")
        assert "answered 500" in postfix.logged()
        assert counts(app) == before
    finally:
        strict.stop()
    controller = start_listener(app, HOST, port)
    try:
        flushed = subprocess.run(["postqueue", "-c", str(postfix.etc), "-f"],
                                 capture_output=True, text=True, timeout=60, check=False)
        assert flushed.returncode == 0, flushed.stderr
        postfix.wait(lambda: postfix.statuses(queue_id) == ["deferred", "sent"], "the delivery")
    finally:
        controller.stop()
    assert moves(app) == before["MoveRecord"] + 1
