"""The mails a move causes are queued as intents and written when they are delivered.

A move's transaction stores which mail, for which seat, and the game as it was after that move;
the sender writes the text once, stores it in the row and sends it. So a mail delivered after
later moves still shows the position after its own move, in the seat's words of then, and a
mail that cannot be written waits in the queue (logged) instead of being lost.
"""

from __future__ import annotations

import json
import logging
import re
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest
from server import (
    Mailbox,
    game_state,
    html_of,
    make_app,
    new_game,
    play_moves,
    text_of,
    token_in,
)
from sqlalchemy import event
from sqlmodel import select

from pbem.ground.db import get_engine, reading, utcnow
from pbem.ground.models import QUEUED, SENDING, SENT, OutboxMessage
from pbem.scheduler.backends import LocalBackend
from pbem.scheduler.outbox import (
    REDACTED,
    UNWRITTEN,
    deliver_all_due,
    deliver_queued,
)
from pbem.services.health import STUCK_AFTER
from pbem.services.mail import kinds
from pbem.services.seat_settings import set_language

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL


def _rows(app, kind: str | None = None) -> list[OutboxMessage]:
    with reading(app) as session:
        query = select(OutboxMessage).order_by(OutboxMessage.id)
        if kind is not None:
            query = query.where(OutboxMessage.kind == kind)
        return list(session.exec(query))


def _card_line(state, seat: int) -> str:
    from pbem.games import rules_for

    rules = rules_for("kardinal-koenig")
    return f"Your hand ({state.players[seat]}): {rules.card_words(state.hands[seat])}"


def _one_turn(app, tokens):
    """Play until the seat to move changes; returns the state before and after."""
    _, before = game_state(app)
    play_moves(app, tokens, 10, until=lambda s: s.current != before.current)
    return before, game_state(app)[1]


def test_a_move_queues_its_mails_unwritten_and_delivery_writes_each_once(app, mailbox):
    _, tokens = new_game(app, 3, "intent")
    mailbox.deliver()  # the invitations
    _, after = _one_turn(app, tokens)
    queued = [r for r in _rows(app) if r.status == QUEUED]
    assert sorted(r.kind for r in queued) == ["moved", "your_turn"]
    for row in queued:  # addressed, with subject and links, but not written in the move
        assert row.intent_json is not None and row.text_body == row.html_body == ""
        assert row.subject.startswith("[Kardinal & König #1] ")
        assert len(json.loads(row.secrets_json)) == 3  # link, "my games" link, reply key
    mailbox.deliver()
    (your_turn,) = [m for m in mailbox.to(f"p{after.current}@example.org")
                    if str(m["Subject"]).endswith("Your turn")]
    row = next(r for r in _rows(app) if r.message_id == your_turn["Message-ID"])
    assert row.status == SENT and row.intent_json is None
    # The stored text is the text that was sent, its links hidden.
    assert _unlinked(text_of(your_turn)) == _unlinked(row.text_body)
    assert token_in(your_turn) not in row.text_body and REDACTED in row.text_body
    assert _card_line(after, after.current) in row.text_body


def test_a_mail_delivered_after_later_moves_shows_the_position_after_its_own_move(app,
                                                                                 mailbox):
    _, tokens = new_game(app, 3, "later")
    mailbox.deliver()
    _, first = _one_turn(app, tokens)  # nobody delivers the mails of this turn yet
    seat = first.current
    game_then, _ = game_state(app)
    play_moves(app, tokens, 10, until=lambda s: s.current != seat)  # that seat plays its turn
    _, now = game_state(app)
    assert _card_line(now, seat) != _card_line(first, seat), "its hand changed since"
    mailbox.deliver()
    (mine,) = [m for m in mailbox.to(f"p{seat}@example.org")
               if str(m["Subject"]).endswith("Your turn")]
    text = text_of(mine)
    assert _card_line(first, seat) in text and _card_line(now, seat) not in text
    assert f"(move {game_then.turn})\n" in text, "the turn file of its own move"
    # Every seat's mail shows its own hand only.
    for message in mailbox.messages():
        reader = int(str(message["To"]).split("@")[0].rsplit("p", 1)[1])
        for other in range(3):
            if other != reader:
                assert f"Your hand ({first.players[other]})" not in text_of(message)


