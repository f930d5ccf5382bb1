"""The server's health for monitoring (`GET /health`): the database, the scheduler and the mail.

Healthy (200) when the database answers with the schema of this code, the scheduler ran within the last few ticks, and no
mail has failed, is unknown or is stuck; otherwise 503, with the problems named. The answer
holds counts and times only: no address, no subject, no error text, no key.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from flask import Flask
from sqlalchemy import and_, func, or_
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import col, select

from ..ground.db import is_status, reading, utcnow
from ..ground.models import FAILED, QUEUED, SENDING, UNKNOWN, Game, JobState, OutboxMessage

STUCK_AFTER = timedelta(minutes=15)  # at least; see stuck_after()
SCHEDULER_JOB = "scheduler"  # pbem.services.timeouts.JOB: the row each real run of the scheduler updates
SILENT_TICKS = 3
SILENT_AT_LEAST = timedelta(minutes=5)  # a long run (a burst of timeouts) is not silence
STATES = (QUEUED, SENDING, FAILED, UNKNOWN)


def silent_after(app: Flask) -> timedelta:
    """How long the scheduler may go without a run before it counts as silent."""
    return max(SILENT_AT_LEAST,
               timedelta(seconds=SILENT_TICKS * app.config["SCHEDULER_TICK_SECONDS"]))


def stuck_after(app: Flask) -> timedelta:
    """How long a sender's claim of mail may go without progress before its rows are sent
    again (pbem.scheduler.outbox), and before /health calls it stuck: well beyond the longest
    one mail can take (each step of an SMTP conversation may wait the timeout)."""
    return max(STUCK_AFTER, timedelta(seconds=10 * app.config["SMTP_TIMEOUT_SECONDS"]))


def outbox_counts(session) -> dict[str, int]:
    """The mail not sent yet by state (queued, sending, failed, unknown): read from the
    outbox's status index, never the history of sent mail."""
    counts = dict(session.exec(select(OutboxMessage.status, func.count())
                               .where(col(OutboxMessage.status).in_(STATES))
                               .group_by(OutboxMessage.status)).all())
    return {state: counts.get(state, 0) for state in STATES}


def check(app: Flask, now: datetime | None = None) -> tuple[dict, bool]:
    """What /health answers, and whether all is well."""
    now = now or utcnow()
    silent = silent_after(app)
    from ..ground import schema  # Alembic: loaded when asked, not by every app

    try:
        behind = schema.checked(app)
        if behind:  # every query below could fail on a missing column
            return {"status": "failing", "problems": [behind], "database": behind}, False
        with reading(app) as session:
            last_run = session.exec(select(JobState.last_run_at)
                                    .where(JobState.name == SCHEDULER_JOB)).first()
            mail = outbox_counts(session)
            # The oldest mail due for delivery and not taken (a mail waiting for its retry is
            # not due), and the oldest claim in hand.
            oldest_due = session.exec(select(func.min(OutboxMessage.next_attempt_at)).where(
                is_status(OutboxMessage.status, QUEUED))).one()
            oldest_claim = session.exec(select(func.min(OutboxMessage.claimed_at)).where(
                is_status(OutboxMessage.status, SENDING))).one()
    except SQLAlchemyError:
        return {"status": "failing", "problems": ["database unreachable"],
                "database": "unreachable"}, False
    problems = []
    scheduler = {"last_run": last_run.isoformat() if last_run else None,
                 "seconds_ago": round((now - last_run).total_seconds()) if last_run else None,
                 "silent_after_seconds": round(silent.total_seconds())}
    if last_run is None:
        problems.append("the scheduler has never run")
    elif now - last_run > silent:
        problems.append(f"the scheduler has not run for {scheduler['seconds_ago']} s")
    waiting = round((now - oldest_due).total_seconds()) if oldest_due and oldest_due < now \
        else 0
    mail["due_for_seconds"] = waiting
    if mail[FAILED]:
        problems.append(f"{mail[FAILED]} mail(s) failed")
    if mail[UNKNOWN]:
        problems.append(f"{mail[UNKNOWN]} mail(s) unknown (the mail server did not answer)")
    if waiting > silent.total_seconds():
        problems.append(f"mail due for {waiting} s has not been sent")
    if oldest_claim is not None and now - oldest_claim > stuck_after(app):
        problems.append("mail claimed by a sender has been stuck for "
                        f"{round((now - oldest_claim).total_seconds())} s")
    return {"status": "failing" if problems else "ok", "problems": problems,
            "database": "ok", "scheduler": scheduler, "mail": mail}, not problems


def games_by_status() -> dict[str, int]:
    """How many games there are in each status (the front page's figures)."""
    with reading() as session:
        return dict(session.exec(select(Game.status, func.count()).group_by(Game.status)).all())


@dataclass(frozen=True)
class MailStatus:
    """What `pbem mail-status` says of the outbox: the counts by state, the mail that failed,
    is unknown or waits to be tried again after an error (`problems`, latest first), and the
    mail that is stuck (queued past its time, or claimed without progress)."""

    counts: dict[str, int]
    problems: list[OutboxMessage]
    failed: int
    unknown: int
    retrying: int
    overdue: int
    abandoned: int
    stuck: list[OutboxMessage]


def mail_status(now: datetime, since: datetime | None, late: timedelta,
                latest: int) -> MailStatus:
    """The outbox as `pbem mail-status` reports it: failures since `since` (None: ever), mail
    `late` past its time, at most `latest` rows of each list."""
    when = func.coalesce(OutboxMessage.failed_at, OutboxMessage.claimed_at,
                         OutboxMessage.created_at)
    failing = or_(col(OutboxMessage.status).in_((FAILED, UNKNOWN)) if since is None else and_(
        col(OutboxMessage.status).in_((FAILED, UNKNOWN)), when >= since),
        and_(col(OutboxMessage.status) == QUEUED, col(OutboxMessage.last_error).is_not(None)))
    with reading() as session:
        counts = dict(session.exec(select(OutboxMessage.status, func.count())
                                   .group_by(OutboxMessage.status)).all())
        problems = list(session.exec(select(OutboxMessage).where(failing)
                                     .order_by(when.desc(), col(OutboxMessage.id).desc())
                                     .limit(latest)).all())
        failed, unknown, retrying = (session.exec(select(func.count()).select_from(
            OutboxMessage).where(failing, OutboxMessage.status == status)).one()
            for status in (FAILED, UNKNOWN, QUEUED))
        stuck = [and_(col(OutboxMessage.status) == QUEUED,
                      col(OutboxMessage.next_attempt_at) < now - late),
                 and_(col(OutboxMessage.status) == SENDING,
                      col(OutboxMessage.claimed_at) < now - late)]
        overdue, abandoned = (session.exec(select(func.count()).select_from(OutboxMessage)
                                           .where(where)).one() for where in stuck)
        stuck_rows = list(session.exec(select(OutboxMessage).where(or_(*stuck))
                                       .order_by(col(OutboxMessage.id)).limit(latest)).all())
    return MailStatus(counts, problems, failed, unknown, retrying, overdue, abandoned,
                      stuck_rows)
