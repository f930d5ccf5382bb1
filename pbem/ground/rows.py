"""Plain rows of games and seats, for the move path: read and written with Core statements.

A move, a seat's page and an API answer read their seat, game and seats in one statement
(`pbem.services.seats`); building ORM objects from it, keeping them in an identity map and flushing
them through the unit of work cost more than the statements themselves. They get these instead:
one attribute per column, named as the model's (`game.turn`, `seat.absent`), so the code that
reads a game or a seat (mails, clocks, templates) takes either. What changed since the row was
read is written back by `write_changes`, in one UPDATE of those columns.

The ORM models (pbem.ground.models) stay the schema and what every other part of the server uses.
This module does not read rows (the services do) nor decide what to write.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy import Table, bindparam, update
from sqlalchemy.engine import Connection

from .db import Cached
from .models import Game, Seat


class PlainRow:
    """One row of `table`: its columns as attributes, and the values it was read with."""

    table: ClassVar[Table]
    names: ClassVar[tuple[str, ...]]
    _update: ClassVar[Any]
    if TYPE_CHECKING:
        id: int  # every table's key

    def __init__(self, values) -> None:
        self.__dict__.update(zip(self.names, values))
        self._read = tuple(values)

    def __init_subclass__(cls, model=None, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        cls.table = model.__table__
        cls.names = tuple(column.key for column in cls.table.columns)
        # The columns to write come with the values (SET takes the keys given), so one
        # statement serves every set of changed columns; SQLAlchemy compiles each set once.
        cls._update = Cached(update(cls.table).where(cls.table.c.id == bindparam("row_id")))

    def changes(self) -> dict[str, Any]:
        """The columns whose values differ from those the row was read (or last written) with."""
        values = self.__dict__
        now = tuple(map(values.__getitem__, self.names))
        read = self._read
        if now == read and tuple(map(type, now)) == tuple(map(type, read)):
            return {}  # most rows a move reads: compared in C, not column by column
        return {name: value for name, value, was in zip(self.names, now, read)
                if value != was or type(value) is not type(was)}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id}>"


class GameRow(PlainRow, model=Game):
    """A game as the move path reads it (the columns of pbem.ground.models.Game)."""

    if TYPE_CHECKING:  # the columns, as the model types them (a row read has its id)
        id: int
        kind: str
        title: str
        watch_id: str
        status: str
        seed: str
        start_seat: int
        turn: int
        state_json: str
        created_at: datetime
        updated_at: datetime
        turn_started_at: datetime
        deadline_at: datetime | None
        finished_at: datetime | None
        deadline_hours: int
        reminder_hours: str
        weekend_pause: bool
        timezone: str
        extension_hours: int
        clock_pauses: str
        clock_version: int
        paused_at: datetime | None
        absent_bot: str | None
        undo_turn: int | None
        rated: bool
        origin: str | None
        origin_game_id: int | None


class SeatRow(PlainRow, model=Seat):
    """A seat as the move path reads it (the columns of pbem.ground.models.Seat)."""

    if TYPE_CHECKING:  # the columns, as the model types them (a row read has its id)
        id: int
        game_id: int
        number: int
        name: str
        email: str
        colour: str
        notify: str
        timezone: str | None
        language: str
        timeouts_in_row: int
        absent: bool
        bot: str | None
        vacation_days_used: int
        vacation_from: datetime | None
        vacation_until: datetime | None
        talk_notify: str
        talk_read_id: int
        talk_mailed_id: int
        mail_dead_at: datetime | None
        mail_dead_reason: str | None
        mail_dead_address: str | None


def write_changes(connection: Connection, row: PlainRow) -> bool:
    """Write the columns of `row` that changed since it was read, in one UPDATE; whether there
    were any."""
    changed = row.changes()
    if not changed:
        return False
    row._update.execute(connection, [{**changed, "row_id": row.id}])
    row._read = tuple(row.__dict__[name] for name in row.names)
    return True
