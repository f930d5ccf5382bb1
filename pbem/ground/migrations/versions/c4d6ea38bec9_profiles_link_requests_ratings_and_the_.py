"""profiles, link requests, ratings and the lobby (issue 33)

A profile per address (its public id, name, language, time zone, mail choices); the requests
for a "my games" link at /me, counted for their limits; each player's rating per game kind and
each rated game's results; games posted in the lobby and who joined them; and whether a game
is rated.

Revision ID: c4d6ea38bec9
Revises: bd91bbfc2f50
Create Date: 2026-11-26 23:23:01.385817
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

import pbem.ground.db

revision: str = 'c4d6ea38bec9'
down_revision: str | None = 'bd91bbfc2f50'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('linkrequest',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('email', sqlmodel.sql.sqltypes.AutoString(length=254), nullable=False),
    sa.Column('client', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('linkrequest', schema=None) as batch_op:
        batch_op.create_index('ix_linkrequest_client', ['client', 'at'], unique=False)
        batch_op.create_index('ix_linkrequest_email', ['email', 'at'], unique=False)

    op.create_table('profile',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('email', sqlmodel.sql.sqltypes.AutoString(length=254), nullable=False),
    sa.Column('public_id', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('language', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
    sa.Column('timezone', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('notify', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
    sa.Column('talk_notify', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
    sa.Column('chosen', sa.Boolean(), server_default=sa.text('false'), nullable=False),
    sa.Column('created_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.Column('updated_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('email'),
    sa.UniqueConstraint('public_id')
    )
    op.create_table('rating',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('player', sqlmodel.sql.sqltypes.AutoString(length=260), nullable=False),
    sa.Column('mu', sa.Float(), nullable=False),
    sa.Column('sigma', sa.Float(), nullable=False),
    sa.Column('ordinal', sa.Float(), nullable=False),
    sa.Column('games', sa.Integer(), nullable=False),
    sa.Column('updated_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('kind', 'player')
    )
    with op.batch_alter_table('rating', schema=None) as batch_op:
        batch_op.create_index('ix_rating_kind_ordinal', ['kind', 'ordinal'], unique=False)

    op.create_table('opengame',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('variant', sqlmodel.sql.sqltypes.AutoString(length=60), nullable=False),
    sa.Column('players', sa.Integer(), nullable=False),
    sa.Column('deadline_hours', sa.Integer(), nullable=False),
    sa.Column('reminder_hours', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('weekend_pause', sa.Boolean(), nullable=False),
    sa.Column('timezone', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('rated', sa.Boolean(), nullable=False),
    sa.Column('min_rating', sa.Float(), nullable=True),
    sa.Column('seating', sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
    sa.Column('poster', sqlmodel.sql.sqltypes.AutoString(length=254), nullable=False),
    sa.Column('client', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
    sa.Column('created_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.Column('expires_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.Column('game_id', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['game_id'], ['game.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('opengame', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_opengame_client'), ['client'], unique=False)
        batch_op.create_index(batch_op.f('ix_opengame_poster'), ['poster'], unique=False)
        batch_op.create_index(batch_op.f('ix_opengame_status'), ['status'], unique=False)

    op.create_table('ratedresult',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('game_id', sa.Integer(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=40), nullable=False),
    sa.Column('player', sqlmodel.sql.sqltypes.AutoString(length=260), nullable=False),
    sa.Column('seat', sa.Integer(), nullable=True),
    sa.Column('rank', sa.Integer(), nullable=False),
    sa.Column('ordinal_before', sa.Float(), nullable=False),
    sa.Column('ordinal_after', sa.Float(), nullable=False),
    sa.Column('created_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['game_id'], ['game.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('game_id', 'player')
    )
    with op.batch_alter_table('ratedresult', schema=None) as batch_op:
        batch_op.create_index('ix_ratedresult_player', ['player', 'game_id'], unique=False)

    op.create_table('lobbyseat',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('open_game_id', sa.Integer(), nullable=False),
    sa.Column('email', sqlmodel.sql.sqltypes.AutoString(length=254), nullable=False),
    sa.Column('client', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('joined_at', pbem.ground.db.UtcDateTime(), nullable=False),
    sa.ForeignKeyConstraint(['open_game_id'], ['opengame.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('open_game_id', 'email')
    )
    with op.batch_alter_table('lobbyseat', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_lobbyseat_client'), ['client'], unique=False)
        batch_op.create_index('ix_lobbyseat_email', ['email', 'joined_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_lobbyseat_open_game_id'), ['open_game_id'], unique=False)

    # In place (ALTER TABLE ... ADD COLUMN): a batch copy of game would break the foreign keys
    # that point at it once games exist.
    op.add_column('game', sa.Column('rated', sa.Boolean(), server_default=sa.text('false'),
                                    nullable=False))



def downgrade() -> None:
    # In place (SQLite 3.35 and later): a batch copy of game would break the foreign keys
    # that point at it.
    op.drop_column('game', 'rated')

    with op.batch_alter_table('lobbyseat', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_lobbyseat_open_game_id'))
        batch_op.drop_index('ix_lobbyseat_email')
        batch_op.drop_index(batch_op.f('ix_lobbyseat_client'))

    op.drop_table('lobbyseat')
    with op.batch_alter_table('ratedresult', schema=None) as batch_op:
        batch_op.drop_index('ix_ratedresult_player')

    op.drop_table('ratedresult')
    with op.batch_alter_table('opengame', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_opengame_status'))
        batch_op.drop_index(batch_op.f('ix_opengame_poster'))
        batch_op.drop_index(batch_op.f('ix_opengame_client'))

    op.drop_table('opengame')
    with op.batch_alter_table('rating', schema=None) as batch_op:
        batch_op.drop_index('ix_rating_kind_ordinal')

    op.drop_table('rating')
    op.drop_table('profile')
    with op.batch_alter_table('linkrequest', schema=None) as batch_op:
        batch_op.drop_index('ix_linkrequest_email')
        batch_op.drop_index('ix_linkrequest_client')

    op.drop_table('linkrequest')
