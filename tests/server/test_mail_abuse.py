"""Mail that should not be acted on, or not answered every time (issue 29, points 6, 7, 12;
issue 34, points 7 and 11): automatic replies, floods of refused orders and of one Message-ID,
a friend flipping accept/decline, broken headers of any kind, and reply keys that are secrets
of their own."""

from __future__ import annotations

import logging
import smtplib
from email.utils import make_msgid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from server import Mailbox, make_app, new_game, text_of
from sqlmodel import func, select
from test_mail_in import HOST, free_port
from test_mail_replies import DOMAIN, fill, ingest, reply_key, snapshot, start
from test_start import INVITE, MANAGE, form, link_in, post_page

from pbem.ground.db import reading
from pbem.ground.models import IncomingMail, OutboxMessage, SeatKey, TalkMessage
from pbem.ground.tokens import hash_token
from pbem.mailin.inbox import KEY_ADDRESS, handle_incoming
from pbem.mailin.listener import start_listener

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

ROUTES = ["cli", "direct"]


@pytest.fixture
def app(tmp_path):
    return make_app(tmp_path / "instance", MAIL_REPLY_DOMAIN=DOMAIN)


def outbox(app, kind: str | None = None) -> list[OutboxMessage]:
    with reading(app) as session:
        query = select(OutboxMessage).order_by(OutboxMessage.id)
        if kind is not None:
            query = query.where(OutboxMessage.kind == kind)
        return list(session.exec(query))


# --- 7: automatic replies (RFC 3834) -------------------------------------------------------------

AUTOMATIC = [("Auto-Submitted", "auto-replied"), ("Auto-Submitted", "auto-generated"),
             ("Precedence", "bulk"), ("Precedence", "junk"), ("Precedence", "list"),
             ("X-Autoreply", "yes"), ("X-Autorespond", "Out of office"),
             ("List-Id", "<players.example.org>"), ("Return-Path", "<>")]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(("name", "value"), AUTOMATIC, ids=[f"{n}:{v}" for n, v in AUTOMATIC])
def test_an_automatic_reply_is_never_applied_posted_or_answered(app, route, name, value,
                                                                caplog):
    """An out-of-office answer to a turn mail holds nothing a player wrote: logged, exit 0,
    nothing changes and nothing is sent, even when its text would be legal orders."""
    caplog.set_level(logging.INFO, logger="pbem")
    _box, invitation, orders = start(app)
    before = snapshot(app)
    raw = fill("thunderbird_plain.eml", reply_key(invitation), orders, text_of(invitation))
    raw = f"{name}: {value}\r\n".encode() + raw
    handled = ingest(app, raw, route)
    assert handled.outcome == "automatic", handled
    assert snapshot(app) == before
    assert any(": automatic (" in r.getMessage() for r in caplog.records)
    assert ingest(app, raw.split(b"\r\n", 1)[1], route).outcome == "applied"  # without it


def test_an_automatic_reply_to_a_message_is_not_posted(app):
    """"I am away until Monday", sent to a table-talk mail's key, reaches no player."""
    from pbem.services.talk import post_message

    _, tokens = new_game(app, 3, "talk", start=0)
    with app.app_context():
        post_message(tokens[1], "Hello all", "all")
    box = Mailbox(app)
    talk = [m for m in box.to("p0@example.org") if "Hello all" in text_of(m)][-1]
    address = f"play+{KEY_ADDRESS.search(str(talk['Reply-To'])).group(1)}@{DOMAIN}"
    raw = (f"To: {address}\r\nFrom: p0@example.org\r\nAuto-Submitted: auto-replied\r\n"
           f"Message-ID: {make_msgid()}\r\nSubject: Out of office\r\n\r\n"
           "I am away until Monday.\r\n").encode()
    before = snapshot(app)
    with app.app_context():
        assert handle_incoming(raw, [address]).outcome == "automatic"
    with reading(app) as session:
        assert session.exec(select(func.count()).select_from(TalkMessage)).one() == 1
    assert snapshot(app) == before


def test_the_listener_takes_an_empty_envelope_sender_for_an_automatic_mail(app):
    _box, invitation, orders = start(app)
    before = snapshot(app)
    port = free_port()
    controller = start_listener(app, HOST, port)
    try:
        raw = fill("thunderbird_plain.eml", reply_key(invitation), orders)
        with smtplib.SMTP(HOST, port, timeout=10) as client:
            assert client.sendmail("", [reply_key(invitation)], raw) == {}
    finally:
        controller.stop()
    assert snapshot(app) == before


