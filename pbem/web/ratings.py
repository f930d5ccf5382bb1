"""The ranking page of each game, /ratings/<kind> (pbem.services.ratings): every rated player
and computer player listed (not provisional) by the shown number (mu - 3 sigma), with games
played, and how many more are provisional; a person's name links to their public page, never
shows an address."""

from __future__ import annotations

from flask import Blueprint, current_app, render_template

from ..games import game_kinds
from ..services.ratings import ranking as ranking_of
from ..services.ratings import rules_title
from .site import answer_refusals

bp = Blueprint("ratings", __name__)
answer_refusals(bp)


@bp.get("/ratings/<kind>")
def ranking(kind: str):
    shown = ranking_of(kind)
    return render_template("ratings/ranking.html", kind=kind, title=rules_title(kind),
                           lines=shown.lines, games=game_kinds(), provisional=shown.provisional,
                           needed=current_app.config["GAMES_RATING_OPPONENTS"])
