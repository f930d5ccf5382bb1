"""The database schema's versions: Alembic migrations in `pbem/ground/migrations`, run by
`pbem init-db`.

A running game survives an upgrade of the server because the schema only ever changes through
a migration; `problem()` tells a command that the database is missing or behind.
"""

from __future__ import annotations

import sys
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from flask import Flask

from .db import get_engine

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def alembic_config(app: Flask) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = get_engine(app)
    return config


def upgrade(app: Flask, revision: str = "head") -> None:
    command.upgrade(alembic_config(app), revision)


def downgrade(app: Flask, revision: str) -> None:
    command.downgrade(alembic_config(app), revision)


def current_revision(app: Flask) -> str | None:
    with get_engine(app).connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision(app: Flask) -> str | None:
    return ScriptDirectory.from_config(alembic_config(app)).get_current_head()


def _known(app: Flask, revision: str) -> bool:
    try:
        return ScriptDirectory.from_config(alembic_config(app)).get_revision(revision) \
            is not None
    except CommandError:
        return False


def problem(app: Flask) -> str | None:
    """Why the database cannot be used as it is, or None when it is up to date."""
    current = current_revision(app)
    if current == head_revision(app):
        return None
    if current is None:
        return ("the database has no tables yet: run `pbem init-db` (or `python3 -m pbem "
                "init-db`) first")
    if not _known(app, current):  # `init-db` cannot help: it does not know the way down
        return (f"the database is at schema version {current}, which this server does not "
                "know (made by a newer version of the server?): run that version, or restore "
                "a backup")
    return (f"the database is at schema version {current}, this server needs "
            f"{head_revision(app)}: back up the database, then run `pbem init-db` to upgrade it")


def main(argv: list[str], make_app) -> None:
    """`python3 -m pbem.ground.schema revision "message"`: write a migration for the models'
    changes, on the database of the app `make_app()` makes."""
    if len(argv) != 2 or argv[0] != "revision":
        sys.exit('usage: python3 -m pbem.ground.schema revision "what changed"')
    app = make_app()
    upgrade(app)
    command.revision(alembic_config(app), message=argv[1], autogenerate=True)


if __name__ == "__main__":  # a program of its own, on top of the house: it makes the app
    from pbem import create_app

    main(sys.argv[1:], create_app)
