"""The mail server's own answers about the server's mail: each mail's envelope sender (VERP), a
permanent refusal (5xx) failing the mail at once and marking the seat's address dead, a
temporary one (4xx) retried, and a line in the log for each delivery.

A real SMTP server (aiosmtpd, in this process) that answers each recipient as told; time is
injected (`now`).
"""

from __future__ import annotations

import base64
import logging
from datetime import UTC, datetime, timedelta

import pytest
from server import make_app
from sqlmodel import select
from test_mail_delivery import RETRY, new_game, rows, smtp_app

from pbem.ground.db import reading
from pbem.ground.models import FAILED, QUEUED, SENT, OutboxMessage, Seat
from pbem.scheduler.outbox import deliver_all_due, deliver_queued
from pbem.services import bounces, stewardship

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

DOMAIN = "games.example.org"
ADMIN = "organiser@example.org"
PLAYERS = ["Anna Weber <anna@example.org>", "Bruno Keller <bruno@example.org>",
           "Clara Roth <clara@example.org>"]


class Answering:
    """An aiosmtpd handler that answers RCPT for an address as `answers` says (accepting the
    others), and DATA with `data_answer` when set; it keeps what it accepted."""

    def __init__(self):
        self.answers: dict[str, str] = {}
        self.data_answer: str | None = None
        self.received: list[dict] = []

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        answer = self.answers.get(address)
        if answer:
            return answer
        envelope.rcpt_tos.append(address)
        return "250 2.1.5 OK"

    async def handle_DATA(self, server, session, envelope):
        if self.data_answer:
            return self.data_answer
        self.received.append({"from": envelope.mail_from, "to": list(envelope.rcpt_tos)})
        return "250 2.0.0 Accepted"


@pytest.fixture
def server(servers):
    made = servers()
    made.handler = Answering()
    made.start()
    return made


@pytest.fixture
def servers():
    from test_mail_delivery import SmtpServer

    made: list[SmtpServer] = []

    def make(**options):
        made.append(SmtpServer(**options))
        return made[-1]

    yield make
    for one in made:
        one.stop()


def app_for(tmp_path, server, **config):
    return smtp_app(tmp_path, server, MAIL_ADMINS=ADMIN, **config)


def seats(app) -> dict[str, Seat]:
    with reading(app) as session:
        return {s.email: s for s in session.exec(select(Seat).order_by(Seat.number))}


def admin_mails(app) -> list[OutboxMessage]:
    return [r for r in rows(app) if r.kind == "admin"]


# --- every mail's own bounce address --------------------------------------------------------------

def test_each_mail_goes_with_a_signed_bounce_address_of_its_own(tmp_path, server):
    app = app_for(tmp_path, server, MAIL_REPLY_DOMAIN=DOMAIN)
    new_game(app, players=PLAYERS)
    assert deliver_all_due(app, datetime.now(UTC))["sent"] == 3
    by_address = {r["to"][0]: r["from"] for r in server.handler.received}
    senders = set(by_address.values())
    assert len(senders) == 3, "each mail its own envelope sender"
    with app.app_context():
        for row in rows(app):
            sender = by_address[row.to_addr.split("<")[1].rstrip(">")]
            local, _, domain = sender.partition("@")
            assert domain == DOMAIN and local.startswith("bounce+")
            key = local.removeprefix("bounce+")
            assert bounces.row_of(app.config["SECRET_KEY"], key) == row.id
            # Another server's secret, or one changed letter, names no mail.
            assert bounces.row_of("another secret", key) is None
            changed = key[:5] + ("a" if key[5] != "a" else "b") + key[6:]
            assert bounces.row_of(app.config["SECRET_KEY"], changed) is None
            # The row's number is hidden: not in the key's bytes as a counter would be.
            assert row.id.to_bytes(8, "big") not in base64.b32decode(key.upper() + "===")


@pytest.mark.parametrize("settings", [{}, {"MAIL_REPLY_DOMAIN": DOMAIN, "MAIL_VERP": False}])
def test_without_a_reply_domain_or_with_verp_off_the_from_address_is_the_sender(
        tmp_path, server, settings):
    app = app_for(tmp_path, server, **settings)
    new_game(app, players=PLAYERS)
    deliver_all_due(app, datetime.now(UTC))
    assert {r["from"] for r in server.handler.received} == {"judge@example.org"}


# --- 5xx: failed at once, the address marked dead; 4xx: retried ---------------------------------

