"""Delivering the outbox: claim due rows, send them, record what happened, retry with backoff.

A row is claimed (status `sending`) in its own short transaction before anything is sent, so
two senders never take the same row, and a row once claimed is never sent again by a retry
loop. A sender that dies mid-send leaves its rows in `sending`; after a while they are marked
failed with a message saying the mail may or may not have arrived, for a person to decide
(should the slow sender finish after all and the mail went out, it records the row as sent).
Backends: SMTP (STARTTLS, TLS or plain, optional login) and a local folder of .eml files.
"""

from __future__ import annotations

import json
import os
import smtplib
import ssl
import threading
import uuid
from datetime import datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path
from typing import Protocol

from flask import Flask
from sqlalchemy import update
from sqlmodel import select

from .db import utcnow, writing
from .models import FAILED, QUEUED, SENDING, SENT, OutboxMessage

BATCH = 50
STUCK_AFTER = timedelta(minutes=15)
MAX_BACKOFF = timedelta(hours=6)
REDACTED = "[link hidden once sent]"
NO_ANSWER = "no answer from the mail backend"


class Backend(Protocol):
    def send(self, messages: list[tuple[OutboxMessage, EmailMessage]]) -> dict[int, str | None]:
        """Send each message; return, per row id, None when sent or the error text."""


