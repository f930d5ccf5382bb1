"""The app: `create_app` assembles the house (pbem/__init__.py) and does nothing else.

It reads the settings, makes the database engine, sets up CSRF protection, the words (i18n),
the mail's and pages' template helpers, and registers the blueprints (pbem.web) and the
command line's commands (pbem.cli). Creating tables (migrations), seeding a demo game and
sending mail are CLI commands. The top floor: it may import every other.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flask import Flask
from flask.cli import AppGroup
from jinja2 import ChoiceLoader, FileSystemLoader
from werkzeug.middleware.proxy_fix import ProxyFix

from .games.templates import GameTemplates
from .ground.config import ROOT, load_settings, resolve_paths

if TYPE_CHECKING:
    import click


def _instance_secret(instance: Path) -> str:
    """The instance's own secret key, made once; safe when several processes start at once."""
    target = instance / "secret_key"
    if not target.exists():
        instance.mkdir(mode=0o700, parents=True, exist_ok=True)  # secrets live here
        temporary = instance / f"secret_key.{os.getpid()}.tmp"
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as f:
            f.write(os.urandom(32).hex())
        try:
            os.link(temporary, target)  # fails if another process won the race
        except FileExistsError:
            pass
        finally:
            temporary.unlink()
    return target.read_text().strip()


class LoadsCommands:
    """A click group holding pbem.cli's commands, imported when a command line asks for one
    rather than with the group: a web worker, a helper sender or `pbem ingest-mail` makes an
    app and never runs a command (bench/cli_start.py measures what a command's start costs).
    The app's command group here, and the `pbem` command's (pbem.command)."""

    loaded = False

    if TYPE_CHECKING:  # the click group it is mixed into has it
        def add_command(self, cmd: click.Command, name: str | None = None) -> None: ...

    def _load(self) -> None:
        if not self.loaded:
            from .cli import commands

            for command in commands:
                self.add_command(command)
            self.loaded = True

    def get_command(self, ctx, cmd_name):
        self._load()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx):
        self._load()
        return super().list_commands(ctx)


class _Commands(LoadsCommands, AppGroup):
    """The app's command line: `flask --app pbem ...`, the tests' `app.test_cli_runner()`."""


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    """Make the app from defaults, the TOML file in PBEM_CONFIG, PBEM_* variables, then
    `test_config`. Raises ConfigError naming any bad setting."""
    settings = load_settings(overrides=test_config)
    # The package's app (its logger "pbem", its instance folder beside the package).
    app = Flask("pbem", template_folder=str(ROOT / "templates"),
                static_folder=str(ROOT / "pbem" / "web" / "static"),
                instance_path=settings["INSTANCE_PATH"] or None)
    app.config.update(resolve_paths(settings, Path(app.instance_path)))
    # A game's templates may come from its own folder (pbem.games.templates), else from ours.
    app.jinja_loader = ChoiceLoader([GameTemplates(), FileSystemLoader(ROOT / "templates")])
    if not app.config["SECRET_KEY"]:
        app.config["SECRET_KEY"] = _instance_secret(Path(app.config["INSTANCE_PATH"]))
    # Flask has defaults for these, so they are set unless the test configuration chose.
    chosen = test_config or {}
    for key, value in {"WTF_CSRF_TIME_LIMIT": None,  # a page may stay open for days
                       "SESSION_COOKIE_SAMESITE": "Lax", "SESSION_COOKIE_HTTPONLY": True,
                       "SESSION_COOKIE_SECURE": app.config["BASE_URL"].startswith("https://"),
                       "PERMANENT_SESSION_LIFETIME": timedelta(
                           hours=app.config["ADMIN_SESSION_HOURS"]),
                       }.items():
        if key not in chosen:
            app.config[key] = value

    from .ground import db, i18n
    from .services import mail
    from .web import (
        admin,
        api,
        feeds,
        lobby,
        mailbox,
        pages,
        players,
        profiles,
        ratings,
        record,
        seat,
        start,
        tournaments,
        watch,
    )
    from .web import site as web

    app.cli = _Commands(app.name)  # before the blueprints, which may add commands of theirs
    app.session_interface = admin.AdminSessions()  # the admin's session ends with its login
    db.init_app(app)
    i18n.init_app(app)
    mail.init_app(app)
    web.init_app(app)
    # The mailbox page's Reply button hands its mail to the reading of replies (pbem.mailin,
    # a channel beside the pages that they may not import), as `pbem ingest-mail` does.
    app.extensions["pbem_mail_in"] = _handle_mail
    if app.config["SERVE_TRUSTED_PROXIES"]:
        # Behind N reverse proxies, the client's address is the Nth from the right in
        # X-Forwarded-For (and the scheme and host come from X-Forwarded-Proto/-Host).
        hops = app.config["SERVE_TRUSTED_PROXIES"]
        app.wsgi_app = ProxyFix(  # type: ignore[method-assign]  # Flask documents this wrapping
            app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)
    app.register_blueprint(pages.bp)
    app.register_blueprint(seat.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(mailbox.bp)
    app.register_blueprint(admin.bp)
    app.register_blueprint(watch.bp)
    app.register_blueprint(record.bp)
    app.register_blueprint(players.bp)
    app.register_blueprint(start.bp)
    app.register_blueprint(feeds.bp)
    app.register_blueprint(profiles.bp)
    app.register_blueprint(ratings.bp)
    app.register_blueprint(lobby.bp)
    app.register_blueprint(tournaments.bp)
    app.register_blueprint(tournaments.admin_bp)
    # What a process this app starts makes its own app with (pbem.scheduler.senders: the
    # helper senders), so that the floors below need not import this one.
    app.extensions["pbem_factory"] = create_app
    return app


def _handle_mail(raw: bytes, recipients: list[str]):
    """Read one incoming mail (pbem.mailin.inbox.handle_incoming), imported when first used."""
    from .mailin.inbox import handle_incoming

    return handle_incoming(raw, recipients)
