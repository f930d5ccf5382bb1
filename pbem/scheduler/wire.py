"""A mail's bytes as they go on the wire: the outbox row made a MIME message (`build_message`).

Headers are encoded (RFC 2047) and folded here, bodies put in quoted-printable by binascii,
and the message joined from its parts directly (`WireMessage`): the standard library's
header objects and generator cost several milliseconds a mail, too much for the thousands a
deadline burst sends. Parsed back, the result is the same message. Part of the scheduler's
delivery (pbem.scheduler.outbox); imports the games' picture, the ground, and the service that
keeps a finished game's whole picture (attached to the final mail).
"""

from __future__ import annotations

import base64
import binascii
import logging
from email.generator import BytesGenerator
from email.message import EmailMessage
from email.policy import EmailPolicy
from email.utils import format_datetime, formataddr, getaddresses
from functools import lru_cache
from io import BytesIO
from secrets import token_hex
from typing import cast

import orjson

from ..games import picture
from ..ground.models import OutboxMessage
from ..services import game_picture
from ..services.errors import ServiceError

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
    # (email.message's own attributes, which typeshed leaves out as private)
    for name, value in message._headers:  # type: ignore[attr-defined]
        out.append(policy.fold_binary(name, value))
    out.append(b"\n")
    payload = message._payload  # type: ignore[attr-defined]
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
        cid, png = picture.for_message(cast(str, row.picture_json))  # the row has one
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
    html = _text_part(row.html_body, "html")
    whole = None
    if row.picture_json:
        html = _with_picture(row, html)
        whole = _whole_game(row)
    body = message
    if whole is not None:  # the mail, then the whole game's picture attached
        message.set_raw("Content-Type", f'multipart/mixed; boundary="=_{token_hex(8)}"')
        body = WireMessage(policy=WIRE)
        message.set_payload([body, whole])
    body.set_raw("Content-Type", f'multipart/alternative; boundary="=_{token_hex(8)}"')
    body.set_payload([_text_part(row.text_body, "plain"), html])
    return message


WHOLE_GAME_FILE = "whole-game.png"


def _whole_game(row: OutboxMessage) -> EmailMessage | None:
    """The whole game's animated picture as an attachment, for a mail whose picture asks for
    it (the final mail); None otherwise, or when it cannot be made (logged: the mail goes)."""
    try:
        data = orjson.loads(cast(str, row.picture_json))  # the row has one
        if not isinstance(data, dict) or not data.get("whole_game"):
            return None
        png = game_picture.whole_game(str(data["whole_game"]), data.get("language", "en")).png
    except (ServiceError, ValueError, OSError) as exc:
        logging.getLogger(__name__).warning("mail %s goes without the whole game's picture: %s",
                                            row.id, exc)
        return None
    image = WireMessage(policy=WIRE)
    image.set_raw("Content-Type", f'image/png; name="{WHOLE_GAME_FILE}"')
    image.set_raw("Content-Transfer-Encoding", "base64")
    image.set_raw("Content-Disposition", f'attachment; filename="{WHOLE_GAME_FILE}"')
    text, lines = _base64_lines(png)
    image.set_payload(text)
    image.wire_payload = lines
    return image

