"""table talk messages and the scheduler's chores

Messages between a game's seats (to all, or privately to one), each seat's mail setting and
read marks for them, the audience of a reply to a message mail (seatkey.talk_to), and the
scheduler's due work beside the turn timers (message digests, invitation expiry).

Revision ID: 9d9820ee78f3
Revises: 5e1d2c3b4a69
Create Date: 2026-11-23 14:11:46.995888
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import pbem.ground.db

revision: str = '9d9820ee78f3'
down_revision: str | None = '5e1d2c3b4a69'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('chore',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
    sa.Column('ref_id', sa.Integer(), nullable=False),
    sa.Column('due_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
    sa.Column('claim', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=True),
    sa.Column('claimed_at', pbem.ground.db.UtcDateTime(), nullable=True),
    sa.Column('done_at', pbem.ground.db.UtcDateTime(), nullable=True),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('chore', schema=None) as batch_op:
        batch_op.create_index('ix_chore_due', ['status', 'due_at'], unique=False)
        batch_op.create_index('ix_chore_pending', ['kind', 'ref_id'], unique=False, sqlite_where=sa.text("status = 'pending'"), postgresql_where=sa.text("status = 'pending'"))

    op.create_table('talkmessage',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('game_id', sa.Integer(), nullable=False),
    sa.Column('sender_seat_id', sa.Integer(), nullable=False),
    sa.Column('sender', sa.Integer(), nullable=False),
    sa.Column('to_seat', sa.Integer(), nullable=True),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('via', sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
    sa.Column('created_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['game_id'], ['game.id'], ),
    sa.ForeignKeyConstraint(['sender_seat_id'], ['seat.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('talkmessage', schema=None) as batch_op:
        batch_op.create_index('ix_talkmessage_game', ['game_id', 'id'], unique=False)
        batch_op.create_index('ix_talkmessage_sender', ['sender_seat_id', 'created_at'], unique=False)

    # Plain ADD COLUMNs (SQLite has them): a batch copy of `seat` would drop the table, which
    # the foreign keys of other tables' rows refuse on a database with games in it.
    op.add_column('seat', sa.Column('talk_notify', sqlmodel.sql.sqltypes.AutoString(length=10), server_default='each', nullable=False))
    op.add_column('seat', sa.Column('talk_read_id', sa.Integer(), server_default='0', nullable=False))
    op.add_column('seat', sa.Column('talk_mailed_id', sa.Integer(), server_default='0', nullable=False))

    with op.batch_alter_table('seatkey', schema=None) as batch_op:
        batch_op.add_column(sa.Column('talk_to', sa.Integer(), nullable=True))



def downgrade() -> None:
    with op.batch_alter_table('seatkey', schema=None) as batch_op:
        batch_op.drop_column('talk_to')

    op.drop_column('seat', 'talk_mailed_id')
    op.drop_column('seat', 'talk_read_id')
    op.drop_column('seat', 'talk_notify')

    with op.batch_alter_table('talkmessage', schema=None) as batch_op:
        batch_op.drop_index('ix_talkmessage_sender')
        batch_op.drop_index('ix_talkmessage_game')

    op.drop_table('talkmessage')
    with op.batch_alter_table('chore', schema=None) as batch_op:
        batch_op.drop_index('ix_chore_pending', sqlite_where=sa.text("status = 'pending'"), postgresql_where=sa.text("status = 'pending'"))
        batch_op.drop_index('ix_chore_due')

    op.drop_table('chore')