# --- 11: floods to a live key ----------------------------------------------------------------------

@pytest.mark.parametrize("route", ROUTES)
def test_refused_orders_are_answered_a_few_times_a_day(app, route, caplog):
    """Ten bad-order mails gave ten answers: beyond [mail] answers_per_day (3 here) a refused
    mail is still read and logged, not answered. Orders that apply are always answered."""
    app.config["MAIL_ANSWERS_PER_DAY"] = 3
    box, invitation, orders = start(app)
    handled = [ingest(app, fill("thunderbird_plain.eml", reply_key(invitation), ["nonsense"]),
                      route) for _ in range(6)]
    assert {h.outcome for h in handled} == {"refused"}
    assert [h.detail.endswith("; not answered") for h in handled] == [False] * 3 + [True] * 3
    assert len(outbox(app, "answer")) == 3
    assert any("no answer mail sent, 3 today already" in r.getMessage()
               for r in caplog.records)
    assert ingest(app, fill("thunderbird_plain.eml", reply_key(invitation), orders,
                            text_of(invitation)), route).outcome == "applied"
    assert "Your orders were applied." in text_of(box.to("p0@example.org")[-1])


@pytest.mark.parametrize("route", ROUTES)
def test_a_mail_delivered_again_and_again_is_answered_once(app, route):
    """Ten repeats of one Message-ID gave ten answers; now one, and each repeat is counted."""
    box, invitation, orders = start(app)
    raw = fill("thunderbird_plain.eml", reply_key(invitation), orders, text_of(invitation))
    assert ingest(app, raw, route).outcome == "applied"
    handled = [ingest(app, raw, route) for _ in range(10)]
    assert {h.outcome for h in handled} == {"duplicate"}
    already = [m for m in box.to("p0@example.org")
               if "reached the server a second time" in " ".join(text_of(m).split())]
    assert len(already) == 1
    with reading(app) as session:
        assert session.exec(select(IncomingMail.repeats)).one() == 10


def test_a_friend_flipping_accept_and_decline_tells_the_starter_once(tmp_path):
    """30 flips sent the starter 15 mails; now the first decline is told, and the next one
    only after DECLINE_NEWS_HOURS. The starter's page always shows the answer as it is."""
    from datetime import timedelta

    from pbem.ground.db import utcnow
    from pbem.services import starting

    app = make_app(tmp_path / "instance", GAMES_OPEN_CREATION=True)
    client = app.test_client()
    box = Mailbox(app)
    client.post("/new", data=form(client))
    manage = link_in(box, "anna@example.org", MANAGE)
    post_page(client, f"/new/game/{manage}", f"/new/game/{manage}/confirm")
    bruno = link_in(box, "bruno@example.org", INVITE)
    told = len(box.to("anna@example.org"))
    for _ in range(15):
        post_page(client, f"/invite/{bruno}", f"/invite/{bruno}/decline")
        post_page(client, f"/invite/{bruno}", f"/invite/{bruno}/accept", name="Bruno")
    post_page(client, f"/invite/{bruno}", f"/invite/{bruno}/decline")
    news = box.to("anna@example.org")[told:]
    assert len(news) == 1 and "\"Bruno\" <bruno@example.org> declined" in text_of(news[0])
    with app.app_context():
        later = utcnow() + timedelta(hours=starting.DECLINE_NEWS_HOURS, minutes=1)
        starting.answer(bruno, True, "Bruno", now=later)
        starting.answer(bruno, False, now=later)
    assert len(box.to("anna@example.org")[told:]) == 2


# --- broken headers of any kind ---------------------------------------------------------------------

def test_a_message_id_of_one_bracket_is_no_crash(app):
    """`Message-ID: <` crashed ingest-mail (IndexError, exit 1) and made the listener answer
    451 for ever."""
    _box, invitation, orders = start(app)
    raw = fill("thunderbird_plain.eml", reply_key(invitation), orders, text_of(invitation),
               message_id="<")
    result = app.test_cli_runner().invoke(args=["ingest-mail"], input=raw)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("applied"), result.output
    port = free_port()
    controller = start_listener(app, HOST, port)
    try:
        raw = fill("thunderbird_plain.eml", reply_key(invitation), ["draw deck"],
                   message_id="<")
        with smtplib.SMTP(HOST, port, timeout=10) as client:
            client.sendmail("p0@example.org", [reply_key(invitation)], raw)  # 250, no raise
    finally:
        controller.stop()


