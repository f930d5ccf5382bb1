"""games players start: proposals and invitations

A game started from the public "new game" page or as a rematch, before it starts: its settings
and each person invited, with the hash of their link and their answer.

Revision ID: 0addc0d633a0
Revises: 9d9820ee78f3
Create Date: 2026-11-23 14:44:37.654175
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import pbem.ground.db

revision: str = '0addc0d633a0'
down_revision: str | None = '9d9820ee78f3'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('proposal',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('title', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('variant', sqlmodel.sql.sqltypes.AutoString(length=60), nullable=True),
    sa.Column('deadline_hours', sa.Integer(), nullable=False),
    sa.Column('reminder_hours', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('weekend_pause', sa.Boolean(), nullable=False),
    sa.Column('timezone', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
    sa.Column('starter_ip', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('rematch_of', sa.Integer(), nullable=True),
    sa.Column('game_id', sa.Integer(), nullable=True),
    sa.Column('created_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.Column('started_at', pbem.ground.db.UtcDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['game_id'], ['game.id'], ),
    sa.ForeignKeyConstraint(['rematch_of'], ['game.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('proposal', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_proposal_rematch_of'), ['rematch_of'], unique=False)
        batch_op.create_index(batch_op.f('ix_proposal_starter_ip'), ['starter_ip'], unique=False)
        batch_op.create_index(batch_op.f('ix_proposal_status'), ['status'], unique=False)

    op.create_table('invitation',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('proposal_id', sa.Integer(), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('email', sqlmodel.sql.sqltypes.AutoString(length=254), nullable=False),
    sa.Column('colour', sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
    sa.Column('bot', sqlmodel.sql.sqltypes.AutoString(length=20), nullable=True),
    sa.Column('token_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
    sa.Column('created_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.Column('expires_at', pbem.ground.db.UtcDateTime(), nullable=True),
    sa.Column('answered_at', pbem.ground.db.UtcDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['proposal_id'], ['proposal.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('proposal_id', 'number'),
    sa.UniqueConstraint('token_hash')
    )
    with op.batch_alter_table('invitation', schema=None) as batch_op:
        batch_op.create_index('ix_invitation_email', ['email', 'created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_invitation_proposal_id'), ['proposal_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('invitation', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_invitation_proposal_id'))
        batch_op.drop_index('ix_invitation_email')

    op.drop_table('invitation')
    with op.batch_alter_table('proposal', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_proposal_status'))
        batch_op.drop_index(batch_op.f('ix_proposal_starter_ip'))
        batch_op.drop_index(batch_op.f('ix_proposal_rematch_of'))

    op.drop_table('proposal')
