"""What the commands of the `pbem` command line share: one-line errors, the schema check.

Light to import, as every module of the command line: `pbem --help` reads the commands without
loading the database layer or Alembic; each command imports what it needs when it runs."""

from __future__ import annotations

import functools

import click
from flask import current_app


def site_base() -> str:
    return current_app.config["BASE_URL"].rstrip("/")


def need_schema() -> None:
    from ..ground import schema

    problem = schema.problem(current_app)
    if problem:
        raise click.ClickException(problem)


def upgrade_schema() -> None:
    from alembic.util import CommandError

    from ..ground import schema

    try:
        schema.upgrade(current_app)
    except CommandError as exc:  # e.g. a schema version this server does not know
        raise click.ClickException(schema.problem(current_app) or str(exc)) from None


def one_line_errors(command):
    """A database that cannot be opened or a folder that cannot be made (also while the app is
    made) is reported in one line, like every other failure, instead of a traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        from sqlalchemy.exc import DBAPIError

        try:
            return command(*args, **kwargs)
        except DBAPIError as exc:
            # PostgreSQL's messages run over several lines (a hint on the second)
            reason = " ".join(str(exc.orig).split())
            raise click.ClickException(f"the database failed: {reason}") from None
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            raise click.ClickException(f"{exc.strerror or exc}{where}") from None

    return wrapper