def test_a_mail_is_written_in_the_seat_s_language_of_when_it_was_queued(app, mailbox):
    _, tokens = new_game(app, 3, "language")
    mailbox.deliver()
    _, after = _one_turn(app, tokens)
    with app.test_request_context():
        set_language(tokens[after.current], "de")  # after the move, before the delivery
    (mine,) = [m for m in mailbox.to(f"p{after.current}@example.org")
               if not str(m["Subject"]).endswith("You are invited to play")]
    assert str(mine["Subject"]).endswith("] Your turn")
    assert "it is your turn" in text_of(mine)


def test_a_mail_that_cannot_be_written_stays_queued_logged_and_goes_later(tmp_path, monkeypatch,
                                                                         caplog):
    app = make_app(tmp_path / "instance", MAIL_MAX_ATTEMPTS=1, MAIL_RETRY_SECONDS=60)
    mailbox = Mailbox(app)
    _, tokens = new_game(app, 3, "broken")
    mailbox.deliver()
    _, after = _one_turn(app, tokens)

    def broken(*args, **kwargs):
        raise RuntimeError("template exploded")

    monkeypatch.setitem(kinds.KINDS, "your_turn",
                        replace(kinds.KINDS["your_turn"], context=broken))
    now = utcnow()
    with caplog.at_level(logging.ERROR, logger="pbem.scheduler.outbox"):
        counts = deliver_all_due(app, now)
    assert counts == {"sent": 1, "retry": 1, "failed": 0, "unknown": 0}  # "moved" went
    (row,) = _rows(app, "your_turn")
    assert (row.status, row.attempts, row.intent_json is not None) == (QUEUED, 1, True)
    assert row.last_error.startswith(UNWRITTEN) and "template exploded" in row.last_error
    assert row.text_body == "" and row.next_attempt_at > now
    assert f"mail {row.id} to " in caplog.text and "could not be written" in caplog.text
    # Past its attempts it still waits (MAIL_MAX_ATTEMPTS is 1): nothing is lost.
    assert deliver_all_due(app, row.next_attempt_at)["retry"] == 1
    (row,) = _rows(app, "your_turn")
    assert (row.status, row.attempts) == (QUEUED, 2)
    monkeypatch.undo()
    assert deliver_all_due(app, row.next_attempt_at)["sent"] == 1
    mails = [m for m in mailbox.to(f"p{after.current}@example.org")
             if str(m["Subject"]).endswith("Your turn")]
    assert len(mails) == 1 and _card_line(after, after.current) in text_of(mails[0])


def test_a_mail_is_written_once_and_sent_again_from_its_stored_text(tmp_path, monkeypatch):
    from test_mail_delivery import SmtpServer, smtp_app

    smtp = SmtpServer()
    smtp.start()
    try:
        app = smtp_app(tmp_path, smtp)
        _, tokens = new_game(app, 3, "once")
        deliver_all_due(app)
        _one_turn(app, tokens)
        smtp.handler.refuse_next = 2  # both mails of the turn: written, then refused
        now = utcnow()
        assert deliver_all_due(app, now)["retry"] == 2
        written = {r.id: r.text_body for r in _rows(app) if r.status == QUEUED}
        assert len(written) == 2 and all(written.values())
        assert all(r.intent_json is None for r in _rows(app))

        def never(*args, **kwargs):
            raise AssertionError("written twice")

        for name, kind in list(kinds.KINDS.items()):
            monkeypatch.setitem(kinds.KINDS, name, replace(kind, context=never))
        assert deliver_all_due(app, now + timedelta(hours=1))["sent"] == 2
        for got in smtp.received[-2:]:
            message = got["message"]
            row = next(r for r in _rows(app) if r.message_id == message["Message-ID"])
            assert _unlinked(text_of(message)) == _unlinked(written[row.id])
    finally:
        smtp.stop()


