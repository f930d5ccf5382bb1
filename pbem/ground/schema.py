"""The database schema's versions: Alembic migrations in `pbem/ground/migrations`, run by
`pbem init-db`.

A running game survives an upgrade of the server because the schema only ever changes through
a migration; `problem()` tells a command that the database is missing or behind, and
`checked()` tells the web server, once per process while all is well (wsgi.py refuses to start
on a database whose schema is not the code's; /health and every page answer 503 meanwhile).
"""

from __future__ import annotations

import functools
import logging
import sys
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from flask import Flask

from .db import SCHEMA_OK, get_engine

logger = logging.getLogger(__name__)
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


@functools.cache
def _scripts() -> ScriptDirectory:
    """The migrations, read once per process (a web worker asks for the head at start)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(config)


def head_revision(app: Flask) -> str | None:
    return _scripts().get_current_head()


def _known(app: Flask, revision: str) -> bool:
    try:
        return _scripts().get_revision(revision) is not None
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


def brief(app: Flask) -> str | None:
    """`problem()` in a few words for a monitoring system (/health), or None when the schema
    is the code's."""
    current = current_revision(app)
    if current == head_revision(app):
        return None
    if current is None:
        return "no tables: run pbem init-db"
    if not _known(app, current):
        return "schema ahead: the database is newer than this server"
    return "schema behind: run pbem init-db"


def checked(app: Flask) -> str | None:
    """`brief()`, asked of the database until the schema is found to be the code's and never
    again in this process after that (the schema does not change under a running server: an
    upgrade stops it first). The first problem found is logged once, with what to do. Raises
    the database's error when it cannot be reached."""
    if app.extensions.get(SCHEMA_OK):
        return None
    found = brief(app)
    if found is None:
        app.extensions[SCHEMA_OK] = True
    elif not app.extensions.get("pbem_schema_told"):
        app.extensions["pbem_schema_told"] = True
        logger.error("%s; every page answers 503 until then", problem(app))
    return found


def check_at_start(app: Flask, process: str) -> str | None:
    """Why `process` (a web worker) must not start on this database, logged as CRITICAL with
    what to do, or None. A database that cannot be reached now is no reason: the process
    starts (the database may come up after it), says so, and checks at its first request."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        found = problem(app)
        if found is None:
            app.extensions[SCHEMA_OK] = True
            return None
    except SQLAlchemyError as exc:
        reason = " ".join(str(getattr(exc, "orig", None) or exc).split())
        logger.warning("%s: the database's schema could not be checked at start (%s); it is "
                       "checked at the first request", process, reason)
        return None
    logger.critical("%s: not starting: %s", process, found)
    return found


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
