"""Replies arriving by SMTP (the listener, on 127.0.0.1) and by IMAP (a real Dovecot).

Nothing is mocked: smtplib talks to the aiosmtpd listener, and poll_imap to a Dovecot started
for this module from a minimal configuration in a temporary folder (plain login, maildir, no
TLS). Without a dovecot binary (apt-get install dovecot-imapd) the IMAP tests are skipped,
saying so, and the suite's summary names it (in CI they fail: tests/parts.py).
"""

from __future__ import annotations

import contextlib
import imaplib
import os
import secrets
import shutil
import smtplib
import socket
import subprocess
import tempfile
import time
from email import policy
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

import pytest
from parts import require
from server import Mailbox, game_state, make_app, new_game
from sqlmodel import func, select

import engine
from pbem.ground.db import reading
from pbem.ground.models import IncomingMail, MoveRecord, OutboxMessage
from pbem.mailin.listener import poll_imap, start_listener
from pbem.scheduler.jobs import run_jobs

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

HOST = "127.0.0.1"
DOMAIN = "games.example.org"
IMAP_USER, IMAP_PASSWORD = "judge", "imap pass"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def started_game(tmp_path, **config):
    """An app with replies on, a new game, and (address, Reply-To, a legal move) of the seat
    to move, taken from its "your turn" mail as the player's mail program shows it."""
    app = make_app(tmp_path / "instance", MAIL_REPLY_DOMAIN=DOMAIN, **config)
    new_game(app)
    _, state = game_state(app)
    address = f"p{state.current}@example.org"
    mails = [m for m in Mailbox(app).to(address) if m["Reply-To"]]
    assert mails, "the seat to move got no mail with a Reply-To"
    reply_to = str(mails[-1]["Reply-To"])
    assert reply_to.startswith("play+") and reply_to.endswith("@" + DOMAIN)
    return app, address, reply_to, str(engine.legal_moves(state)[0])


