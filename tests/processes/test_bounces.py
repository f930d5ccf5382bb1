"""Bounces of the server's own mail: a dead address is marked on its seat, shown to the
organisers and told to them once; forged, foreign and harmless bounces change nothing.

The first test runs the real chain: the server sends over SMTP to a private Postfix instance
(its own configuration, queue and port, started for the test), which relays to a recipient's
mail server (aiosmtpd) that refuses one player with `550 5.1.1 User unknown`; Postfix writes
its bounce to the mail's envelope sender, `bounce+<key>@<reply domain>`, and delivers it to the
server's SMTP listener (`pbem mail-listener`), as an operator would route the reply domain.
Without a postfix binary it is skipped, saying so. The other two ways mail arrives
(`pbem ingest-mail`, IMAP from a real Dovecot) get a report written as Postfix writes one.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aiosmtpd.controller import Controller
from parts import require
from server import make_app, new_game
from sqlmodel import select
from test_admin import add_admin, login
from test_hardening_processes import wait_for
from test_mail_delivery import free_port, rows
from test_mail_in import dovecot, imap_settings, mailbox  # noqa: F401  (fixtures)

from pbem.ground.db import reading
from pbem.ground.models import FAILED, SENT, IncomingMail, MoveRecord, Seat
from pbem.mailin.inbox import handle_incoming
from pbem.mailin.listener import start_listener
from pbem.scheduler.jobs import run_jobs
from pbem.scheduler.outbox import deliver_all_due
from pbem.services import bounces, stewardship

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

HOST = "127.0.0.1"
DOMAIN = "games.test"  # the reply domain: the server's own
PLAYERS_DOMAIN = "players.test"
ORGANISER = f"organiser@{PLAYERS_DOMAIN}"
GONE = f"gone@{PLAYERS_DOMAIN}"
UNKNOWN_USER = f"550 5.1.1 <{GONE}>: Recipient address rejected: User unknown"


def seat(app, number: int) -> Seat:
    with reading(app) as session:
        return session.exec(select(Seat).where(Seat.number == number)).one()


def admin_mails(app) -> list:
    return [r for r in rows(app) if r.kind == "admin"]


# --- the real chain: Postfix bounces to the listener --------------------------------------------

class Recipients:
    """The players' mail server: refuses GONE at RCPT, takes everyone else's mail."""

    def __init__(self):
        self.received: list[tuple[str, list[str]]] = []

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address == GONE:
            return UNKNOWN_USER
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server, session, envelope):
        self.received.append((envelope.mail_from, list(envelope.rcpt_tos)))
        return "250 2.0.0 Accepted"


MAIN_CF = """\
compatibility_level = 3.6
queue_directory = {root}/queue
data_directory = {root}/data
mail_owner = postfix
setgid_group = postdrop
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
myhostname = relay.{domain}
mydomain = {domain}
myorigin = {domain}
mydestination =
local_recipient_maps =
alias_maps =
alias_database =
relay_domains = {domain}, {players}
transport_maps = inline:{{ {domain}=smtp:[127.0.0.1]:{listener}, {players}=smtp:[127.0.0.1]:{mx} }}
mynetworks = 127.0.0.0/8
smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination
maillog_file = {root}/maillog
maillog_file_prefixes = {root}
smtp_dns_support_level = disabled
smtp_tls_security_level = none
smtpd_tls_security_level = none
"""


def _master_cf(port: int) -> str:
    """Debian's master.cf with smtpd on `port` of 127.0.0.1 and no service chrooted."""
    lines = []
    for line in Path("/etc/postfix/master.cf").read_text().splitlines():
        fields = line.split()
        if line[:1] not in ("", " ", "\t", "#") and len(fields) >= 8:
            if fields[:2] == ["smtp", "inet"]:
                fields[0] = f"127.0.0.1:{port}"
            fields[4] = "n"
            line = "  ".join(fields)
        lines.append(line)
    return "\n".join(lines) + "\n"


