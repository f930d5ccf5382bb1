"""The `pbem` command itself: a Flask command group holding pbem.cli's commands, which makes
each command's app with `create_app` and sets up its logging (pbem.ground.logs).

A command's module and the app are imported when that command runs, not for `pbem --help`
(bench/cli_start.py measures what each command's start costs).

The top floor: it may import every other. `pbem ingest-mail` does not come here (pbem.entry).
"""

from __future__ import annotations

import sys

import click
from flask.cli import FlaskGroup

from .games import games_help
from .ground.config import ConfigError


def _make_app():
    from .app import create_app
    from .cli import SERVICES
    from .ground import logs

    app = create_app()
    command = click.get_current_context(silent=True)
    name = command.info_name if command else "pbem"
    logs.setup(app.config, name, service=name in SERVICES)
    return app


class _Group(FlaskGroup):
    """pbem.cli's commands, imported when the command line is read (not when this module is:
    `flask --app pbem` imports it too)."""

    loaded = False

    def _load(self) -> None:
        if not self.loaded:
            from .cli import commands

            for command in commands:
                self.add_command(command)
            self.loaded = True

    def get_command(self, ctx, name):
        self._load()
        return super().get_command(ctx, name)

    def list_commands(self, ctx):
        # The app adds no commands of its own, so listing them needs no app: a bad setting
        # must not turn `pbem --help` into a traceback (running a command reports it).
        self._load()
        return sorted(self.commands)


cli = _Group(name="pbem", create_app=_make_app, add_default_commands=False,
             load_dotenv=False, add_version_option=False,
             help=f"Board games by post ({games_help('titles')}): the play-by-email server.")


def main(args: list[str] | None = None) -> None:
    """Run the command line `args` (default: this process's), and exit with its status."""
    try:
        cli.main(args=args, prog_name="pbem")
    except ConfigError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(2)
