"""rated games that do not count, flagged for the organisers, and the network of each move

Issue 42: each rated game gets a row saying whether its result counts (not when its players
could be one person, nor once an admin voided it) and what the organisers should look at
(flags); each move made on a page or by the API keeps the client's network (an IPv4 /24 or an
IPv6 /64). Rated games ended before this revision get a counted row each.

Revision ID: f1a2b3c4d5e6
Revises: a1b2c3d4e5f6
Create Date: 2026-12-02 03:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import pbem.ground.db

revision: str = 'f1a2b3c4d5e6'
down_revision: str | None = 'a1b2c3d4e5f6'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('ratedgame',
    sa.Column('game_id', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('counted', sa.Boolean(), nullable=False),
    sa.Column('flags', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('detail', sa.Text(), server_default='', nullable=False),
    sa.Column('created_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.Column('voided_at', pbem.ground.db.UtcDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['game_id'], ['game.id'], ),
    sa.PrimaryKeyConstraint('game_id')
    )
    with op.batch_alter_table('ratedgame', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_ratedgame_kind'), ['kind'], unique=False)
    op.execute("INSERT INTO ratedgame (game_id, kind, counted, flags, detail, created_at) "
               "SELECT game_id, MIN(kind), true, '', '', MIN(created_at) FROM ratedresult "
               "GROUP BY game_id")
    with op.batch_alter_table('moverecord', schema=None) as batch_op:
        batch_op.add_column(sa.Column('client', sqlmodel.sql.sqltypes.AutoString(length=64),
                                      nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('moverecord', schema=None) as batch_op:
        batch_op.drop_column('client')
    with op.batch_alter_table('ratedgame', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_ratedgame_kind'))
    op.drop_table('ratedgame')