def test_a_550_for_a_recipient_fails_the_mail_at_once_and_marks_the_seat(tmp_path, server):
    app = app_for(tmp_path, server)
    game = new_game(app, players=PLAYERS)
    server.handler.answers["bruno@example.org"] = \
        "550 5.1.1 <bruno@example.org>: Recipient address rejected: User unknown"
    now = datetime.now(UTC)
    assert deliver_queued(app, now) == {"sent": 2, "retry": 0, "failed": 1, "unknown": 0}
    failed = [r for r in rows(app) if r.status == FAILED]
    assert [r.to_addr for r in failed] == ["Bruno Keller <bruno@example.org>"]
    (row,) = failed
    assert row.attempts == 1 and row.failed_at == now
    assert "550 5.1.1" in row.last_error and "User unknown" in row.last_error
    assert row.last_error.startswith("refused for good")
    bruno = seats(app)["bruno@example.org"]
    assert bruno.is_mail_dead and bruno.mail_dead_at == now
    assert "User unknown" in bruno.mail_dead_reason
    assert not seats(app)["anna@example.org"].is_mail_dead

    # The organisers are told, once; the mail to them goes out with the next run.
    (told,) = admin_mails(app)
    assert told.to_addr == ADMIN and told.game_id == game.game_id
    assert "Bruno Keller" in told.subject and "bruno@example.org" in told.text_body
    assert "User unknown" in told.text_body
    assert f"/admin/games/{game.game_id}" in told.text_body

    # Never tried again by itself, even weeks later.
    assert deliver_all_due(app, now + timedelta(days=30))["sent"] == 1  # the organisers' mail
    assert [r.attempts for r in rows(app) if r.status == FAILED] == [1]
    assert len([r for r in server.handler.received if r["to"] == ["bruno@example.org"]]) == 0

    # A second 550 for the same address tells the organisers nothing new.
    with app.app_context():
        stewardship.resend_link(None, game.game_id, 1, "check")
    deliver_all_due(app, now + timedelta(days=31))
    assert len(admin_mails(app)) == 1
    assert seats(app)["bruno@example.org"].mail_dead_at == now + timedelta(days=31)


def test_a_451_for_a_recipient_is_retried_with_backoff_and_marks_nothing(tmp_path, server):
    app = app_for(tmp_path, server)
    new_game(app, players=PLAYERS)
    server.handler.answers["bruno@example.org"] = "451 4.2.0 Mailbox busy, try later"
    now = datetime.now(UTC)
    assert deliver_queued(app, now) == {"sent": 2, "retry": 1, "failed": 0, "unknown": 0}
    (row,) = [r for r in rows(app) if r.status == QUEUED]
    assert row.next_attempt_at == now + timedelta(seconds=RETRY) and "451" in row.last_error
    assert row.failed_at is None
    assert not seats(app)["bruno@example.org"].is_mail_dead and admin_mails(app) == []
    server.handler.answers.clear()
    assert deliver_queued(app, now + timedelta(seconds=RETRY))["sent"] == 1


def test_a_5xx_about_the_message_fails_it_without_marking_the_address(tmp_path, server):
    """554 5.7.1 (refused as spam) at DATA: the mail fails at once, the address is not dead."""
    app = app_for(tmp_path, server)
    new_game(app, players=PLAYERS)
    server.handler.data_answer = "554 5.7.1 Message rejected as spam"
    now = datetime.now(UTC)
    assert deliver_queued(app, now) == {"sent": 0, "retry": 0, "failed": 3, "unknown": 0}
    assert all("554 5.7.1" in r.last_error for r in rows(app))
    assert not any(s.is_mail_dead for s in seats(app).values()) and admin_mails(app) == []


