"""timers waiting, by game

A move that ends a turn marks its game's waiting timers obsolete; the timers of a game are
found by game_id, which walked every timer the game ever had (three a turn), so the cost of a
move grew with the length of its game. This index holds only the waiting ones.

Revision ID: c25ff07f5649
Revises: e7a1c2d3f4b5
Create Date: 2026-11-24 23:55:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = 'c25ff07f5649'
down_revision: str | None = 'e7a1c2d3f4b5'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_timer_waiting", "timer", ["game_id"], unique=False,
                    sqlite_where=sa.text("status = 'pending'"),
                    postgresql_where=sa.text("status = 'pending'"))


def downgrade() -> None:
    op.drop_index("ix_timer_waiting", table_name="timer")
