"""the language an invitee answered in

A friend who accepts an invitation from a German browser gets the game's mails in German: the
invitation keeps the language of the page it was answered on (and the starter's, of the page
the game was proposed on), and the seat is made in it. Rows made before this revision have
none: their seats take the [games] language, as before.

Revision ID: c3e1f0a7d215
Revises: de1e93e3557d
Create Date: 2026-11-27 00:05:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision: str = 'c3e1f0a7d215'
down_revision: str | None = 'de1e93e3557d'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("invitation") as batch:
        batch.add_column(sa.Column("language", sqlmodel.sql.sqltypes.AutoString(length=8),
                                   nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("invitation") as batch:
        batch.drop_column("language")
