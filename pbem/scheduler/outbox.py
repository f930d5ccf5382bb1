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

The backends are pbem.scheduler.backends (SMTP and a local folder), the message's bytes
pbem.scheduler.wire; a mail queued as an intent is written here first
(pbem.services.mail.sending.render).
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import ExitStack
from datetime import datetime, timedelta
from functools import lru_cache
from types import SimpleNamespace
from typing import Protocol

import orjson
from flask import Flask
from sqlalchemy import bindparam, update
from sqlalchemy.exc import OperationalError
from sqlmodel import col, select

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
from ..services import bounces
from ..services.health import stuck_after
from ..services.mail import sending
from .backends import Backend, Permanent, Unknown, backend_for
from .wire import build_message

logger = logging.getLogger(__name__)
BATCH = 10  # claimed at a time: what a sender killed mid-batch leaves behind
# A backend that sending again does no harm to (`idempotent`) takes claims this many times as
# large: a sender killed mid-claim leaves them to be written again, nothing lost or twice.
IDEMPOTENT_CLAIMS = 5
MAX_BACKOFF = timedelta(hours=6)
REDACTED = "[link hidden once sent]"
NO_ANSWER = "no answer from the mail backend"



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
              .order_by(col(OutboxMessage.next_attempt_at), col(OutboxMessage.id))
              .limit(bindparam("most")), skip_locked=True)
# A claim made for another sender (`claim_for`) reads nothing back; one's own, every column.
_HAND = (update(OutboxMessage).where(col(OutboxMessage.id).in_(bindparam("ids", expanding=True)))
         .values(status=SENDING, claim=bindparam("new_claim"), claimed_at=bindparam("moment")))
_TAKE = _HAND.returning(*OutboxMessage.__table__.c)
_HANDED = (select(*OutboxMessage.__table__.c)
           .where(OutboxMessage.claim == bindparam("of_claim"),
                  is_status(OutboxMessage.status, SENDING))
           .order_by(col(OutboxMessage.id)))
_RECORDED = select(OutboxMessage.status, OutboxMessage.claim, OutboxMessage.attempts,
                   OutboxMessage.secrets_json, OutboxMessage.text_body,
                   OutboxMessage.html_body).where(OutboxMessage.id == bindparam("row_id"))
# The claim's other rows are making progress; the rows still ours come back (a claim taken for
# stuck by another sender has none).
_PROGRESS = (update(OutboxMessage)
             .where(col(OutboxMessage.claim) == bindparam("of_claim"),
                    is_status(OutboxMessage.status, SENDING))
             .values(claimed_at=bindparam("progress"))
             .returning(OutboxMessage.id))
_RELEASE = (update(OutboxMessage)
            .where(col(OutboxMessage.claim) == bindparam("of_claim"),
                   is_status(OutboxMessage.status, SENDING))
            .values(status=QUEUED, claim=None))


@lru_cache(maxsize=64)
def _record_statement(columns: tuple[str, ...], held: bool):
    """The UPDATE that writes `columns` of one row; with `held`, only while the row is still
    claimed by the sender that records it."""
    statement = update(OutboxMessage).where(col(OutboxMessage.id) == bindparam("row_id"))
    if held:
        statement = statement.where(col(OutboxMessage.claim) == bindparam("of_claim"),
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
    """Write the text of a mail queued as an intent (pbem.services.mail.sending.render) into
    `row`; it is stored with the outcome of its delivery. Raises when it cannot be written."""
    row.text_body, row.html_body = sending.render(session, row)
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
                        sending.read_games(session, {r.game_id for r in rows if r.intent_json})
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
        sending.due_digests(session, now)
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
