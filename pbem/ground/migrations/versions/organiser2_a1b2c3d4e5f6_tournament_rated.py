"""tournament: whether its games are rated

Revision ID: a1b2c3d4e5f6
Revises: c3e1f0a7d215
Create Date: 2026-12-02 03:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = 'a1b2c3d4e5f6'
down_revision: str | None = 'c3e1f0a7d215'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Tournaments made before: unrated, as their games were. A plain ADD COLUMN (SQLite has it).
    op.add_column('tournament', sa.Column('rated', sa.Boolean(), server_default=sa.text('false'),
                                          nullable=False))


def downgrade() -> None:
    op.drop_column('tournament', 'rated')
