"""The ranking page of each game, /ratings/<kind> (pbem.services.ratings): every rated player
and computer player by the shown number (mu - 3 sigma), with games played, the provisional
marked; a person's name links to their public page, never shows an address."""

from __future__ import annotations

from flask import Blueprint, render_template

from ..games import game_kinds
from ..services.errors import ServiceError
from ..services.profiles import PROVISIONAL_GAMES
from ..services.ratings import ranking as ranking_of
from ..services.ratings import rules_title

bp = Blueprint("ratings", __name__)


@bp.get("/ratings/<kind>")
def ranking(kind: str):
    try:
        lines = ranking_of(kind)
    except ServiceError as exc:
        return render_template("error.html", status=exc.status, message=exc.message), exc.status
    return render_template("ratings/ranking.html", kind=kind, title=rules_title(kind),
                           lines=lines, games=game_kinds(), provisional=PROVISIONAL_GAMES)