def _unlinked(text: str) -> str:
    """A mail's text with its links' keys (or where they were hidden) made alike."""
    text = text.replace(REDACTED, "KEY").replace("\r\n", "\n")
    return re.sub(r"(/seat/|/me/)\S+", r"\1KEY", text).strip()


@contextmanager
def _counted(app):
    """What the app's engine does meanwhile: the write transactions begun, and each SQL
    statement run."""
    seen = {"writes": 0, "statements": []}

    def begun(connection):
        seen["writes"] += bool(connection.get_execution_options().get("pbem_write"))

    def statement(connection, cursor, sql, parameters, context, executemany):
        seen["statements"].append(" ".join(sql.split()))

    engine = get_engine(app)
    event.listen(engine, "begin", begun)
    event.listen(engine, "before_cursor_execute", statement)
    try:
        yield seen
    finally:
        event.remove(engine, "begin", begun)
        event.remove(engine, "before_cursor_execute", statement)


class OneByOne(LocalBackend):
    """The local backend, as a backend that sending again would harm (a mail server)."""

    idempotent = False


@pytest.mark.parametrize("backend, records", [(OneByOne, 2), (LocalBackend, 1)])
def test_each_mail_is_recorded_with_its_written_text_in_one_transaction(app, mailbox, backend,
                                                                         records):
    """A claim, then a write transaction that stores each mail's text and its delivery
    together (nothing written is kept apart from the outcome it went out with): one per mail,
    or one for the claim where sending again does no harm (a mail file written again
    replaces itself)."""
    _, tokens = new_game(app, 3, "one-write")
    mailbox.deliver()
    _one_turn(app, tokens)
    assert len([r for r in _rows(app) if r.intent_json is not None]) == 2
    app.extensions["pbem_mail_backend"] = backend(app.config["MAIL_FOLDER"])
    with _counted(app) as seen:
        assert deliver_queued(app, utcnow()) == {"sent": 2, "retry": 0, "failed": 0,
                                                 "unknown": 0}
    assert seen["writes"] == 1 + records
    for row in _rows(app):
        assert row.status == SENT and row.intent_json is None and REDACTED in row.text_body


def test_a_local_sender_that_dies_mid_claim_leaves_it_to_be_written_again_once(app, mailbox,
                                                                               monkeypatch):
    """Its files are written, nothing recorded: once the claim is taken for stuck, the next
    run writes the same files again (the same messages) and records each mail once."""
    _, tokens = new_game(app, 3, "dies")
    mailbox.deliver()
    _one_turn(app, tokens)
    folder = Path(app.config["MAIL_FOLDER"])
    before = set(folder.glob("*.eml"))

    class Killed(BaseException):
        pass

    real = LocalBackend.send

    def dies(self, messages):
        yield from real(self, messages)
        raise Killed  # after the last file, before anything is recorded

    monkeypatch.setattr(LocalBackend, "send", dies)
    now = utcnow()
    with pytest.raises(Killed):
        deliver_queued(app, now)
    written = set(folder.glob("*.eml")) - before
    assert len(written) == 2
    assert {r.status for r in _rows(app) if r.intent_json is not None} == {SENDING}
    monkeypatch.undo()
    assert deliver_all_due(app, now + STUCK_AFTER + timedelta(seconds=1))["sent"] == 2
    assert set(folder.glob("*.eml")) - before == written, "the same two files, no more"
    rows = {f"{r.id:08d}.eml": r for r in _rows(app)}
    for path in written:
        row = rows[path.name]
        assert (row.status, row.attempts) == (SENT, 1)
        assert f"Message-ID: {row.message_id}" in path.read_text()


