"""A game's record to download (docs/record.md) for the reader who asks: a seat
(`/seat/<token>/record.txt`), a spectator (`/watch/<watch_id>/record.txt`); the organisers'
full one is on the admin pages (pbem.web.admin). `.json` gives the same content as JSON. And
"play on from here": a finished game's seat starts a practice game from a point of its history
(`POST /seat/<token>/play-on`). The records and the practice game are pbem.services.record's.
"""

from __future__ import annotations

from typing import cast

from flask import Blueprint, Response, redirect, request

from ..services.errors import NotFound
from ..services.record import play_on, record_for, to_json, to_text
from ..services.seats import load_seat
from ..services.watching import load_watched
from .site import answer_refusals, wake_sender

bp = Blueprint("record", __name__)
answer_refusals(bp)

FORMATS = {"txt": ("text/plain; charset=utf-8", to_text),
           "json": ("application/json; charset=utf-8", to_json)}


def record_response(game_id: int, reader, form: str) -> Response:
    """The record of game `game_id` for `reader` as a file to download in format `form`."""
    if form not in FORMATS:
        raise NotFound("A record comes as record.txt or record.json.")
    mimetype, write = FORMATS[form]
    record = record_for(game_id, reader)
    response = Response(write(record), content_type=mimetype)
    who = record.reader.replace(" ", "-")
    response.headers["Content-Disposition"] = \
        f'attachment; filename="game-{game_id}-{who}.{form}"'
    response.headers["X-Robots-Tag"] = "noindex, nofollow"
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/seat/<token>/record.<form>")
def seat_record(token: str, form: str):
    """The seat's record: every move as this seat saw it (all of them once the game is over)."""
    ctx = load_seat(token, log_limit=1)
    return record_response(ctx.game.id, ctx.seat.number, form)


@bp.get("/watch/<watch_id>/record.<form>")
def watch_record(watch_id: str, form: str):
    """A spectator's record: no seat's hidden cards until the game is over."""
    watched = load_watched(watch_id, with_log=False)
    return record_response(cast(int, watched.game.id), None, form)  # a saved game's


@bp.post("/seat/<token>/play-on")
def play_on_post(token: str):
    """Start a practice game from move `at` of this finished game, with the computer players
    chosen for the other seats (`bot<seat number>`); on to the new seat's page."""
    bots = {int(key[3:]): value for key, value in request.form.items()
            if key.startswith("bot") and key[3:].isascii() and key[3:].isdigit()
            and len(key) < 6}
    link = play_on(token, request.form.get("at"), bots)
    wake_sender()
    return redirect(link, code=303)
