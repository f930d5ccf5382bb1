"""Where the outbox sends mail: SMTP (STARTTLS, TLS or plain, optional login) and a local
folder of .eml files (`backend_for` picks the configured one), and how their refusals read.

Each whole answer of the SMTP server must come within `[smtp] timeout_seconds` (not each
read: a server sending `250-` lines for ever would hold the sender for ever) and each mail's
conversation within MAIL_DEADLINE times that, so a sender always comes back. Part of the
scheduler's delivery (pbem.scheduler.outbox); imports the ground and pbem.services.bounces
(a refusal's words).
"""

from __future__ import annotations

import os
import smtplib
import ssl
import time
from collections.abc import Iterable, Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from flask import Flask

from ..ground.models import OutboxMessage
from ..services import bounces


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
    if TYPE_CHECKING:
        timeout: float  # smtplib.SMTP's, which it is mixed into

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
        client: _SMTP | _SMTP_SSL
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

