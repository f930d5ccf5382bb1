"""Delivering turn notices (pbem.services.notices) to chat and push targets: the mail outbox's
rules (pbem.scheduler.outbox) for another kind of row.

A few due notices are claimed (status `sending`) in a short transaction before anything is
sent, so two schedulers never take the same one (SKIP LOCKED on PostgreSQL, one writer at a
time on SQLite). Each is sent (pbem.ground.chat: Apprise, every connection checked) and
recorded in its own transaction before the next is sent, so a scheduler killed mid-delivery
loses nothing: its other claimed notices go back to the queue once the claim has made no
progress for `stuck_after` (six times `[notify] timeout_seconds`), and only the one in hand
when it died may arrive twice. A notice that fails is tried again with a delay doubling from
`[notify] retry_seconds`; after `[notify] max_attempts` it is given up and its target is
marked dead (no more notices are queued for it; its owner sees why on the profile page, and
a successful *Send a test* makes it live again). A target that got `[notify] per_hour`
notices in the last hour gets the next ones once the hour allows (not counted as a try).
Each delivery is a line in the log naming the target by scheme and host only.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import cast

import orjson
from flask import Flask
from sqlalchemy import bindparam, func, select, update
from sqlmodel import col

from ..ground import chat
from ..ground.db import get_engine, is_status, locked, new_claim, utcnow
from ..ground.models import FAILED, QUEUED, SENDING, SENT, Notice, NoticeTarget
from .outbox import MAX_BACKOFF, REDACTED, stop_event

logger = logging.getLogger(__name__)
BATCH = 10  # claimed at a time
STALE = "the scheduler stopped while this notice was claimed; sent again automatically"
DEAD = "its target is marked dead"

_STUCK = (update(Notice).where(is_status(Notice.status, SENDING),
                               Notice.claimed_at < bindparam("stuck_before"))
          .values(status=QUEUED, claim=None, last_error=STALE))
_DUE = locked(select(col(Notice.id)).where(is_status(Notice.status, QUEUED),
                                           col(Notice.next_attempt_at) <= bindparam("moment"))
              .order_by(col(Notice.next_attempt_at), col(Notice.id)).limit(bindparam("most")),
              skip_locked=True)
_TAKE = (update(Notice).where(col(Notice.id).in_(bindparam("ids", expanding=True)))
         .values(status=SENDING, claim=bindparam("new_claim"), claimed_at=bindparam("moment")))
_HELD = (select(col(Notice.id), col(Notice.target_id), col(Notice.game_id), col(Notice.kind),
                col(Notice.title), col(Notice.body), col(Notice.secrets_json),
                col(Notice.attempts), col(NoticeTarget.url), col(NoticeTarget.shown),
                col(NoticeTarget.dead_at))
         .join(NoticeTarget, col(NoticeTarget.id) == Notice.target_id)
         .where(col(Notice.claim) == bindparam("of_claim"), is_status(Notice.status, SENDING))
         .order_by(col(Notice.id)))
_PROGRESS = (update(Notice).where(col(Notice.claim) == bindparam("of_claim"),
                                  is_status(Notice.status, SENDING))
             .values(claimed_at=bindparam("progress")))
_RELEASE = (update(Notice).where(col(Notice.claim) == bindparam("of_claim"),
                                 is_status(Notice.status, SENDING))
            .values(status=QUEUED, claim=None))
# Read before any write transaction: a scheduler with nothing to do (no notice due, none left
# by a dead sender: the usual case) takes no write lock for notices at its tick. Each reads a
# partial index.
_ANY_DUE = (select(col(Notice.id)).where(is_status(Notice.status, QUEUED),
                                         col(Notice.next_attempt_at) <= bindparam("moment"))
            .limit(1))
_ANY_STUCK = (select(col(Notice.id)).where(is_status(Notice.status, SENDING),
                                           col(Notice.claimed_at) < bindparam("stuck_before"))
              .limit(1))
_SENT_SINCE = (select(func.count(), func.min(Notice.sent_at))
               .where(col(Notice.target_id) == bindparam("target_id"),
                      Notice.sent_at > bindparam("since")))


def stuck_after(app: Flask) -> timedelta:
    """How long a claim of notices may go without progress before they are sent again: well
    beyond what one notice can take (a service may need a few requests, each waiting up to
    the timeout to connect and to each read)."""
    return timedelta(seconds=6 * app.config["NOTIFY_TIMEOUT_SECONDS"])


def _writer(app: Flask):
    return get_engine(app).execution_options(pbem_write=True)


def _claim(app: Flask, writer, now: datetime) -> tuple[str, list[SimpleNamespace]]:
    claim = new_claim()
    with writer.begin():
        writer.execute(_STUCK, {"stuck_before": now - stuck_after(app)})
        ids = writer.execute(_DUE, {"moment": now, "most": BATCH}).scalars().all()
        if not ids:
            return claim, []
        writer.execute(_TAKE, {"ids": ids, "new_claim": claim, "moment": now})
        rows = [SimpleNamespace(**row._mapping)
                for row in writer.execute(_HELD, {"of_claim": claim})]
    return claim, rows


def _changes(app: Flask, row, error: str | None, now: datetime) -> tuple[str, dict]:
    """What a delivery counts as, and the notice's new columns."""
    attempts = row.attempts + 1
    changes: dict = {"attempts": attempts, "claim": None}
    if error is None:
        body = row.body
        for secret in orjson.loads(row.secrets_json):
            body = body.replace(secret, REDACTED)
        changes.update(status=SENT, sent_at=now, last_error=None, body=body, secrets_json="[]")
        return "sent", changes
    if error == DEAD or attempts >= app.config["NOTIFY_MAX_ATTEMPTS"]:
        changes.update(status=FAILED, failed_at=now, last_error=error)
        return "failed", changes
    delay = min(timedelta(seconds=app.config["NOTIFY_RETRY_SECONDS"] * 2 ** (attempts - 1)),
                MAX_BACKOFF)
    changes.update(status=QUEUED, next_attempt_at=now + delay, last_error=error)
    return "retry", changes


