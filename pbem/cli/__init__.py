"""Floor 5, the command line: the `pbem` command's commands (`commands`): set up the
database, create games, run the server and the scheduler (processes), deliver mail.

Every failure is one line on standard error and a non-zero exit status. What a command needs
beyond click and Flask (the database layer, the services, the scheduler) it imports when it
runs: `pbem --help` reads every command here without loading them. The commands run in
an app made by the `pbem` command itself (pbem.command, on the top floor). Imports every
floor below it: scheduler, web and mailin, services, games, ground.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import urllib.error
import urllib.request
from datetime import timedelta
from pathlib import Path

import click
from flask import current_app
from flask.cli import with_appcontext

from ..games import DEFAULT_KIND, SetupProblem, games_help, rules_for
from ..ground.config import links_here, served_url
from ..ground.process import serving_now
from ..mailin.pipe import ingest_mail_command
from . import record
from .common import need_schema, one_line_errors, site_base, upgrade_schema
from .processes import (
    mail_listener_command,
    run_jobs_command,
    scheduler_command,
    serve_command,
)

DEMO_PLAYERS = ["Anna <anna@demo.localhost>", "Bruno <bruno@demo.localhost>",
                "Chiara <chiara@demo.localhost>", "Dieter <dieter@demo.localhost>",
                "Elif <elif@demo.localhost>", "Farid <farid@demo.localhost>"]
DEMO_TITLE = "Demo game"


@click.command("init-db")
@one_line_errors
@with_appcontext
def init_db_command():
    """Create the database, or bring it up to date (safe to run again)."""
    from ..ground.db import shown_url

    upgrade_schema()
    click.echo(f"Database ready: {shown_url(current_app.config['DATABASE_URL'])}")


def _print_created(created) -> None:
    click.echo(f"Game {created.game_id} created. Each seat's link (also in its invitation):")
    for name, colour, link in created.links:
        click.echo(f"  {name} ({colour}): {link or 'a computer player: no link, no mail'}")


class _LanguageAfterPlayer(click.Command):
    """Remembers which --player each --lang follows (click keeps each option's values apart)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        _, _, order = self.make_parser(ctx).parse_args(args=list(args))
        players, after = 0, []
        for param in order:
            if param.name == "players":
                players += 1
            elif param.name == "languages":
                after.append(players - 1)  # the index of the player it follows, -1: none
        ctx.meta["languages_after"] = after
        return super().parse_args(ctx, args)


def _languages(players: tuple[str, ...], languages: tuple[str, ...]) -> list[str | None]:
    """Each player's --lang (None where there is none); SetupProblem for a --lang that does not
    follow a --player of its own."""
    from ..ground import i18n
    from ..ground.i18n import gettext as _

    after = click.get_current_context().meta.get("languages_after", [])
    chosen: list[str | None] = [None] * len(players)
    for index, code in zip(after, languages, strict=True):
        if index < 0:
            raise SetupProblem(_("--lang %(code)s: put it right after the --player it is for",
                                 code=code))
        if chosen[index] is not None:
            raise SetupProblem(_("--lang %(code)s: the player %(player)s already has --lang "
                                 "%(chosen)s; give each --player one --lang", code=code,
                                 player=repr(players[index]), chosen=chosen[index]))
        try:
            chosen[index] = i18n.check_language(code)
        except ValueError as exc:
            raise SetupProblem(f"--lang: {exc}") from None
    return chosen


@click.command("create-game", cls=_LanguageAfterPlayer)
@click.option("--player", "players", multiple=True, metavar='"Name <email>"',
              help="A player, in seat order; with the computer players, as many as the game "
                   f"takes ({games_help('players')}).")
@click.option("--lang", "languages", multiple=True, metavar="en|de|es",
              help="The language of the --player just before it: its mails, pages and turn "
                   "files (default: GAMES_LANGUAGE). The player can change it on their page.")
@click.option("--bot", "bots", multiple=True, metavar="NAME",
              help=f"A computer player ({games_help('bots')}) in the seat after the players "
                   "(repeat for more); the scheduler plays its turns.")
@click.option("--absent-bot", metavar="NAME",
              help="The computer player that plays an absent player's turns (default: the "
                   "default move).")
@click.option("--seed", help="Seed for the shuffle (default: random). It is mixed with this "
                             "server's secret key (GAMES_SECRET_SEEDS), so players cannot find "
                             "it from their cards; the same seed deals the same cards on this "
                             "server.")
@click.option("--colour", "colours", multiple=True,
              help="Each player's colour, in seat order (default: yellow, red, green, ...).")
@click.option("--start", type=int, help="The seat that starts, 1 for the first player "
                                        "(default: drawn from the seed).")
@click.option("--title", help="A name for the game, shown in mails.")
@click.option("--game", "kind", default=DEFAULT_KIND, show_default=True,
              help=f"Which game: {games_help('kinds')}.")
@click.option("--rules", "variant", metavar="RULES",
              help=f"The rules the game is played by: {games_help('variants')}.")
@click.option("--deadline-hours", type=int,
              help="Hours for each turn, 12 to 336 (default: GAMES_MOVE_DEADLINE_HOURS).")
@click.option("--reminders", metavar="HOURS,HOURS",
              help='Reminders, in hours before the deadline, like "24,2" (default: '
                   "GAMES_REMINDER_HOURS).")
@click.option("--weekend-pause/--no-weekend-pause", default=None,
              help="Stop the clock on Saturdays and Sundays (default: GAMES_WEEKEND_PAUSE).")
@click.option("--timezone", help="The game's time zone, like Europe/Berlin (default: "
                                 "GAMES_TIMEZONE).")
@click.option("--rated", is_flag=True, default=False,
              help="The result changes the players' ratings (default: unrated).")
@one_line_errors
@with_appcontext
def create_game_command(players, languages, bots, absent_bot, seed, colours, start, title, kind,
                        variant, deadline_hours, reminders, weekend_pause, timezone, rated):
    """Create a game and mail each player an invitation with their link."""
    from ..ground.i18n import gettext as _
    from ..services.creating import create_game
    from ..services.deadlines import time_control
    from ..services.players import bot_player, parse_player

    need_schema()
    try:
        rules = rules_for(kind)
        specs = [dataclasses.replace(parse_player(p), language=code)
                 for p, code in zip(players, _languages(players, languages), strict=True)]
        specs += [bot_player(b, rules.kind) for b in bots]
        if not specs:
            raise SetupProblem(_("give the players (--player \"Name <email>\") and any computer "
                                 "players (--bot strong)"))
        if colours and len(colours) != len(specs):
            raise SetupProblem(_("give one --colour per player (%(count)d), or none",
                                 count=len(specs)))
        if start is not None and not 1 <= start <= len(specs):
            raise SetupProblem(_("--start must be a seat from 1 to %(count)d", count=len(specs)))
        if title is not None and not 0 < len(title) <= 200:
            raise SetupProblem(_("--title must be 1 to 200 characters"))
        time = time_control(deadline_hours, reminders, weekend_pause, timezone)
        created = create_game(specs, seed, kind=rules.kind, colours=list(colours) or None,
                              start=None if start is None else start - 1, title=title,
                              time=time, variant=variant, absent_bot=absent_bot, rated=rated)
    except SetupProblem as exc:
        raise click.ClickException(str(exc)) from None
    except KeyError as exc:
        raise click.ClickException(exc.args[0]) from None
    _print_created(created)


@click.command("demo")
@click.option("--game", "kind", default=DEFAULT_KIND, show_default=True,
              help=f"Which game: {games_help('kinds')}.")
@click.option("--players", default=4, show_default=True, type=click.IntRange(1, 99),
              help=f"As many as the game takes ({games_help('players')}).")
@click.option("--seed", help="Seed for the shuffle (default: random); mixed with the "
                             "server's secret key like create-game's.")
@click.option("--new", is_flag=True, help="Create another demo game even if one is running.")
@click.option("--serve", "then_serve", is_flag=True,
              help="Then start the server (as `serve` does, on SERVE_HOST and SERVE_PORT).")
@click.option("--host", help="With --serve: the address to listen on (default: SERVE_HOST).")
@click.option("--port", type=click.IntRange(1, 65535),
              help="With --serve: the port (default: SERVE_PORT); the mails' links lead there "
                   "unless BASE_URL is set.")
@one_line_errors
@with_appcontext
@click.pass_context
def demo_command(context, kind, players, seed, new, then_serve, host, port):
    """Set up the database and a demo game whose players' mail shows on the mailbox page."""
    from ..scheduler.outbox import deliver_all_due
    from ..services.creating import create_game, running_game
    from ..services.players import parse_player

    config = current_app.config
    if links_here(config) and (host or port or then_serve):  # the links lead where it serves
        config["BASE_URL"] = served_url(host or config["SERVE_HOST"],
                                        port or config["SERVE_PORT"])
    elif links_here(config):  # or where this instance's server listens now
        config["BASE_URL"] = serving_now(current_app.instance_path) or config["BASE_URL"]
    try:
        rules = rules_for(kind)
    except KeyError as exc:
        raise click.BadParameter(exc.args[0], param_hint="'--game'") from None
    if not rules.min_players <= players <= rules.max_players:
        raise click.BadParameter(f"{rules.title} is for {rules.min_players} to "
                                 f"{rules.max_players} players, not {players}",
                                 param_hint="'--players'")
    upgrade_schema()
    running, seats = running_game(DEMO_TITLE, kind)
    if running and not new:
        click.echo(f"Demo game {running.id} is already running ({len(seats)} players); "
                   "use --new for another.")
    else:
        created = create_game([parse_player(p) for p in DEMO_PLAYERS[:players]], seed,
                              title=DEMO_TITLE, kind=kind)
        _print_created(created)
    deliver_all_due(current_app._get_current_object())
    if current_app.config["MAIL_BACKEND"] == "local":
        click.echo(f"Mailbox (every message sent, with the players' links): {site_base()}/mailbox/")
    if then_serve:
        context.invoke(serve_command, host=host, port=port)
    elif _answers(site_base()):
        click.echo(f"The server at {site_base()} shows the game now: open the mailbox page.")
    else:
        click.echo("The server is not running yet: start it with python3 -m pbem serve "
                   "(or run python3 -m pbem demo --serve next time).")


def _answers(base: str) -> bool:
    """Whether a server answers at `base` (its health page; any HTTP answer counts)."""
    try:
        # Straight to it, not through a proxy the environment names.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{base}/health", timeout=3):
            return True
    except urllib.error.HTTPError:
        return True  # it answered, if unwell
    except (OSError, ValueError):
        return False


def _control(action, *args):
    from ..services.errors import ServiceError

    try:
        return action(*args)
    except ServiceError as exc:
        raise click.ClickException(exc.message) from None


@click.command("extend")
@click.argument("game", type=int)
@click.option("--hours", type=click.IntRange(1, 336), required=True)
@one_line_errors
@with_appcontext
def extend_command(game, hours):
    """Give the player to move in GAME more hours."""
    from ..services.clock_controls import extend_deadline

    need_schema()
    deadline = _control(extend_deadline, game, hours)
    click.echo(f"Game {game}: the deadline is now {deadline:%Y-%m-%d %H:%M} UTC")


@click.command("pause")
@click.argument("game", type=int)
@one_line_errors
@with_appcontext
def pause_command(game):
    """Pause GAME: no moves, reminders or timeouts until it is resumed."""
    from ..services.clock_controls import pause_game

    need_schema()
    _control(pause_game, game)
    click.echo(f"Game {game} is paused.")


@click.command("resume")
@click.argument("game", type=int)
@one_line_errors
@with_appcontext
def resume_command(game):
    """Resume a paused GAME; the pause does not count against the player to move."""
    from ..services.clock_controls import resume_game

    need_schema()
    deadline = _control(resume_game, game)
    click.echo(f"Game {game} runs again; the deadline is {deadline:%Y-%m-%d %H:%M} UTC")


@click.command("send-mail")
@one_line_errors
@with_appcontext
def send_mail_command():
    """Deliver the mail that is due now (digests included); failures are retried later."""
    from ..scheduler.outbox import deliver_all_due

    need_schema()
    counts = deliver_all_due(current_app._get_current_object())
    click.echo(f"sent {counts['sent']}, to retry later {counts['retry']}, "
               f"failed {counts['failed']}, unknown (no answer after the message) "
               f"{counts['unknown']}")
    if counts["failed"] or counts["unknown"]:
        sys.exit(1)


MAIL_FAILING, MAIL_STUCK = 3, 4  # `pbem mail-status`'s exit statuses (docs/deploy.md)
LATEST_ERRORS = 20


@click.command("mail-status")
@click.option("--since", "since_hours", type=click.IntRange(0, 24 * 366), default=24,
              show_default=True, metavar="HOURS",
              help="Count mail that failed, bounced or whose fate is unknown in the last HOURS "
                   "(0: ever).")
@click.option("--late", "late_minutes", type=click.IntRange(1, 24 * 60), default=10,
              show_default=True, metavar="MINUTES",
              help="Mail still queued this long after it was due, or claimed this long by a "
                   "sender without progress, is stuck.")
@one_line_errors
@with_appcontext
def mail_status_command(since_hours, late_minutes):
    """Count the outbox by state and list the latest errors. Exit status: 0 when all is well;
    3 when mail failed, bounced or has an unknown fate (in the last --since hours) or waits
    to be tried again after an error; 4 when mail is stuck (no sender gets it out); 1 when the
    outbox cannot be read."""
    from ..ground.db import utcnow
    from ..ground.i18n import ngettext
    from ..ground.models import QUEUED
    from ..services.health import mail_status

    need_schema()
    now = utcnow()
    since = now - timedelta(hours=since_hours) if since_hours else None
    status = mail_status(now, since, timedelta(minutes=late_minutes), LATEST_ERRORS)
    counts, problems, stuck_rows = status.counts, status.problems, status.stuck
    failed, unknown, retrying = status.failed, status.unknown, status.retrying
    overdue, abandoned = status.overdue, status.abandoned
    click.echo(", ".join(f"{state} {counts.get(state, 0)}"
                         for state in ("queued", "sending", "sent", "failed", "unknown")))
    window = f"in the last {since_hours} hours" if since_hours else "ever"
    click.echo(f"failed {failed} and unknown {unknown} {window}; waiting to be tried again "
               f"after an error {retrying}; stuck {overdue + abandoned} (queued over "
               f"{late_minutes} minutes past their time {overdue}, claimed without progress "
               f"for over {late_minutes} minutes {abandoned})")
    for row in stuck_rows:
        if row.status == QUEUED:
            click.echo(f"stuck #{row.id} to {row.to_addr} ({row.subject}): queued, due "
                       f"{row.next_attempt_at:%Y-%m-%d %H:%M} UTC: is the scheduler running?")
        else:
            click.echo(f"stuck #{row.id} to {row.to_addr} ({row.subject}): claimed "
                       f"{row.claimed_at:%Y-%m-%d %H:%M} UTC by a sender that has made no "
                       "progress since (it goes back to the queue by itself once it is old)")
    for row in problems:
        attempts = ngettext("%(num)d attempt", "%(num)d attempts", row.attempts)
        state = "retrying" if row.status == QUEUED else row.status
        at = row.failed_at or row.claimed_at or row.created_at
        click.echo(f"{state} #{row.id} to {row.to_addr} ({row.subject}) at "
                   f"{at:%Y-%m-%d %H:%M} UTC after {attempts}: {row.last_error}")
    if overdue or abandoned:
        sys.exit(MAIL_STUCK)
    if failed or unknown or retrying:
        sys.exit(MAIL_FAILING)


def _checked_password(text: str) -> str:
    """A typed password, refused (and asked for again) when its length will not do."""
    from ..services.stewardship import check_password

    try:
        return check_password(text)
    except SetupProblem as exc:
        raise click.UsageError(str(exc)) from None


@click.command("create-admin")
@click.argument("email")
@click.option("--password-stdin", is_flag=True,
              help="Read the password from standard input (for scripts) instead of asking.")
@one_line_errors
@with_appcontext
def create_admin_command(email, password_stdin):
    """Create an admin account for EMAIL, or set a new password for it."""
    from ..services.stewardship import create_admin

    need_schema()
    if password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        # The length is checked as soon as the password is typed, before it is asked again.
        password = click.prompt("Password (12 characters or more)", hide_input=True,
                                value_proc=_checked_password)
        again = click.prompt("Repeat the password", hide_input=True)
        if again != password:
            raise click.ClickException("the two passwords differ; nothing was changed")
    try:
        create_admin(email, password)
    except SetupProblem as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"Admin {email.strip().lower()} can log in at {site_base()}/admin/")