@pytest.fixture
def postfix():
    """A private Postfix: yields a function that starts it with the listener's and the
    recipients' ports and returns its own port; stopped afterwards."""
    require("postfix")  # skipped without it (failed in CI): tests/parts.py
    if os.getuid() != 0:
        pytest.skip("a private Postfix instance needs root")
    root = Path(tempfile.mkdtemp(prefix="pbem-postfix-"))
    root.chmod(0o755)
    conf = root / "conf"
    started: list[Path] = []

    def start(listener: int, mx: int) -> int:
        port = free_port()
        for name in ("conf", "queue", "data"):
            (root / name).mkdir()
        shutil.chown(root / "data", "postfix", "postfix")
        (conf / "main.cf").write_text(MAIN_CF.format(root=root, domain=DOMAIN,
                                                     players=PLAYERS_DOMAIN, listener=listener,
                                                     mx=mx))
        (conf / "master.cf").write_text(_master_cf(port))
        done = subprocess.run(["postfix", "-c", str(conf), "start"], capture_output=True,
                              text=True, timeout=60, check=False)
        log = root / "maillog"
        assert done.returncode == 0, (done.stderr, log.read_text() if log.exists() else "")
        started.append(conf)

        def listening():
            try:
                socket.create_connection((HOST, port), timeout=1).close()
                return True
            except OSError:
                return False

        wait_for(listening, 60, "Postfix to listen")
        return port

    try:
        yield start
    finally:
        for conf_dir in started:
            subprocess.run(["postfix", "-c", str(conf_dir), "stop"], capture_output=True,
                           timeout=60, check=False)
        shutil.rmtree(root, ignore_errors=True)


def test_a_bounce_from_postfix_marks_the_address_dead_and_the_organisers_hear_once(
        tmp_path, postfix):
    recipients = Recipients()
    mx = Controller(recipients, hostname=HOST, port=free_port(), ready_timeout=60)
    mx.start()
    listener_port = free_port()
    relay = postfix(listener_port, mx.port)
    app = make_app(tmp_path / "instance", MAIL_BACKEND="smtp", SMTP_HOST=HOST,
                   SMTP_PORT=relay, SMTP_SECURITY="none", SMTP_TIMEOUT_SECONDS=10,
                   MAIL_FROM=f"Games by post <judge@{DOMAIN}>", MAIL_REPLY_DOMAIN=DOMAIN,
                   MAIL_ADMINS=ORGANISER, MAIL_BOARD_PICTURE=False)
    listener = start_listener(app, HOST, listener_port)
    try:
        with app.app_context():
            from pbem.services.creating import create_game
            from pbem.services.players import parse_player

            game = create_game([parse_player(f"Anna <anna@{PLAYERS_DOMAIN}>"),
                                parse_player(f"Gone Player <{GONE}>"),
                                parse_player(f"Clara <clara@{PLAYERS_DOMAIN}>")], "bounce")
        assert deliver_all_due(app, datetime.now(UTC))["sent"] == 3  # Postfix took them all

        # Postfix tries the recipients' server, is refused, and bounces to the mail's own
        # envelope sender; the listener reads the bounce.
        wait_for(lambda: seat(app, 1).mail_dead_at is not None, 120, "the bounce to arrive")
        gone = seat(app, 1)
        assert gone.is_mail_dead and "5.1.1" in gone.mail_dead_reason
        assert "User unknown" in gone.mail_dead_reason
        (invitation,) = [r for r in rows(app) if r.kind == "invitation" and GONE in r.to_addr]
        assert invitation.status == FAILED and invitation.failed_at is not None
        assert invitation.last_error.startswith("bounced: ") and "5.1.1" in invitation.last_error
        assert [r.status for r in rows(app) if r.kind == "invitation"].count(SENT) == 2
        assert not seat(app, 0).is_mail_dead and not seat(app, 2).is_mail_dead
        with reading(app) as session:  # nothing of it was taken for a player's mail
            assert session.exec(select(IncomingMail)).all() == []
            assert session.exec(select(MoveRecord)).all() == []

        (told,) = admin_mails(app)
        assert told.to_addr == ORGANISER and "Gone Player" in told.subject
        assert GONE in told.text_body and "User unknown" in told.text_body

        # The organisers' pages show it.
        client = app.test_client()
        add_admin(app)
        assert login(client).status_code == 303
        dashboard = client.get("/admin/").get_data(as_text=True)
        assert "Addresses where mail fails (1)" in dashboard and GONE in dashboard
        page = client.get(f"/admin/games/{game.game_id}").get_data(as_text=True)
        assert "Mail to this address fails" in page and "User unknown" in page

        # Another mail to the address: Postfix takes it (the mark goes), it bounces again (the
        # mark comes back), and the organisers are not told a second time.
        first = gone.mail_dead_at
        with app.app_context():
            stewardship.resend_link(None, game.game_id, 1, "try again")
        deliver_all_due(app, datetime.now(UTC))
        wait_for(lambda: (seat(app, 1).mail_dead_at or first) > first, 120, "the second bounce")
        assert seat(app, 1).is_mail_dead
        assert len(admin_mails(app)) == 1
        assert [r.status for r in rows(app) if r.kind == "notice"] == [FAILED]

        # The organiser corrects the address: no longer shown as dead.
        with app.app_context():
            stewardship.change_email(None, game.game_id, 1, f"found@{PLAYERS_DOMAIN}", "fixed")
        assert not seat(app, 1).is_mail_dead
        assert "Addresses where mail fails" not in client.get("/admin/").get_data(as_text=True)
    finally:
        listener.stop()
        mx.stop()


