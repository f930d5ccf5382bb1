"""A player's "my games" page (pbem.services.my_games): every game of one email address,
behind a secret link like a seat's.

Opening the page changes nothing (mail scanners open links); *Open* on a game is a POST that
mints a fresh seat key for that seat and goes to its page.
"""

from __future__ import annotations

from flask import Blueprint, redirect, render_template, request, url_for

from ..ground.models import FEED_CALENDAR
from ..services.feeds import calendar_feed_token, feed_url
from ..services.my_games import my_games, open_seat
from .site import answer_refusals

bp = Blueprint("players", __name__, url_prefix="/me")


answer_refusals(bp)


@bp.get("/<token>")
def page(token: str):
    email, entries = my_games(token)
    calendar_link = feed_url(calendar_feed_token(token), FEED_CALENDAR)
    return render_template("players/games.html", email=email, entries=entries, token=token,
                           waiting=sum(1 for e in entries if e.my_move),
                           calendar_link=calendar_link)


@bp.post("/<token>/open")
def open_game(token: str):
    link = open_seat(token, request.form.get("game", ""))
    return redirect(url_for("seat.page", token=link.rsplit("/", 1)[1]), code=303)
