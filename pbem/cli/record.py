"""The commands of a game's record (docs/record.md): `pbem export-game` writes one game's
record for a reader, `pbem import-game` reads one back as a finished game to browse or a
practice game to play on (pbem.services.record does both)."""

from __future__ import annotations

import sys

import click
from flask.cli import with_appcontext

from .common import one_line_errors, site_base


@click.command("export-game")
@click.argument("game", type=int)
@click.option("--seat", type=int, default=None,
              help="The record as this seat (0 = the first) may see it.")
@click.option("--spectator", is_flag=True, help="The record as a spectator may see it.")
@click.option("--format", "form", type=click.Choice(["text", "json"]), default="text",
              show_default=True)
@one_line_errors
@with_appcontext
def export_game_command(game, seat, spectator, form):
    """Write the record of GAME to standard output: the full one (every move as played and the
    seed: it imports), or as one seat or a spectator may see it."""
    from ..services.errors import ServiceError
    from ..services.record import FULL, record_for, to_json, to_text

    if seat is not None and spectator:
        raise click.UsageError("give --seat or --spectator, not both")
    try:
        record = record_for(game, None if spectator else FULL if seat is None else seat)
    except ServiceError as exc:
        raise click.ClickException(exc.message) from None
    if seat is not None and not 0 <= seat < len(record.players):
        raise click.ClickException(f"game {game} has seats 0 to {len(record.players) - 1}")
    sys.stdout.write(to_json(record) if form == "json" else to_text(record))


@click.command("import-game")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@click.option("--as", "as_", type=click.Choice(["finished", "practice"]), default="finished",
              show_default=True, help="A finished game to browse, or a practice game to play "
              "on from the record's last move.")
@click.option("--player", default=None,
              help="A practice game's player, as 'Name <email>'.")
@click.option("--seat", type=int, default=0, show_default=True,
              help="The seat the player takes in a practice game.")
@click.option("--bot", "bots", multiple=True, metavar="SEAT=BOT",
              help="The computer player of another seat of a practice game (repeatable; "
                   "default: the game's first).")
@one_line_errors
@with_appcontext
def import_game_command(file, as_, player, seat, bots):
    """Replay the record in FILE (- for standard input) through the game's rules and store it
    as a new game. A record with a move that is not legal is refused, with its line and the
    reason, and nothing is stored."""
    from ..games import SetupProblem
    from ..services.players import parse_player
    from ..services.record import RecordError, import_record

    spec, chosen = None, {}
    if as_ == "practice":
        if not player:
            raise click.UsageError("a practice game needs --player 'Name <email>'")
        try:
            spec = parse_player(player)
        except SetupProblem as exc:
            raise click.UsageError(str(exc)) from None
    for text in bots:
        number, equals, bot = text.partition("=")
        if not equals or not number.isdigit():
            raise click.UsageError(f"--bot {text!r}: write SEAT=BOT, like 1=greedy")
        chosen[int(number)] = bot
    try:
        content = file.read()
    except UnicodeDecodeError:
        raise click.ClickException(f"{file.name} is not a text file: export a record with "
                                   "`pbem export-game`") from None
    try:
        imported = import_record(content, as_, player=spec, seat=seat, bots=chosen)
    except RecordError as exc:
        raise click.ClickException(f"{file.name}: {exc}; nothing was imported") from None
    base = site_base()
    click.echo(f"Imported as game {imported.game_id} ({as_}). Spectator page: "
               f"{base}/watch/{imported.watch_id}")
    if imported.link:
        click.echo(f"Your seat: {imported.link}")
commands = [export_game_command, import_game_command]
