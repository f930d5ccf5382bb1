"""reply keys of their own; how often a mail came again; when a decline was told

A reply address (play+<key>@) carried the seat link's own token, so a mail server's log held
working seat links. Each key row now has a reply key of its own (only its SHA-256 stored):
revoked and expired with its link, but useless on the web. Rows made before this revision have
none, and their mails' reply addresses (the link's token) keep working as before.

A mail seen again (the same Message-ID) is answered once, not at every repeat: `repeats`
counts them. A friend flipping between accept and decline told the starter each time:
`decline_told_at` keeps when they were last told.

Revision ID: 5a1e7c0b9d21
Revises: 4e4047aa641e
Create Date: 2026-11-26 16:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import pbem.ground.db

revision: str = '5a1e7c0b9d21'
down_revision: str | None = 'b7d0c4e2a915'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("invitation") as batch:
        batch.add_column(sa.Column("decline_told_at", pbem.ground.db.UtcDateTime(), nullable=True))
    with op.batch_alter_table("seatkey") as batch:
        batch.add_column(sa.Column("reply_hash", sqlmodel.sql.sqltypes.AutoString(length=64),
                                   nullable=True))
        batch.create_unique_constraint("uq_seatkey_reply_hash", ["reply_hash"])
    with op.batch_alter_table("incomingmail") as batch:
        batch.add_column(sa.Column("repeats", sa.Integer(), nullable=False,
                                   server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("invitation") as batch:
        batch.drop_column("decline_told_at")
    with op.batch_alter_table("incomingmail") as batch:
        batch.drop_column("repeats")
    with op.batch_alter_table("seatkey") as batch:
        batch.drop_constraint("uq_seatkey_reply_hash", type_="unique")
        batch.drop_column("reply_hash")
