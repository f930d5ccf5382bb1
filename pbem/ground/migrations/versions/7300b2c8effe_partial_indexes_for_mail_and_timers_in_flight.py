"""partial indexes for mail and timers in flight

The scheduler's queries touch only mail waiting or being sent, timers claimed, and digest news
not yet mailed. These indexes hold only those rows, so an idle scheduler run costs the same
however much sent mail, finished timers and mailed news the database keeps.

Revision ID: 7300b2c8effe
Revises: 08683cb464a2
Create Date: 2026-11-23 12:15:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '7300b2c8effe'
down_revision: str | None = '08683cb464a2'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (index, table, columns, condition on SQLite, condition on PostgreSQL)
INDEXES = [
    ("ix_outbox_waiting", "outboxmessage", ["next_attempt_at", "id"],
     "status = 'queued'", "status = 'queued'"),
    ("ix_outbox_sending", "outboxmessage", ["claimed_at"],
     "status = 'sending'", "status = 'sending'"),
    ("ix_outbox_claim", "outboxmessage", ["claim"], "status = 'sending'", "status = 'sending'"),
    ("ix_timer_claimed", "timer", ["claimed_at"], "status = 'claimed'", "status = 'claimed'"),
    ("ix_timer_claim", "timer", ["claim"], "status = 'claimed'", "status = 'claimed'"),
    ("ix_digestitem_waiting", "digestitem", ["seat_id", "id"], "sent = 0", "sent = false"),
]


# Replaced by ix_digestitem_waiting: with table statistics, SQLite preferred walking the whole
# seat_id index (for its order) to the partial index of the news still waiting.
DROPPED = [("ix_digestitem_seat_id", "digestitem", ["seat_id"]),
           ("ix_digestitem_sent", "digestitem", ["sent"])]


def upgrade() -> None:
    for name, table, columns, on_sqlite, on_postgresql in INDEXES:
        op.create_index(name, table, columns, unique=False, sqlite_where=sa.text(on_sqlite),
                        postgresql_where=sa.text(on_postgresql))
    for name, table, _columns in DROPPED:
        op.drop_index(name, table_name=table)


def downgrade() -> None:
    for name, table, columns in DROPPED:
        op.create_index(name, table, columns, unique=False)
    for name, table, _columns, _on_sqlite, _on_postgresql in reversed(INDEXES):
        op.drop_index(name, table_name=table)