@click.command("export-db")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@one_line_errors
@with_appcontext
def export_db_command(file):
    """Write every game, seat key, move, mail and account to FILE (- for standard output), to
    move the club to another database with import-db. Stop the web server and the schedulers
    first: what they change after the export is not in it."""
    from ..ground.transfer import TransferError, export_to, summary

    app = current_app._get_current_object()
    try:
        if file == "-":
            counts = export_to(app, sys.stdout)
        else:
            target = Path(file)
            partial = target.with_name(target.name + ".partial")
            # It holds password and key hashes: this user's only, whatever the umask (and a
            # partial file left by an earlier run is made anew, not reused with its mode).
            partial.unlink(missing_ok=True)
            descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.fchmod(descriptor, 0o600)
            with open(descriptor, "w", encoding="utf-8", newline="\n") as out:
                counts = export_to(app, out)
            partial.replace(target)  # a broken-off export never looks like a whole one
    except TransferError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"Exported {summary(counts)} to {'standard output' if file == '-' else file}",
               err=file == "-")


@click.command("import-db")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@one_line_errors
@with_appcontext
def import_db_command(file):
    """Fill this server's new, empty database (after init-db) from FILE, an export-db file
    (- for standard input). All or nothing: a file broken anywhere changes nothing."""
    from ..ground.db import shown_url
    from ..ground.transfer import TransferError, import_from, summary

    app = current_app._get_current_object()
    try:
        if file == "-":
            counts = import_from(app, sys.stdin)
        else:
            with open(file, encoding="utf-8") as lines:
                counts = import_from(app, lines)
    except TransferError as exc:
        raise click.ClickException(str(exc)) from None
    except UnicodeDecodeError:
        raise click.ClickException(f"{file} is not a text file made by `pbem export-db`") \
            from None
    click.echo(f"Imported {summary(counts)} into "
               f"{shown_url(app.config['DATABASE_URL'])}")


commands = [init_db_command, create_admin_command, create_game_command, demo_command, serve_command,
            send_mail_command, mail_status_command, scheduler_command, run_jobs_command,
            extend_command, pause_command, resume_command, ingest_mail_command,
            mail_listener_command, export_db_command, import_db_command, *record.commands]


# The commands that run as services or from cron or a mail server: they say at INFO which
# settings they read. The others are typed by a person and say it at DEBUG only.
SERVICES = ("serve", "scheduler", "mail-listener", "ingest-mail", "run-jobs", "send-mail")