def build_message(row: OutboxMessage, sender: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = row.to_addr
    message["Subject"] = row.subject
    message["Date"] = format_datetime(row.created_at)
    message["Message-ID"] = row.message_id
    if row.reply_to:
        message["Reply-To"] = row.reply_to
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(row.text_body)
    message.add_alternative(row.html_body, subtype="html")
    return message


class LocalBackend:
    """Writes each message as `<id>.eml` into a folder; the mailbox page reads them back."""

    def __init__(self, folder: str):
        self.folder = Path(folder)

    def send(self, messages):
        # Readable by this user only: every mail holds a seat's live link.
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        results = {}
        for row, message in messages:
            target = self.folder / f"{row.id:08d}.eml"
            temporary = target.with_suffix(".tmp")
            try:
                descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                with os.fdopen(descriptor, "wb") as f:
                    f.write(bytes(message))
                os.replace(temporary, target)
                results[row.id] = None
            except OSError as exc:
                results[row.id] = f"cannot write {target}: {exc.strerror}"
        return results


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


class SmtpBackend:
    def __init__(self, config: dict):
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
                client = smtplib.SMTP_SSL(self.host, self.port, timeout=self.timeout,
                                          context=context)
            else:
                client = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
        except (OSError, smtplib.SMTPException) as exc:
            raise ConnectionProblem(f"cannot reach {where}: {describe_error(exc)}") from exc
        step = "say hello to"
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
        return client

    def send(self, messages):
        results: dict[int, str | None] = {}
        try:
            client = self._connect()
        except ConnectionProblem as exc:
            return {row.id: str(exc) for row, _ in messages}
        try:
            for row, message in messages:
                try:
                    refused = client.send_message(message)
                    results[row.id] = f"refused: {_refusals(refused)}" if refused else None
                except smtplib.SMTPServerDisconnected as exc:
                    results[row.id] = describe_error(exc)
                    break  # the connection is gone; the rest wait for the next run
                except smtplib.SMTPException as exc:
                    # One refused message (a 4xx or 5xx answer) leaves the connection usable.
                    results[row.id] = describe_error(exc)
                except OSError as exc:  # SMTPException is an OSError too: this order matters
                    results[row.id] = describe_error(exc)
                    break
        finally:
            try:
                client.quit()
            except (OSError, smtplib.SMTPException):
                pass
            client.close()
        for row, _ in messages:
            results.setdefault(row.id, "not tried: the SMTP connection was lost")
        return results


class ConnectionProblem(Exception):
    """Connecting, securing or logging in to the SMTP server failed; the text says which."""


def backend_for(app: Flask) -> Backend:
    if "pbem_mail_backend" in app.extensions:  # tests may install their own
        return app.extensions["pbem_mail_backend"]
    if app.config["MAIL_BACKEND"] == "smtp":
        return SmtpBackend(app.config)
    return LocalBackend(app.config["MAIL_FOLDER"])


def _claim(app: Flask, now: datetime, limit: int) -> tuple[str, list[OutboxMessage]]:
    claim = uuid.uuid4().hex
    with writing(app) as session:
        # The claim is kept, so that a slow sender can still record a late success.
        session.exec(update(OutboxMessage)
                     .where(OutboxMessage.status == SENDING,
                            OutboxMessage.claimed_at < now - STUCK_AFTER)
                     .values(status=FAILED, last_error="the sender stopped while sending this "
                             "mail; it may or may not have arrived. Retry it by hand if not."))
        due = select(OutboxMessage.id).where(OutboxMessage.status == QUEUED,
                                             OutboxMessage.next_attempt_at <= now) \
            .order_by(OutboxMessage.next_attempt_at, OutboxMessage.id).limit(limit)
        session.exec(update(OutboxMessage).where(OutboxMessage.id.in_(due.scalar_subquery()),
                                                 OutboxMessage.status == QUEUED)
                     .values(status=SENDING, claim=claim, claimed_at=now))
        # The status test lets the due index find the claimed rows without reading the outbox.
        rows = list(session.exec(select(OutboxMessage).where(OutboxMessage.status == SENDING,
                                                             OutboxMessage.claim == claim)
                                 .order_by(OutboxMessage.id)))
    return claim, rows


def _redact(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def deliver_queued(app: Flask, now: datetime | None = None, limit: int = BATCH) -> dict[str, int]:
    """Send what is due, once; returns how many were sent, put back for a retry, failed."""
    now = now or utcnow()
    counts = {"sent": 0, "retry": 0, "failed": 0}
    claim, rows = _claim(app, now, limit)
    if not rows:
        return counts
    sender = app.config["MAIL_FROM"]
    built, unbuildable = [], {}
    for row in rows:
        try:
            built.append((row, build_message(row, sender)))
        except (ValueError, TypeError) as exc:  # e.g. a line break in a header: never sendable
            unbuildable[row.id] = f"cannot build this mail: {exc}"
    results = backend_for(app).send(built) if built else {}
    retry_base = app.config["MAIL_RETRY_SECONDS"]
    with writing(app) as session:
        for row in rows:
            row = session.get(OutboxMessage, row.id)
            if row.claim != claim:
                continue
            error = unbuildable.get(row.id) or results.get(row.id, NO_ANSWER)
            # Another run may have taken this row for stuck and marked it failed while we were
            # still sending. If it did go out, say so (and hide its secrets); else leave it.
            late_success = row.status == FAILED and error is None
            if row.status != SENDING and not late_success:
                continue
            row.attempts += 1
            row.claim = None
            if row.id in unbuildable:
                row.status, row.last_error = FAILED, error
                counts["failed"] += 1
            elif error is None:
                secrets = json.loads(row.secrets_json)
                row.status, row.sent_at, row.last_error = SENT, now, None
                row.text_body = _redact(row.text_body, secrets)
                row.html_body = _redact(row.html_body, secrets)
                row.secrets_json = "[]"
                row.reply_to = None
                counts["sent"] += 1
            elif row.attempts >= app.config["MAIL_MAX_ATTEMPTS"]:
                row.status, row.last_error = FAILED, error
                counts["failed"] += 1
            else:
                backoff = min(timedelta(seconds=retry_base * 2 ** (row.attempts - 1)),
                              MAX_BACKOFF)
                row.status, row.last_error, row.next_attempt_at = QUEUED, error, now + backoff
                counts["retry"] += 1
            session.add(row)
    return counts


def deliver_all_due(app: Flask, now: datetime | None = None) -> dict[str, int]:
    """Queue due digests, then deliver batches until nothing due is left."""
    from .mail import due_digests

    now = now or utcnow()
    with app.app_context(), writing(app) as session:
        due_digests(session, now)
    total = {"sent": 0, "retry": 0, "failed": 0}
    while True:
        counts = deliver_queued(app, now)
        for key, value in counts.items():
            total[key] += value
        if sum(counts.values()) < BATCH:
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
        while True:
            self.event.wait(interval)
            self.event.clear()
            try:
                deliver_all_due(self.app)
            except Exception:  # keep delivering after a bad moment; the error is logged
                self.app.logger.exception("mail delivery failed")
