"""Reading a player's reply: which part of the mail holds what the player wrote, and the orders
in it, whatever the mail program made of it.

A reply comes as plain text, as HTML only, as both (multipart/alternative, where some programs
put only the quote in the text part and the reply in the HTML one), or with the turn file
attached (text/plain or application/octet-stream, any name, inline or as an attachment, alone
or with a note). The orders are taken from the first of: an attached turn file (a file with an
ORDERS line) that holds some; the text part; the HTML part turned into text. What is the
writer's own text within a part is pbem.services.quoting's and turnfile's business.

Owns turning HTML into text (lxml, given bytes: a str that begins with an XML declaration makes
lxml raise). Does not decide what is done with the orders (inbox) or what a move is (the game).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import ClassVar

from ..services import turnfile
from ..services.turnfile import ORDERS_LINE, Orders

TEXT = "text"
HTML = "html"
ATTACHMENT = "attachment"
# Parts of a mail looked at as a possible turn file: more is not a reply but a parcel.
MAX_FILES = 8
FILE_TYPES = {"text/plain", "application/octet-stream", "text/x-log", "application/text"}


@dataclass(frozen=True)
class Reading:
    """What was read in a reply: the orders, the part they came from (TEXT, HTML or
    ATTACHMENT, with the file's name), the lines taken as the writer's own in that part, and
    the body's text (the text part, else the HTML turned into text) for a message to the
    table."""

    orders: Orders
    part: str
    text: str
    own: list[str] = field(default_factory=list)
    name: str = ""


class HtmlText:
    """HTML mail as text: line breaks kept, quoted parts (blockquote, Gmail's and Yahoo's quote
    divs), scripts and styles dropped. Parsed by libxml2 (lxml), in time linear in the text:
    the standard library's HTMLParser rescans unclosed constructs (60 KB of "<a " took it
    34 s)."""

    AROUND: ClassVar[set[str]] = {"p", "div", "li", "tr", "h1", "h2", "h3", "pre", "hr",
                                  "table", "blockquote"}
    SKIPPED: ClassVar[set[str]] = {"blockquote", "script", "style", "head", "title"}

    @classmethod
    def of(cls, html: str) -> str:
        from lxml import etree
        from lxml import html as lxml_html

        if not html.strip():
            return ""
        try:
            # Bytes with the encoding named: lxml refuses a str that holds an XML declaration
            # (old Hotmail and Windows Live Mail begin their HTML with one).
            root = lxml_html.document_fromstring(
                html.encode("utf-8", "surrogatepass"),
                parser=lxml_html.HTMLParser(encoding="utf-8"))
        except (etree.ParserError, ValueError):
            return ""
        parts: list[str] = []
        stack: list[tuple[object, bool]] = [(root, False)]
        while stack:  # depth first, without recursion: nesting is the sender's to choose
            element, closing = stack.pop()
            tag = element.tag if isinstance(element.tag, str) else None
            if closing:
                if tag in cls.AROUND:
                    parts.append("\n")
                if element.tail:
                    parts.append(element.tail)
                continue
            if tag is None or tag in cls.SKIPPED or "quote" in (element.get("class") or ""):
                if tag in cls.AROUND:
                    parts.append("\n")
                if element.tail:
                    parts.append(element.tail)
                continue
            if tag == "hr":  # the rule over an original (Hotmail, Zimbra, Outlook.com)
                parts.append("\n_____\n")
            elif tag in cls.AROUND or tag == "br":
                parts.append("\n")
            if element.text:
                parts.append(element.text)
            stack.append((element, True))
            stack.extend((child, False) for child in reversed(element))
        return "".join(parts)


def body_text(message: EmailMessage) -> str:
    """The reply's text: its plain part, or its HTML part turned into text."""
    part = message.get_body(("plain",))
    if part is not None:
        return part.get_content()
    part = message.get_body(("html",))
    return "" if part is None else HtmlText.of(part.get_content())


def read_mail(message: EmailMessage) -> Reading:
    """The orders of a reply and where they were found (see the module's docstring); with none
    found anywhere, the reading of the part the writer most likely wrote in. Raises what the
    email package raises on a part it cannot decode."""
    plain = message.get_body(("plain",))
    html = message.get_body(("html",))
    plain_text = plain.get_content() if plain is not None else None
    html_text = HtmlText.of(html.get_content()) if html is not None else None
    body = plain_text if plain_text is not None else html_text or ""
    for name, content in _files(message, (plain, html)):
        orders = turnfile.read(content)
        if orders.lines:
            return Reading(orders, ATTACHMENT, body, turnfile.own_lines(content), name)
    readings = [Reading(turnfile.read(text), part, body, turnfile.own_lines(text))
                for part, text in ((TEXT, plain_text), (HTML, html_text)) if text is not None]
    for reading in readings:
        if reading.orders.lines:
            return reading
    return readings[0] if readings else Reading(Orders(None, []), TEXT, body)


def _files(message: EmailMessage, bodies) -> list[tuple[str, str]]:
    """(name, text) of each part besides the body that holds an ORDERS line."""
    files = []
    for part in message.walk():
        if len(files) >= MAX_FILES:
            break
        if part.is_multipart() or any(part is body for body in bodies):
            continue
        if part.get_content_type() not in FILE_TYPES:
            continue
        # A broken attachment (any error of the stdlib's decoding) is no turn file; the body
        # is still read.
        try:
            content = part.get_content()
            name = turnfile.printable(part.get_filename() or "")[:80]
        except Exception:  # noqa: S112
            continue
        if isinstance(content, bytes):
            content = _decoded(content)
        if ORDERS_LINE in content and any(line.strip() == ORDERS_LINE
                                          for line in content.splitlines()):
            files.append((name, content))
    return files


def _decoded(data: bytes) -> str:
    """A file's bytes as text: UTF-8 (a BOM allowed), else Windows' Western code page."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", "replace")
