"""Every kind of mail is one entry of one table (pbem.services.mail.kinds), and every mail is
queued one way (pbem.services.mail.sending.send)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from server import new_game, text_of
from sqlmodel import select

from pbem.ground.db import reading, writing
from pbem.ground.models import Game, OutboxMessage, Seat
from pbem.services.mail import kinds
from pbem.services.mail.kinds import Cap, MailKind
from pbem.services.mail.sending import send

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parent.parent.parent
TEMPLATES = ROOT / "templates" / "email"

# The outbox kinds the server has written: rows queued before an upgrade keep them.
KNOWN = {"invitation", "notice", "undo", "answer", "digest", "talk", "talk_digest", "your_turn",
         "reminder", "moved", "final", "played_for_you", "address_changed", "handed_over",
         "misdirected", "revoked", "admin", "my_link", "lobby_news", "tournament",
         "start_confirm", "start_invite", "start_news"}


def _toy_context(session, game, seat, rules, state, wish: str) -> dict:
    return {"heading": "toy", "is_answer": False,
            "lines": [f"{wish}, {seat.name}", *rules.position_lines(state, seat.number)]}


def test_a_new_kind_is_one_entry_and_goes_out_through_the_real_outbox(app, mailbox):
    """A toy kind (written at delivery, counted once a day per seat) is registered as a
    newcomer adds one to the table; queued with `send`, the outbox writes and sends it, and a
    second one the same day is not queued."""
    toy = kinds.register(MailKind("toy", "notice", subject=lambda wish, **_args: f"Toy: {wish}",
                                  context=_toy_context, later=True, per_day=Cap(1), links=True))
    try:
        new_game(app, 3, "toys")
        mailbox.deliver()  # the invitations
        with app.test_request_context("/"), writing() as session:
            game = session.get(Game, 1)
            seat = session.exec(select(Seat).where(Seat.game_id == 1, Seat.number == 1)).one()
            assert send(session, toy, game=game, seat=seat, wish="Good luck") is not None
            assert send(session, toy, game=game, seat=seat, wish="Again") is None
        mailbox.deliver()
        with reading(app) as session:
            (row,) = session.exec(select(OutboxMessage).where(OutboxMessage.kind == "toy")).all()
        (mine,) = [m for m in mailbox.to("p1@example.org") if "Toy" in str(m["Subject"])]
        assert str(mine["Subject"]) == "[Kardinal & König #1] Toy: Good luck"
        assert mine["Message-ID"] == row.message_id and "Good luck, Player 1" in text_of(mine)
        assert "/seat/" in text_of(mine)  # with the seat's own link
    finally:
        del kinds.KINDS[toy.name]


def test_every_kind_is_named_as_before_and_has_its_two_templates():
    """The constants' names are the kinds the outbox holds (never renamed), each with its
    .txt and .html template; a name is entered once."""
    assert set(kinds.KINDS) == KNOWN
    for kind in kinds.KINDS.values():
        assert getattr(kinds, kind.name.upper()) is kind
        for suffix in ("txt", "html"):
            assert (TEMPLATES / f"{kind.template}.{suffix}").is_file(), (kind.name, suffix)
    with pytest.raises(ValueError, match="exists already"):
        kinds.kind("notice", subject=lambda **_args: "twice")


def _queued_elsewhere() -> list[str]:
    """Each place in pbem/ that writes an outbox row or names a mail kind by a bare string,
    but the one way (pbem/services/mail/sending.py)."""
    found = []
    for path in sorted((ROOT / "pbem").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if "migrations" in path.parts or relative == "pbem/services/mail/sending.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name in ("insert_later", "insert_pending") and any(
                    isinstance(a, ast.Name) and a.id == "OutboxMessage" for a in node.args):
                found.append(f"{relative}:{node.lineno} writes an outbox row")
            if name == "queue" or any(k.arg == "kind" and isinstance(k.value, ast.Constant)
                                      and k.value.value in KNOWN for k in node.keywords):
                found.append(f"{relative}:{node.lineno} queues a mail its own way")
    return found


def test_no_mail_is_queued_but_through_send():
    found = _queued_elsewhere()
    assert not found, "\n".join(found)


def test_a_reminder_queued_before_reminders_had_a_kind_of_their_own_is_written_as_one(app,
                                                                                     mailbox):
    """Before the table, a reminder's intent said `"mail": "your_turn"` with `reminder` among
    its arguments; such a row, left in the outbox by an upgrade, still goes out as a
    reminder, as does one queued now (its own kind, REMINDER)."""
    import json

    from pbem.ground.db import get_engine

    new_game(app, 3, "reminders")
    mailbox.deliver()
    with app.test_request_context("/"), writing() as session:
        game = session.get(Game, 1)
        seats = list(session.exec(select(Seat).where(Seat.game_id == 1).order_by(Seat.number)))
        for seat in seats[:2]:
            send(session, kinds.REMINDER, game=game, seat=seat, news=[])
    with reading(app) as session:
        rows = session.exec(select(OutboxMessage).where(OutboxMessage.kind == "reminder")
                            .order_by(OutboxMessage.id)).all()
    assert [json.loads(r.intent_json)["mail"] for r in rows] == ["reminder", "reminder"]
    old = json.loads(rows[1].intent_json)
    old["mail"], old["args"]["reminder"] = "your_turn", True
    with app.app_context(), get_engine(app).begin() as connection:
        connection.execute(OutboxMessage.__table__.update()
                           .where(OutboxMessage.id == rows[1].id)
                           .values(intent_json=json.dumps(old)))
    mailbox.deliver()
    for number in (0, 1):
        (mine,) = [m for m in mailbox.to(f"p{number}@example.org")
                   if "Reminder" in str(m["Subject"])]
        assert "a reminder: it is your turn" in text_of(mine)
