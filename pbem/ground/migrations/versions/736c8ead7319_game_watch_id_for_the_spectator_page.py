"""game watch id for the spectator page

Every game gets the random address of its public spectator page (/watch/<watch_id>). Games
that exist already get one too: the column is added with an empty server default (so that
SQLite can add it in place, without copying the table, which the seats' foreign keys would
refuse), then a data step gives every existing game its own random value, and only then the
unique index is made. New games get theirs from the model.

Revision ID: 736c8ead7319
Revises: 4ec7c06975bc
Create Date: 2026-11-21 14:45:03.978264
"""

import secrets
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision: str = '736c8ead7319'
down_revision: str | None = '4ec7c06975bc'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.add_column(sa.Column('watch_id', sqlmodel.sql.sqltypes.AutoString(length=32),
                                      server_default='', nullable=False))

    # The data step: a random spectator address for every game made before this version.
    game = sa.table('game', sa.column('id', sa.Integer()), sa.column('watch_id', sa.String()))
    connection = op.get_bind()
    for (game_id,) in connection.execute(sa.select(game.c.id).where(game.c.watch_id == ''))\
            .all():
        connection.execute(game.update().where(game.c.id == game_id)
                           .values(watch_id=secrets.token_urlsafe(12)))

    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_game_watch_id'), ['watch_id'], unique=True)


def downgrade() -> None:
    with op.batch_alter_table('game', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_game_watch_id'))
    # In place (SQLite 3.35 and later): a batch copy of the table would break the foreign keys.
    op.drop_column('game', 'watch_id')
