"""seat: the language its pages and mails are written in

Revision ID: 5e1d2c3b4a69
Revises: c3d1f0a7b2e9
Create Date: 2026-11-23 14:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision: str = '5e1d2c3b4a69'
down_revision: str | None = 'c3d1f0a7b2e9'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Seats of games made before: English, the only language there was. A plain ADD COLUMN
    # (SQLite has it): a batch copy of the table would drop `seat`, which other tables refer to.
    op.add_column('seat', sa.Column('language', sqlmodel.sql.sqltypes.AutoString(length=8),
                                    nullable=False, server_default='en'))


def downgrade() -> None:
    op.drop_column('seat', 'language')