def _record(app: Flask, writer, claim: str, row, error: str | None, now: datetime,
            progress: datetime) -> str | None:
    """Write down one delivery in its own transaction, while the notice is still this claim's
    (a notice taken for stuck that did go out is marked sent, if nobody sent it again yet)."""
    outcome, changes = _changes(app, row, error, now)
    with writer.begin():
        held = writer.execute(update(Notice).where(
            col(Notice.id) == row.id, col(Notice.claim) == claim,
            is_status(col(Notice.status), SENDING))
            .values(**changes)).rowcount == 1
        if not held:
            if error is not None:
                return None
            changes.pop("claim")
            if writer.execute(update(Notice).where(Notice.id == row.id,
                                                   is_status(Notice.status, QUEUED))
                              .values(**changes)).rowcount != 1:
                return None
        if outcome == "failed" and error != DEAD:
            writer.execute(update(NoticeTarget).where(NoticeTarget.id == row.target_id,
                                                      col(NoticeTarget.dead_at).is_(None))
                           # failed: there was an error
                           .values(dead_at=now, dead_reason=cast(str, error)[:500]))
            logger.warning("notice target %d (%s) is marked dead", row.target_id, row.shown)
        writer.execute(_PROGRESS, {"of_claim": claim, "progress": progress})
    what = f"notice {row.id} ({row.kind}, game {row.game_id}) to {row.shown}"
    if outcome == "sent":
        logger.info("%s sent", what)
    elif outcome == "retry":
        logger.warning("%s not sent (attempt %d): %s", what, changes["attempts"], error)
    else:
        logger.error("%s failed (attempt %d): %s", what, changes["attempts"], error)
    return outcome


def _wait_for_rate(app: Flask, writer, claim: str, row, now: datetime) -> bool:
    """Put `row` back for later if its target had its hour's notices; whether it did."""
    limit = app.config["NOTIFY_PER_HOUR"]
    with writer.begin():
        count, first = writer.execute(_SENT_SINCE, {"target_id": row.target_id,
                                                    "since": now - timedelta(hours=1)}).one()
        if count < limit:
            return False
        writer.execute(update(Notice).where(col(Notice.id) == row.id, col(Notice.claim) == claim)
                       .values(status=QUEUED, claim=None,
                               next_attempt_at=max(first + timedelta(hours=1), now)))
    logger.info("notice %d to %s waits: its target had %d notices this hour", row.id,
                row.shown, count)
    return True


def deliver_notices(app: Flask, now: datetime | None = None) -> dict[str, int]:
    """Send the notices due at `now`; returns how many were sent, put back for a retry, given
    up and held back by the hourly limit. Asked to stop (SIGTERM), it finishes the notice in
    hand and gives the rest of its claim back."""
    counts = {"notices_sent": 0, "notices_retry": 0, "notices_failed": 0, "notices_waiting": 0}
    if not app.config["NOTIFY_ENABLED"]:
        return counts
    now = now or utcnow()
    started = time.monotonic()
    stop = stop_event(app)
    config = app.config
    hosts = [h.strip() for h in config["NOTIFY_ALLOW_HOSTS"].split(",") if h.strip()]
    schemes = [s.strip() for s in config["NOTIFY_ALLOW_SCHEMES"].split(",") if s.strip()]
    with get_engine(app).connect() as reader:
        idle = reader.execute(_ANY_DUE, {"moment": now}).first() is None and reader.execute(
            _ANY_STUCK, {"stuck_before": now - stuck_after(app)}).first() is None
        reader.rollback()
    if idle:
        return counts
    with _writer(app).connect() as writer:
        while not stop.is_set():
            claim, rows = _claim(app, writer, now)
            for row in rows:
                if stop.is_set():
                    break
                if row.dead_at is None and _wait_for_rate(app, writer, claim, row, now):
                    counts["notices_waiting"] += 1
                    continue
                error = DEAD if row.dead_at is not None else chat.send(
                    row.url, row.title, row.body, allow_hosts=hosts, schemes=schemes,
                    timeout=config["NOTIFY_TIMEOUT_SECONDS"])
                progress = now + timedelta(seconds=time.monotonic() - started)
                outcome = _record(app, writer, claim, row, error, now, progress)
                if outcome:
                    counts[f"notices_{outcome}"] += 1
            with writer.begin():
                writer.execute(_RELEASE, {"of_claim": claim})
            if len(rows) < BATCH:
                break
    return counts
