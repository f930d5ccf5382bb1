"""outbox: a move's mails queued as intents, rendered when they are delivered

Revision ID: e7a1c2d3f4b5
Revises: 0addc0d633a0
Create Date: 2026-11-23 17:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel  # noqa: F401
from alembic import op

revision: str = 'e7a1c2d3f4b5'
down_revision: str | None = '0addc0d633a0'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # In place (no table copy): a nullable column with no default.
    op.add_column('outboxmessage', sa.Column('intent_json', sa.Text(), nullable=True))


def downgrade() -> None:
    # A mail still waiting as an intent has no text yet: it would be lost without this column.
    waiting = op.get_bind().execute(
        sa.text("SELECT count(*) FROM outboxmessage WHERE intent_json IS NOT NULL")).scalar()
    if waiting:
        raise RuntimeError(f"{waiting} mails are not written yet; send them first "
                           "(`pbem send-mail`), then downgrade")
    op.drop_column('outboxmessage', 'intent_json')
