"""reviews of finished games by the strong computer player

Issue 46, point 3: a finished game's review (gamereview: its state and claim, for the
scheduler that makes it a few turns a run) and its reviewed turns (turnreview: the mover's
chances before and after its move, the strong bot's choice). Games finished before this
revision get their review from the scheduler, which queues every finished game without one.

Revision ID: 0e1f2a3b4c5d
Revises: b4c5d6e7f8a9
Create Date: 2026-12-02 06:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import pbem.ground.db

revision: str = '0e1f2a3b4c5d'
down_revision: str | None = 'b4c5d6e7f8a9'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('gamereview',
    sa.Column('game_id', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
    sa.Column('claim', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=True),
    sa.Column('claimed_at', pbem.ground.db.UtcDateTime(), nullable=True),
    sa.Column('turns', sa.Integer(), nullable=True),
    sa.Column('playouts', sa.Integer(), nullable=False),
    sa.Column('cpu_seconds', sa.Float(), nullable=False),
    sa.Column('created_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.Column('done_at', pbem.ground.db.UtcDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['game_id'], ['game.id'], ),
    sa.PrimaryKeyConstraint('game_id')
    )
    with op.batch_alter_table('gamereview', schema=None) as batch_op:
        batch_op.create_index('ix_gamereview_status', ['status', 'created_at'], unique=False)
    op.create_table('turnreview',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('game_id', sa.Integer(), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('seat', sa.Integer(), nullable=False),
    sa.Column('played', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('before', sa.Float(), nullable=False),
    sa.Column('after', sa.Float(), nullable=False),
    sa.Column('bot_move', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
    sa.Column('bot_after', sa.Float(), nullable=True),
    sa.Column('created_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['game_id'], ['game.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('game_id', 'number')
    )


def downgrade() -> None:
    op.drop_table('turnreview')
    with op.batch_alter_table('gamereview', schema=None) as batch_op:
        batch_op.drop_index('ix_gamereview_status')
    op.drop_table('gamereview')
