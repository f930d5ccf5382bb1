"""the move log: one index of its game

Every move adds a row to the log and an entry to each of its indexes. The log's game_id index
repeated the first column of its unique (game_id, number), which serves every lookup by game
as well; one page fewer written a move.

Revision ID: 4e4047aa641e
Revises: 293cc0cd6b5d
Create Date: 2026-11-25 00:15:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = '4e4047aa641e'
down_revision: str | None = '293cc0cd6b5d'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_index("ix_moverecord_game_id", table_name="moverecord")


def downgrade() -> None:
    op.create_index("ix_moverecord_game_id", "moverecord", ["game_id"], unique=False)
