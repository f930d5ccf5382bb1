"""Delivering the outbox to a real SMTP server (aiosmtpd, in this process, on 127.0.0.1).

No part of smtplib is mocked: the server records what arrives, and can refuse the next N
messages with a temporary error (451) or be stopped for an outage. Time is injected (`now`)
instead of slept.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import ssl
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from email import policy
from email.parser import BytesParser
from email.utils import parsedate_to_datetime

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from server import LINK, make_app
from sqlmodel import select

from pbem.ground.db import reading, writing
from pbem.ground.models import FAILED, QUEUED, SENDING, SENT, Game, OutboxMessage
from pbem.scheduler.outbox import REDACTED, deliver_all_due, deliver_queued
from pbem.services.creating import create_game
from pbem.services.health import STUCK_AFTER
from pbem.services.players import parse_player

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

HOST = "127.0.0.1"
PLAYERS = ["Anna Weber <anna@example.org>", "Bruno Keller <bruno@example.org>",
           "Clara Roth <clara@example.org>"]
MAIL_FROM = "Kardinal & König <judge@example.org>"
RETRY = 60
WAIT = 120  # seconds for a sending thread to reach the SMTP server or end (a busy machine)
USER, PASSWORD = "judge", "s3cret pass"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


class Recorder:
    """An aiosmtpd handler keeping every accepted message; it can refuse or hold messages."""

    def __init__(self):
        self.received: list[dict] = []
        self.refuse_next = 0  # answer the next N messages with 451
        self.hold = threading.Event()  # when cleared, DATA waits until it is set again
        self.hold.set()
        self.holding = threading.Event()  # set while a DATA is waiting on `hold`
        self.hello_count = 0

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        self.hello_count += 1
        session.host_name = hostname
        return responses

    async def handle_DATA(self, server, session, envelope):
        if not self.hold.is_set():
            self.holding.set()
            while not self.hold.is_set():
                await asyncio.sleep(0.005)
        if self.refuse_next > 0:
            self.refuse_next -= 1
            return "451 4.3.0 Mailbox busy, try again later"
        message = BytesParser(policy=policy.default).parsebytes(envelope.content)
        login = session.auth_data.login.decode() if session.authenticated else None
        self.received.append({"from": envelope.mail_from, "to": list(envelope.rcpt_tos),
                              "message": message, "login": login,
                              "tls": session.ssl is not None
                              or server.transport.get_extra_info("ssl_object") is not None})
        return "250 2.0.0 Accepted"

    def message_ids(self) -> list[str]:
        return [r["message"]["Message-ID"] for r in self.received]


def check_password(server, session, envelope, mechanism, auth_data):
    good = (isinstance(auth_data, LoginPassword) and auth_data.login == USER.encode()
            and auth_data.password == PASSWORD.encode())
    return AuthResult(success=good, handled=False, auth_data=auth_data if good else None)


class SmtpServer:
    """An aiosmtpd Controller that can be stopped and started again on the same port."""

    def __init__(self, **smtp_options):
        self.port = free_port()
        self.handler = Recorder()
        self.options = smtp_options
        self.controller: Controller | None = None

    def start(self) -> None:
        self.controller = Controller(self.handler, hostname=HOST, port=self.port,
                                     ready_timeout=60, **self.options)
        self.controller.start()

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    @property
    def received(self) -> list[dict]:
        return self.handler.received


@pytest.fixture
def servers():
    """Makes SMTP servers (not started); stops every one that is running at the end."""
    made: list[SmtpServer] = []

    def make(**options) -> SmtpServer:
        made.append(SmtpServer(**options))
        return made[-1]

    yield make
    for server in made:
        server.stop()


@pytest.fixture
def smtp(servers) -> SmtpServer:
    server = servers()
    server.start()
    return server


def smtp_app(tmp_path, server: SmtpServer, **config):
    # No test here waits for the timeout; each whole answer of the server must come within it,
    # and on a busy machine the server in this process may not be scheduled for seconds.
    settings = {"MAIL_BACKEND": "smtp", "SMTP_HOST": HOST, "SMTP_PORT": server.port,
                "SMTP_SECURITY": "none", "SMTP_TIMEOUT_SECONDS": 30, "MAIL_FROM": MAIL_FROM,
                "MAIL_RETRY_SECONDS": RETRY, "MAIL_MAX_ATTEMPTS": 4, **config}
    return make_app(tmp_path / "instance", **settings)


def new_game(app, seed: str = "7", players=PLAYERS):
    with app.app_context():
        return create_game([parse_player(p) for p in players], seed)


def rows(app) -> list[OutboxMessage]:
    with reading(app) as session:
        return list(session.exec(select(OutboxMessage).order_by(OutboxMessage.id)))


def token_of(link: str) -> str:
    return link.rsplit("/", 1)[1]


def later(seconds: float, start: datetime) -> datetime:
    return start + timedelta(seconds=seconds)


# --- delivery as a player sees it ---------------------------------------------------------

def test_each_invitation_arrives_once_with_the_right_headers_and_link(tmp_path, smtp):
    app = smtp_app(tmp_path, smtp)
    created = new_game(app)
    queued = rows(app)
    assert [r.status for r in queued] == [QUEUED] * 3

    now = datetime.now(UTC)
    assert deliver_all_due(app, now) == {"sent": 3, "retry": 0, "failed": 0, "unknown": 0}
    assert deliver_all_due(app, later(3600, now))["sent"] == 0  # nothing twice

    assert len(smtp.received) == 3
    by_address = {r["to"][0]: r for r in smtp.received}
    assert set(by_address) == {"anna@example.org", "bruno@example.org", "clara@example.org"}
    with reading(app) as session:
        starter = json.loads(session.get(Game, created.game_id).state_json)["current"]
    for seat, ((name, _colour, link), row) in enumerate(zip(created.links, queued, strict=True)):
        got = [r for r in smtp.received if r["message"]["Message-ID"] == row.message_id]
        assert len(got) == 1, f"{row.message_id} arrived {len(got)} times"
        envelope, message = got[0], got[0]["message"]
        address = message["To"].addresses[0]
        assert (address.display_name, envelope["to"]) == (name, [address.addr_spec])
        sender = message["From"].addresses[0]
        assert (sender.display_name, sender.addr_spec) == ("Kardinal & König",
                                                            "judge@example.org")
        assert envelope["from"] == "judge@example.org"
        assert message["Subject"] == row.subject
        assert message["Subject"] == f"[Kardinal & König #{created.game_id}] " \
            "You are invited to play" + (", and you start" if seat == starter else "")
        sent_date = parsedate_to_datetime(message["Date"])
        assert sent_date.utcoffset() == timedelta(0)
        assert abs(sent_date - row.created_at) < timedelta(seconds=1)
        assert message["Auto-Submitted"] == "auto-generated"
        assert message.get_content_type() == "multipart/alternative"
        parts = [part.get_content_type() for part in message.iter_parts()]
        assert parts == ["text/plain", "multipart/related"], "the HTML part and its picture"
        html_part, picture = list(list(message.iter_parts())[1].iter_parts())
        assert (html_part.get_content_type(), picture.get_content_type()) == \
            ("text/html", "image/png")
        text = message.get_body(("plain",)).get_content()
        html = message.get_body(("html",)).get_content()
        assert link.startswith("http://localhost/seat/")
        assert link in text and f'href="{link}"' in html
        assert name.split()[0] in text

    for row, (_name, _colour, link) in zip(rows(app), created.links, strict=True):
        token = token_of(link)
        assert (row.status, row.attempts, row.last_error) == (SENT, 1, None)
        assert row.sent_at == now
        assert token not in row.text_body and token not in row.html_body
        assert REDACTED in row.text_body and REDACTED in row.html_body
        assert json.loads(row.secrets_json) == []

    # The token that arrived by mail still opens the seat, though the stored copy hides it.
    (token,) = set(LINK.findall(by_address["anna@example.org"]["message"]
                                .get_body(("plain",)).get_content()))
    assert token == token_of(created.links[0][2])
    page = app.test_client().get(f"/seat/{token}")
    assert page.status_code == 200 and "Anna Weber" in page.get_data(as_text=True)


# --- failures, retries and giving up -------------------------------------------------------

@pytest.mark.parametrize("outage", ["server down", "451"])
def test_a_failed_delivery_is_retried_with_backoff_then_sent_once(tmp_path, servers, outage):
    server = servers()
    app = smtp_app(tmp_path, server)
    new_game(app)
    first = rows(app)
    if outage == "451":
        server.start()
        server.handler.refuse_next = 3
    now = datetime.now(UTC)

    assert deliver_queued(app, now) == {"sent": 0, "retry": 3, "failed": 0, "unknown": 0}
    for row in rows(app):
        assert (row.status, row.attempts) == (QUEUED, 1)
        assert row.next_attempt_at == later(RETRY, now)
        assert row.claim is None and row.sent_at is None
        if outage == "451":
            assert row.last_error == "SMTPDataError: 451 4.3.0 Mailbox busy, try again later"
        else:
            assert row.last_error.startswith(f"cannot reach the SMTP server {HOST}:"
                                             f"{server.port}: ")
            assert "refused" in row.last_error.lower()
        assert len(json.loads(row.secrets_json)) == 3  # the links (and reply key) kept to retry
    if outage == "server down":
        server.start()

    assert deliver_queued(app, later(RETRY - 1, now)) == {"sent": 0, "retry": 0, "failed": 0, "unknown": 0}
    assert server.received == []

    # The second failure doubles the wait (only for the 451 case: fail once more).
    second = later(RETRY, now)
    if outage == "451":
        server.handler.refuse_next = 3
        assert deliver_queued(app, second)["retry"] == 3
        assert {r.next_attempt_at for r in rows(app)} == {later(2 * RETRY, second)}
        assert deliver_queued(app, later(2 * RETRY - 1, second))["sent"] == 0
        second = later(2 * RETRY, second)

    assert deliver_queued(app, second) == {"sent": 3, "retry": 0, "failed": 0, "unknown": 0}
    assert deliver_queued(app, later(RETRY * 100, second))["sent"] == 0
    assert sorted(server.handler.message_ids()) == sorted(r.message_id for r in first)
    attempts = 3 if outage == "451" else 2
    assert [(r.status, r.attempts, r.last_error) for r in rows(app)] == \
        [(SENT, attempts, None)] * 3


def test_one_refused_message_does_not_hold_back_the_others(tmp_path, smtp):
    app = smtp_app(tmp_path, smtp)
    new_game(app)
    smtp.handler.refuse_next = 1
    now = datetime.now(UTC)
    assert deliver_queued(app, now) == {"sent": 2, "retry": 1, "failed": 0, "unknown": 0}
    first, second, third = rows(app)
    assert (first.status, first.attempts) == (QUEUED, 1)
    assert "451" in first.last_error
    assert [(r.status, r.attempts) for r in (second, third)] == [(SENT, 1)] * 2
    assert smtp.handler.message_ids() == [second.message_id, third.message_id]
    assert smtp.handler.hello_count == 1  # all on one connection


def test_after_the_last_attempt_the_row_fails_and_is_left_alone(tmp_path, smtp):
    app = smtp_app(tmp_path, smtp, MAIL_MAX_ATTEMPTS=4)
    new_game(app)
    smtp.handler.refuse_next = 10**6
    run = datetime.now(UTC)
    for attempt, wait in ((1, RETRY), (2, 2 * RETRY), (3, 4 * RETRY)):  # the wait doubles
        assert deliver_queued(app, run) == {"sent": 0, "retry": 3, "failed": 0, "unknown": 0}
        assert {(r.status, r.attempts, r.next_attempt_at) for r in rows(app)} == \
            {(QUEUED, attempt, later(wait, run))}
        assert deliver_queued(app, later(wait - 1, run)) == {"sent": 0, "retry": 0, "failed": 0, "unknown": 0}
        run = later(wait, run)
    assert deliver_queued(app, run) == {"sent": 0, "retry": 0, "failed": 3, "unknown": 0}
    for row in rows(app):
        assert (row.status, row.attempts) == (FAILED, 4)
        assert row.last_error == "SMTPDataError: 451 4.3.0 Mailbox busy, try again later"
    refused = smtp.handler.refuse_next

    smtp.handler.refuse_next = 0
    assert deliver_all_due(app, later(86400 * 30, run)) == {"sent": 0, "retry": 0, "failed": 0, "unknown": 0}
    assert smtp.received == [] and refused == 10**6 - 12  # four runs of three, no more
    assert all(r.status == FAILED and r.attempts == 4 for r in rows(app))


# --- never twice --------------------------------------------------------------------------

def test_concurrent_senders_never_send_a_row_twice(tmp_path, smtp):
    app = smtp_app(tmp_path, smtp)
    for seed in "abcd":
        new_game(app, seed)
    expected = sorted(r.message_id for r in rows(app))
    assert len(expected) == 12
    now = datetime.now(UTC)
    start = threading.Barrier(4)

    def sender() -> list[dict]:
        start.wait(WAIT)  # all four claim at the same moment
        runs = []
        while True:
            runs.append(deliver_queued(app, now, limit=2))
            if not any(runs[-1].values()):
                return runs

    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(sender) for _ in range(4)]
        totals = [counts for future in futures for counts in future.result(WAIT)]
    assert sorted(smtp.handler.message_ids()) == expected
    assert sum(c["sent"] for c in totals) == 12
    assert all(r.status == SENT and r.attempts == 1 for r in rows(app))


def test_a_second_run_does_not_take_rows_another_run_is_sending(tmp_path, smtp):
    app = smtp_app(tmp_path, smtp)
    new_game(app)
    now = datetime.now(UTC)
    smtp.handler.hold.clear()
    first_run: list[dict] = []
    slow = threading.Thread(target=lambda: first_run.append(deliver_queued(app, now)))
    slow.start()
    try:
        assert smtp.handler.holding.wait(WAIT), "the first run never reached the server"
        assert {r.status for r in rows(app)} == {SENDING}
        assert deliver_queued(app, later(STUCK_AFTER.total_seconds() - 1, now)) == \
            {"sent": 0, "retry": 0, "failed": 0, "unknown": 0}
    finally:
        smtp.handler.hold.set()
        slow.join(WAIT)
    assert not slow.is_alive(), "the held run did not end"
    assert first_run == [{"sent": 3, "retry": 0, "failed": 0, "unknown": 0}]
    assert len(smtp.received) == 3 and len(set(smtp.handler.message_ids())) == 3
    assert deliver_queued(app, later(1, now))["sent"] == 0
    assert len(smtp.received) == 3


def test_rows_stuck_in_sending_go_back_to_the_queue_and_are_sent_by_themselves(tmp_path, smtp):
    """A sender that died leaves its claimed rows; once stuck they are sent, each once."""
    app = smtp_app(tmp_path, smtp)
    new_game(app)
    now = datetime.now(UTC)
    stuck, recent, fresh = (r.id for r in rows(app))
    with writing(app) as session:
        for row_id, claimed in ((stuck, now - STUCK_AFTER - timedelta(seconds=1)),
                                (recent, now - STUCK_AFTER + timedelta(seconds=1))):
            row = session.get(OutboxMessage, row_id)
            row.status, row.claim, row.claimed_at = SENDING, "dead-sender", claimed
            session.add(row)

    assert deliver_queued(app, now) == {"sent": 2, "retry": 0, "failed": 0, "unknown": 0}
    by_id = {r.id: r for r in rows(app)}
    assert (by_id[stuck].status, by_id[stuck].attempts) == (SENT, 1)
    assert by_id[recent].status == SENDING and by_id[recent].last_error is None
    assert by_id[fresh].status == SENT
    assert sorted(smtp.handler.message_ids()) == sorted(
        [by_id[stuck].message_id, by_id[fresh].message_id])

    # Later the other one is taken for stuck as well, and sent.
    assert deliver_all_due(app, later(STUCK_AFTER.total_seconds(), now))["sent"] == 1
    assert {r.status for r in rows(app)} == {SENT}
    assert sorted(smtp.handler.message_ids()) == sorted(r.message_id for r in rows(app))


def test_a_slow_sender_that_finishes_after_being_taken_for_stuck_records_the_truth(
        tmp_path, smtp):
    """Its rows went back to the queue: the one it did send is recorded sent (not sent
    again), and it leaves the others to the next run."""
    app = smtp_app(tmp_path, smtp)
    new_game(app)
    now = datetime.now(UTC)
    smtp.handler.hold.clear()
    slow_run: list[dict] = []
    slow = threading.Thread(target=lambda: slow_run.append(deliver_queued(app, now)))
    slow.start()
    try:
        assert smtp.handler.holding.wait(WAIT), "the slow run never reached the server"
        taken = later(STUCK_AFTER.total_seconds() + 1, now)
        assert deliver_queued(app, taken, limit=0)["sent"] == 0  # only takes back stuck rows
        assert {r.status for r in rows(app)} == {QUEUED}
    finally:
        smtp.handler.hold.set()
        slow.join(WAIT)
    assert not slow.is_alive(), "the held run did not end"
    assert slow_run == [{"sent": 1, "retry": 0, "failed": 0, "unknown": 0}]
    first = rows(app)[0]
    assert (first.status, first.attempts, first.last_error) == (SENT, 1, None)
    assert json.loads(first.secrets_json) == [] and REDACTED in first.text_body
    assert deliver_queued(app, later(1, taken))["sent"] == 2
    assert len(smtp.received) == 3 and len(set(smtp.handler.message_ids())) == 3
    assert {r.status for r in rows(app)} == {SENT}


def test_a_mail_that_cannot_be_built_fails_alone(tmp_path, smtp):
    app = smtp_app(tmp_path, smtp)
    new_game(app)
    bad = rows(app)[1].id
    with writing(app) as session:
        row = session.get(OutboxMessage, bad)
        row.subject = "Injected\r\nBcc: someone@example.net"
        session.add(row)
    assert deliver_queued(app, datetime.now(UTC)) == {"sent": 2, "retry": 0, "failed": 1, "unknown": 0}
    failed = next(r for r in rows(app) if r.id == bad)
    assert failed.status == FAILED and failed.last_error.startswith("cannot build this mail")
    assert len(smtp.received) == 2
    assert all(r["to"] != ["someone@example.net"] for r in smtp.received)


# --- login and TLS ------------------------------------------------------------------------

def auth_server(servers, **options) -> SmtpServer:
    server = servers(authenticator=check_password, **options)
    server.start()
    return server


def test_smtp_login_is_used_when_a_username_is_set(tmp_path, servers):
    server = auth_server(servers, auth_require_tls=False)
    app = smtp_app(tmp_path, server, SMTP_USERNAME=USER, SMTP_PASSWORD=PASSWORD)
    new_game(app)
    assert deliver_queued(app, datetime.now(UTC))["sent"] == 3
    assert [r["login"] for r in server.received] == [USER] * 3


def test_a_wrong_password_is_retried_with_a_clear_error(tmp_path, servers):
    server = auth_server(servers, auth_require_tls=False)
    app = smtp_app(tmp_path, server, SMTP_USERNAME=USER, SMTP_PASSWORD="wrong")
    new_game(app)
    now = datetime.now(UTC)
    assert deliver_queued(app, now) == {"sent": 0, "retry": 3, "failed": 0, "unknown": 0}
    for row in rows(app):
        assert row.status == QUEUED and row.next_attempt_at == later(RETRY, now)
        assert row.last_error.startswith(f"cannot log in as 'judge' to the SMTP server "
                                         f"{HOST}:{server.port}: SMTPAuthenticationError: 535")
    assert server.received == []


def test_no_login_without_a_username(tmp_path, servers):
    server = auth_server(servers, auth_require_tls=False)
    app = smtp_app(tmp_path, server)
    new_game(app)
    assert deliver_queued(app, datetime.now(UTC))["sent"] == 3
    assert [r["login"] for r in server.received] == [None] * 3


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1 and localhost: (cert file, key file)."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pbem test mail server")])
    # Valid from long ago to years ahead: OpenSSL checks it by the machine's real clock, which
    # is not the tests' own when tests/clock_runs.py has moved that to another day.
    start = datetime(2000, 1, 1, tzinfo=UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(datetime.now(UTC) + timedelta(days=3650))
            .add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address(HOST))]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False,
                crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    folder = tmp_path_factory.mktemp("tls")
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


def server_context(certificate) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    return context


@pytest.mark.parametrize("trusted", [True, False])
def test_starttls_with_login_verifies_the_certificate(tmp_path, servers, certificate,
                                                       monkeypatch, trusted):
    """The self-signed test certificate is trusted the standard way (SSL_CERT_FILE), not by
    turning verification off: without it, the same server is refused."""
    if trusted:
        monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    else:
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    server = auth_server(servers, tls_context=server_context(certificate),
                         require_starttls=True)
    app = smtp_app(tmp_path, server, SMTP_SECURITY="starttls", SMTP_USERNAME=USER,
                   SMTP_PASSWORD=PASSWORD)
    new_game(app)
    counts = deliver_queued(app, datetime.now(UTC))
    if trusted:
        assert counts["sent"] == 3
        assert [(r["login"], r["tls"]) for r in server.received] == [(USER, True)] * 3
    else:
        assert counts["retry"] == 3 and server.received == []
        error = rows(app)[0].last_error
        assert error.startswith("cannot start TLS (STARTTLS) with the SMTP server")
        assert "CERTIFICATE_VERIFY_FAILED" in error


def test_implicit_tls(tmp_path, servers, certificate, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    server = servers(ssl_context=server_context(certificate))
    server.start()
    app = smtp_app(tmp_path, server, SMTP_SECURITY="tls")
    new_game(app)
    assert deliver_queued(app, datetime.now(UTC))["sent"] == 3
    assert [r["tls"] for r in server.received] == [True] * 3
