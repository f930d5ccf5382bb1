"""my games keys: by address in the order they were made

A "my games" key expires a while after a newer one was mailed to its address (pbem.players),
so the first newer key of an address is looked up, like a seat key's first newer key: an index
on (email, id) finds it in one step, and serves every lookup by address the email index did.

Revision ID: b7c1d2e3f4a5
Revises: 4e4047aa641e
Create Date: 2026-11-26 10:00:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = 'b7c1d2e3f4a5'
down_revision: str | None = '4e4047aa641e'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_playerkey_address", "playerkey", ["email", "id"], unique=False)
    op.drop_index("ix_playerkey_email", table_name="playerkey")


def downgrade() -> None:
    op.create_index("ix_playerkey_email", "playerkey", ["email"], unique=False)
    op.drop_index("ix_playerkey_address", table_name="playerkey")