# --- the other ways in: the pipe and IMAP, with a report written as Postfix writes one ------------

def postfix_report(to: str, recipient: str, action: str = "failed", status: str = "5.1.1",
                   diagnostic: str = "smtp; 550 5.1.1 Recipient address rejected: User unknown",
                   message_id: str = "<20261126154422.4F7B620C245@relay.games.test>") -> bytes:
    """A delivery status notification laid out as Postfix 3.7 writes it."""
    boundary = "45A1120C240.1795707862/relay.games.test"
    return f"""\
Return-Path: <>
Date: Thu, 26 Nov 2026 15:44:22 +0000 (UTC)
From: Mail Delivery System <MAILER-DAEMON@relay.games.test>
Subject: Undelivered Mail Returned to Sender
To: {to}
Auto-Submitted: auto-replied
MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status;
\tboundary="{boundary}"
Content-Transfer-Encoding: 8bit
Message-Id: {message_id}

This is a MIME-encapsulated message.

--{boundary}
Content-Description: Notification
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: 8bit

This is the mail system at host relay.games.test.

I'm sorry to have to inform you that your message could not
be delivered to one or more recipients. It's attached below.

<{recipient}>: host mx.players.test[192.0.2.1] said: {diagnostic}

--{boundary}
Content-Description: Delivery report
Content-Type: message/delivery-status

Reporting-MTA: dns; relay.games.test
X-Postfix-Queue-ID: 45A1120C240
X-Postfix-Sender: rfc822; {to}
Arrival-Date: Thu, 26 Nov 2026 15:44:22 +0000 (UTC)

Final-Recipient: rfc822; {recipient}
Original-Recipient: rfc822;{recipient}
Action: {action}
Status: {status}
Remote-MTA: dns; mx.players.test
Diagnostic-Code: {diagnostic}

--{boundary}
Content-Description: Undelivered Message Headers
Content-Type: text/rfc822-headers

Return-Path: <{to}>
From: judge@games.test
To: {recipient}
Subject: [Kardinal & Koenig #1] You are invited to play

--{boundary}--
""".replace("\n", "\r\n").encode()


def sent_game(tmp_path, **config):
    """An app with replies on and a game whose invitations went out (the local folder);
    returns the app and each seat's invitation row."""
    app = make_app(tmp_path / "instance", MAIL_REPLY_DOMAIN=DOMAIN, MAIL_ADMINS=ORGANISER,
                   MAIL_BOARD_PICTURE=False, **config)
    new_game(app, 3, "bounces")
    deliver_all_due(app, datetime.now(UTC))
    invitations = [r for r in rows(app) if r.kind == "invitation"]
    assert [r.status for r in invitations] == [SENT] * 3
    return app, invitations


def bounce_address(app, row_id: int) -> str:
    return bounces.return_path(app.config, row_id)


def test_a_bounce_through_ingest_mail_marks_the_seat(tmp_path):
    app, invitations = sent_game(tmp_path)
    row = invitations[1]
    address = bounce_address(app, row.id)
    result = app.test_cli_runner().invoke(
        args=["ingest-mail", "--recipient", address],
        input=postfix_report(address, "p1@example.org"))
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"bounce: mail {row.id}: bounced: "), result.output
    assert seat(app, 1).is_mail_dead and "User unknown" in seat(app, 1).mail_dead_reason
    assert len(admin_mails(app)) == 1

    # The same bounce again (a mail server delivering it twice) tells nobody anything new.
    app.test_cli_runner().invoke(args=["ingest-mail", "--recipient", address],
                                 input=postfix_report(address, "p1@example.org"))
    assert len(admin_mails(app)) == 1


