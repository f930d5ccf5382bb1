"""What the demo's mailbox page (pbem.web.mailbox) reads of the outbox: a page of the mail
sent, newest first, the mail not sent yet, and the addresses the server writes to.

Imports the ground only.
"""

from __future__ import annotations

from email.utils import getaddresses

from flask import current_app
from sqlalchemy import func
from sqlmodel import col, select

from ..ground.db import reading
from ..ground.models import FAILED, QUEUED, SENDING, SENT, UNKNOWN, Invitation, OutboxMessage, Seat

MAX_RECIPIENTS = 500
UNSENT = (QUEUED, SENDING, FAILED, UNKNOWN)


def mailbox_page(wanted: str, before: int | None, size: int) -> tuple[list, list[str], list]:
    """Up to `size` + 1 mails sent before id `before` (None: the newest) whose To holds
    `wanted` (id, to, subject, created_at); the addresses for the page's filter (none when it
    is filtered); the latest 100 mails not sent."""
    with reading() as session:
        # Newest first along the table's own order, looking at the status of each row on the
        # way: given `status = 'sent'` SQLite takes the status index instead, fetches every
        # sent row (its date is stored after the bodies, in overflow pages) and sorts them
        # all, 214 ms for the first page at 8,250 mails. `status || ''` is the same test,
        # which no index answers.
        query = (select(OutboxMessage.id, OutboxMessage.to_addr, OutboxMessage.subject,
                        OutboxMessage.created_at)
                 .where(col(OutboxMessage.status).concat("") == SENT))
        if wanted:
            query = query.where(func.lower(OutboxMessage.to_addr).contains(wanted))
        if before is not None:
            query = query.where(col(OutboxMessage.id) < before)
        rows = session.exec(query.order_by(col(OutboxMessage.id).desc()).limit(size + 1)).all()
        recipients = [] if wanted else _recipients(session)
        # From the status index: only the mail not sent, never the history.
        pending = session.exec(select(OutboxMessage).where(col(OutboxMessage.status).in_(UNSENT))
                               .order_by(col(OutboxMessage.id).desc()).limit(100)).all()
    return list(rows), recipients, list(pending)


def _recipients(session) -> list[str]:
    """The addresses the server writes to, for the page's filter: the players' (seats and
    invitations) and the admins'. Read from those small tables, not from every mail sent."""
    seats = session.exec(select(col(Seat.email)).where(col(Seat.bot).is_(None)).distinct()
                         .limit(MAX_RECIPIENTS)).all()
    invited = session.exec(select(Invitation.email).where(Invitation.email != "").distinct()
                           .limit(MAX_RECIPIENTS)).all()
    admins = [address for _, address in getaddresses([current_app.config["MAIL_ADMINS"]])]
    return sorted({a.strip().lower() for a in (*seats, *invited, *admins) if a and "@" in a}
                  )[:MAX_RECIPIENTS]