def test_a_later_delivery_or_a_new_address_clears_the_mark(tmp_path, server):
    app = app_for(tmp_path, server)
    game = new_game(app, players=PLAYERS)
    server.handler.answers["bruno@example.org"] = "550 5.1.1 User unknown"
    now = datetime.now(UTC)
    deliver_queued(app, now)
    assert seats(app)["bruno@example.org"].is_mail_dead

    # The mailbox works again: the next mail goes out, and the mark is gone.
    server.handler.answers.clear()
    with app.app_context():
        stewardship.resend_link(None, game.game_id, 1, "it works again")
    deliver_all_due(app, now + timedelta(hours=1))
    bruno = seats(app)["bruno@example.org"]
    assert not bruno.is_mail_dead and bruno.mail_dead_at is None
    assert bruno.mail_dead_address == "bruno@example.org"  # told once for this address

    # Dead again, then an organiser changes the address: not shown as dead any more.
    server.handler.answers["bruno@example.org"] = "550 5.1.1 User unknown"
    with app.app_context():
        stewardship.resend_link(None, game.game_id, 1, "again")
    deliver_all_due(app, now + timedelta(hours=2))
    assert seats(app)["bruno@example.org"].is_mail_dead
    assert len(admin_mails(app)) == 1
    with app.app_context():
        stewardship.change_email(None, game.game_id, 1, "bruno@example.net", "new address")
    assert not seats(app)["bruno@example.net"].is_mail_dead


def test_a_failure_after_the_address_changed_does_not_mark_the_new_one(tmp_path, server):
    app = app_for(tmp_path, server)
    game = new_game(app, players=PLAYERS)
    with app.app_context():
        stewardship.change_email(None, game.game_id, 1, "bruno@example.net", "typo")
    server.handler.answers["bruno@example.org"] = "550 5.1.1 User unknown"
    # The invitation to the old address fails, and so does the notice of the change to it.
    deliver_queued(app, datetime.now(UTC))
    assert [(r.kind, r.to_addr) for r in rows(app) if r.status == FAILED] == \
        [("invitation", "Bruno Keller <bruno@example.org>"),
         ("address_changed", "Bruno Keller <bruno@example.org>")]
    assert not seats(app)["bruno@example.net"].is_mail_dead and admin_mails(app) == []


# --- a line in the log for each delivery ----------------------------------------------------------

def test_each_delivery_is_logged_without_links(tmp_path, server, caplog):
    app = app_for(tmp_path, server)
    created = new_game(app, players=PLAYERS)
    server.handler.answers["bruno@example.org"] = "550 5.1.1 User unknown"
    server.handler.answers["clara@example.org"] = "451 4.3.0 Try again later"
    caplog.set_level(logging.INFO, logger="pbem")
    deliver_queued(app, datetime.now(UTC))
    anna, bruno, clara = [r.id for r in rows(app) if r.kind == "invitation"]
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "pbem.scheduler.outbox"]
    assert (logging.INFO, f"mail {anna} (invitation, game {created.game_id}) sent") in lines
    assert any(level == logging.ERROR and message.startswith(
        f"mail {bruno} (invitation, game {created.game_id}) failed (attempt 1): ")
        and "User unknown" in message for level, message in lines), lines
    assert any(level == logging.WARNING and message.startswith(
        f"mail {clara} (invitation, game {created.game_id}) not sent (attempt 1), tried "
        "again at ") and "451" in message for level, message in lines), lines
    text = "\n".join(r.getMessage() for r in caplog.records)
    for _name, _colour, link in created.links:
        assert link.rsplit("/", 1)[1] not in text
    assert "/seat/" not in text and "/me/" not in text


def test_the_local_folder_logs_each_mail_too(tmp_path, caplog):
    app = make_app(tmp_path / "instance")
    created = new_game(app, players=PLAYERS)
    caplog.set_level(logging.INFO, logger="pbem")
    deliver_all_due(app, datetime.now(UTC))
    sent = [r.getMessage() for r in caplog.records
            if r.name == "pbem.scheduler.outbox" and r.levelno == logging.INFO]
    assert sorted(sent) == sorted(f"mail {r.id} (invitation, game {created.game_id}) sent"
                                  for r in rows(app))
    assert {r.status for r in rows(app)} == {SENT}


def test_the_envelope_sender_refused_is_retried_not_failed(tmp_path, server):
    """A 553 for MAIL FROM is about this server's settings, not the player: retried, no mark."""
    app = app_for(tmp_path, server, MAIL_REPLY_DOMAIN=DOMAIN)
    new_game(app, players=PLAYERS)

    async def refuse_sender(server_, session, envelope, address, mail_options):
        return "553 5.7.1 Sender address rejected: not owned by user"

    server.handler.handle_MAIL = refuse_sender
    assert deliver_queued(app, datetime.now(UTC)) == \
        {"sent": 0, "retry": 3, "failed": 0, "unknown": 0}
    assert all("553" in r.last_error for r in rows(app))
    assert not any(s.is_mail_dead for s in seats(app).values())