def test_the_mails_of_one_claim_read_their_games_and_seats_in_one_statement(app, mailbox):
    """Two games' turns: their four mails are written from one read of both games and all
    their seats."""
    _, first = new_game(app, 3, "read-once")
    _, second = new_game(app, 3, "read-twice")
    mailbox.deliver()
    for game_id, tokens in ((1, first), (2, second)):
        _, before = game_state(app, game_id)
        play_moves(app, tokens, 10, game_id=game_id,
                   until=lambda s, seat=before.current: s.current != seat)
    with _counted(app) as seen:
        assert deliver_queued(app, utcnow())["sent"] == 4
    reads = [s for s in seen["statements"] if s.startswith("SELECT")
             and (" FROM game" in s or " FROM seat" in s or "JOIN seat" in s)]
    assert len(reads) == 1, reads


def test_the_board_table_is_written_once_per_position_and_language(app, mailbox):
    """The seats' mails of one move share the board in words (a spectator's view, the same for
    all); a seat reading another language gets its own, in its words."""
    _, tokens = new_game(app, 4, "table-once")
    mailbox.deliver()
    _, before = game_state(app)
    german = (before.current + 2) % 4  # not the mover: one of the three this turn mails
    with app.test_request_context():
        set_language(tokens[german], "de")
    _one_turn(app, tokens)
    assert len([r for r in _rows(app) if r.intent_json is not None]) == 3
    wanted: list[str] = []
    environment = app.jinja_env
    fetch = environment.get_template

    def counted(name, *args, **kwargs):
        wanted.append(name)
        return fetch(name, *args, **kwargs)

    environment.get_template = counted
    try:
        assert mailbox.deliver()["sent"] == 3
    finally:
        environment.get_template = fetch
    assert [n for n in wanted if n.endswith("/mail_board.html")] == \
        ["games/kardinal-koenig/mail_board.html"] * 2, "once in English, once in German"
    heading = '<th style="border:1px solid #ccc;padding:2px 6px;text-align:left">{}</th>'
    for message in mailbox.messages()[-3:]:
        words = "Land" if str(message["To"]).startswith(f"Player {german} ") else "Country"
        assert heading.format(words) in html_of(message)


@pytest.mark.parametrize("backend, claimed", [(OneByOne, 10), (LocalBackend, 12)])
def test_a_claim_is_larger_where_sending_again_does_no_harm(app, backend, claimed):
    """Ten mails at a time (what a sender killed mid-claim leaves waiting, one of them maybe
    sent twice); five times as many for the local folder (left to be written again, nothing
    twice)."""
    for i in range(4):
        new_game(app, 3, f"claims-{i}")  # twelve invitations
    app.extensions["pbem_mail_backend"] = backend(app.config["MAIL_FOLDER"])
    assert deliver_queued(app, utcnow())["sent"] == claimed


def test_a_mail_queued_before_the_upgrade_is_written_from_its_old_intent(app, mailbox):
    """Outboxes of running servers hold intents written by the code before the mail kinds
    were described once: their format (which mail, its seat, the game and seats then, the
    arguments) is still read, so those mails go out after an upgrade."""
    _, tokens = new_game(app, 3, "upgrade")
    mailbox.deliver()
    _, after = _one_turn(app, tokens)
    (row,) = _rows(app, "your_turn")
    game, _ = game_state(app)
    seat = after.current
    # As the server before this change wrote it (pbem/mail.py's `_intent`, at a572433).
    old = {"mail": "your_turn", "seat": seat,
           "game": {"state_json": game.state_json, "turn": game.turn, "status": game.status,
                    "title": game.title, "timezone": game.timezone, "deadline_at": None},
           "seats": {str(seat): [f"Player {seat}", after.players[seat], None, "en"]},
           "args": {"news": ["Older news, as plain text"], "reminder": False,
                    "first_turn": False}}
    with app.app_context(), get_engine(app).begin() as connection:
        connection.execute(OutboxMessage.__table__.update()
                           .where(OutboxMessage.id == row.id)
                           .values(intent_json=json.dumps(old)))
    mailbox.deliver()
    (mine,) = [m for m in mailbox.to(f"p{seat}@example.org")
               if str(m["Subject"]).endswith("Your turn")]
    text = text_of(mine)
    assert "Older news, as plain text" in text and _card_line(after, seat) in text
    (row,) = _rows(app, "your_turn")
    assert row.status == SENT and row.intent_json is None
