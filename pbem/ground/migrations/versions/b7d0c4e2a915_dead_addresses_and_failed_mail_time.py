"""seat: a dead mail address (when, why, which); outbox: when a mail failed, and the mark

A seat's address is marked dead when mail to it fails for good: a bounce of one of the
server's mails (read by pbem.bounces), or the mail server refusing the recipient with a 5xx.
An outbox row remembers when it failed or its fate became unknown, so that `pbem mail-status`
reports the failures of a recent window, and the seat's mark when it was queued, which its
delivery clears.

Revision ID: b7d0c4e2a915
Revises: 4e4047aa641e
Create Date: 2026-11-26 16:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import pbem.ground.db

revision: str = 'b7d0c4e2a915'
down_revision: str | None = 'b7c1d2e3f4a5'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ADD COLUMNs (SQLite has them): a batch copy of `seat` would drop the table that
    # other tables refer to. Nothing was marked before, so no value to fill in.
    op.add_column('seat', sa.Column('mail_dead_at', pbem.ground.db.UtcDateTime(), nullable=True))
    op.add_column('seat', sa.Column('mail_dead_reason',
                                    sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True))
    op.add_column('seat', sa.Column('mail_dead_address',
                                    sqlmodel.sql.sqltypes.AutoString(length=254), nullable=True))
    op.add_column('outboxmessage', sa.Column('failed_at', pbem.ground.db.UtcDateTime(), nullable=True))
    op.add_column('outboxmessage', sa.Column('seat_dead_at', pbem.ground.db.UtcDateTime(),
                                             nullable=True))


def downgrade() -> None:
    op.drop_column('outboxmessage', 'seat_dead_at')
    op.drop_column('outboxmessage', 'failed_at')
    op.drop_column('seat', 'mail_dead_address')
    op.drop_column('seat', 'mail_dead_reason')
    op.drop_column('seat', 'mail_dead_at')
