"""outbox: threading headers of answers, and the HTML mail's board picture

Revision ID: c3d1f0a7b2e9
Revises: c379ecae16cd
Create Date: 2026-11-23 11:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision: str = 'c3d1f0a7b2e9'
down_revision: str | None = 'c379ecae16cd'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('outboxmessage', schema=None) as batch_op:
        batch_op.add_column(sa.Column('in_reply_to', sqlmodel.sql.sqltypes.AutoString(length=300),
                                      nullable=True))
        batch_op.add_column(sa.Column('references', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('picture_json', sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('outboxmessage', schema=None) as batch_op:
        batch_op.drop_column('picture_json')
        batch_op.drop_column('references')
        batch_op.drop_column('in_reply_to')
