"""The outbox builds each mail as it goes on the wire (headers encoded and folded, bodies in
quoted-printable): read back by a mail program's parser, it says exactly what the outbox row
says, whatever the names, subject and bodies hold."""

from __future__ import annotations

from datetime import UTC, datetime
from email import policy
from email.parser import BytesParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.ground.models import OutboxMessage
from pbem.scheduler.wire import build_message
from pbem.services.mail import formatted_address, one_line

SENDER = "Kardinal & König <pbem@example.org>"
WHEN = datetime(2030, 1, 7, 12, 0, tzinfo=UTC)


def row(**fields) -> OutboxMessage:
    values = {"id": 1, "kind": "your_turn", "to_addr": "Anna Müller <anna@example.org>",
              "subject": "[Kardinal & König #12] Your turn", "text_body": "Hallo Anna\n",
              "html_body": "<p>Hallo Anna</p>\n", "message_id": "<1.2.3@pbem.localhost>",
              "reply_to": None, "created_at": WHEN, **fields}
    return OutboxMessage(**values)


def read_back(message) -> object:
    data = bytes(message)
    assert data.isascii(), "a mail on the wire is ASCII (encoded words, quoted-printable)"
    assert all(len(line) <= 78 for line in data.split(b"\n")[:12]), "headers are folded"
    return BytesParser(policy=policy.default).parsebytes(data)


def ended(body: str) -> str:
    """A body as a mail carries it: ending with a line break."""
    return body if body.endswith("\n") else body + "\n"


def assert_same(parsed, source: OutboxMessage) -> None:
    assert str(parsed["From"]) == SENDER
    assert str(parsed["To"]) == source.to_addr
    assert str(parsed["Subject"]) == source.subject
    assert str(parsed["Message-ID"]) == source.message_id
    assert parsed["Date"].datetime == source.created_at
    assert str(parsed["Auto-Submitted"]) == "auto-generated"
    assert (str(parsed["Reply-To"]) if parsed["Reply-To"] else None) == source.reply_to
    assert parsed.get_content_type() == "multipart/alternative"
    assert parsed.get_body(("plain",)).get_content() == ended(source.text_body)
    assert parsed.get_body(("html",)).get_content() == ended(source.html_body)


def test_a_mail_reads_back_as_its_row():
    """Non-ASCII names and subject, a long subject, long and trailing-space lines, a Reply-To."""
    source = row(subject="[Kardinal & König #12] Würzburg, Köln und Zaragoza: " * 3 + "dein Zug",
                 text_body="Grüße\n" + "x" * 300 + "\ntrailing space \n=3D is not a code\n",
                 html_body="<p>" + "ä" * 200 + "</p>",
                 to_addr='"Doe, John (Spieler)" <john@example.org>',
                 reply_to="play+" + "k" * 43 + "@games.example.org")
    assert_same(read_back(build_message(source, SENDER)), source)


def test_plain_ascii_stays_readable():
    source = row(to_addr="Anna <anna@example.org>", subject="Your turn",
                 text_body="Short lines\nonly\n", html_body="<p>Hi</p>\n")
    data = bytes(build_message(source, SENDER))
    assert b"Subject: Your turn\n" in data and b"To: Anna <anna@example.org>\n" in data
    assert b"Content-Transfer-Encoding: 7bit" in data
    assert_same(read_back(build_message(source, SENDER)), source)


@pytest.mark.parametrize("field", ["subject", "to_addr", "reply_to", "message_id"])
@pytest.mark.parametrize("breaker", ["\n", "\r"])
def test_a_line_break_in_a_header_cannot_be_built(field, breaker):
    """Header injection: the outbox marks such a row unbuildable instead of sending it."""
    value = {"subject": "Hi", "to_addr": "a@example.org", "reply_to": "r@example.org",
             "message_id": "<1@x>"}[field]
    with pytest.raises(ValueError, match="line break"):
        build_message(row(**{field: value + breaker + "Bcc: victim@example.org"}), SENDER)


characters = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp", "Zs"))
# Words of up to 11 characters (45 bytes of UTF-8 at most): a longer word of non-ASCII letters
# must be split over two encoded words, and Python's parser (like the library's own builder)
# then reads a space into the name.
names = st.lists(st.text(characters, min_size=1, max_size=11), min_size=1, max_size=5).map(
    " ".join).map(lambda s: " ".join(s.split())).filter(bool)
subjects = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1,
                   max_size=120).map(lambda s: " ".join(s.split())).filter(bool)
bodies = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r"),
                 max_size=400)


