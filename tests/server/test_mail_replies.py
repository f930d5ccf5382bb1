"""Replies by mail: real mail programs' replies (tests/mail/*.eml) carry orders to the server,
through `pbem ingest-mail` and `handle_incoming`; duplicates, stale, illegal, unknown, revoked,
finished, oversized and unreadable mail; and a whole game played only by replies."""

from __future__ import annotations

import base64
import html
import quopri
import secrets
from email import message_from_string, policy
from email.parser import BytesParser
from email.policy import compat32
from email.utils import make_msgid
from pathlib import Path

import pytest
from server import Mailbox, game_state, make_app, new_game, text_of
from sqlmodel import func, select

import engine
from pbem.ground.db import reading
from pbem.ground.models import IncomingMail, MoveRecord, OutboxMessage
from pbem.mailin.inbox import KEY_ADDRESS, Handled, handle_incoming

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

MAIL = Path(__file__).resolve().parent.parent / "mail"
DOMAIN = "games.example.org"
SEED = "u0"  # seat 0 starts and can place in Franken: Würzburg
WUERZBURG = "R Franken: Würzburg"
ROUTES = ["cli", "direct"]


@pytest.fixture
def app(tmp_path):
    return make_app(tmp_path / "instance", MAIL_REPLY_DOMAIN=DOMAIN)


# --- filling in the templates --------------------------------------------------------------------