def test_a_bounce_read_from_imap_marks_the_seat(tmp_path, dovecot, mailbox):
    app, invitations = sent_game(tmp_path, **imap_settings(dovecot))
    row = invitations[2]
    address = bounce_address(app, row.id)
    mailbox.append("INBOX", None, None, postfix_report(address, "p2@example.org"))
    run_jobs(app)  # the scheduler's run reads the mailbox
    assert seat(app, 2).is_mail_dead
    assert [r.status for r in rows(app) if r.id == row.id] == [FAILED]


def with_app(app, raw: bytes, recipients: list[str]):
    with app.app_context():
        return handle_incoming(raw, recipients)


def test_forged_bounces_change_nothing(tmp_path):
    app, invitations = sent_game(tmp_path)
    row = invitations[1]
    before = [(r.id, r.status) for r in rows(app)]
    other = make_app(tmp_path / "other", MAIL_REPLY_DOMAIN=DOMAIN, SECRET_KEY="another secret")
    forged = [bounces.return_path(other.config, row.id),  # another server's key for the row
              f"bounce+{'a' * bounces.KEY_LENGTH}@{DOMAIN}"]  # a made-up key
    for address in forged:
        handled = with_app(app, postfix_report(address, "p1@example.org"), [address])
        assert (handled.outcome, handled.detail) == \
            ("bounce", "not a bounce address of this server: ignored")
    # Read from the headers alone (IMAP gives no envelope), the same.
    handled = with_app(app, postfix_report(forged[0], "p1@example.org"), [])
    assert handled.detail == "not a bounce address of this server: ignored"
    assert [(r.id, r.status) for r in rows(app)] == before
    assert not any(seat(app, n).is_mail_dead for n in range(3))


def test_a_delay_an_automatic_reply_or_a_refusal_as_spam_marks_no_address(tmp_path):
    app, invitations = sent_game(tmp_path)
    delayed, vacation, spam = invitations
    address = bounce_address(app, delayed.id)
    handled = with_app(app, postfix_report(address, "p0@example.org", action="delayed",
                                           status="4.4.1",
                                           diagnostic="smtp; 421 4.4.1 try later"), [address])
    assert handled.detail == f"mail {delayed.id}: a delay; nothing changed"

    address = bounce_address(app, vacation.id)
    away = (f"From: p1@example.org\r\nTo: {address}\r\nSubject: Away\r\nAuto-Submitted: "
            "auto-replied\r\nMessage-ID: <away@example.org>\r\n\r\nI am away until Monday.\r\n")
    handled = with_app(app, away.encode(), [address])
    assert "no delivery failure" in handled.detail

    address = bounce_address(app, spam.id)
    handled = with_app(app, postfix_report(
        address, "p2@example.org", status="5.7.1",
        diagnostic="smtp; 554 5.7.1 Message rejected as spam"), [address])
    assert handled.outcome == "bounce" and "5.7.1" in handled.detail
    statuses = {r.id: r.status for r in rows(app)}
    assert (statuses[delayed.id], statuses[vacation.id], statuses[spam.id]) == \
        (SENT, SENT, FAILED)
    assert not any(seat(app, n).is_mail_dead for n in range(3)) and admin_mails(app) == []
    with reading(app) as session:
        assert session.exec(select(IncomingMail)).all() == []


def test_a_bounce_for_an_old_address_does_not_mark_the_new_one(tmp_path):
    app, invitations = sent_game(tmp_path)
    with app.app_context():
        stewardship.change_email(None, 1, 1, "p1@example.net", "typo")
    address = bounce_address(app, invitations[1].id)
    handled = with_app(app, postfix_report(address, "p1@example.org"), [address])
    assert handled.outcome == "bounce"
    assert [r.status for r in rows(app) if r.id == invitations[1].id] == [FAILED]
    assert not seat(app, 1).is_mail_dead and admin_mails(app) == []