@settings(max_examples=60, deadline=None)
@given(name=names, subject=subjects, text=bodies, html=bodies)
def test_any_names_subject_and_bodies_read_back(name, subject, text, html):
    source = row(to_addr=formatted_address(name, "player@example.org"), subject=subject,
                 text_body=text,
                 html_body=html)
    parsed = read_back(build_message(source, SENDER))
    assert parsed["To"].addresses[0].addr_spec == "player@example.org"
    assert parsed["To"].addresses[0].display_name == one_line(name)
    assert str(parsed["Subject"]) == subject
    assert parsed.get_body(("plain",)).get_content() == ended(source.text_body)
    assert parsed.get_body(("html",)).get_content() == ended(source.html_body)


def test_the_bytes_are_the_library_generators_bytes():
    """The quicker generator writes exactly what the library's own writes, board picture too."""
    import json
    from email.generator import BytesGenerator
    from io import BytesIO

    from pbem.games import rules_for

    rules = rules_for("kardinal-koenig")
    state = rules.new_state(["yellow", "red", "green"], "bytes", None)
    picture = json.dumps({"kind": "kardinal-koenig", "state": rules.dumps(state),
                          "cid": "board.1@pbem.localhost"})
    for source in (row(), row(picture_json=picture, text_body="Grüße\n" * 40)):
        message = build_message(source, SENDER)
        library = BytesIO()
        BytesGenerator(library, mangle_from_=False, policy=message.policy).flatten(message)
        assert bytes(message) == library.getvalue()
        assert_same(read_back(message), source)
    parts = [part.get_content_type() for part in read_back(message).walk()]
    assert parts == ["multipart/alternative", "text/plain", "multipart/related", "text/html",
                     "image/png"]


def test_message_ids_owe_nothing_to_the_global_random(tmp_path, monkeypatch):
    """Two mails queued in the same instant, with `random` seeded the same way before each (as
    a test framework seeds it for every example), still get different Message-IDs, and so do
    the pictures' Content-IDs: the outbox refuses a second row with the same id."""
    import random
    import time

    from server import make_app

    from pbem.services.mail import new_message_id

    app = make_app(tmp_path / "instance", MAIL_FROM="Judge <judge@games.example.org>")
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0)
    with app.app_context():
        made = []
        for prefix in ("", "", "board.", "board."):
            random.seed(2026)
            made.append(new_message_id(prefix))
    assert len(set(made)) == 4
    assert all(m.startswith("<") and m.endswith("@games.example.org>") for m in made)
    assert made[2].startswith("<board.")


def test_no_header_is_parsed_by_the_library_on_the_way_out(monkeypatch):
    """Every header of a mail with its board picture (plain names) is written as built: the
    library's header objects (a parse and a fold, some 0.2 ms each) are not made for any."""
    import json

    from pbem.games import rules_for
    from pbem.scheduler.wire import WIRE

    rules = rules_for("kardinal-koenig")
    state = rules.new_state(["yellow", "red", "green"], "no-parse", None)
    picture = json.dumps({"kind": "kardinal-koenig", "state": rules.dumps(state),
                          "cid": "board.1@pbem.localhost"})
    made = []
    registry = type(WIRE.header_factory)
    make = registry.__call__

    def counting(self, name, value):
        made.append(name)
        return make(self, name, value)

    monkeypatch.setattr(registry, "__call__", counting)
    source = row(to_addr="Anna <anna@example.org>", subject="[Kardinal #12] Your turn",
                 reply_to="play+" + "k" * 43 + "@games.example.org", picture_json=picture)
    data = bytes(build_message(source, "Kardinal <pbem@example.org>"))
    assert made == [] and b"image/png" in data


def test_what_the_quick_join_does_not_write_the_generator_writes():
    """A preamble, a body with a carriage return, a header the library made: the same bytes
    as the library's generator writes, whichever way they are made."""
    from email.generator import BytesGenerator
    from io import BytesIO

    def library(message) -> bytes:
        out = BytesIO()
        BytesGenerator(out, mangle_from_=False, policy=message.policy).flatten(message)
        return out.getvalue()

    plain = build_message(row(), SENDER)
    with_preamble = build_message(row(), SENDER)
    with_preamble.preamble = "This is a multi-part message in MIME format."
    carriage = build_message(row(text_body="a line\rwith a carriage return\n"), SENDER)
    carriage.get_payload()[0].set_payload("a line\r\nwith a carriage return\n")
    named = build_message(row(to_addr="Zoë <zoë@example.org>"), SENDER)  # a library header
    for message in (plain, with_preamble, carriage, named):
        assert bytes(message) == library(message)


@pytest.mark.parametrize("size", [0, 1, 56, 57, 58, 114, 143_000, 143_001, 143_002])
def test_a_picture_s_base64_lines_are_the_library_s(size):
    import base64
    import os

    from pbem.scheduler.wire import _base64_lines

    data = os.urandom(size)
    text, wire = _base64_lines.__wrapped__(data)
    assert wire == base64.encodebytes(data) and text == wire.decode("ascii")
