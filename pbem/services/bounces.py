"""Mail that did not reach a player: bounces of the server's own mail, and dead addresses.

Every mail sent over SMTP carries an envelope sender of its own (VERP): `bounce+<key>@<[mail]
reply_domain>`, where the key names the mail's outbox row, hidden and signed with the server's
secret key (`return_path`), so a bounce names the mail it is about whatever the remote server
writes in it, and nobody can forge a bounce that marks a stranger's address dead: a bounce
address this server did not make is ignored. The key also hides the row's number (mail ids
are sequential: a player could count the mail sent to others). Bounces come in through any of
the three ways mail arrives (`pbem ingest-mail`, the SMTP listener, IMAP): `handle` is called
first by `pbem.mailin.inbox.handle_incoming` and reads them with flufl.bounce (RFC 3464 reports and
the formats of many mail servers that do not write them). Without a reply domain, or with
`[mail] verp = false`, the envelope sender is the From address and bounces go to that mailbox,
unread by the server: only the mail server's own refusal (below) is seen then.

A permanent failure, reported by a bounce or by the mail server itself refusing the recipient
with a 5xx (pbem.scheduler.outbox), fails the mail and marks its seat's address dead (`mark_dead`): when,
why, and the address it was about. The admin pages show the mark, and the organisers
(`[mail] admins`) are told once per seat and address. A later mail to the address that goes out
clears the mark (`clear_delivered`), and so does a change of the seat's address (the mark is
about the address it names). A failure about the message rather than the address (refused as
spam, too big: enhanced status 5.3, 5.5, 5.6, 5.7) fails the mail without marking the address.

This module does not send mail nor read players' replies: it is called by the sender's record
of a delivery and by the mail-in path.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import re
from datetime import datetime
from email import message_from_bytes
from email.message import Message
from email.parser import BytesHeaderParser
from email.policy import compat32
from email.utils import getaddresses, parseaddr
from types import SimpleNamespace
from typing import Any, cast

from flask import current_app
from flask_babel import lazy_gettext as L_
from sqlalchemy import bindparam, select, update
from sqlalchemy.engine import Connection
from sqlmodel import col

from ..ground.db import Writer, insert_pending, reading, utcnow, writing_rows
from ..ground.models import FAILED, SENT, UNKNOWN, Game, OutboxMessage, Seat

logger = logging.getLogger(__name__)
# flufl.bounce says at INFO which of its detectors it runs, some twenty lines a bounce.
logging.getLogger("flufl.bounce").setLevel(logging.WARNING)

PREFIX = "bounce+"
TAG_BYTES = 10  # 80 bits: a forged key is right once in 2**80 tries
KEY_LENGTH = 29  # base32 characters of the tag and the hidden row number (18 bytes)
BOUNCE_ADDRESS = re.compile(rf"bounce\+([a-z2-7]{{{KEY_LENGTH}}})@", re.IGNORECASE)
RECIPIENT_HEADERS = ("Delivered-To", "X-Original-To", "Envelope-To", "To", "Cc")
ENHANCED = re.compile(r"\b([245])\.(\d{1,3})\.(\d{1,3})\b")
# Enhanced status classes (RFC 3463) about the recipient: addressing, mailbox, routing. The
# others (the mail system, protocol, content, policy) say the message was refused, not where.
ABOUT_ADDRESS = {"1", "2", "4"}
REASON_CHARS = 300


# --- the envelope sender ---------------------------------------------------------------------

def _mac(secret: bytes, purpose: bytes, data: bytes) -> bytes:
    return hmac.new(secret, purpose + data, hashlib.sha256).digest()


def bounce_key(secret: str, row_id: int) -> str:
    """The key of outbox row `row_id` in its bounce address: a tag (an HMAC of the number) and
    the number hidden by a mask made from the tag, as base32 in lower case (mail servers may
    change the case of an address's local part)."""
    key = secret.encode()
    number = row_id.to_bytes(8, "big")
    tag = _mac(key, b"pbem bounce tag ", number)[:TAG_BYTES]
    mask = _mac(key, b"pbem bounce mask ", tag)[:8]
    hidden = bytes(a ^ b for a, b in zip(number, mask, strict=True))
    return base64.b32encode(tag + hidden).decode("ascii").rstrip("=").lower()


def row_of(secret: str, key: str) -> int | None:
    """The outbox row a bounce key names; None for a key this server did not make."""
    if len(key) != KEY_LENGTH:
        return None
    try:
        data = base64.b32decode(key.upper() + "===")
    except (binascii.Error, ValueError):
        return None
    tag, hidden = data[:TAG_BYTES], data[TAG_BYTES:]
    mask = _mac(secret.encode(), b"pbem bounce mask ", tag)[:8]
    number = bytes(a ^ b for a, b in zip(hidden, mask, strict=True))
    expected = _mac(secret.encode(), b"pbem bounce tag ", number)[:TAG_BYTES]
    return int.from_bytes(number, "big") if hmac.compare_digest(tag, expected) else None


def return_path(config, row_id: int) -> str | None:
    """The envelope sender of outbox row `row_id`'s mail: its bounce address, or None (the
    From address then) without `[mail] reply_domain` or with `[mail] verp = false`."""
    domain = config["MAIL_REPLY_DOMAIN"]
    if not domain or not config["MAIL_VERP"]:
        return None
    return f"{PREFIX}{bounce_key(config['SECRET_KEY'], row_id)}@{domain}"


# --- what a failure says ------------------------------------------------------------------------

def enhanced_status(text: str) -> str | None:
    """The first enhanced status code (RFC 3463, like 5.1.1) in a server's answer, if any."""
    match = ENHANCED.search(text or "")
    return match.group(0) if match else None


def is_about_address(status: str | None, default: bool) -> bool:
    """Whether a permanent failure with enhanced `status` says the address does not work;
    `default` when it has none, or only the generic 5.0.0 (True where the failure is the
    recipient's by its place: a refusal of RCPT, a bounce)."""
    if status is None:
        return default
    _, subject, detail = status.split(".")
    if subject == "0" and detail == "0":
        return default
    return subject in ABOUT_ADDRESS


def _one_line(text: str) -> str:
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


# --- reading bounces ---------------------------------------------------------------------------

def _bounce_keys(raw: bytes, recipients: list[str]) -> list[str]:
    """The bounce keys a mail is addressed to: by its envelope recipients when the mail server
    gave them (ingest-mail, the listener), else by its headers (IMAP)."""
    addresses = list(recipients)
    if not addresses:
        end = min((at for at in (raw.find(b"\r\n\r\n"), raw.find(b"\n\n")) if at >= 0),
                  default=len(raw))
        try:  # the headers alone: every mail read from IMAP comes this way
            head = BytesHeaderParser(policy=compat32).parsebytes(raw[:end], headersonly=True)
        except Exception:
            return []
        values = [str(value) for name, value in head.items() if name in RECIPIENT_HEADERS]
        addresses = [address for _, address in getaddresses(values)]
    return [match.group(1) for match in map(BOUNCE_ADDRESS.search, addresses) if match]


def _report_fields(message: Message) -> tuple[str | None, str | None]:
    """The Status and Diagnostic-Code of the first failed recipient in a delivery report."""
    for part in message.walk():
        if part.get_content_type() != "message/delivery-status" or not part.is_multipart():
            continue
        for block in cast("list[Message]", part.get_payload()):  # a multipart's parts
            if not str(block.get("Action", "")).lower().startswith(("fail", "error")):
                continue
            status = _one_line(str(block.get("Status", ""))) or None
            diagnostic = _one_line(str(block.get("Diagnostic-Code", ""))) or None
            return status, diagnostic
    return None, None


def handle(raw: bytes, recipients: list[str]) -> tuple[str, str] | None:
    """Act on `raw` if it is addressed to a bounce address; None when it is not (the caller
    reads it as a player's mail). Returns the outcome and detail for the caller's Handled.
    Needs an app context."""
    keys = _bounce_keys(raw, recipients)
    if not keys:
        return None
    config = current_app.config
    row_id = next(filter(None, (row_of(config["SECRET_KEY"], key) for key in keys)), None)
    if row_id is None:
        logger.warning("a mail to a bounce address this server did not make was ignored")
        return "bounce", "not a bounce address of this server: ignored"
    with reading() as session:
        row = session.connection().execute(
            select(col(OutboxMessage.id), col(OutboxMessage.to_addr), col(OutboxMessage.seat_id),
                   col(OutboxMessage.game_id), col(OutboxMessage.kind), col(OutboxMessage.status))
            .where(col(OutboxMessage.id) == row_id)).first()
    if row is None:
        return "bounce", f"mail {row_id} is not in the outbox any more: ignored"
    try:
        # What reports say comes first; the returned message after it may be cut off.
        message = message_from_bytes(raw[:config["MAIL_MAX_INCOMING_BYTES"]])
        from flufl.bounce import all_failures

        delayed, failed = all_failures(message)
    except Exception as exc:
        logger.warning("a bounce of mail %d could not be read: %s: %s", row_id,
                       type(exc).__name__, exc)
        return "bounce", f"mail {row_id}: the bounce could not be read"
    if not failed:
        what = "a delay" if delayed else "no delivery failure (an automatic reply?)"
        logger.info("mail %d: a mail to its bounce address reports %s; nothing changed",
                    row_id, what)
        return "bounce", f"mail {row_id}: {what}; nothing changed"
    status, diagnostic = _report_fields(message)
    status = enhanced_status(status or diagnostic or "")
    reason = _one_line(diagnostic or (f"status {status}" if status else "")
                       or "a permanent failure")[:REASON_CHARS]
    reason = f"bounced: {reason}"
    dead = is_about_address(status, default=True)
    now = utcnow()
    with writing_rows() as writer:
        connection = writer.connection()
        # A mail of unknown fate (no answer after the message) did reach the mail server.
        connection.execute(update(OutboxMessage)
                           .where(col(OutboxMessage.id) == row_id,
                                  col(OutboxMessage.status).in_((SENT, UNKNOWN)))
                           .values(status=FAILED, failed_at=now, last_error=reason))
        marked = dead and row.seat_id is not None and \
            mark_dead(writer, row.seat_id, row.to_addr, reason, now)
    logger.warning("mail %d (%s, game %s) bounced%s: %s", row_id, row.kind, row.game_id,
                   "; its seat's address is marked dead" if marked else "", reason)
    return "bounce", f"mail {row_id}: {reason}"


# --- dead addresses ----------------------------------------------------------------------------

# Locked (PostgreSQL): two bounces for one seat at once tell the organisers once.
_SEAT = select(col(Seat.id), col(Seat.game_id), col(Seat.number), col(Seat.name),
               col(Seat.email), col(Seat.bot), col(Seat.mail_dead_address)
               ).where(col(Seat.id) == bindparam("seat_id")).with_for_update()
_MARK = (update(Seat).where(col(Seat.id) == bindparam("seat_id"))
         .values(mail_dead_at=bindparam("at"), mail_dead_reason=bindparam("reason"),
                 mail_dead_address=bindparam("address")))
_CLEAR = (update(Seat).where(col(Seat.id) == bindparam("seat_id"),
                             col(Seat.mail_dead_at) == bindparam("was"))
          .values(mail_dead_at=None, mail_dead_reason=None))


def mark_dead(session, seat_id: int, to_addr: str, reason: str, now: datetime) -> bool:
    """Mark the address of seat `seat_id` dead (in the transaction of `session`: an ORM session
    or a pbem.ground.db.Writer), if `to_addr` (where the failed mail went) is still its address; the
    organisers are told the first time for this seat and address. Returns whether it marked."""
    connection: Connection = session.connection()
    seat = connection.execute(_SEAT, {"seat_id": seat_id}).first()
    address = parseaddr(to_addr)[1].lower()
    if seat is None or seat.bot is not None or seat.email.lower() != address:
        return False  # the seat has another address now (or a computer player)
    told = (seat.mail_dead_address or "").lower() == address
    connection.execute(_MARK, {"seat_id": seat_id, "at": now, "reason": reason[:500],
                               "address": seat.email})
    if not told:
        _tell_organisers(session, connection, seat, reason)
    return True


def _tell_organisers(session, connection: Connection, seat, reason: str) -> None:
    from .mail import kinds
    from .mail.sending import send

    title = connection.execute(select(col(Game.title))
                               .where(col(Game.id) == seat.game_id)).scalar_one()
    game = f"{title} #{seat.game_id}"
    page = f"{current_app.config['BASE_URL'].rstrip('/')}/admin/games/{seat.game_id}"
    send(session, kinds.ADMIN, heading=L_("mail to %(name)s in %(game)s fails", name=seat.name,
                                         game=game), lines=[
        L_("Mail to %(player)s, seat %(number)d of %(game)s, failed for good: %(reason)s",
           player=f"{seat.name} <{seat.email}>", number=seat.number + 1, game=game,
           reason=reason),
        L_("Until the address works again the player gets no mail from the game: no turns, "
           "no deadlines, no messages. Ask them for a working address and change it on the "
           "game's page (\"Change the seat's email address\"): %(page)s", page=page),
    ], game=cast(Any, SimpleNamespace(id=seat.game_id)))  # send reads only its id
    if isinstance(session, Writer):
        insert_pending(session)


def clear_delivered(connection: Connection, sent: list) -> None:
    """Clear the dead mark of each seat that a mail queued after the mark has now reached (the
    mail server took it), in the transaction of `connection`. `sent`: outbox rows just sent;
    only those queued while their seat was marked (`seat_dead_at`) cost a statement."""
    for row in sent:
        if row.seat_dead_at is None or row.seat_id is None:
            continue
        if connection.execute(_CLEAR, {"seat_id": row.seat_id, "was": row.seat_dead_at}
                              ).rowcount:
            logger.info("seat %d: mail %d to its address went out; the address is no longer "
                        "marked dead", row.seat_id, row.id)
