"""The `pbem` command itself: a Flask command group holding pbem.cli's commands, which makes
each command's app with `create_app` and sets up its logging (pbem.ground.logs).

The commands (pbem.cli) are added when the command line is read, and what each needs beyond
click and Flask is imported when it runs: not for `pbem --help` (pbem.app.LoadsCommands).

The top floor: it may import every other. `pbem ingest-mail` does not come here (pbem.entry).
"""

from __future__ import annotations

import sys

import click
from flask.cli import FlaskGroup

from .app import LoadsCommands, create_app
from .games import games_help
from .ground.config import ConfigError, links_here
from .ground.process import serving_now


def _make_app():
    from .cli import SERVICES
    from .ground import logs

    app = create_app()
    command = click.get_current_context(silent=True)
    name = command.info_name if command else "pbem"
    if name not in ("serve", "demo") and links_here(app.config):
        # No base URL of its own: links lead where this instance's `pbem serve` listens (on
        # another port than the settings' maybe), as the server's own do.
        app.config["BASE_URL"] = serving_now(app.instance_path) or app.config["BASE_URL"]
    logs.setup(app.config, name, service=name in SERVICES)
    return app


class _Group(LoadsCommands, FlaskGroup):
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
