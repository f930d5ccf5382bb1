"""seat keys by seat, in the order they were made

A link is superseded by its seat's first newer key; found through an index of (seat_id, id)
that is one step however many keys the seat was mailed since, on both databases (PostgreSQL
walked the primary key from the link's id on, through every seat's keys). It replaces the
index of seat_id alone, which it covers.

Revision ID: 293cc0cd6b5d
Revises: c25ff07f5649
Create Date: 2026-11-25 00:05:00.000000
"""

from collections.abc import Sequence

from alembic import op

revision: str = '293cc0cd6b5d'
down_revision: str | None = 'c25ff07f5649'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_seatkey_seat", "seatkey", ["seat_id", "id"], unique=False)
    op.drop_index("ix_seatkey_seat_id", table_name="seatkey")


def downgrade() -> None:
    op.create_index("ix_seatkey_seat_id", "seatkey", ["seat_id"], unique=False)
    op.drop_index("ix_seatkey_seat", table_name="seatkey")
