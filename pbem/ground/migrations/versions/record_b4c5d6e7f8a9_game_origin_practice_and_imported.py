"""where a game came from: a practice game played on from another's history, or an import

Issue 46: a game made by "play on from here" (pbem.services.record) is a practice game
(`origin` "practice", `origin_game_id` the finished game it was played on from); a game read
from a record file by `pbem import-game` has `origin` "imported". NULL: an ordinary game.

Revision ID: b4c5d6e7f8a9
Revises: b3c4d5e6f7a8
Create Date: 2026-12-02 06:15:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision: str = 'b4c5d6e7f8a9'
down_revision: str | None = 'b3c4d5e6f7a8'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.add_column(sa.Column('origin', sqlmodel.sql.sqltypes.AutoString(length=20),
                                      nullable=True))
        batch_op.add_column(sa.Column('origin_game_id', sa.Integer(), nullable=True))


def downgrade() -> None:
    # In place (SQLite 3.35 and later): a batch copy of game would break the foreign keys
    # that point at it.
    op.drop_column('game', 'origin_game_id')
    op.drop_column('game', 'origin')