def _sub(text: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        text = text.replace(name, value)
    return text


def _part(head: str, body: str, values: dict[str, str]) -> bytes:
    """One MIME part of a template, filled in and encoded as its headers say."""
    head = _sub(head, values)
    headers = message_from_string(head + "\n\n", policy=compat32)
    if headers.get_content_maintype() == "multipart":
        boundary = "--" + headers.get_param("boundary")
        pieces = body.split(boundary)
        out = [pieces[0].encode("ascii")]
        for piece in pieces[1:-1]:
            part_head, _, part_body = piece.lstrip("\n").partition("\n\n")
            out.append(boundary.encode("ascii") + b"\n" + _part(part_head, part_body, values))
        out.append(boundary.encode("ascii") + pieces[-1].encode("ascii"))
        return head.encode("ascii") + b"\n\n" + b"".join(out)
    charset = headers.get_content_charset("us-ascii")
    data = _sub(body, values).encode(charset, "replace")
    encoding = str(headers.get("Content-Transfer-Encoding", "7bit")).strip().lower()
    if encoding == "base64":
        data = base64.encodebytes(data)
    elif encoding == "quoted-printable":
        data = quopri.encodestring(data)
    return head.encode("ascii") + b"\n\n" + data


def fill(name: str, address: str, orders: list[str], original: str = "",
         message_id: str | None = None) -> bytes:
    """The template `tests/mail/<name>` as the raw bytes a mail server would hand over."""
    text = (MAIL / name).read_text("utf-8")
    lines = original.splitlines()
    values = {
        "{ADDRESS}": address,
        "{MESSAGE_ID}": message_id or make_msgid(domain="example.org"),
        "{ORDERS_HTML}": "<br>".join(html.escape(line) for line in orders),
        "{ORDERS}": "\n".join(orders),
        "{QUOTED}": "\n".join(f"> {line}".rstrip() for line in lines),
        "{ORIGINAL_HTML}": "<br>".join(html.escape(line) for line in lines),
        "{ORIGINAL}": original,
    }
    head, _, body = text.partition("\n\n")
    return _part(head, body, values)


# --- helpers ---------------------------------------------------------------------------------------

def ingest(app, raw: bytes, route: str = "direct") -> Handled:
    if route == "cli":
        result = app.test_cli_runner().invoke(args=["ingest-mail"], input=raw)
        assert result.exit_code == 0, result.output
        outcome, _, detail = result.output.strip().partition(": ")
        return Handled(outcome, detail)
    with app.app_context():
        return handle_incoming(raw, None)


def reply_key(message) -> str:
    match = KEY_ADDRESS.search(str(message["Reply-To"] or ""))
    assert match, f"no play+<key> Reply-To in {message['Subject']!r}"
    return f"play+{match.group(1)}@{DOMAIN}"


def newest_with_key(box: Mailbox, email: str):
    return [m for m in box.to(email) if m["Reply-To"]][-1]


def moves(app, game_id: int = 1) -> list[tuple[int, int, str, str]]:
    with app.app_context(), reading() as session:
        return [(r.number, r.seat, r.notation, r.via) for r in session.exec(
            select(MoveRecord).where(MoveRecord.game_id == game_id).order_by(MoveRecord.number))]


def counts(app) -> dict[str, int]:
    with app.app_context(), reading() as session:
        return {model.__name__: session.exec(select(func.count()).select_from(model)).one()
                for model in (IncomingMail, OutboxMessage, MoveRecord)}


def snapshot(app, game_id: int = 1):
    game, _ = game_state(app, game_id)
    return counts(app), game.turn, game.status, game.state_json


def subjects(box: Mailbox, email: str) -> list[str]:
    return [str(m["Subject"]) for m in box.to(email)]


def answers(box: Mailbox, email: str, subject: str) -> list:
    """Mails whose subject ends with `subject`, and answers to a player's mail ("Re: ...")
    that open with it."""
    return [m for m in box.to(email) if str(m["Subject"]).endswith(subject)
            or (str(m["Subject"]).startswith("Re: ")
                and text_of(m).splitlines()[2] == f"{subject}.")]


def whole_turn(state, first=None) -> list[str]:
    """A placement (or exchange) and then draws from the deck, as the engine allows them."""
    legal = engine.legal_moves(state)
    if first is None:
        first = next((m for m in legal if isinstance(m, engine.Place)), legal[0])
    seat, orders = state.current, [str(first)]
    after = engine.apply_move(state, first)
    while not after.is_over and after.current == seat and len(orders) < 8:
        legal = engine.legal_moves(after)
        move = next((m for m in legal if str(m) == "draw deck"), legal[0])
        orders.append(str(move))
        after = engine.apply_move(after, move)
    return orders


def start(app, seed: str = SEED):
    """A 3-player game whose seat 0 is to move; its invitation and the turn with Würzburg."""
    new_game(app, 3, seed, start=0)
    box = Mailbox(app)
    invitation = newest_with_key(box, "p0@example.org")
    _, state = game_state(app)
    place = next(m for m in engine.legal_moves(state) if str(m) == WUERZBURG)
    return box, invitation, whole_turn(state, place)


# --- 1. replies from common mail programs -------------------------------------------------------

TEMPLATES = ["thunderbird_plain.eml", "gmail_top.eml", "outlook.eml", "html_only.eml",
             "quoted_printable.eml", "base64.eml", "latin1_umlaut.eml", "german_client.eml",
             "bottom_posted.eml"]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("template", TEMPLATES)
def test_a_reply_from_a_mail_program_plays_the_turn(app, template, route):
    box, invitation, orders = start(app)
    raw = fill(template, reply_key(invitation), orders, text_of(invitation))
    handled = ingest(app, raw, route)
    assert handled.outcome == "applied", handled
    played = moves(app)
    assert [(n, s, m) for n, s, m, _ in played] == [(i, 0, o) for i, o in enumerate(orders)]
    assert {via for *_, via in played} == {"email"}
    assert played[0][2] == WUERZBURG
    confirmation = answers(box, "p0@example.org", "Your orders were applied")
    assert len(confirmation) == 1
    assert WUERZBURG in text_of(confirmation[0]) or "Würzburg" in text_of(confirmation[0])


@pytest.mark.parametrize("template", ["thunderbird_plain.eml", "german_client.eml",
                                      "outlook.eml"])
def test_the_answer_threads_under_the_players_mail(app, template):
    """The answer carries In-Reply-To and References to the player's mail and its subject
    with 'Re:', as a mail program's own answer would, so it sits in the same conversation."""
    box, invitation, orders = start(app)
    message_id = make_msgid(domain="example.org")
    raw = fill(template, reply_key(invitation), orders, text_of(invitation), message_id)
    assert ingest(app, raw).outcome == "applied"
    (answer,) = answers(box, "p0@example.org", "Your orders were applied")
    assert answer["In-Reply-To"] == message_id
    assert answer["References"].split()[-1] == message_id
    theirs = BytesParser(policy=policy.default).parsebytes(raw)["Subject"]
    assert answer["Subject"] == "Re: " + theirs.split(": ", 1)[1]
    assert answer["Subject"].endswith("[Kardinal & Koenig #1] You are invited to play")
    assert text_of(answer).splitlines()[2] == "Your orders were applied."


def test_the_templates_really_are_encoded_as_they_say(app):
    _, invitation, orders = start(app)
    address = reply_key(invitation)
    assert "Würzburg".encode("latin-1") in fill("latin1_umlaut.eml", address, orders)
    assert "Würzburg".encode() not in fill("base64.eml", address, orders)
    assert b"W=C3=BCrzburg" in fill("quoted_printable.eml", address, orders)
    assert b"W=C3=BCrzburg" in fill("german_client.eml", address, orders)


def test_an_outlook_reply_to_a_turn_file_mail_plays_the_turn(app):
    """Outlook quotes the original without '>': a 'Your turn' mail carries the turn file, whose
    ORDERS line is then in the quoted part."""
    box, invitation, orders = start(app)
    assert ingest(app, fill("thunderbird_plain.eml", reply_key(invitation), orders,
                            text_of(invitation))).outcome == "applied"
    _, state = game_state(app)
    seat = state.current
    your_turn = newest_with_key(box, f"p{seat}@example.org")
    assert "=== ORDERS ===" in text_of(your_turn)
    turn = whole_turn(state)
    handled = ingest(app, fill("outlook.eml", reply_key(your_turn), turn, text_of(your_turn)))
    assert handled.outcome == "applied", handled
    assert [m for _, s, m, _ in moves(app) if s == seat] == turn


def test_a_hand_written_sign_off_is_read_as_an_order(app):
    """A name under the orders without the '-- ' line is taken for one more order: the turn is
    played and the answer says the sign-off could not be applied."""
    box, invitation, orders = start(app)
    raw = fill("thunderbird_plain.eml", reply_key(invitation), [*orders, "", "Anna"],
               text_of(invitation))
    handled = ingest(app, raw)
    assert handled.outcome == "partly", handled
    assert [m for _, _, m, _ in moves(app)] == orders
    answer = answers(box, "p0@example.org", "Some of your orders were applied")
    assert len(answer) == 1 and "'Anna'" in text_of(answer[0])


# --- 2. behaviour -------------------------------------------------------------------------------

@pytest.mark.parametrize("route", ROUTES)
def test_a_second_delivery_of_one_mail_changes_nothing(app, route):
    box, invitation, orders = start(app)
    raw = fill("thunderbird_plain.eml", reply_key(invitation), orders, text_of(invitation))
    assert ingest(app, raw, route).outcome == "applied"
    before = snapshot(app)
    handled = ingest(app, raw, route)
    assert handled.outcome == "duplicate"
    after = snapshot(app)
    assert after[1:] == before[1:] and after[0]["MoveRecord"] == before[0]["MoveRecord"]
    assert len(moves(app)) == len(orders)
    assert len(answers(box, "p0@example.org", "Your orders were applied")) == 1
    assert len(answers(box, "p0@example.org", "Your mail was already read")) == 1


def test_a_reply_to_an_old_mail_is_stale(app):
    box, invitation, orders = start(app)
    from pbem.services.moves import submit_move

    game, _ = game_state(app)
    with app.app_context():
        submit_move(None, orders[0], game.turn, seat_id=1)  # seat 0 of game 1 (id 1)
    before = snapshot(app)
    handled = ingest(app, fill("thunderbird_plain.eml", reply_key(invitation), orders[1:],
                               text_of(invitation)))
    assert handled.outcome == "stale", handled
    after = snapshot(app)
    assert after[1:] == before[1:] and after[0]["MoveRecord"] == before[0]["MoveRecord"]
    answer = answers(box, "p0@example.org", "Your orders could not be applied")
    assert len(answer) == 1
    assert "older mail" in " ".join(text_of(answer[0]).split())


def test_an_illegal_order_is_answered_with_the_reason_and_the_legal_moves(app):
    box, invitation, _ = start(app)
    _, state = game_state(app)
    legal = [str(m) for m in engine.legal_moves(state)]
    line = next(f"{c} Aragon: Zaragoza" for c in "GROPCBWY"
                if not any(m.startswith(f"{c} ") for m in legal))
    from pbem.games import MoveError, rules_for

    game, _ = game_state(app)
    rules = rules_for(game.kind)
    with pytest.raises(MoveError) as why:
        rules.apply(state, rules.parse(state, line))
    before = snapshot(app)
    handled = ingest(app, fill("thunderbird_plain.eml", reply_key(invitation), [line],
                               text_of(invitation)))
    assert handled.outcome == "refused", handled
    assert snapshot(app)[1:] == before[1:]
    answer = answers(box, "p0@example.org", "Your orders could not be applied")
    assert len(answer) == 1
    text = " ".join(text_of(answer[0]).split())
    assert f"'{line}'" in text
    assert " ".join(str(why.value).split()) in text
    assert "What you could play now:" in text
    for move in legal[:40]:
        assert move in text


@pytest.mark.parametrize("route", ROUTES)
def test_an_unknown_key_is_logged_and_answered_only_to_a_players_address(app, route, caplog):
    """A mistyped key (issue 29, point 8): a WARNING line without the key; an answer only
    when the From is a player's address, to that address, once a day; a stranger's From
    gets nothing, and nothing else changes."""
    box, invitation, orders = start(app)
    box.deliver()
    before = snapshot(app)
    key = secrets.token_urlsafe(24)[:32]
    address = f"play+{key}@{DOMAIN}"
    raw = fill("thunderbird_plain.eml", address, orders, text_of(invitation))
    handled = ingest(app, raw, route)
    assert handled.outcome == "unknown"
    after = snapshot(app)
    assert after[1:] == before[1:]
    assert after[0]["OutboxMessage"] == before[0]["OutboxMessage"] + 1
    assert after[0]["IncomingMail"] == before[0]["IncomingMail"]
    box.deliver()
    answer = box.to("p0@example.org")[-1]
    assert "not the reply address of a game" in " ".join(text_of(answer).split())
    assert key not in text_of(answer)
    warned = [r.getMessage() for r in caplog.records
              if r.name == "pbem.mailin.inbox" and r.levelname == "WARNING"]
    assert any(": unknown (no such key" in line for line in warned), warned
    assert not any(key in r.getMessage() for r in caplog.records)
    # Once a day; and never to a stranger.
    assert ingest(app, fill("thunderbird_plain.eml", address, orders), route).outcome == \
        "unknown"
    stranger = fill("thunderbird_plain.eml", address, orders).replace(
        b"p0@example.org", b"stranger@example.net")
    assert b"stranger@example.net" in stranger
    assert ingest(app, stranger, route).outcome == "unknown"
    assert snapshot(app)[0]["OutboxMessage"] == before[0]["OutboxMessage"] + 1


def test_a_replaced_key_gets_a_generic_answer_only_from_and_to_the_seats_address(app):
    from pbem.services.stewardship import create_admin, new_link

    box, invitation, orders = start(app)
    with app.app_context():
        admin = create_admin("admin@example.org", "a long enough password 42")
        new_link(admin, 1, 0, "the player lost the mail")
    before = snapshot(app)
    raw = fill("thunderbird_plain.eml", reply_key(invitation), orders, text_of(invitation))
    forged = raw.replace(b"From: Player 0 <p0@example.org>",
                         b"From: Anna <anna@elsewhere.example>")
    assert forged != raw
    handled = ingest(app, forged)
    assert (handled.outcome, handled.detail) == ("revoked", "the key was replaced; not answered")
    assert snapshot(app) == before, "no answer to a stranger (backscatter)"

    assert ingest(app, raw).outcome == "revoked"
    after = snapshot(app)
    assert after[1:] == before[1:] and after[0]["MoveRecord"] == before[0]["MoveRecord"]
    assert after[0]["IncomingMail"] == before[0]["IncomingMail"]
    assert box.to("anna@elsewhere.example") == []
    answer = [m for m in box.to("p0@example.org")
              if str(m["Subject"]) == "Re: [Kardinal & Koenig #1] You are invited to play"]
    assert len(answer) == 1, "an answer to the seat's own address, threaded"
    text = text_of(answer[0])
    assert "no longer valid" in " ".join(text.split())
    assert "Würzburg" not in text and "Franken" not in text  # nothing about the game


def test_a_reply_to_an_aborted_game_is_told_the_game_is_over(app):
    from pbem.services.stewardship import abort_game, create_admin

    box, invitation, orders = start(app)
    with app.app_context():
        abort_game(create_admin("admin@example.org", "a long enough password 42"), 1,
                   "testing the end")
    before = snapshot(app)
    handled = ingest(app, fill("gmail_top.eml", reply_key(invitation), orders,
                               text_of(invitation)))
    assert handled.outcome == "finished"
    assert snapshot(app)[1:] == before[1:]
    assert len(answers(box, "p0@example.org", "The game is over")) == 1


@pytest.mark.parametrize("route", ROUTES)
def test_an_oversized_mail_is_refused(app, route, caplog):
    """Nothing is read; the seat's own address is told, with the mail's true size (not the
    limit plus one), and so is the log."""
    box, invitation, orders = start(app)
    before = snapshot(app)
    padding = "x" * 76
    original = "\n".join([padding] * (app.config["MAIL_MAX_INCOMING_BYTES"] // 77 + 10))
    raw = fill("thunderbird_plain.eml", reply_key(invitation), orders, original)
    assert len(raw) > app.config["MAIL_MAX_INCOMING_BYTES"]
    handled = ingest(app, raw, route)
    assert handled.outcome == "oversized"
    assert handled.detail.startswith(f"{len(raw)} bytes"), handled
    after = snapshot(app)
    assert after[1:] == before[1:] and after[0]["MoveRecord"] == before[0]["MoveRecord"]
    assert after[0]["OutboxMessage"] == before[0]["OutboxMessage"] + 1
    answer = box.to("p0@example.org")[-1]
    assert str(answer["Subject"]).startswith("Re: ")
    assert f"Your mail of {len(raw)} bytes is larger" in " ".join(text_of(answer).split())
    assert any(f"oversized ({len(raw)} bytes" in r.getMessage() and r.levelname == "WARNING"
               for r in caplog.records)


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("raw", [
    bytes(range(256)) * 8,
    b"\xff\xfe\x00garbage\r\n\r\n\x00\x01\x02",
    b"To: play+" + b"A" * 32 + b"@games.example.org\nContent-Type: multipart/mixed\n\n--\n",
    b"To: play+" + b"A" * 32 + b"@games.example.org\nContent-Type: text/plain; charset=x-none\n"
    b"Content-Transfer-Encoding: base64\n\n!!!!\xff\n",
], ids=["bytes", "binary", "broken-multipart", "broken-charset"])
def test_garbage_is_unreadable_or_unknown_and_never_a_crash(app, raw, route):
    start(app)
    before = snapshot(app)
    handled = ingest(app, raw, route)
    assert handled.outcome in ("unreadable", "unknown"), handled
    assert snapshot(app) == before


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("content_type", [b'text/plain; charset="\xff\xfe"',
                                          b"text/plain; charset=rot13"])
def test_a_mail_whose_text_cannot_be_decoded_is_unreadable(app, content_type, route):
    """Even to a real key the MIME cannot be read, so nothing is done; the seat's own address
    (never the From) is told so."""
    box, invitation, _ = start(app)
    before = snapshot(app)
    raw = (b"To: " + reply_key(invitation).encode() + b"\nMessage-ID: <x@example.org>\n"
           b"From: someone@example.net\n"
           b"Content-Type: " + content_type + b"\n\nR Franken: W\xfcrzburg\n")
    handled = ingest(app, raw, route)
    assert handled.outcome == "unreadable", handled
    after = snapshot(app)
    assert after[1:] == before[1:] and after[0]["MoveRecord"] == before[0]["MoveRecord"]
    # Recorded, so that the same mail again is not answered again (issue 42, point 5).
    assert after[0]["IncomingMail"] == before[0]["IncomingMail"] + 1
    answer = box.to("p0@example.org")[-1]
    assert "its text could not be read" in " ".join(text_of(answer).split())
    assert not box.to("someone@example.net")


# --- 3. a whole game by mail --------------------------------------------------------------------

def test_a_whole_game_is_played_by_replies_alone(app):
    # A board picture for every turn's mail (test_mail_content covers them) would only cost
    # time here. (How fast replies are read is a benchmark's question, not this test's.)
    app.config["MAIL_BOARD_PICTURE"] = False
    new_game(app, 3, "by-mail", start=0)
    box = Mailbox(app)
    templates = ["thunderbird_plain.eml", "gmail_top.eml", "quoted_printable.eml",
                 "german_client.eml", "base64.eml", "html_only.eml"]
    for replies in range(1, 400):  # a bound on the game's length
        _, state = game_state(app)
        if state.is_over:
            break
        seat = state.current
        last = newest_with_key(box, f"p{seat}@example.org")
        orders = whole_turn(state)
        raw = fill(templates[replies % len(templates)], reply_key(last), orders, text_of(last))
        handled = ingest(app, raw)
        assert handled.outcome == "applied", (replies, orders, handled)
    else:
        pytest.fail("the game did not end within 400 replies")
    game, state = game_state(app)
    assert game.status == "finished"
    assert {via for *_, via in moves(app)} == {"email"}
    for seat in range(3):
        finals = answers(box, f"p{seat}@example.org", "The game is over")
        assert finals, subjects(box, f"p{seat}@example.org")[-3:]
    # a reply to the final mail: the game is over, nothing changes
    last = answers(box, "p0@example.org", "The game is over")[-1]
    before = snapshot(app)
    handled = ingest(app, fill("thunderbird_plain.eml", reply_key(last), ["draw deck"],
                               text_of(last)))
    assert handled.outcome == "finished"
    assert snapshot(app)[1:] == before[1:]
    assert len(answers(box, "p0@example.org", "The game is over")) == 2
