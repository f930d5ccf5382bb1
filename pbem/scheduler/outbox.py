"""Delivering the outbox: claim due rows, send them, record what happened, retry with backoff.

A few rows at a time are claimed (status `sending`) in a short transaction before anything is
sent, so two senders never take the same row. Each delivery is recorded in its own
transaction before the next mail is sent, so a sender that dies loses at most the one mail in
hand: its other rows are still claimed, and once a claim has made no progress for a while
(`stuck_after`) its rows go back to the queue and are sent again automatically. The one mail
that was in hand when the sender died may then arrive twice, with the same Message-ID (every
retry of a row keeps it), which most mail programs and services show once. A backend that
sending again does no harm to (`idempotent`: the local folder, where a mail written again
replaces its own file) has the deliveries of a claim recorded together, in one transaction
after the claim is sent: a sender that dies leaves its claim to be written again, and nothing
is there twice. A scheduler's helper sender may be handed claims made for it (`claim_for`)
during a burst of timeouts, and record their deliveries once the write lock is free
(`LaterRecords`): dying, it leaves those claims to be written again in the same way.

When the mail server does not answer after it was given the whole message (a timeout after
DATA), the mail may or may not have arrived: it is marked `unknown`, not retried by itself,
and shown to the admins, who can retry it by hand. Each whole answer of the server must come
within `[smtp] timeout_seconds` (not each read: a server sending `250-` lines for ever would
hold the sender for ever) and each mail's conversation within MAIL_DEADLINE times that, so a
sender always comes back. Each delivery is a line in the log (`_logged`).

A sender asked to stop (`request_stop`, on SIGTERM) finishes the mail in hand, records it and
gives its other claimed rows back to the queue.
Backends: SMTP (STARTTLS, TLS or plain, optional login) and a local folder of .eml files.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import smtplib
import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from datetime import datetime, timedelta
from email.generator import BytesGenerator
from email.message import EmailMessage
from email.policy import EmailPolicy
from email.utils import format_datetime, formataddr, getaddresses
from functools import lru_cache
from io import BytesIO
from pathlib import Path
from secrets import token_hex
from types import SimpleNamespace
from typing import Protocol

import orjson
from flask import Flask
from sqlalchemy import bindparam, update
from sqlalchemy.exc import OperationalError
from sqlmodel import select

from ..games import picture
from ..ground.db import (
    BUSY_TIMEOUT_SECONDS,
    Writer,
    get_engine,
    insert_pending,
    is_status,
    locked,
    new_claim,
    reading,
    utcnow,
    writing,
)
from ..ground.models import FAILED, QUEUED, SENDING, SENT, UNKNOWN, OutboxMessage
from ..services import bounces, mail
from ..services.health import stuck_after
from ..services.mail import intents

logger = logging.getLogger(__name__)
BATCH = 10  # claimed at a time: what a sender killed mid-batch leaves behind
# A backend that sending again does no harm to (`idempotent`) takes claims this many times as
# large: a sender killed mid-claim leaves them to be written again, nothing lost or twice.
IDEMPOTENT_CLAIMS = 5
MAX_BACKOFF = timedelta(hours=6)
REDACTED = "[link hidden once sent]"
NO_ANSWER = "no answer from the mail backend"


class Unknown(str):
    """An error after which the mail may have arrived all the same (no answer after DATA)."""


class Permanent(str):
    """A refusal that sending again would not change (a 5xx answer); `dead` when it says the
    address does not work (pbem.services.bounces marks the seat's address)."""

    dead = False


def permanent(text: str, dead: bool) -> Permanent:
    error = Permanent(f"refused for good, not tried again: {text}")
    error.dead = dead
    return error


STOPPED_AFTER_DATA = ("the mail server did not answer after it was given the whole message, so "
                      "it may or may not have arrived: not sent again by itself. Retry it on "
                      "the outbox page if the player did not get it (it keeps its Message-ID, "
                      "so a copy that did arrive is shown once by most mail programs). ")


class Backend(Protocol):
    # True when sending a mail again only does again what was done (a mail arrives once
    # however often it is sent): a sender may then record a claim's deliveries together.
    idempotent: bool

    def send(self, messages: Iterable[tuple[OutboxMessage, EmailMessage]]
             ) -> dict[int, str | None] | Iterator[tuple[int, str | None]]:
        """Send each message; give, per row id, None when sent or the error text (an `Unknown`
        when it may have arrived), as a dict or, better, one pair as soon as each is done."""


# Mail is built as it goes on the wire: headers encoded (RFC 2047) and folded here, bodies in
# quoted-printable by binascii. The standard library's header objects parse every header on the
# way in and fold it again on the way out, which cost several milliseconds a mail: too much
# for the thousands a deadline burst sends. Parsed back, the result is the same message.
MAX_LINE = 78
WORD_BYTES = 39  # UTF-8 bytes in one encoded word: 52 base64 characters, 64 with its frame
PHRASE_WORD_BYTES = 45  # in a name: 72 characters, the most that fits after "From: "


class _WirePolicy(EmailPolicy):
    """The default policy, except that a header stored raw (already encoded, folded ASCII) is
    read back as the plain string: the generator reads Content-Type several times a part, and
    parsing it into a header object each time cost more than all the rest."""

    def header_fetch_parse(self, name, value):
        if not hasattr(value, "name") and value.isascii():
            return value
        return super().header_fetch_parse(name, value)


WIRE = _WirePolicy()


class _WireGenerator(BytesGenerator):
    """The library's generator, writing a body's lines in one piece when they end in plain
    line feeds (a board picture is some thousands of base64 lines, written one by one)."""

    def _write_lines(self, lines):
        if not lines or "\r" in lines:
            return super()._write_lines(lines)
        self.write(lines if self._NL == "\n" else lines.replace("\n", self._NL))


class WireMessage(EmailMessage):
    """A message whose bytes are written as the library's generator writes them, sooner: the
    messages `build_message` makes are joined from their parts directly (`_joined`), anything
    else goes through `_WireGenerator`."""

    wire_payload: bytes | None = None  # the body as bytes, when they are kept (a picture)

    def as_bytes(self, unixfrom: bool = False, policy=None) -> bytes:
        if not unixfrom and (policy is None or policy is self.policy) \
                and self.policy.linesep == "\n":
            parts: list[bytes] = []
            if _joined(self, self.policy, parts):
                return b"".join(parts)
        out = BytesIO()
        _WireGenerator(out, mangle_from_=False, policy=self.policy if policy is None else policy
                       ).flatten(self, unixfrom=unixfrom)
        return out.getvalue()

    def __bytes__(self) -> bytes:
        return self.as_bytes()


def _joined(message: EmailMessage, policy, out: list[bytes]) -> bool:
    """Add `message`'s bytes to `out` as BytesGenerator writes them with `policy` (lines
    ending in a line feed): its headers folded by the policy, a blank line, then its body, or
    its parts between boundary lines. False (and `out` of no use) for what only the generator
    handles: bodies with carriage returns or bytes that are not ASCII, a preamble or an
    epilogue. The generator copies a body into a buffer per enclosing part, and a picture's
    body is some 190 KB."""
    for name, value in message._headers:
        out.append(policy.fold_binary(name, value))
    out.append(b"\n")
    payload = message._payload
    if isinstance(payload, list):
        boundary = message.get_boundary()
        if not boundary or message.preamble is not None or message.epilogue is not None:
            return False
        line = b"--" + boundary.encode("ascii")
        out.append(line + b"\n")
        for index, part in enumerate(payload):
            if index:
                out.append(b"\n" + line + b"\n")
            if not isinstance(part, EmailMessage) or not _joined(part, policy, out):
                return False
        out.append(b"\n" + line + b"--\n")
    elif isinstance(payload, str):
        kept = getattr(message, "wire_payload", None)
        if kept is not None:
            out.append(kept)
        elif payload.isascii() and "\r" not in payload:
            out.append(payload.encode("ascii"))
        else:
            return False
    elif payload is not None:
        return False
    return True


@lru_cache(maxsize=8)
def _base64_lines(data: bytes) -> tuple[str, bytes]:
    """The base64 body of an attachment in lines of 76 characters (as base64.encodebytes
    writes it, a fifth sooner: one encoding, then cut), as text and as bytes; the mails of one
    move share their board picture."""
    encoded = base64.b64encode(data)
    lines = b"".join([b"\n".join([encoded[at:at + 76] for at in range(0, len(encoded), 76)]),
                      b"\n" if encoded else b""])
    return lines.decode("ascii"), lines


def _one_line(name: str, value: str) -> str:
    if "\r" in value or "\n" in value:
        raise ValueError(f"the {name} header may not hold a line break: {value[:80]!r}")
    return value


def _encoded_words(text: str, size: int = WORD_BYTES) -> list[str]:
    """`text` as RFC 2047 'B' encoded words of at most `size` bytes, never splitting a
    character."""
    chunks, chunk = [], b""
    for char in text:
        data = char.encode("utf-8")
        if len(chunk) + len(data) > size:
            chunks.append(chunk)
            chunk = b""
        chunk += data
    chunks.append(chunk)
    return [f"=?utf-8?b?{binascii.b2a_base64(c, newline=False).decode('ascii')}?="
            for c in chunks]


def _folded(name: str, words: list[str]) -> str:
    """Words joined by spaces, a line break before each word that would pass MAX_LINE."""
    lines, line = [], name + ":"
    for word in words:
        if len(line) + 1 + len(word) > MAX_LINE and line != name + ":":
            lines.append(line)
            line = ""
        line += " " + word
    lines.append(line)
    return "\n".join(lines)[len(name) + 2:]


def _text_header(name: str, value: str) -> str:
    value = _one_line(name, value)
    return _folded(name, value.split(" ") if value.isascii() else _encoded_words(value))


def _display_name(name: str) -> str:
    """A name with non-ASCII letters as a phrase: each word that needs it encoded on its own,
    because readers keep the space between two encoded words of a name (only a word longer
    than one encoded word is split, as the library's own builder splits it)."""
    return " ".join(word if word.isascii() and word.isalnum()
                    else " ".join(_encoded_words(word, PHRASE_WORD_BYTES))
                    for word in name.split(" ") if word)


def _address_header(name: str, value: str) -> str:
    """Addresses with their names encoded; the value as it was when it does not read as plain
    addresses (the library's header objects then take it, as for any unusual header)."""
    parts = []
    pairs = getaddresses([_one_line(name, value)])
    for display, address in pairs:
        if not address.isascii() or address.count("@") != 1 or " " in address:
            return value
        if display.isascii():
            parts.append(formataddr((display, address)))
        else:
            parts.append(f"{_display_name(display)} <{address}>")
    return _folded(name, ", ".join(parts).split(" ")) if parts else value


def _text_part(body: str, subtype: str) -> EmailMessage:
    part = WireMessage(policy=WIRE)
    if body.isascii() and max(map(len, body.split("\n"))) <= MAX_LINE:
        encoding, payload = "7bit", body
    else:
        encoding = "quoted-printable"
        payload = binascii.b2a_qp(body.encode("utf-8"), istext=True).decode("ascii")
    part.set_raw("Content-Type", f'text/{subtype}; charset="utf-8"')
    part.set_raw("Content-Transfer-Encoding", encoding)
    part.set_payload(payload if payload.endswith("\n") else payload + "\n")
    return part


def _with_picture(row: OutboxMessage, html: EmailMessage) -> EmailMessage:
    """The HTML part and the board picture it shows, as one multipart/related; the HTML part
    alone when the picture cannot be made (the mail still says everything in words)."""
    try:
        cid, png = picture.for_message(row.picture_json)
    except (ValueError, KeyError, TypeError) as exc:
        logging.getLogger(__name__).warning("mail %s goes without its board picture: %s",
                                            row.id, exc)
        return html
    image = WireMessage(policy=WIRE)
    image.set_raw("Content-Type", 'image/png; name="board.png"')
    image.set_raw("Content-Transfer-Encoding", "base64")
    image.set_raw("Content-ID", f"<{cid}>")
    image.set_raw("Content-Disposition", 'inline; filename="board.png"')
    image.set_payload(_base64_lines(png)[0])
    image.wire_payload = _base64_lines(png)[1]
    related = WireMessage(policy=WIRE)
    # Folded here: a line longer than 78 would be parsed and folded again by the library.
    related.set_raw("Content-Type", f'multipart/related; type="text/html";\n'
                                    f' boundary="=_{token_hex(8)}"')
    related.set_payload([html, image])
    return related


def build_message(row: OutboxMessage, sender: str) -> EmailMessage:
    """The mail of an outbox row: a text and an HTML alternative; with a board picture, the HTML
    part and the PNG it shows (cid:) form a multipart/related. Raises ValueError for a header
    that cannot be sent (a line break in it)."""
    message = WireMessage(policy=WIRE)
    headers = [("From", _address_header("From", sender)),
               ("To", _address_header("To", row.to_addr)),
               ("Subject", _text_header("Subject", row.subject)),
               ("Date", format_datetime(row.created_at)),
               ("Message-ID", _one_line("Message-ID", row.message_id))]
    if row.in_reply_to:  # an answer to a player's mail threads under it
        headers.append(("In-Reply-To", _one_line("In-Reply-To", row.in_reply_to)))
    if row.references:
        headers.append(("References", _folded("References",
                                              _one_line("References", row.references).split())))
    if row.reply_to:
        headers.append(("Reply-To", _address_header("Reply-To", row.reply_to)))
    headers.append(("Auto-Submitted", "auto-generated"))
    for name, value in headers:
        if value.isascii():
            message.set_raw(name, value)
        else:  # e.g. an address whose own part is not ASCII: the library's way
            message[name] = value
    message.set_raw("MIME-Version", "1.0")
    message.set_raw("Content-Type",
                    f'multipart/alternative; boundary="=_{token_hex(8)}"')
    html = _text_part(row.html_body, "html")
    if row.picture_json:
        html = _with_picture(row, html)
    message.set_payload([_text_part(row.text_body, "plain"), html])
    return message


class LocalBackend:
    """Writes each message as `<id>.eml` into a folder; the mailbox page reads them back."""

    # A mail written again replaces its own file (named by its row), whole (written aside,
    # then renamed): it is there once however often it was written.
    idempotent = True

    def __init__(self, folder: str):
        self.folder = Path(folder)

    def send(self, messages):
        # Readable by this user only: every mail holds a seat's live link.
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for row, message in messages:
            target = self.folder / f"{row.id:08d}.eml"
            temporary = target.with_suffix(".tmp")
            try:
                _write_file(temporary, bytes(message))
                os.replace(temporary, target)
                yield row.id, None
            except OSError as exc:
                yield row.id, f"cannot write {target}: {exc.strerror}"


def _write_file(path: Path, data: bytes) -> None:
    """`data` as the whole of the file `path` (made readable by this user only), by the
    system's calls alone: a Python file object for each of thousands of mails cost more."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view):]
    finally:
        os.close(descriptor)


def describe_error(exc: BaseException) -> str:
    """An SMTP or network error in words: the server's code and text rather than a bytes repr."""
    if isinstance(exc, smtplib.SMTPResponseException):
        text = exc.smtp_error.decode("utf-8", "replace") if isinstance(exc.smtp_error, bytes) \
            else str(exc.smtp_error)
        return f"{type(exc).__name__}: {exc.smtp_code} {' '.join(text.split())}"
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return f"SMTPRecipientsRefused: {_refusals(exc.recipients)}"
    return f"{type(exc).__name__}: {exc}"


def _refusals(refused: dict) -> str:
    return "; ".join(f"{address} refused with {code} "
                     f"{resp.decode('utf-8', 'replace') if isinstance(resp, bytes) else resp}"
                     for address, (code, resp) in refused.items())


# Each mail's whole conversation (MAIL, RCPT, DATA, the message, its answer) must end within
# this many times `[smtp] timeout_seconds`, and so must securing and logging in once connected;
# each answer of the server within the timeout itself.
MAIL_DEADLINE = 4
SETUP_DEADLINE = 4


class _Answers:
    """What smtplib reads a server's answers from (its `file`): lines read from the socket with
    a deadline for the whole answer, each read given only the time left. smtplib's own reader
    gives each read the whole timeout, so a server that sends an endless answer (`250-` lines
    without end) held the sender for ever. Dropped with what it holds when the connection is
    secured (STARTTLS) or closed, as smtplib drops its own."""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = bytearray()

    def readline(self, limit: int, end: float) -> bytes:
        """The next line (at most `limit` bytes), or what is left when the server has closed
        the connection; TimeoutError at `end` (a time.monotonic() value)."""
        while True:
            at = self.buffer.find(b"\n", 0, limit)
            if at >= 0 or len(self.buffer) >= limit or not self.sock:
                cut = at + 1 if at >= 0 else min(limit, len(self.buffer))
                line = bytes(self.buffer[:cut])
                del self.buffer[:cut]
                return line
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError("no whole answer in time")
            self.sock.settimeout(left)
            chunk = self.sock.recv(4096)
            if not chunk:  # closed: what came, then nothing
                self.sock = None
                continue
            self.buffer += chunk

    def close(self) -> None:
        self.buffer.clear()
        self.sock = None


class _Bounded:
    """smtplib's client with a deadline for each whole answer of the server (the timeout) and,
    while `deadline` is set, for everything until then; and a note of when the end of a
    message's DATA was handed to the server (`data_sent`): an error after that point leaves it
    unknown whether the server took the message."""

    data_sent = False
    deadline: float | None = None  # a time.monotonic() value

    def _end(self) -> float:
        end = time.monotonic() + self.timeout
        return end if self.deadline is None else min(end, self.deadline)

    def getreply(self):
        if self.file is None:
            self.file = _Answers(self.sock)
        started = time.monotonic()
        end = self._end()
        lines = []
        while True:
            try:
                line = self.file.readline(smtplib._MAXLINE + 1, end)
            except OSError as exc:
                self.close()
                if isinstance(exc, TimeoutError):
                    raise smtplib.SMTPServerDisconnected(
                        f"the mail server's answer did not end within "
                        f"{end - started:.0f} s") from None
                raise smtplib.SMTPServerDisconnected(
                    f"Connection unexpectedly closed: {exc}") from None
            if not line:
                self.close()
                raise smtplib.SMTPServerDisconnected("Connection unexpectedly closed")
            if len(line) > smtplib._MAXLINE:
                self.close()
                raise smtplib.SMTPResponseException(500, "Line too long.")
            lines.append(line[4:].strip(b" \t\r\n"))
            try:
                code = int(line[:3])
            except ValueError:
                code = -1
                break
            if line[3:4] != b"-":
                break
        if self.sock is not None:  # what comes next (a TLS handshake, a send) has its own
            self.sock.settimeout(self.timeout)
        return code, b"\n".join(lines)

    def send(self, s):
        if self.sock is not None and self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise smtplib.SMTPServerDisconnected("the mail server took too long")
            self.sock.settimeout(min(self.timeout, left))
        if isinstance(s, bytes) and s.endswith(b"\r\n.\r\n"):  # only DATA's end looks so
            self.data_sent = True
        return super().send(s)


class _SMTP(_Bounded, smtplib.SMTP):
    pass


class _SMTP_SSL(_Bounded, smtplib.SMTP_SSL):
    pass


class SmtpBackend:
    idempotent = False  # a mail handed to the server twice may arrive twice

    def __init__(self, config: dict):
        self.config = config
        self.host, self.port = config["SMTP_HOST"], config["SMTP_PORT"]
        self.security = config["SMTP_SECURITY"]
        self.username, self.password = config["SMTP_USERNAME"], config["SMTP_PASSWORD"]
        self.timeout = config["SMTP_TIMEOUT_SECONDS"]

    def _connect(self) -> smtplib.SMTP:
        """A connected, secured and logged-in client; raises with a sentence saying which step
        failed. The socket is closed when a step after connecting fails."""
        where = f"the SMTP server {self.host}:{self.port}"
        # Certificates and host names are verified against the system's trusted authorities
        # (or SSL_CERT_FILE). Made only when needed: loading them takes a while.
        context = ssl.create_default_context() if self.security != "none" else None
        try:
            if self.security == "tls":
                client = _SMTP_SSL(self.host, self.port, timeout=self.timeout, context=context)
            else:
                client = _SMTP(self.host, self.port, timeout=self.timeout)
        except (OSError, smtplib.SMTPException) as exc:
            raise ConnectionProblem(f"cannot reach {where}: {describe_error(exc)}") from exc
        step = "say hello to"
        client.deadline = time.monotonic() + SETUP_DEADLINE * self.timeout
        try:
            if self.security == "starttls":
                step = "start TLS (STARTTLS) with"
                client.starttls(context=context)
            if self.username:
                step = f"log in as {self.username!r} to"
                client.login(self.username, self.password)
        except (OSError, smtplib.SMTPException) as exc:
            client.close()
            raise ConnectionProblem(f"cannot {step} {where}: {describe_error(exc)}") from exc
        client.deadline = None
        return client

    def send(self, messages):
        messages = iter(messages)
        first = next(messages, None)  # no connection when there is nothing to send
        if first is None:
            return
        try:
            client = self._connect()
        except ConnectionProblem as exc:
            yield first[0].id, str(exc)
            for row, _ in messages:
                yield row.id, str(exc)
            return
        lost = False
        try:
            for row, message in _chain(first, messages):
                if lost:  # the connection is gone; the rest wait for the next run
                    yield row.id, "not tried: the SMTP connection was lost"
                    continue
                client.data_sent = False
                client.deadline = time.monotonic() + MAIL_DEADLINE * self.timeout
                try:
                    refused = client.send_message(
                        message, from_addr=bounces.return_path(self.config, row.id))
                    error = f"refused: {_refusals(refused)}" if refused else None
                except smtplib.SMTPResponseException as exc:
                    # The server answered: it refused this message (4xx or 5xx), and the
                    # connection stays usable unless it said goodbye (421). A 5xx refusal of
                    # the message (not of our envelope sender, a matter of our settings) is
                    # for good.
                    error, lost = describe_error(exc), exc.smtp_code == 421
                    if exc.smtp_code >= 500 and not isinstance(exc, smtplib.SMTPSenderRefused):
                        error = permanent(error, bounces.is_about_address(
                            bounces.enhanced_status(error), default=False))
                except smtplib.SMTPRecipientsRefused as exc:
                    error = describe_error(exc)
                    codes = [code for code, _ in exc.recipients.values()]
                    if codes and min(codes) >= 500:  # the recipient refused for good
                        error = permanent(error, bounces.is_about_address(
                            bounces.enhanced_status(error), default=True))
                except (smtplib.SMTPException, OSError) as exc:
                    error = describe_error(exc)
                    # A timeout or a lost connection (SMTPServerDisconnected); any other
                    # SMTPException leaves the connection usable.
                    lost = isinstance(exc, smtplib.SMTPServerDisconnected) or \
                        not isinstance(exc, smtplib.SMTPException)
                    if lost and client.data_sent:
                        error = Unknown(STOPPED_AFTER_DATA + f"({error})")
                yield row.id, error
        finally:
            try:
                client.quit()
            except (OSError, smtplib.SMTPException):
                pass
            client.close()


def _chain(first, rest):
    yield first
    yield from rest


class ConnectionProblem(Exception):
    """Connecting, securing or logging in to the SMTP server failed; the text says which."""


def backend_for(app: Flask) -> Backend:
    if "pbem_mail_backend" in app.extensions:  # tests may install their own
        return app.extensions["pbem_mail_backend"]
    if app.config["MAIL_BACKEND"] == "smtp":
        return SmtpBackend(app.config)
    return LocalBackend(app.config["MAIL_FOLDER"])


STALE = ("the sender stopped while this mail was claimed; sent again automatically (if it had "
         "arrived, the copy has the same Message-ID)")

# Statements built once and run on a plain connection: a sender runs them for every mail, and
# an ORM session, or the ORM object of a row with its bodies, cost more than the statements.
_STUCK = (update(OutboxMessage)
          .where(is_status(OutboxMessage.status, SENDING),
                 OutboxMessage.claimed_at < bindparam("stuck_before"))
          .values(status=QUEUED, claim=None, next_attempt_at=bindparam("moment"),
                  last_error=STALE))
# On PostgreSQL each sender takes mail no other sender holds (SKIP LOCKED); the ids first, then
# the rows by id (see pbem.ground.db.claim_rows).
_DUE = locked(select(OutboxMessage.id)
              .where(is_status(OutboxMessage.status, QUEUED),
                     OutboxMessage.next_attempt_at <= bindparam("moment"))
              .order_by(OutboxMessage.next_attempt_at, OutboxMessage.id)
              .limit(bindparam("most")), skip_locked=True)
# A claim made for another sender (`claim_for`) reads nothing back; one's own, every column.
_HAND = (update(OutboxMessage).where(OutboxMessage.id.in_(bindparam("ids", expanding=True)))
         .values(status=SENDING, claim=bindparam("new_claim"), claimed_at=bindparam("moment")))
_TAKE = _HAND.returning(*OutboxMessage.__table__.c)
_HANDED = (select(*OutboxMessage.__table__.c)
           .where(OutboxMessage.claim == bindparam("of_claim"),
                  is_status(OutboxMessage.status, SENDING))
           .order_by(OutboxMessage.id))
_RECORDED = select(OutboxMessage.status, OutboxMessage.claim, OutboxMessage.attempts,
                   OutboxMessage.secrets_json, OutboxMessage.text_body,
                   OutboxMessage.html_body).where(OutboxMessage.id == bindparam("row_id"))
# The claim's other rows are making progress; the rows still ours come back (a claim taken for
# stuck by another sender has none).
_PROGRESS = (update(OutboxMessage)
             .where(OutboxMessage.claim == bindparam("of_claim"),
                    is_status(OutboxMessage.status, SENDING))
             .values(claimed_at=bindparam("progress"))
             .returning(OutboxMessage.id))
_RELEASE = (update(OutboxMessage)
            .where(OutboxMessage.claim == bindparam("of_claim"),
                   is_status(OutboxMessage.status, SENDING))
            .values(status=QUEUED, claim=None))


@lru_cache(maxsize=64)
def _record_statement(columns: tuple[str, ...], held: bool):
    """The UPDATE that writes `columns` of one row; with `held`, only while the row is still
    claimed by the sender that records it."""
    statement = update(OutboxMessage).where(OutboxMessage.id == bindparam("row_id"))
    if held:
        statement = statement.where(OutboxMessage.claim == bindparam("of_claim"),
                                    is_status(OutboxMessage.status, SENDING))
    return statement.values({name: bindparam(f"new_{name}") for name in columns})


def _writer(app: Flask):
    """The app's engine, its transactions write transactions (BEGIN IMMEDIATE on SQLite)."""
    return get_engine(app).execution_options(pbem_write=True)


def _claim(app: Flask, writer, now: datetime, limit: int) -> tuple[str, list[SimpleNamespace]]:
    """Claim up to `limit` due mails in a transaction on `writer` (a connection to write with);
    returns the claim and its rows (plain objects with the outbox's columns as attributes), by
    id."""
    claim = new_claim()
    with writer.begin():
        connection = writer
        # A sender that died (or was killed) leaves its claimed rows in `sending`: back to the
        # queue with them. The one it had in hand may arrive twice (same Message-ID).
        connection.execute(_STUCK, {"stuck_before": now - stuck_after(app), "moment": now})
        ids = connection.execute(_DUE, {"moment": now, "most": limit}).scalars().all()
        taken = connection.execute(_TAKE, {"ids": ids, "new_claim": claim,
                                           "moment": now}).all() if ids else []
    return claim, sorted((SimpleNamespace(**row._mapping) for row in taken),
                         key=lambda row: row.id)


def _redact(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def request_stop(app: Flask) -> None:
    """Ask every delivery in this process to stop after the mail in hand (SIGTERM)."""
    stop_event(app).set()


def stop_event(app: Flask) -> threading.Event:
    return app.extensions.setdefault("pbem_stop", threading.Event())


def _outcome(app: Flask, error: str | None, attempts: int, now: datetime
             ) -> tuple[str, dict]:
    """What a delivery counts as, and the row's new status columns after its `attempts`th
    try."""
    changes = {"attempts": attempts, "claim": None}
    if isinstance(error, Unknown):
        changes.update(status=UNKNOWN, last_error=str(error), failed_at=now)
        return "unknown", changes
    if error is None:
        # Its picture is a copy of the game's state: not kept once sent.
        changes.update(status=SENT, sent_at=now, last_error=None, secrets_json="[]",
                       reply_to=None, picture_json=None)
        return "sent", changes
    if isinstance(error, Permanent) or error.startswith(UNBUILDABLE) or (
            attempts >= app.config["MAIL_MAX_ATTEMPTS"] and not error.startswith(UNWRITTEN)):
        changes.update(status=FAILED, last_error=str(error), failed_at=now)
        return "failed", changes
    backoff = min(timedelta(seconds=app.config["MAIL_RETRY_SECONDS"] * 2 ** (attempts - 1)),
                  MAX_BACKOFF)
    changes.update(status=QUEUED, last_error=error, next_attempt_at=now + backoff)
    return "retry", changes


def _texts(row, error: str | None, secrets_json: str, text_body: str, html_body: str) -> dict:
    """The text columns a delivery writes: the text written from an intent (stored once, with
    the first outcome), and the links hidden once the mail is sent."""
    changes = {}
    if getattr(row, "written", False):
        changes.update(subject=row.subject, intent_json=None)
        text_body, html_body = row.text_body, row.html_body
    elif error is not None:
        return changes
    if error is None:
        secrets = orjson.loads(secrets_json)
        text_body, html_body = _redact(text_body, secrets), _redact(html_body, secrets)
    changes.update(text_body=text_body, html_body=html_body)
    return changes


def _record(app: Flask, writer, done: list[tuple], claim: str, now: datetime,
            progress: datetime) -> tuple[list[str | None], set[int]]:
    """Write down deliveries `done` ((row, error) pairs, with the text written for a row that
    was an intent) in one transaction on `writer`; returns what each counts as (None for a row
    that was not ours any more), and the ids of the claim's rows still ours, which are marked
    as making progress (`progress`)."""
    with writer.begin():
        return _recorded_claim(app, writer, done, claim, now, progress)


def _recorded_claim(app: Flask, writer, done: list[tuple], claim: str, now: datetime,
                    progress: datetime) -> tuple[list[str | None], set[int]]:
    """`_record`'s work, in the transaction `writer` is in."""
    outcomes = [_recorded(app, writer, row, claim, error, now) for row, error in done]
    bounces.clear_delivered(writer, [row for (row, _), outcome in zip(done, outcomes)
                                     if outcome == "sent"])
    ours = set(writer.execute(_PROGRESS, {"of_claim": claim,
                                          "progress": progress}).scalars())
    return outcomes, ours


def _recorded(app: Flask, connection, row, claim: str, error: str | None,
              now: datetime) -> str | None:
    """Write down one delivery; what it counts as."""
    # While the row is still ours, nobody else changed it: it is written from what the claim
    # read.
    outcome, changes = _outcome(app, error, row.attempts + 1, now)
    changes.update(_texts(row, error, row.secrets_json, row.text_body, row.html_body))
    held = connection.execute(_record_statement(tuple(changes), True), {
        "row_id": row.id, "of_claim": claim,
        **{f"new_{name}": value for name, value in changes.items()}}).rowcount == 1
    if not held:
        outcome = _record_late(app, connection, row, error, now)
    if outcome is not None:
        _logged(row, outcome, error, changes)
    if outcome == "failed" and getattr(error, "dead", False) and row.seat_id is not None:
        writer = Writer(connection)
        if bounces.mark_dead(writer, row.seat_id, row.to_addr, str(error), now):
            logger.warning("mail %d: the address of seat %d is marked dead", row.id,
                           row.seat_id)
        insert_pending(writer)
    return outcome


def _logged(row, outcome: str, error: str | None, changes: dict) -> None:
    """One line in the log for a delivery: never the address's links or any key."""
    what = f"mail {row.id} ({row.kind}, game {row.game_id})"
    if outcome == "sent":
        logger.info("%s sent", what)
    elif outcome == "retry":
        logger.warning("%s not sent (attempt %d), tried again at %s: %s", what,
                       changes["attempts"], f"{changes['next_attempt_at']:%Y-%m-%d %H:%M:%S}",
                       error)
    elif outcome == "failed":
        logger.error("%s failed (attempt %d): %s", what, changes["attempts"], error)
    else:
        logger.error("%s may or may not have arrived: %s", what, error)


def _record_late(app: Flask, connection, row, error: str | None, now: datetime) -> str | None:
    """A row no longer ours: taken for stuck (its claim went too long without progress) and
    put back in the queue. If it did go out after all and nobody took it again yet, say so
    (and hide its secrets), so that it is not sent twice; otherwise leave it alone."""
    status, _, attempts, secrets_json, text_body, html_body = connection.execute(
        _RECORDED, {"row_id": row.id}).one()
    if not (error is None and status in (QUEUED, FAILED)):
        return None
    outcome, changes = _outcome(app, error, attempts + 1, now)
    changes.update(_texts(row, error, secrets_json, text_body, html_body))
    connection.execute(_record_statement(tuple(changes), False), {
        "row_id": row.id, **{f"new_{name}": value for name, value in changes.items()}})
    return outcome


UNBUILDABLE = "cannot build this mail: "
UNWRITTEN = "cannot write this mail's text (it stays queued and is tried again): "


def _write(session, row) -> None:
    """Write the text of a mail queued as an intent (pbem.services.mail.intents.render) into
    `row`; it is stored with the outcome of its delivery. Raises when it cannot be written."""
    row.text_body, row.html_body = intents.render(session, row)
    row.written = True


def deliver_queued(app: Flask, now: datetime | None = None,
                   limit: int | None = None) -> dict[str, int]:
    """Send what is due, once; returns how many were sent, put back for a retry, failed, and
    of unknown fate. Each mail is recorded before the next is sent (a claim's mails together,
    after them, for an idempotent backend)."""
    now = now or utcnow()
    started = time.monotonic()
    counts = {"sent": 0, "retry": 0, "failed": 0, "unknown": 0}
    backend = backend_for(app)
    with _writer(app).connect() as writer:  # the claim's transactions, one after the other
        claim, rows = _claim(app, writer, now, claim_size(backend) if limit is None else limit)
        if rows:
            _deliver(app, backend, writer, claim, rows, now, started, counts)
    return counts


def claim_for(app: Flask, now: datetime, limit: int, holder: int) -> tuple[str, int]:
    """Claim up to `limit` due mails for another sender, the process `holder` (a scheduler's
    helper, which delivers them with `deliver_handed`); returns the claim and how many it
    holds."""
    claim = new_claim(holder)
    with _writer(app).connect() as writer, writer.begin():
        ids = writer.execute(_DUE, {"moment": now, "most": limit}).scalars().all()
        if ids:
            writer.execute(_HAND, {"ids": ids, "new_claim": claim, "moment": now})
    return claim, len(ids)


def give_back(app: Flask, claim: str) -> None:
    """Put the unsent mails of `claim` back in the queue (a claim made for a sender that has
    ended before it was told of it)."""
    with _writer(app).connect() as writer, writer.begin():
        writer.execute(_RELEASE, {"of_claim": claim})


def deliver_handed(app: Flask, claim: str, now: datetime, later: LaterRecords) -> int:
    """Deliver the mails claimed for this process by another (`claim_for`), their deliveries
    recorded by `later`; returns how many the claim held. Only for an idempotent backend."""
    backend = backend_for(app)
    with get_engine(app).connect() as reader:  # read, not written: no wait for the write lock
        rows = [SimpleNamespace(**row._mapping)
                for row in reader.execute(_HANDED, {"of_claim": claim})]
        reader.rollback()
    if rows:
        with _writer(app).connect() as writer:
            _deliver(app, backend, writer, claim, rows, now, later.started, later.counts,
                     later)
    return len(rows)


class LaterRecords:
    """Deliveries to an idempotent backend, recorded when the write lock is free: a helper
    sender that does not wait for it while the scheduler holds it for a burst of timeouts, and
    writes down what it sent between them (or at the end, `write(block=True)`). A helper that
    dies leaves its claims to be written again once they are old, as any idempotent sender's."""

    def __init__(self, app: Flask, now: datetime):
        self.app, self.now = app, now
        self.started = time.monotonic()
        self.counts = {"sent": 0, "retry": 0, "failed": 0, "unknown": 0}
        self.waiting: list[tuple[str, list[tuple]]] = []

    def add(self, claim: str, done: list[tuple]) -> None:
        self.waiting.append((claim, done))
        self.write(block=False)

    def write(self, block: bool) -> None:
        """Record what waits, in one transaction; unless `block`, only if the write lock is
        free now (on SQLite; on PostgreSQL writers do not wait for each other here)."""
        if not self.waiting:
            return
        engine = _writer(self.app)
        with engine.connect() as writer:
            raw = writer.connection.dbapi_connection
            sqlite = engine.dialect.name == "sqlite"
            if sqlite and not block:
                raw.execute("PRAGMA busy_timeout = 0")
            try:
                try:
                    transaction = writer.begin()
                except OperationalError as exc:
                    if "locked" in str(exc) or "busy" in str(exc):
                        return  # held by another writer: later
                    raise
                with transaction:
                    progress = self.now + timedelta(seconds=time.monotonic() - self.started)
                    for claim, done in self.waiting:
                        outcomes, _ = _recorded_claim(self.app, writer, done, claim, self.now,
                                                      progress)
                        for outcome in outcomes:
                            if outcome:
                                self.counts[outcome] += 1
                self.waiting = []
            finally:
                if sqlite and not block:
                    raw.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_SECONDS * 1000}")


def claim_size(backend: Backend) -> int:
    """How many mails a sender claims at a time with `backend`."""
    return BATCH * (IDEMPOTENT_CLAIMS if getattr(backend, "idempotent", False) else 1)


def _deliver(app: Flask, backend: Backend, writer, claim: str, rows: list, now: datetime,
             started: float, counts: dict[str, int], later: LaterRecords | None = None) -> None:
    """Build and send the claim's `rows`, recording each outcome in `counts`; give back what
    was left unsent. With `later` (an idempotent backend's), the deliveries are recorded when
    the write lock is free, and counted there."""
    sender, stop = app.config["MAIL_FROM"], stop_event(app)
    by_id = {row.id: row for row in rows}
    ours = set(by_id)  # the rows still claimed by this sender, as its last record saw them
    unbuildable: list[tuple[SimpleNamespace, str]] = []

    with app.app_context(), ExitStack() as stack:
        session = None  # one reading session writes the claim's intents

        def built():
            """The claimed mails, built one at a time, each only while it is still ours (a
            mail queued as an intent is written first)."""
            nonlocal session
            for row in rows:
                if stop.is_set() or row.id not in ours:
                    continue
                if row.intent_json is not None:
                    if session is None:
                        session = stack.enter_context(reading(app))
                        intents.read_games(session, {r.game_id for r in rows if r.intent_json})
                    try:
                        _write(session, row)
                    except Exception as exc:  # a bug or a vanished game: the mail waits, logged
                        logger.exception("mail %s to %s could not be written; it stays queued "
                                         "and is tried again", row.id, row.to_addr)
                        unbuildable.append((row, f"{UNWRITTEN}{type(exc).__name__}: {exc}"))
                        continue
                try:
                    yield row, build_message(row, sender)
                except (ValueError, TypeError) as exc:  # e.g. a line break in a header
                    unbuildable.append((row, f"{UNBUILDABLE}{exc}"))

        def record(done: list[tuple]) -> None:
            nonlocal ours
            if later is not None:
                later.add(claim, done)
                return
            progress = now + timedelta(seconds=time.monotonic() - started)
            outcomes, ours = _record(app, writer, done, claim, now, progress)
            for outcome in outcomes:
                if outcome:
                    counts[outcome] += 1

        # Each delivery is recorded before the next mail goes, unless sending one again does no
        # harm: then the claim's are recorded together, once it is sent.
        together = getattr(backend, "idempotent", False)
        done: list[tuple] = []
        results = backend.send(built())
        for row_id, error in (results.items() if isinstance(results, dict) else results):
            done += unbuildable
            unbuildable.clear()
            done.append((by_id[row_id], error))
            if not together:
                record(done)
                done = []
        done += unbuildable
        if done:
            record(done)
    if later is not None:
        if not stop.is_set():
            return  # all sent, recorded later
        later.write(block=True)  # what was sent, then the rest given back
    if ours:  # left unsent (a stop was asked for): back to the queue
        with writer.begin():
            writer.execute(_RELEASE, {"of_claim": claim})


class Helping(Protocol):
    """What `deliver_all_due` asks of the helper senders of a scheduler run
    (pbem.scheduler.senders.Helpers)."""

    started: bool

    def done_queueing(self) -> None: ...
    def expect_backlog(self) -> None: ...
    def finish(self) -> dict[str, int]: ...


def deliver_all_due(app: Flask, now: datetime | None = None,
                    helpers: Helping | None = None) -> dict[str, int]:
    """Queue due digests, then deliver batches until nothing due is left. With `helpers` (a
    scheduler run's, pbem.scheduler.senders), a backlog of at least HELP_FROM mails is delivered together
    with helper processes, whose deliveries are counted in too."""
    now = now or utcnow()
    with app.app_context(), writing(app) as session:
        mail.due_digests(session, now)
    if helpers is not None:
        helpers.done_queueing()
    total = {"sent": 0, "retry": 0, "failed": 0, "unknown": 0}
    size = claim_size(backend_for(app))
    first = True
    while not stop_event(app).is_set():
        counts = deliver_queued(app, now, size)
        for key, value in counts.items():
            total[key] += value
        if sum(counts.values()) < size:
            break
        if first and helpers is not None and not helpers.started:
            helpers.expect_backlog()
            helpers.done_queueing()
        first = False
    if helpers is not None:
        for key, value in helpers.finish().items():
            total[key] += value
    return total


class SenderThread(threading.Thread):
    """Delivers mail every few seconds, and at once when `wake()` is called (after a move)."""

    def __init__(self, app: Flask):
        super().__init__(name="pbem-mail-sender", daemon=True)
        self.app = app
        self.event = threading.Event()

    def wake(self) -> None:
        self.event.set()

    def run(self) -> None:
        interval = self.app.config["MAIL_SEND_INTERVAL_SECONDS"]
        stop = stop_event(self.app)
        while not stop.is_set():
            self.event.wait(interval)
            self.event.clear()
            try:
                deliver_all_due(self.app)
            except Exception:  # keep delivering after a bad moment; the error is logged
                self.app.logger.exception("mail delivery failed")
