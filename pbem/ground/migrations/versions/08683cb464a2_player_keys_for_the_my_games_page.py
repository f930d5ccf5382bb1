"""player keys for the my games page

The secret links to a player's "my games" page (every game of one address): only the SHA-256
of each key is stored, and an organiser can revoke them.

Revision ID: 08683cb464a2
Revises: 323990082094
Create Date: 2026-11-23 11:10:24.449052
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import pbem.ground.db

revision: str = '08683cb464a2'
down_revision: str | None = '323990082094'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('playerkey',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('email', sqlmodel.sql.sqltypes.AutoString(length=254), nullable=False),
    sa.Column('token_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('created_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.Column('revoked_at', pbem.ground.db.UtcDateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('token_hash')
    )
    with op.batch_alter_table('playerkey', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_playerkey_email'), ['email'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('playerkey', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_playerkey_email'))

    op.drop_table('playerkey')
