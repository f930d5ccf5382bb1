"""`pbem serve`'s request handler: Werkzeug's, refusing with 400 the header shapes that gunicorn
and nginx refuse (RFC 9112): a line ended by a bare LF instead of CRLF, a header folded onto
the next line (obs-fold: a line starting with a space or tab), and a header line that is not
a name, a colon and a value. Python's parser takes all three, and a proxy in front that reads
them otherwise could smuggle a request past it (issue 42).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from werkzeug.serving import WSGIRequestHandler

if TYPE_CHECKING:
    from io import BufferedIOBase

FIELD = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+:")  # a token, then the colon at once


class _CheckedLines:
    """The request's stream, noting the first badly formed line of its header (and nothing
    after the blank line that ends it: the body is read as it comes)."""

    def __init__(self, raw) -> None:
        self.raw = raw
        self.problem: str | None = None
        self.done = False

    def readline(self, limit: int = -1) -> bytes:
        line = self.raw.readline(limit)
        if self.done or self.problem:
            return line
        if line in (b"", b"\r\n"):
            self.done = True
        elif not line.endswith(b"\n"):
            pass  # too long, or cut short: the parser itself says which
        elif not line.endswith(b"\r\n"):
            self.problem = "a header line ends with LF alone, not CRLF"
        elif line[:1] in (b" ", b"\t"):
            self.problem = "a header is folded onto the next line (obs-fold)"
        elif not FIELD.match(line):
            self.problem = "a header line is not a name, a colon and a value"
        return line

    def __getattr__(self, name: str):
        return getattr(self.raw, name)


class StrictRequestHandler(WSGIRequestHandler):
    """Werkzeug's request handler, with the header checked as gunicorn checks it."""

    def parse_request(self) -> bool:
        checked = _CheckedLines(self.rfile)
        self.rfile = cast("BufferedIOBase", checked)  # it reads as the stream it wraps
        try:
            parsed = super().parse_request()
        finally:
            self.rfile = checked.raw
        if not parsed:
            return False
        problem = checked.problem
        if problem is None and not self.raw_requestline.endswith(b"\r\n"):
            problem = "the request line ends with LF alone, not CRLF"
        if problem is not None:
            self.close_connection = True
            self.send_error(400, f"Bad request: {problem}")
            return False
        return True
