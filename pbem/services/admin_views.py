"""What the admins' pages (pbem.web.admin) read: the games with their seats and the failed
mail for the dashboard, one game's seats, log, mail and audit entries, the outbox, the audit
log, and the admin a login session names.

Imports the ground only.
"""

from __future__ import annotations

from sqlmodel import col, select

from ..ground.db import get_row, reading
from ..ground.models import (
    FAILED,
    QUEUED,
    SENDING,
    SENT,
    UNKNOWN,
    Admin,
    AuditEntry,
    Game,
    MoveRecord,
    OutboxMessage,
    Seat,
)

OUTBOX_STATES = (QUEUED, SENDING, SENT, FAILED, UNKNOWN)


def admin_by_id(admin_id: object) -> Admin | None:
    """The admin of a login session's id (None for a missing one or an id not a number)."""
    if not isinstance(admin_id, int):
        return None
    with reading() as session:
        return get_row(session, Admin, admin_id)


def dashboard() -> tuple[list[Game], list[Seat], list[OutboxMessage]]:
    """The latest 1,000 games, their seats, and the latest 50 mails that failed or whose fate
    is unknown."""
    with reading() as session:
        games = session.exec(select(Game).order_by(col(Game.id).desc()).limit(1000)).all()
        seats = session.exec(select(Seat).where(
            col(Seat.game_id).in_([game.id for game in games]))).all()
        failed = session.exec(select(OutboxMessage)
                              .where(col(OutboxMessage.status).in_((FAILED, UNKNOWN)))
                              .order_by(col(OutboxMessage.id).desc()).limit(50)).all()
    return list(games), list(seats), list(failed)


def game_record(game_id: int) -> dict | None:
    """A game with its seats, its log (newest first), its mail and its audit entries (each
    with the admin's address); None when there is no such game."""
    with reading() as session:
        game = get_row(session, Game, game_id)
        if game is None:
            return None
        return {
            "game": game,
            "seats": session.exec(select(Seat).where(Seat.game_id == game_id)
                                  .order_by(col(Seat.number))).all(),
            "log": session.exec(select(MoveRecord).where(MoveRecord.game_id == game_id)
                                .order_by(col(MoveRecord.number).desc())).all(),
            "mails": session.exec(select(OutboxMessage).where(OutboxMessage.game_id == game_id)
                                  .order_by(col(OutboxMessage.id).desc())).all(),
            "audit": session.exec(select(AuditEntry, Admin.email)
                                  .join(Admin, col(Admin.id) == AuditEntry.admin_id, isouter=True)
                                  .where(AuditEntry.game_id == game_id)
                                  .order_by(col(AuditEntry.id).desc())).all()}


def outbox(status: str) -> list[OutboxMessage]:
    """The latest 200 mails, of `status` when it is one of the outbox's."""
    with reading() as session:
        query = select(OutboxMessage).order_by(col(OutboxMessage.id).desc()).limit(200)
        if status in OUTBOX_STATES:
            query = query.where(OutboxMessage.status == status)
        return list(session.exec(query).all())


def audit_log(limit: int = 500) -> list:
    """The latest audit entries, each with the admin's address."""
    with reading() as session:
        return list(session.exec(select(AuditEntry, Admin.email)
                                 .join(Admin, col(Admin.id) == AuditEntry.admin_id, isouter=True)
                                 .order_by(col(AuditEntry.id).desc()).limit(limit)).all())