def reply(sender: str, to: str, text: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
    message["Subject"] = "Re: your turn"
    message["Message-ID"] = make_msgid(domain="example.org")
    message.set_content(text + "\n\nOn Monday the judge wrote:\n> the board\n")
    return message


def padding(app) -> str:
    """Lines of text, more bytes in all than the server takes."""
    return ("x" * 70 + "\n") * (app.config["MAIL_MAX_INCOMING_BYTES"] // 70 + 1)


def counts(app) -> dict[str, int]:
    with app.app_context(), reading() as session:
        return {"email_moves": session.exec(select(func.count()).select_from(MoveRecord)
                                            .where(MoveRecord.via == "email")).one(),
                "moves": session.exec(select(func.count()).select_from(MoveRecord)).one(),
                "incoming": session.exec(select(func.count()).select_from(IncomingMail)).one(),
                "outbox": session.exec(select(func.count()).select_from(OutboxMessage)).one()}


def openings(app) -> list[str]:
    """The line each queued mail opens with, after 'Hello ...'."""
    with app.app_context(), reading() as session:
        return [row.text_body.splitlines()[2] for row in session.exec(
            select(OutboxMessage).order_by(OutboxMessage.id))]


def subjects(app) -> list[str]:
    with app.app_context(), reading() as session:
        return [row.subject for row in session.exec(select(OutboxMessage)
                                                    .order_by(OutboxMessage.id))]


# --- SMTP ---------------------------------------------------------------------------------------

@pytest.fixture
def listening(tmp_path):
    app, address, reply_to, move = started_game(tmp_path)
    port = free_port()
    controller = start_listener(app, HOST, port)
    try:
        yield app, port, address, reply_to, move
    finally:
        controller.stop()


def test_a_reply_over_smtp_is_applied_and_answered(listening):
    app, port, address, reply_to, move = listening
    with smtplib.SMTP(HOST, port, timeout=60) as client:
        refused = client.send_message(reply(address, reply_to, move))
    assert refused == {}
    with app.app_context(), reading() as session:
        records = session.exec(select(MoveRecord).where(MoveRecord.via == "email")).all()
    assert [r.notation for r in records] == [move]
    assert subjects(app)[-1].startswith("Re: ")
    assert openings(app)[-1] == "Your orders were applied."


def test_oversized_mail_is_refused_while_it_is_sent(listening):
    app, port, address, reply_to, move = listening
    before = counts(app)
    big = reply(address, reply_to, move + "\n" + padding(app))
    with smtplib.SMTP(HOST, port, timeout=60) as client:
        client.ehlo()
        # MAIL FROM without SIZE=, so the limit must hold at DATA itself
        assert client.mail(address)[0] == 250
        assert client.rcpt(reply_to)[0] == 250
        code, text = client.data(big.as_bytes(policy=policy.SMTP))
    assert code == 552, text
    with (smtplib.SMTP(HOST, port, timeout=60) as client,  # a declared SIZE: refused early
          pytest.raises(smtplib.SMTPResponseException) as refused):
        client.send_message(big)
    assert refused.value.smtp_code == 552
    assert counts(app) == before


def test_an_unknown_key_gets_250_and_changes_nothing(listening, caplog):
    """250 whatever the key (a 550 would tell a stranger which keys exist); nothing changes
    but the log (never with the key) and, the From being a player's, one answer to it."""
    app, port, address, _, move = listening
    before = counts(app)
    key = secrets.token_urlsafe(24)[:32]
    stranger = f"play+{key}@{DOMAIN}"
    with smtplib.SMTP(HOST, port, timeout=60) as client:
        assert client.send_message(reply(address, stranger, move)) == {}
        assert client.noop()[0] == 250  # the connection is still fine
    after = counts(app)
    assert {**after, "outbox": before["outbox"]} == before
    assert after["outbox"] == before["outbox"] + 1
    assert any(": unknown (no such key" in r.getMessage() for r in caplog.records)
    assert not any(key in r.getMessage() for r in caplog.records)


# --- IMAP against a real Dovecot ------------------------------------------------------------------

DOVECOT_CONF = """\
protocols = imap
listen = 127.0.0.1
base_dir = {root}/run
state_dir = {root}/state
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
log_path = {root}/dovecot.log
first_valid_uid = 1
mail_location = maildir:{root}/mail/%u
{users}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN {root}/passwd
}}
userdb {{
  driver = passwd-file
  args = {root}/passwd
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service anvil {{
  chroot =
}}
"""


def _wait_for(port: int, process: subprocess.Popen, root: Path) -> None:
    deadline = time.monotonic() + 120  # however busy the machine
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            client = imaplib.IMAP4(HOST, port, timeout=30)
            client.logout()
            return
        except OSError:
            time.sleep(0.1)
    log = (root / "dovecot.log").read_text() if (root / "dovecot.log").exists() else ""
    raise RuntimeError(f"dovecot did not start:\n{log}")


def dovecot_binary() -> str | None:
    return shutil.which("dovecot") or ("/usr/sbin/dovecot"
                                       if os.path.exists("/usr/sbin/dovecot") else None)


@contextlib.contextmanager
def private_dovecot(binary: str):
    """A Dovecot of its own in a temporary folder, serving IMAP_USER's maildir; yields its
    port (also used by bench/mailin_bench.py)."""
    root = Path(tempfile.mkdtemp(prefix="pbem-dovecot-"))
    root.chmod(0o755)
    (root / "mail").mkdir()
    port = free_port()
    if os.getuid() == 0:  # as root, Dovecot insists on its own unprivileged users
        uid = gid = 65534
        os.chown(root / "mail", uid, gid)
        users = ("default_login_user = dovenull\ndefault_internal_user = dovecot\n"
                 "default_internal_group = dovecot")
    else:
        uid, gid = os.getuid(), os.getgid()
        import grp
        import pwd

        users = (f"default_login_user = {pwd.getpwuid(uid).pw_name}\n"
                 f"default_internal_user = {pwd.getpwuid(uid).pw_name}\n"
                 f"default_internal_group = {grp.getgrgid(gid).gr_name}")
    (root / "passwd").write_text(
        f"{IMAP_USER}:{{PLAIN}}{IMAP_PASSWORD}:{uid}:{gid}::{root}/mail/{IMAP_USER}\n")
    (root / "dovecot.conf").write_text(DOVECOT_CONF.format(root=root, port=port, users=users))
    process = subprocess.Popen([binary, "-F", "-c", str(root / "dovecot.conf")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(port, process, root)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def dovecot():
    binary = require("dovecot")  # skipped without it (failed in CI): tests/parts.py
    with private_dovecot(binary) as port:
        yield port


@pytest.fixture
def mailbox(dovecot):
    """A logged-in IMAP client on an emptied INBOX."""
    client = imaplib.IMAP4(HOST, dovecot, timeout=60)
    try:
        client.login(IMAP_USER, IMAP_PASSWORD)
        _, (count,) = client.select("INBOX")
        if int(count):
            client.store("1:*", "+FLAGS", "(\\Deleted)")
            client.expunge()
        yield client
    finally:
        client.logout()


def imap_settings(port: int) -> dict:
    return {"MAIL_IMAP_HOST": HOST, "MAIL_IMAP_PORT": port, "MAIL_IMAP_SECURITY": "none",
            "MAIL_IMAP_USERNAME": IMAP_USER, "MAIL_IMAP_PASSWORD": IMAP_PASSWORD}


def search(client, *criteria: str) -> list[bytes]:
    client.noop()
    status, found = client.uid("SEARCH", None, *criteria)
    assert status == "OK"
    return found[0].split()


def test_the_scheduler_reads_a_reply_from_imap_once(tmp_path, dovecot, mailbox):
    app, address, reply_to, move = started_game(tmp_path, **imap_settings(dovecot))
    status, _ = mailbox.append("INBOX", None, None, reply(address, reply_to, move).as_bytes())
    assert status == "OK"
    assert len(search(mailbox, "UNSEEN")) == 1

    done = run_jobs(app)
    assert done["imap"] == 1
    assert counts(app)["email_moves"] == 1
    assert "Your orders were applied." in openings(app)
    assert search(mailbox, "UNSEEN") == [] and len(search(mailbox, "SEEN")) == 1
    assert len(search(mailbox, "ALL")) == 1  # kept, not deleted

    before = counts(app)
    assert poll_imap(app) == 0  # nothing unread: nothing done
    assert counts(app) == before


def test_unknown_keys_and_oversized_mail_are_read_and_marked(tmp_path, dovecot, mailbox):
    app, address, reply_to, move = started_game(tmp_path, **imap_settings(dovecot))
    before = counts(app)
    stranger = f"play+{secrets.token_urlsafe(24)}@{DOMAIN}"
    mailbox.append("INBOX", None, None, reply(address, stranger, move).as_bytes())
    big = reply(address, reply_to, move + "\n" + padding(app))
    mailbox.append("INBOX", None, None, big.as_bytes())
    assert poll_imap(app) == 2
    after = counts(app)  # neither moved; each answered the player (issue 29, point 8)
    assert {**after, "outbox": before["outbox"]} == before
    assert after["outbox"] == before["outbox"] + 2
    assert search(mailbox, "UNSEEN") == []


def test_imap_trouble_is_logged_not_raised(tmp_path, dovecot, mailbox, caplog):
    settings = imap_settings(dovecot)
    app = make_app(tmp_path / "a", **{**settings, "MAIL_IMAP_PASSWORD": "wrong"})
    assert poll_imap(app) == 0
    app = make_app(tmp_path / "b", **{**settings, "MAIL_IMAP_PORT": free_port()})
    assert run_jobs(app)["imap"] == 0
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "IMAP" in messages and "wrong" not in messages


# --- settings that differ between processes (issue 11, point 14) ---------------------------------

def test_ingest_mail_without_the_reply_domain_warns_and_still_mails_a_reply_to(tmp_path):
    """`pbem ingest-mail` run without [mail] reply_domain (its own settings differ from the
    server's): it warns loudly on standard error, and the mail it writes for the next player
    carries a Reply-To on the domain the reply was delivered to (the envelope recipient),
    exactly as the web server's would."""
    app, address, reply_to, move = started_game(tmp_path)
    app.config["MAIL_REPLY_DOMAIN"] = ""  # this process read no settings file
    _, before = game_state(app)
    raw = reply(address, reply_to, move).as_bytes()
    result = app.test_cli_runner().invoke(args=["ingest-mail", "--recipient", reply_to],
                                          input=raw)
    assert result.exit_code == 0, result.output
    assert "WARNING (ingest-mail): [mail] reply_domain is not set" in result.stderr
    assert "same PBEM_CONFIG" in result.stderr
    assert result.stdout.startswith("applied")
    _play_on, after = game_state(app)
    assert after.ply == before.ply + 1
    box = Mailbox(app)
    answer = box.to(address)[-1]
    assert str(answer["Reply-To"]).endswith("@" + DOMAIN)
    # A forged To header names another domain: only the envelope counts.
    app2, address2, reply_to2, move2 = started_game(tmp_path / "second")
    app2.config["MAIL_REPLY_DOMAIN"] = ""
    forged = reply(address2, reply_to2.replace(DOMAIN, "evil.example"), move2).as_bytes()
    result = app2.test_cli_runner().invoke(args=["ingest-mail"], input=forged)
    assert result.exit_code == 0 and result.stdout.startswith("applied"), result.output
    assert not [m for m in Mailbox(app2).messages()
                if "evil.example" in str(m["Reply-To"] or "")]



@pytest.mark.parametrize("recipient", [True, False])
def test_ingest_mail_run_without_settings_takes_the_delivery_domain(tmp_path, recipient):
    """`pbem ingest-mail` in a process of its own with no settings but the database, as a
    mail server's pipe runs it (issue 32, point 12): with --recipient the mails it queues
    carry a Reply-To on the domain the reply was delivered to, and its warning says so; without
    the envelope recipient it has no domain to take, and its warning says that."""
    import sys

    app, address, reply_to, move = started_game(tmp_path)
    with app.app_context(), reading() as session:
        first = session.exec(select(func.max(OutboxMessage.id))).one()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PBEM_", "FLASK_"))}
    env.update(PBEM_INSTANCE_PATH=app.instance_path, PBEM_DATABASE_URL=app.config["DATABASE_URL"],
               PBEM_SECRET_KEY=app.config["SECRET_KEY"], PBEM_MAIL_BACKEND="smtp",
               PBEM_SMTP_HOST="127.0.0.1", PBEM_BASE_URL=app.config["BASE_URL"])
    args = ["--recipient", reply_to] if recipient else []
    done = subprocess.run([sys.executable, "-m", "pbem", "ingest-mail", "--here", *args],
                          input=reply(address, reply_to, move).as_bytes(), env=env,
                          capture_output=True, timeout=120, check=False)
    err = done.stderr.decode()
    assert done.returncode == 0, err
    assert done.stdout.decode().startswith("applied")
    with app.app_context(), reading() as session:
        queued = session.exec(select(OutboxMessage).where(OutboxMessage.id > first)).all()
    assert queued, "the move wrote no mail"
    if recipient:
        assert all(row.reply_to and row.reply_to.endswith("@" + DOMAIN) for row in queued), \
            [(row.kind, row.reply_to) for row in queued]
        assert "have no Reply-To" not in err
        assert f"takes the reply domain from the address the mail was delivered to ({DOMAIN})" \
            in " ".join(err.split())
    else:
        assert "have no Reply-To" in " ".join(err.split())


def test_serve_and_scheduler_say_which_settings_they_read_and_warn_without_reply_domain(
        tmp_path, capsys, monkeypatch):
    """With real mail (SMTP) or an IMAP mailbox, a missing reply domain is warned about at
    start; the local demo set-up is not."""
    from pbem.ground.config import check_settings

    app = make_app(tmp_path / "instance")
    assert check_settings(app, "serve") is False
    assert "no settings file (PBEM_CONFIG is not set)" in capsys.readouterr().err
    app.config["MAIL_BACKEND"] = "smtp"
    monkeypatch.setenv("PBEM_CONFIG", "/etc/pbem/config.toml")
    assert check_settings(app, "scheduler") is True
    err = capsys.readouterr().err
    assert "settings from /etc/pbem/config.toml (PBEM_CONFIG)" in err
    assert "WARNING (scheduler): [mail] reply_domain is not set" in err
    app.config["MAIL_REPLY_DOMAIN"] = DOMAIN
    assert check_settings(app, "serve") is False
