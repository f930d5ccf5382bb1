"""notice targets (Apprise URLs of players and game channels) and their outbox

Issue 45: a player's profile, one seat or a game may name chat or push targets (an Apprise URL, kept as
a secret); each notice for one is a row delivered by the scheduler with the mail outbox's
rules (claimed, sent, recorded; retried, given up).

Revision ID: b3c4d5e6f7a8
Revises: f1a2b3c4d5e6
Create Date: 2026-12-02 06:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import pbem.ground.db

revision: str = 'b3c4d5e6f7a8'
down_revision: str | None = 'f1a2b3c4d5e6'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('noticetarget',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('email', sqlmodel.sql.sqltypes.AutoString(length=254), nullable=True),
    sa.Column('seat_id', sa.Integer(), nullable=True),
    sa.Column('game_id', sa.Integer(), nullable=True),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('shown', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
    sa.Column('kinds', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('language', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
    sa.Column('created_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.Column('dead_at', pbem.ground.db.UtcDateTime(), nullable=True),
    sa.Column('dead_reason', sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True),
    sa.ForeignKeyConstraint(['game_id'], ['game.id'], ),
    sa.ForeignKeyConstraint(['seat_id'], ['seat.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('noticetarget', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_noticetarget_email'), ['email'], unique=False)
        batch_op.create_index(batch_op.f('ix_noticetarget_seat_id'), ['seat_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_noticetarget_game_id'), ['game_id'], unique=False)
    op.create_table('notice',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('target_id', sa.Integer(), nullable=False),
    sa.Column('game_id', sa.Integer(), nullable=True),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
    sa.Column('title', sqlmodel.sql.sqltypes.AutoString(length=250), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('secrets_json', sa.Text(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('created_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.Column('next_attempt_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.Column('claimed_at', pbem.ground.db.UtcDateTime(), nullable=True),
    sa.Column('claim', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=True),
    sa.Column('sent_at', pbem.ground.db.UtcDateTime(), nullable=True),
    sa.Column('failed_at', pbem.ground.db.UtcDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['game_id'], ['game.id'], ),
    sa.ForeignKeyConstraint(['target_id'], ['noticetarget.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('notice', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_notice_game_id'), ['game_id'], unique=False)
        batch_op.create_index('ix_notice_target_sent', ['target_id', 'sent_at'], unique=False)
    op.create_index('ix_notice_waiting', 'notice', ['next_attempt_at', 'id'], unique=False,
                    sqlite_where=sa.text("status = 'queued'"),
                    postgresql_where=sa.text("status = 'queued'"))
    op.create_index('ix_notice_sending', 'notice', ['claimed_at'], unique=False,
                    sqlite_where=sa.text("status = 'sending'"),
                    postgresql_where=sa.text("status = 'sending'"))


def downgrade() -> None:
    op.drop_index('ix_notice_sending', table_name='notice')
    op.drop_index('ix_notice_waiting', table_name='notice')
    with op.batch_alter_table('notice', schema=None) as batch_op:
        batch_op.drop_index('ix_notice_target_sent')
        batch_op.drop_index(batch_op.f('ix_notice_game_id'))
    op.drop_table('notice')
    with op.batch_alter_table('noticetarget', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_noticetarget_game_id'))
        batch_op.drop_index(batch_op.f('ix_noticetarget_seat_id'))
        batch_op.drop_index(batch_op.f('ix_noticetarget_email'))
    op.drop_table('noticetarget')
