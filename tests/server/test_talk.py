"""Table talk: messages between the seats of a game, to everyone or privately, on the seat page,
through the API and by replying to their mail (read with the orders' quote stripping; orders
under the ORDERS line still count as orders); each seat's mail choice (each, digest, none);
the limits (length, rate, characters, CSRF); and the admin who reads them only through the
audit log. The leak tests of private messages are in tests/server/test_talk_leaks.py."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from server import Mailbox, field, html_of, make_app, new_game, text_of
from sqlmodel import select
from test_mail_replies import fill, ingest, reply_key

from pbem.ground.db import reading, utcnow
from pbem.ground.models import AuditEntry, MoveRecord, TalkMessage
from pbem.scheduler.jobs import run_jobs
from pbem.services.stewardship import create_admin
from pbem.services.talk import post_message

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

DOMAIN = "games.example.org"


@pytest.fixture
def app(tmp_path):
    return make_app(tmp_path / "instance", MAIL_REPLY_DOMAIN=DOMAIN, TALK_RATE="5 per minute")


def _send(client, token, text, to="all"):
    page = client.get(f"/seat/{token}").get_data(as_text=True)
    return client.post(f"/seat/{token}/talk", data={
        "csrf_token": field(page, "csrf_token"), "text": text, "to": to})


def _talk_mails(box: Mailbox, email: str) -> list:
    return [m for m in box.to(email) if "wrote to" in text_of(m)]


def _stored(app) -> list[tuple[int, int | None, str, str]]:
    with app.app_context(), reading() as session:
        return [(m.sender, m.to_seat, m.body, m.via)
                for m in session.exec(select(TalkMessage).order_by(TalkMessage.id))]


def test_a_message_to_everyone_is_on_every_page_and_mailed_to_the_others(app, client):
    _, tokens = new_game(app, 3, "talk-1")
    box = Mailbox(app)
    box.messages()  # the invitations, out of the way
    response = _send(client, tokens[0], "Hello all!\nShall we share Franken?")
    assert response.status_code == 303 and response.headers["Location"].endswith("#talk")
    assert _stored(app) == [(0, None, "Hello all!\nShall we share Franken?", "web")]
    for seat in (1, 2):
        html = client.get(f"/seat/{tokens[seat]}").get_data(as_text=True)
        item = re.search(r'<li class="talk-item unread"[^>]*>(.*?)</li>', html, re.DOTALL)
        assert item, "the message is marked unread for its readers"
        assert "Player 0" in item.group(1) and "to everyone" in item.group(1)
        assert "Hello all!\nShall we share Franken?" in item.group(1)
        assert "1 new" in html
        (mailed,) = _talk_mails(box, f"p{seat}@example.org")
        assert "Hello all!" in text_of(mailed) and "Player 0 to everyone" in str(mailed["Subject"])
        assert reply_key(mailed)  # a Reply-To to answer by replying
        assert "answer everyone" in text_of(mailed)
    assert _talk_mails(box, "p0@example.org") == []  # not to its writer
    own = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    assert "talk-item unread" not in own and "Hello all!" in own


def test_marking_read_is_a_post_and_opening_the_page_marks_nothing(app, client):
    _, tokens = new_game(app, 3, "talk-2")
    with app.app_context():
        post_message(tokens[1], "first", "all")
        post_message(tokens[2], "second", "all")
    page = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    assert page.count("talk-item unread") == 2
    again = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    assert again.count("talk-item unread") == 2  # a mail scanner's visit reads nothing
    response = client.post(f"/seat/{tokens[0]}/talk/read", data={
        "csrf_token": field(again, "csrf_token"), "upto": field(again, "upto")})
    assert response.status_code == 303
    page = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    assert "talk-item unread" not in page and "Mark as read" not in page
    assert client.get(f"/api/v1/seat/{tokens[0]}/messages").get_json()["unread"] == 0


def test_a_private_message_reaches_only_its_two_seats(app, client):
    _, tokens = new_game(app, 3, "talk-3")
    box = Mailbox(app)
    box.messages()
    assert _send(client, tokens[0], "Just between us", to="2").status_code == 303
    assert _stored(app) == [(0, 2, "Just between us", "web")]
    assert "Just between us" in client.get(f"/seat/{tokens[2]}").get_data(as_text=True)
    assert "privately to Player 2" in client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    assert "Just between us" not in client.get(f"/seat/{tokens[1]}").get_data(as_text=True)
    (mailed,) = _talk_mails(box, "p2@example.org")
    assert "Private message from Player 0" in str(mailed["Subject"])
    assert "answer Player 0 privately" in text_of(mailed)
    assert _talk_mails(box, "p1@example.org") == []


def test_html_is_shown_as_text_and_links_are_not_followed(app, client):
    _, tokens = new_game(app, 3, "talk-4")
    text = '<script>alert(1)</script> <a href="https://evil.example/">x</a> https://evil.example/y'
    assert _send(client, tokens[0], text).status_code == 303
    html = client.get(f"/seat/{tokens[1]}").get_data(as_text=True)
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'href="https://evil.example' not in html  # no link made of it, none followed
    assert "https://evil.example/y" in html  # shown as text
    mailed = _talk_mails(Mailbox(app), "p1@example.org")[0]
    assert "<script>" not in html_of(mailed) and "&lt;script&gt;" in html_of(mailed)


@pytest.mark.parametrize("text,words", [("", "empty"), ("   \n  ", "empty"),
                                        ("x" * 2001, "2001 characters"),
                                        ("bad \x07 bell", "control")])
def test_a_bad_message_is_refused_with_the_reason_and_kept_in_its_box(app, client, text, words):
    _, tokens = new_game(app, 3, "talk-5")
    response = _send(client, tokens[0], text)
    assert response.status_code == 400
    html = response.get_data(as_text=True)
    assert words in re.search(r'id="talk-error"[^>]*>(.*?)</p>', html, re.DOTALL).group(1)
    assert _stored(app) == []


def test_the_form_needs_its_csrf_token(app, client):
    _, tokens = new_game(app, 3, "talk-6")
    response = client.post(f"/seat/{tokens[0]}/talk", data={"text": "hi", "to": "all"})
    assert response.status_code == 400
    assert _stored(app) == []


def test_the_rate_per_seat_is_limited_and_says_to_wait(app, client):
    _, tokens = new_game(app, 3, "talk-7")
    for n in range(5):
        assert _send(client, tokens[0], f"message {n}").status_code == 303
    refused = _send(client, tokens[0], "one too many")
    assert refused.status_code == 429
    assert "wait a while" in refused.get_data(as_text=True)
    assert "one too many" in refused.get_data(as_text=True)  # kept in the box
    assert _send(client, tokens[1], "another seat may still write").status_code == 303
    assert len(_stored(app)) == 6


def test_bad_audiences_are_refused(app, client):
    _, tokens = new_game(app, 3, "talk-8")
    for to in ("0", "9", "x", "-1"):
        assert _send(client, tokens[0], "hi", to=to).status_code == 400, to
    assert _stored(app) == []


def test_mail_choice_none_sends_nothing_and_digest_sends_one_mail_a_day(app, client):
    _, tokens = new_game(app, 3, "talk-9")
    box = Mailbox(app)
    box.messages()
    for token, choice in ((tokens[1], "none"), (tokens[2], "digest")):
        page = client.get(f"/seat/{token}").get_data(as_text=True)
        assert client.post(f"/seat/{token}/talk/settings", data={
            "csrf_token": field(page, "csrf_token"), "talk_notify": choice}).status_code == 303
    now = utcnow()
    with app.app_context():
        post_message(tokens[0], "first news", "all", now=now)
        post_message(tokens[0], "second news, for you", "2", now=now)
    assert _talk_mails(box, "p1@example.org") == [] and box.to("p2@example.org")[3:] == []
    run_jobs(app, now + timedelta(hours=1))
    assert len(box.to("p2@example.org")) == 1  # not due yet: the invitation only
    run_jobs(app, now + timedelta(hours=25))
    digests = box.to("p2@example.org")[1:]
    assert len(digests) == 1
    body = text_of(digests[0])
    assert "2 new messages" in body and "first news" in body and "second news, for you" in body
    assert "to you privately" in body
    run_jobs(app, now + timedelta(hours=50))  # claimed and done once
    assert len(box.to("p2@example.org")) == 2
    assert _talk_mails(box, "p1@example.org") == []


def test_replying_to_a_message_answers_the_same_audience(app, client):
    """A reply to a message to everyone goes to everyone; a reply to a private one goes back
    to its writer alone; quoted text is left out as for orders."""
    _, tokens = new_game(app, 3, "talk-10")
    box = Mailbox(app)
    box.messages()
    with app.app_context():
        post_message(tokens[0], "To all: hello", "all")
        post_message(tokens[0], "Private to 1: a deal?", "1")
    to_all, private = _talk_mails(box, "p1@example.org")
    assert "to everyone" in str(to_all["Subject"]) and "Private" in str(private["Subject"])
    handled = ingest(app, fill("thunderbird_plain.eml", reply_key(to_all),
                               ["Hello back, everyone."], text_of(to_all)), "cli")
    assert handled.outcome == "message", handled
    handled = ingest(app, fill("gmail_top.eml", reply_key(private), ["Deal."],
                               text_of(private)))
    assert handled.outcome == "message", handled
    assert _stored(app)[2:] == [(1, None, "Hello back, everyone.", "email"),
                                (1, 0, "Deal.", "email")]
    assert "Deal." not in client.get(f"/seat/{tokens[2]}").get_data(as_text=True)
    assert "Deal." in client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    assert [str(m["Subject"]) for m in _talk_mails(box, "p2@example.org")][-1].endswith(
        "Player 1 to everyone")
    assert "Private message from Player 1" in str(_talk_mails(box, "p0@example.org")[-1]["Subject"])


def test_a_reply_with_orders_under_the_orders_line_still_plays_them(app):
    _, tokens = new_game(app, 3, "u0", start=0)  # seat 0 can place in Franken: Würzburg
    box = Mailbox(app)
    box.messages()
    with app.app_context():
        post_message(tokens[1], "Your move, Player 0!", "all")
    (mailed,) = _talk_mails(box, "p0@example.org")
    handled = ingest(app, fill("thunderbird_plain.eml", reply_key(mailed),
                               ["On my way.", "=== ORDERS ===", "R Franken: Würzburg"],
                               text_of(mailed)))
    assert handled.outcome in ("applied", "partly"), handled
    with app.app_context(), reading() as session:
        record = session.exec(select(MoveRecord)).first()
    assert (record.seat, record.notation, record.via) == (0, "R Franken: Würzburg", "email")
    assert _stored(app)[1:] == [(0, None, "On my way.", "email")]


def test_a_duplicate_or_empty_reply_sends_nothing(app):
    _, tokens = new_game(app, 3, "talk-12")
    box = Mailbox(app)
    box.messages()
    with app.app_context():
        post_message(tokens[0], "hello", "all")
    mailed = _talk_mails(box, "p1@example.org")[0]
    raw = fill("thunderbird_plain.eml", reply_key(mailed), ["once"], text_of(mailed),
               message_id="<same@example.org>")
    assert ingest(app, raw).outcome == "message"
    assert ingest(app, raw).outcome == "duplicate"
    empty = fill("thunderbird_plain.eml", reply_key(mailed), [], text_of(mailed))
    assert ingest(app, empty).outcome == "refused"
    assert [m[2] for m in _stored(app)] == ["hello", "once"]
    assert any("held no message" in str(m["Subject"]) or "held no message" in text_of(m)
               for m in box.to("p1@example.org"))


def test_an_admin_reads_private_messages_only_through_the_audit_log(app, client):
    created, tokens = new_game(app, 3, "talk-13")
    with app.app_context():
        create_admin("admin@example.org", "a long admin password")
        post_message(tokens[0], "secret plan", "1")
        post_message(tokens[0], "hello to the table", "all")
    login = client.get("/admin/login").get_data(as_text=True)
    client.post("/admin/login", data={"csrf_token": field(login, "csrf_token"),
                                      "email": "admin@example.org",
                                      "password": "a long admin password"})
    game_page = client.get(f"/admin/games/{created.game_id}").get_data(as_text=True)
    assert "1 to everyone, 1 private" in game_page
    assert "secret plan" not in game_page and "hello to the table" not in game_page
    response = client.post(f"/admin/games/{created.game_id}/messages", data={
        "csrf_token": field(game_page, "csrf_token"), "reason": "a player reported abuse"})
    assert response.status_code == 200 and "secret plan" in response.get_data(as_text=True)
    with app.app_context(), reading() as session:
        (entry,) = session.exec(select(AuditEntry).where(
            AuditEntry.action == "read_messages")).all()
    assert entry.reason == "a player reported abuse" and entry.game_id == created.game_id
    no_reason = client.post(f"/admin/games/{created.game_id}/messages", data={
        "csrf_token": field(game_page, "csrf_token"), "reason": ""})
    assert no_reason.status_code == 422 and "say why" in no_reason.get_data(as_text=True)
    with app.app_context(), reading() as session:
        assert len(session.exec(select(AuditEntry).where(
            AuditEntry.action == "read_messages")).all()) == 1


def test_the_api_reads_and_posts_messages(app, client):
    _, tokens = new_game(app, 3, "talk-14")
    response = client.post(f"/api/v1/seat/{tokens[0]}/messages",
                           json={"text": "via the API", "to": 1})
    assert response.status_code == 201, response.get_data(as_text=True)
    sent = response.get_json()
    assert (sent["from"], sent["to"], sent["text"], sent["mine"]) == (0, 1, "via the API", True)
    assert client.post(f"/api/v1/seat/{tokens[0]}/messages",
                       json={"text": "hello all"}).status_code == 201
    seen = client.get(f"/api/v1/seat/{tokens[1]}/messages").get_json()
    assert [m["text"] for m in seen["messages"]] == ["via the API", "hello all"]
    assert seen["unread"] == 2
    other = client.get(f"/api/v1/seat/{tokens[2]}/messages").get_json()
    assert [m["text"] for m in other["messages"]] == ["hello all"]
    for bad in ({"text": 3}, {"text": "x", "to": "someone"}, {"text": "x", "extra": 1}, [],
                {"text": ""}, {"text": "x", "to": 100}):
        answer = client.post(f"/api/v1/seat/{tokens[0]}/messages", json=bad)
        assert answer.status_code == 400, (bad, answer.get_json())
    # Of the documented form, refused for what it says (issue 34 point 13: a request the
    # OpenAPI document calls valid is never a 400).
    for refused in ({"text": "x", "to": 0}, {"text": "x", "to": 5}, {"text": "   "},
                    {"text": "x\x00y"}):
        answer = client.post(f"/api/v1/seat/{tokens[0]}/messages", json=refused)
        assert answer.status_code == 422, (refused, answer.get_json())
    assert client.get("/api/v1/seat/" + "x" * 32 + "/messages").status_code == 404
    assert len(_stored(app)) == 2


def test_messages_still_go_in_a_finished_game(app, client):
    from server import finish_game

    created, tokens = new_game(app, 3, "talk-15")
    finish_game(app, created.game_id, "talk-15")
    assert _send(client, tokens[0], "Good game!").status_code == 303
    assert "Good game!" in client.get(f"/seat/{tokens[1]}").get_data(as_text=True)


def test_messages_travel_by_real_smtp_both_ways(tmp_path):
    """Out: the message mails go through the SMTP backend to an aiosmtpd server; in: the
    reader's reply, sent with smtplib to the server's own SMTP listener, reaches the writer
    privately. Nothing is mocked."""
    import smtplib
    from email.message import EmailMessage
    from email.utils import make_msgid

    from test_mail_delivery import SmtpServer

    from pbem.mailin.listener import start_listener
    from pbem.scheduler.outbox import deliver_all_due

    outgoing = SmtpServer()
    outgoing.start()
    app = make_app(tmp_path / "instance", MAIL_REPLY_DOMAIN=DOMAIN, MAIL_BACKEND="smtp",
                   SMTP_HOST="127.0.0.1", SMTP_PORT=outgoing.port, SMTP_SECURITY="none")
    listener = start_listener(app, "127.0.0.1", _free_port())
    try:
        _, tokens = new_game(app, 3, "talk-smtp")
        with app.app_context():
            post_message(tokens[0], "Over the wire, Bruno: a deal?", "1")
        deliver_all_due(app)
        (mailed,) = [r["message"] for r in outgoing.received
                     if "Private message" in str(r["message"]["Subject"])]
        assert "p1@example.org" in str(mailed["To"])
        answer = EmailMessage()
        answer["From"], answer["To"] = "p1@example.org", str(mailed["Reply-To"])
        answer["Subject"], answer["Message-ID"] = f"Re: {mailed['Subject']}", make_msgid()
        quoted = "\n".join(f"> {line}" for line in text_of(mailed).splitlines())
        answer.set_content(f"Deal, by SMTP.\n\nOn Monday Player 0 wrote:\n{quoted}\n")
        with smtplib.SMTP("127.0.0.1", listener.port, timeout=60) as client:
            client.send_message(answer)
        assert _stored(app)[-1] == (1, 0, "Deal, by SMTP.", "email")
        deliver_all_due(app)
        back = [r for r in outgoing.received if r["to"] == ["p0@example.org"]
                and "Private message from Player 1" in str(r["message"]["Subject"])]
        assert len(back) == 1 and "Deal, by SMTP." in text_of(back[0]["message"])
        assert not any("Deal, by SMTP." in text_of(r["message"]) for r in outgoing.received
                       if r["to"] == ["p2@example.org"])
    finally:
        listener.stop()
        outgoing.stop()


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_third_seat_sees_its_messages_numbered_without_gaps(app, client):
    """Seats 0 and 1 exchange private messages between messages to everyone (and another
    game talks meanwhile): seat 2's API answer, page anchors and "mark as read" form number
    what it may read 1, 2, 3 with no gap, so nothing tells it how many passed between the
    others; its mails carry no message number at all. (Database ids, global and sequential,
    once showed 1, 6, 9.)"""
    _, tokens = new_game(app, 3, "talk-gaps")
    _, others = new_game(app, 3, "talk-gaps-other")
    box = Mailbox(app)
    box.messages()
    with app.app_context():
        post_message(tokens[0], "first to everyone", "all")
        post_message(tokens[0], "psst 1", "1")
        post_message(others[0], "elsewhere", "all")
        post_message(tokens[1], "psst 2", "0")
        post_message(tokens[0], "psst 3", "1")
        post_message(tokens[0], "second to everyone", "all")
        post_message(tokens[1], "psst 4", "0")
        post_message(others[1], "elsewhere again", "2")
        post_message(tokens[1], "third to everyone", "all")
    with app.app_context(), reading() as session:
        ids = [m.id for m in session.exec(select(TalkMessage).order_by(TalkMessage.id))]
    assert ids == list(range(ids[0], ids[0] + 9))  # the rows' ids do have the gaps
    answer = client.get(f"/api/v1/seat/{tokens[2]}/messages").get_json()
    assert [(m["id"], m["text"]) for m in answer["messages"]] == [
        (1, "first to everyone"), (2, "second to everyone"), (3, "third to everyone")]
    assert answer["unread"] == 3
    page = client.get(f"/seat/{tokens[2]}").get_data(as_text=True)
    assert re.findall(r'id="message-(\d+)"', page) == ["1", "2", "3"]
    assert field(page, "upto") == "3"
    # The two writers number their own view the same way: 1 to 7, no gap either.
    mine = client.get(f"/api/v1/seat/{tokens[0]}/messages").get_json()["messages"]
    assert [m["id"] for m in mine] == list(range(1, 8))
    # Marking read up to its message 2 leaves only message 3 unread.
    response = client.post(f"/seat/{tokens[2]}/talk/read", data={
        "csrf_token": field(page, "csrf_token"), "upto": "2"})
    assert response.status_code in (200, 303)
    answer = client.get(f"/api/v1/seat/{tokens[2]}/messages").get_json()
    assert [m["id"] for m in answer["messages"] if m["unread"]] == [3]
    # Its mails (one per message from another seat) name no message by number.
    mails = _talk_mails(box, "p2@example.org")
    assert len(mails) == 5  # three of this game, two of the other
    for mail in mails:
        for part in (text_of(mail), html_of(mail)):
            words = re.sub(r"https?://\S+", "", part)  # a link's random key may hold "iD4"
            assert not re.search(r"\b(?:message|id)\b[ =#:-]*\d", words, re.IGNORECASE), part


def test_a_german_reader_reads_the_senders_colour_in_german(tmp_path):
    """'Anna (Gelb) schreibt an alle', never '(yellow)' (issue 32, point 8)."""
    from pbem.services.creating import create_game
    from pbem.services.players import PlayerSpec

    app = make_app(tmp_path / "instance", MAIL_REPLY_DOMAIN=DOMAIN)
    box = Mailbox(app)
    with app.app_context():
        created = create_game([PlayerSpec("Anna", "anna@example.org", language="en"),
                               PlayerSpec("Bernd", "bernd@example.org", language="de"),
                               PlayerSpec("Carmen", "carmen@example.org", language="es")],
                              "talk-colour", start=0)
        tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]
        post_message(tokens[0], "Hallo zusammen")
        post_message(tokens[0], "Nur für dich", to=1)
    german = [m for m in box.to("bernd@example.org") if "Hallo zusammen" in text_of(m)
              or "Nur für dich" in text_of(m)]
    spanish = [m for m in box.to("carmen@example.org") if "Hallo zusammen" in text_of(m)]
    assert len(german) == 2 and spanish
    for message in german:
        for body in (text_of(message), html_of(message)):
            assert "Anna (Gelb) schreibt" in body and "yellow" not in body, body
    assert "Anna (amarillo)" in text_of(spanish[0])
