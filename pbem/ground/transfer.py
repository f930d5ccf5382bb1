"""Moving a club's data between databases: `pbem export-db` and `pbem import-db`.

The export is every row of every table of the schema, read in one transaction (one consistent
moment), as JSON Lines: a header line naming the format and the schema version, then one line
per row (`{"table": ..., "row": {...}}`), parents before children. Times are ISO 8601 in UTC.
Seat keys are stored as hashes and copied as they are, so every link the players hold keeps
working; queued mail is copied with what it needs to be sent.

The import fills an empty database of the same schema version (run `pbem init-db` on it first)
in one transaction: a file that is broken anywhere changes nothing. On PostgreSQL the id
sequences are then moved past the imported ids, so new games, moves and mails get new ids.

This module does not own the schema (the migrations do) or the choice of database (the
settings do); it knows nothing of the tables beyond what the models declare.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import IO, Any

from flask import Flask
from sqlalchemy import Integer, Table, func, select, text
from sqlmodel import SQLModel

from . import (
    models,  # noqa: F401  (the tables register themselves on SQLModel.metadata)
    schema,
)
from .db import reading, writing

FORMAT = "pbem-export"
VERSION = 1


class TransferError(ValueError):
    """The file or the database cannot take part in an export or import; says what to do."""


def tables() -> list[Table]:
    """The schema's tables, each after the tables it refers to."""
    return list(SQLModel.metadata.sorted_tables)


def _encode(value):
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    return value


def export_rows(app: Flask) -> Iterator[dict]:
    """The header, then every row, as JSON-ready dicts, all from one snapshot of the database."""
    problem = schema.problem(app)
    if problem:
        raise TransferError(problem)
    with reading(app) as session:
        connection = session.connection()  # one transaction: one consistent moment
        yield {"format": FORMAT, "version": VERSION, "schema": schema.current_revision(app),
               "exported_at": datetime.now(UTC).isoformat(),
               "tables": [table.name for table in tables()]}
        for table in tables():
            order = [column for column in table.primary_key.columns]
            for row in connection.execute(select(table).order_by(*order)).mappings():
                yield {"table": table.name,
                       "row": {key: _encode(value) for key, value in row.items()}}


def export_to(app: Flask, out: IO[str]) -> Counter:
    """Write the export to `out`; returns how many rows of each table it holds."""
    counts: Counter = Counter()
    for item in export_rows(app):
        out.write(json.dumps(item, ensure_ascii=False, separators=(",", ":")) + "\n")
        if "table" in item:
            counts[item["table"]] += 1
    return counts


def _decode(table: Table, row: object, line: int) -> dict:
    if not isinstance(row, dict):
        raise TransferError(f"line {line}: a row must be a JSON object")
    unknown = set(row) - set(table.columns.keys())
    if unknown:
        raise TransferError(f"line {line}: table {table.name} has no column "
                            f"{', '.join(sorted(unknown))} (an export of another version?)")
    values: dict[str, Any] = {}
    for key, value in row.items():
        kind = table.columns[key].type.python_type
        if value is None:
            values[key] = None
        elif kind is datetime:
            try:
                moment = datetime.fromisoformat(value) if isinstance(value, str) else None
            except ValueError:
                moment = None
            if moment is None or moment.tzinfo is None:
                raise TransferError(f"line {line}: {table.name}.{key} must be a time with its "
                                    f"zone, like 2026-11-23T10:00:00+00:00, not {value!r}")
            values[key] = moment
        elif kind is bool:
            if not isinstance(value, bool):
                raise TransferError(f"line {line}: {table.name}.{key} must be true or false")
            values[key] = value
        elif kind is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise TransferError(f"line {line}: {table.name}.{key} must be a whole number")
            values[key] = value
        else:
            if not isinstance(value, str):
                raise TransferError(f"line {line}: {table.name}.{key} must be text")
            values[key] = value
    return values


