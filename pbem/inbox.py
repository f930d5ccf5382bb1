"""Mail coming in: a player's reply with orders, however it arrives (`pbem ingest-mail` on a
mail server's pipe, the SMTP listener, IMAP polling), goes through `handle_incoming`.

The reply's address (`play+<key>@<domain>`, the Reply-To of the mail it answers) names the seat
and the turn; the From address counts for nothing, so a forged sender gains nothing (and a
replaced key is answered only when the From is the seat's own address, so a forged From
cannot aim the server's answers at a stranger). The orders
are read from the reply's own text (quoted text, signatures and the rest of the turn file left
out; HTML-only mail turned into text) and applied through `submit_orders`, like the seat page's
turn file. Every outcome but an unknown key gets an answer by mail; an unknown key gets none and
leaves no trace. A Message-ID seen before changes nothing.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import timedelta
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import getaddresses
from html.parser import HTMLParser
from typing import ClassVar

from flask import current_app, g
from flask_babel import force_locale
from .i18n import gettext as _
from sqlalchemy import func
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from . import bounces, i18n, mail
from .db import reading, utcnow, writing
from .games import choices, rules_for
from .models import PAUSED, RUNNING, TO_ALL, Game, IncomingMail, OutboxMessage, Seat, SeatKey
from .services import (
    GameNotRunning,
    ServiceError,
    StaleTurn,
    is_expired,
    submit_orders,
    superseded_at,
)
from .talk import post_message
from .tokens import hash_token
from .turnfile import Orders, read, read_talk

DOMAIN = re.compile(r"[a-z0-9-]+(\.[a-z0-9-]+)+")
KEY_ADDRESS = re.compile(r"play\+([A-Za-z0-9_-]{32})@", re.IGNORECASE)
RECIPIENT_HEADERS = ("Delivered-To", "X-Original-To", "Envelope-To", "To", "Cc")


@dataclass(frozen=True)
class Handled:
    outcome: str  # applied, partly, refused, stale, finished, duplicate, revoked, unknown, ...
    detail: str = ""


class _Text(HTMLParser):
    """HTML mail as text: line breaks kept, quoted parts (blockquote, Gmail's quote) dropped."""

    BREAKS: ClassVar[set[str]] = {"br", "p", "div", "li", "tr", "h1", "h2", "h3", "pre"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag, attrs):
        classes = dict(attrs).get("class") or ""
        if self.skip or tag == "blockquote" or "quote" in classes:
            self.skip += tag not in ("br", "img", "hr")
        elif tag in self.BREAKS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if self.skip and tag not in ("br", "img", "hr"):
            self.skip -= 1
        elif tag in self.BREAKS:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def body_text(message: EmailMessage) -> str:
    """The reply's text: its plain part, or its HTML part turned into text."""
    part = message.get_body(("plain",))
    if part is not None:
        return part.get_content()
    part = message.get_body(("html",))
    if part is None:
        return ""
    parser = _Text()
    parser.feed(part.get_content())
    return "".join(parser.parts)


def addresses_in(message: EmailMessage, name: str) -> list[str]:
    """The addresses in the headers called `name`, read from their raw text by the forgiving
    parser of email.utils: the strict one behind `message[name]` raises on some broken
    addresses (IndexError on 'play+key@' with nothing after the '@'); a broken address is no
    address here, and the mail is refused for want of one, not by a crash."""
    values = [value for key, value in message.raw_items() if key.lower() == name.lower()]
    return [address for _, address in getaddresses(values) if address]


def _key_in(message: EmailMessage, recipients: list[str]) -> str | None:
    addresses = list(recipients)
    for header in RECIPIENT_HEADERS:
        addresses += addresses_in(message, header)
    for address in addresses:
        match = KEY_ADDRESS.search(address or "")
        if match:
            return match.group(1)
    return None


def _envelope_domain(recipients: list[str], token: str) -> str | None:
    for address in recipients:
        match = KEY_ADDRESS.search(address or "")
        if match and match.group(1) == token:
            domain = address.rpartition("@")[2].strip().strip(">").lower()
            if DOMAIN.fullmatch(domain):
                return domain
    return None


def _message_id(message: EmailMessage, raw: bytes) -> str:
    found = mail.one_line(str(message.get("Message-ID", "") or ""))
    return found[:300] if found else "sha256:" + hashlib.sha256(raw).hexdigest()


def answering(message: EmailMessage) -> mail.Answering:
    """What an answer to `message` needs to thread under it (header values made one line)."""
    def header(name: str) -> str:
        try:
            return mail.one_line(str(message.get(name, "") or ""))
        except Exception:  # noqa: BLE001  (a header that cannot be decoded is left out)
            return ""

    found = header("Message-ID")
    message_id = found[:300] if found.startswith("<") and found.endswith(">") else None
    references = " ".join(r for r in header("References").split()
                          if r.startswith("<") and r.endswith(">"))
    return mail.Answering(message_id, references[-2000:], header("Subject"))


def _answer(seat_id: int, subject: str, lines: list[str], message: EmailMessage) -> None:
    with writing() as session:
        seat = session.get(Seat, seat_id)
        game = session.get(Game, seat.game_id)
        rules = rules_for(game.kind)
        state = rules.loads(game.state_json)
        mail.notice(session, game, seat, subject,
                    [*lines, "", *rules.position_lines(state, seat.number)],
                    answering=answering(message))


def _remember(message_id: str, seat_id: int | None, outcome: str, detail: str) -> bool:
    """Record a processed mail; False when another delivery of it was recorded first."""
    try:
        with writing() as session:
            session.add(IncomingMail(message_id=message_id, seat_id=seat_id, outcome=outcome,
                                     detail=detail[:2000]))
        return True
    except IntegrityError:
        return False


def handle_incoming(raw: bytes, recipients: list[str] | None = None) -> Handled:
    """Read one incoming mail and act on it; needs an app context."""
    if (bounce := bounces.handle(raw, recipients or [])) is not None:  # to bounce+<key>@
        return Handled(*bounce)
    if len(raw) > current_app.config["MAIL_MAX_INCOMING_BYTES"]:
        return Handled("oversized", f"{len(raw)} bytes is more than this server accepts")
    try:
        message = BytesParser(policy=policy.default).parsebytes(raw)
        text = body_text(message)
    except Exception as exc:  # noqa: BLE001  (any malformed MIME: refuse the mail, not the server)
        return Handled("unreadable", f"{type(exc).__name__}: {exc}"[:200])
    token = _key_in(message, recipients or [])
    if token is None:
        return Handled("unknown", "no play+<key> address")
    if not current_app.config["MAIL_REPLY_DOMAIN"]:
        # The envelope recipient (never a header, which anyone can write) is where the mail
        # server delivered the reply: its domain is the reply domain this process lacks.
        g.reply_domain = _envelope_domain(recipients or [], token)
    with reading() as session:
        key, superseded = session.exec(select(SeatKey, superseded_at()).where(
            SeatKey.token_hash == hash_token(token))).first() or (None, None)
        seen = key is not None and session.exec(select(IncomingMail).where(
            IncomingMail.message_id == _message_id(message, raw))).first()
    if key is None:
        return Handled("unknown", "no such key")
    message_id = _message_id(message, raw)
    if key.revoked_at is not None or is_expired(superseded):
        answered = _answer_revoked(key, message)
        return Handled("revoked", "the key was replaced" + ("" if answered else
                                                            "; not answered"))
    if seen:
        _answer(key.seat_id, "Your mail was already read",
                [(f"Your mail {message_id} reached the server a second time; it was read the "
                  "first time and nothing more was done.")], message)
        return Handled("duplicate", message_id)
    if key.talk_to is not None:
        return _apply_talk(key, message_id, text, message)
    return _apply(key, message_id, text, message)


REVOKED_ANSWERS_PER_DAY = 3


def _answer_revoked(key: SeatKey, message: EmailMessage) -> bool:
    """A polite answer to a replaced key, telling nothing about the game; False when none.

    A From address is easily forged, so answering it would let anyone aim the server's mail
    at a stranger (backscatter). The answer goes only to the seat's own address, only when the
    mail came from it, and at most REVOKED_ANSWERS_PER_DAY times a day per seat."""
    sender = (addresses_in(message, "From") or [""])[0]
    with writing() as session:
        seat = session.get(Seat, key.seat_id)
        if sender.strip().lower() != seat.email.strip().lower():
            return False
        answered = session.exec(select(func.count()).select_from(OutboxMessage).where(
            OutboxMessage.seat_id == seat.id, OutboxMessage.kind == "revoked",
            OutboxMessage.created_at > utcnow() - timedelta(days=1))).one()
        if answered >= REVOKED_ANSWERS_PER_DAY:
            return False
        with force_locale(seat.language):
            mail.queue(session, kind="revoked", to=mail.formatted_address(seat.name, seat.email),
                       subject=_("Your mail to the game server"), template="revoked",
                       seat=seat, answering=answering(message))
    return True


def _apply_talk(key: SeatKey, message_id: str, text: str, message: EmailMessage) -> Handled:
    """A reply to a message mail: its own text goes to the same audience as a message (every
    seat, or privately to the one who wrote); orders under an ORDERS line are still orders."""
    words, orders = read_talk(text)
    if not orders.lines and not _remember(message_id, key.seat_id, "message", words[:200]):
        return Handled("duplicate", message_id)
    if words:
        try:
            post_message(None, words, "all" if key.talk_to == TO_ALL else key.talk_to,
                         seat_id=key.seat_id, via="email")
        except ServiceError as exc:
            if orders.lines and not _remember(message_id, key.seat_id, "refused", exc.message):
                return Handled("duplicate", message_id)
            _answer(key.seat_id, _("Your message was not sent"),
                    [exc.message, _("Nothing was sent to the other players.")], message)
            return Handled("refused", exc.message)
    if orders.lines:
        return _apply(key, message_id, text, message, orders)
    if not words:
        _answer(key.seat_id, _("Your mail held no message"), [
            _("Your reply reached the server, but nothing in it was written by you (quoted "
              "text is left out), so nothing was sent.")], message)
        return Handled("refused", "empty")
    return Handled("message", words[:200])


def _apply(key: SeatKey, message_id: str, text: str, message: EmailMessage,
           orders: Orders | None = None) -> Handled:
    orders = read(text) if orders is None else orders
    orders = Orders(key.turn, orders.lines)
    with reading() as session:
        seat = session.get(Seat, key.seat_id)
        game = session.get(Game, seat.game_id)
        rules = rules_for(game.kind)
    i18n.use(seat.language)  # the answer, and every message on the way, in the seat's words
    if game.status != RUNNING:
        outcome = Handled("finished", f"the game is {game.status}")
        if _remember(message_id, key.seat_id, outcome.outcome, outcome.detail):
            if game.status == PAUSED:
                _answer(key.seat_id, _("The game is paused"), [
                    _("Your mail reached %(game)s, which an organiser has paused: nothing was "
                      "applied. You will get a mail when it goes on; send your orders again "
                      "then.", game=f"{game.title} #{game.id}")], message)
            else:
                _answer(key.seat_id, _("The game is over"), [
                    _("Your mail reached %(game)s, which is %(status)s: no more moves can be "
                      "made.", game=f"{game.title} #{game.id}",
                      status=i18n.status_word(game.status))], message)
        return outcome
    try:
        result = submit_orders(None, orders, seat_id=key.seat_id, via="email")
    except ServiceError as exc:
        kind = "stale" if isinstance(exc, (StaleTurn, GameNotRunning)) else "refused"
        if not _remember(message_id, key.seat_id, kind, exc.message):
            return Handled("duplicate", message_id)
        state = rules_for(game.kind).loads(_state_json(game.id))
        legal = choices(rules, state) if rules.to_move(state) == seat.number else []
        lines = [exc.message, _("Nothing was changed.")]
        if kind == "stale":
            lines.append(_("Your orders answered an older mail: look at the newest one, or at "
                           "your page, and reply to that."))
        elif legal:
            lines += ["", _("What you could play now:"), *(f"  {m}" for m in legal[:40])]
            if len(legal) > 40:
                lines.append("  " + _("… and %(num)d more (see your page).",
                                      num=len(legal) - 40))
        _answer(key.seat_id, _("Your orders could not be applied"), lines, message)
        return Handled(kind, exc.message)
    applied = [r.notation for r in result.applied]
    outcome = "partly" if result.failed else "applied"
    if not _remember(message_id, key.seat_id, outcome, "; ".join(applied)):
        return Handled("duplicate", message_id)
    lines = [_("Applied:"), *(f"  {line}" for r in result.applied for line in r.lines)]
    if result.failed:
        lines += ["", _("Stopped at '%(order)s': %(reason)s", order=result.failed,
                        reason=result.error), _("The moves before it were made.")]
    _answer(key.seat_id, _("Your orders were applied") if not result.failed
            else _("Some of your orders were applied"), lines, message)
    return Handled(outcome, "; ".join(applied))


def _state_json(game_id: int) -> str:
    with reading() as session:
        return session.get(Game, game_id).state_json