HEADER_NAMES = ["Message-ID", "References", "In-Reply-To", "From", "To", "Cc", "Subject",
                "Reply-To", "Return-Path", "Auto-Submitted", "Precedence", "Content-Type",
                "Content-Transfer-Encoding", "MIME-Version", "Date", "Delivered-To",
                "X-Original-To", "List-Id", "Sender"]
NASTY = st.sampled_from(["<", ">", "<>", "<<", "@", "play+@", '"', "\\", "(", ")", ",", ";",
                         ":", "=?utf-8?q?", "=?x?b?!!?=", "\x00", "\udcff", "\u2028", " ",
                         "\t", "a@b", "<a@b>", "=?UTF-8?B?w6Q=?=", "é", "\r", "\n "])


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(headers=st.lists(st.tuples(st.sampled_from(HEADER_NAMES),
                                  st.lists(NASTY | st.text(max_size=6), max_size=8)),
                        max_size=8))
def test_malformed_headers_never_crash_the_reader(app, headers):
    """Whatever the header values, reading a mail to a live key returns an outcome."""
    key = getattr(app, "_fuzz_key", None)
    if key is None:
        _box, invitation, _ = start(app)
        app._fuzz_key = key = reply_key(invitation)
    lines = [f"To: {key}"] + [f"{name}: {''.join(parts)}" for name, parts in headers]
    raw = "\r\n".join(lines).encode("utf-8", "surrogateescape") + b"\r\n\r\nnonsense\r\n"
    with app.app_context():
        for recipients in ([], [key]):
            handled = handle_incoming(raw, recipients)
            assert handled.outcome and handled.detail is not None


# --- 6: reply keys are secrets of their own --------------------------------------------------------

def test_the_reply_address_holds_no_seat_link(app, client):
    """The Reply-To's key is not the link's token: it opens no page, and the link's token
    is no reply address. Replaced links take their reply keys along."""
    from pbem.services.stewardship import create_admin, new_link

    _box, invitation, orders = start(app)
    reply = KEY_ADDRESS.search(str(invitation["Reply-To"])).group(1)
    link = text_of(invitation).split("/seat/")[1][:32]
    assert reply != link
    assert client.get(f"/seat/{reply}").status_code == 404
    assert client.get(f"/seat/{link}").status_code == 200
    with reading(app) as session:
        row = session.exec(select(SeatKey).where(SeatKey.token_hash == hash_token(link))).one()
        assert row.reply_hash == hash_token(reply)
    assert ingest(app, fill("thunderbird_plain.eml", f"play+{link}@{DOMAIN}", orders)
                  ).outcome == "unknown"
    with app.app_context():
        new_link(create_admin("admin@example.org", "a long enough password 42"), 1, 0, "leak")
    assert ingest(app, fill("thunderbird_plain.eml", reply_key(invitation), orders)
                  ).outcome == "revoked"


def test_reply_addresses_mailed_before_the_upgrade_keep_working(app):
    """A key made before reply keys has none (NULL): its mails' reply address carried the
    link's own token, which still works there, and only there."""
    from sqlalchemy import update

    from pbem.ground.db import writing

    _box, invitation, orders = start(app)
    link = text_of(invitation).split("/seat/")[1][:32]
    with app.app_context(), writing() as session:
        session.exec(update(SeatKey).where(SeatKey.token_hash == hash_token(link))
                     .values(reply_hash=None))
    raw = fill("thunderbird_plain.eml", f"play+{link}@{DOMAIN}", orders, text_of(invitation))
    assert ingest(app, raw).outcome == "applied"


# --- 12: the stale answer says "Nothing was changed" once ---------------------------------------

def test_a_stale_reply_says_nothing_was_changed_once(app):
    box, invitation, orders = start(app)
    assert ingest(app, fill("thunderbird_plain.eml", reply_key(invitation), orders,
                            text_of(invitation))).outcome == "applied"
    # The same (old) reply address again, with new words: the game has moved on.
    handled = ingest(app, fill("thunderbird_plain.eml", reply_key(invitation), ["draw deck"]))
    assert handled.outcome == "stale", handled
    answer = " ".join(text_of(box.to("p0@example.org")[-1]).split())
    assert answer.count("Nothing was changed") == 1, answer


def test_the_starting_seat_s_invitation_carries_its_turn_file(app):
    box, invitation, _ = start(app)
    text = text_of(invitation)
    assert "=== ORDERS ===" in text and "Turn: 1 (move 0)" in text
    assert "Legal moves now" in text
    for other in ("p1@example.org", "p2@example.org"):
        assert "=== ORDERS ===" not in text_of(box.to(other)[0])