def _read(lines: IO[str]) -> Iterator[tuple[int, dict]]:
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            raise TransferError(f"line {number} is not JSON: is this a file made by "
                                "`pbem export-db`?") from None
        if not isinstance(item, dict):
            raise TransferError(f"line {number} is not a JSON object")
        yield number, item


def _row_counts(session) -> dict[str, int]:
    return {table.name: session.execute(select(func.count()).select_from(table)).scalar_one()
            for table in tables()}


def import_from(app: Flask, lines: IO[str], batch: int = 500) -> Counter:
    """Fill the app's empty database from an export; returns the rows imported per table.

    Raises TransferError (and changes nothing) when the file is not a whole export of this
    schema version or the database is not empty."""
    problem = schema.problem(app)
    if problem:
        raise TransferError(problem)
    known = {table.name: table for table in tables()}
    items = _read(lines)
    first = next(items, None)
    if first is None:
        raise TransferError("the file is empty: give a file made by `pbem export-db`")
    number, header = first
    if header.get("format") != FORMAT:
        raise TransferError("the file does not start with the header of `pbem export-db`")
    if header.get("version") != VERSION:
        raise TransferError(f"the file is export format {header.get('version')!r}; this "
                            f"server reads format {VERSION}")
    here = schema.current_revision(app)
    if header.get("schema") != here:
        raise TransferError(
            f"the file was exported at schema version {header.get('schema')}, this database "
            f"is at {here}: run the same server version on both sides (upgrade the old "
            "database with `pbem init-db` and export again)")
    counts: Counter = Counter()
    with writing(app) as session:
        filled = {name: n for name, n in _row_counts(session).items() if n}
        if filled:
            raise TransferError(
                "the database is not empty (" + ", ".join(f"{n} {name}" for name, n in
                                                         sorted(filled.items())) +
                "): import into a new database, after `pbem init-db`")
        pending: dict[str, list[dict]] = {}
        order = [table.name for table in tables()]
        seen_tables: list[str] = []
        for number, item in items:
            name = item.get("table")
            if name not in known:
                raise TransferError(f"line {number}: unknown table {name!r}")
            if seen_tables and seen_tables[-1] != name \
                    and order.index(name) < order.index(seen_tables[-1]):
                raise TransferError(f"line {number}: table {name} comes after "
                                    f"{seen_tables[-1]}; the export writes each table "
                                    "after those it refers to")
            if not seen_tables or seen_tables[-1] != name:
                _flush(session, known, pending)
                seen_tables.append(name)
            pending.setdefault(name, []).append(_decode(known[name], item.get("row"), number))
            counts[name] += 1
            if len(pending[name]) >= batch:
                _flush(session, known, pending)
        _flush(session, known, pending)
        _move_sequences(session)
    return counts


def _flush(session, known: dict[str, Table], pending: dict[str, list[dict]]) -> None:
    for name, rows in pending.items():
        if rows:
            session.execute(known[name].insert(), rows)
    pending.clear()


def _move_sequences(session) -> None:
    """On PostgreSQL: the next id of each table follows the highest imported one."""
    if session.get_bind().dialect.name != "postgresql":
        return  # SQLite takes the next id from the table itself
    for table in tables():
        keys = list(table.primary_key.columns)
        if len(keys) != 1 or not isinstance(keys[0].type, Integer):
            continue
        column = keys[0].name
        # setval of no sequence (a key that is not serial) is NULL: nothing happens.
        session.execute(text(
            f"""SELECT setval(pg_get_serial_sequence('"{table.name}"', '{column}'), """
            f"""COALESCE((SELECT MAX("{column}") FROM "{table.name}"), 0) + 1, false)"""))


def summary(counts: Counter) -> str:
    """'admin: 1, game: 3, seat: 12, ...': the rows of each table, in the order of the tables."""
    return ", ".join(f"{table.name}: {counts.get(table.name, 0)}" for table in tables())
