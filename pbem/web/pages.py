"""The front page: what this server is, and the way to the mailbox in the demo set-up."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from flask import Blueprint, Response, abort, current_app, jsonify, render_template

from ..games import game_kinds, rules_for
from ..services.health import games_by_status
from .mailbox import is_enabled

bp = Blueprint("pages", __name__)


@bp.get("/")
def home():
    counts = games_by_status()
    games = [rules_for(kind) for kind in game_kinds()]
    return render_template("pages/home.html", counts=counts, mailbox=is_enabled(), games=games)


@bp.get("/rules/<kind>")
def rules(kind: str):
    """The whole rules of a game that has no rule book of its own to link to (one whose rules
    offer a `card_table`), in the reader's language."""
    if kind not in game_kinds() or not hasattr(rules_for(kind), "card_table"):
        abort(404)
    game = rules_for(kind)
    return render_template("pages/rules.html", rules=game, how_to_play=game.how_to_play(None),
                           cards=cast(Any, game).card_table())  # offered: checked above


@bp.get("/health")
def health():
    """For monitoring: 200 when the database, the scheduler and the mail are well, else 503
    (pbem.services.health says what counts as unwell)."""
    from ..services.health import check

    answer, healthy = check(current_app._get_current_object())
    response = jsonify(answer)
    response.status_code = 200 if healthy else 503
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/favicon.ico")
def favicon():
    """The site's icon where browsers and feed readers look for it without asking the page."""
    icon = Path(current_app.static_folder, "favicon.svg").read_bytes()
    return Response(icon, mimetype="image/svg+xml",
                    headers={"Cache-Control": "public, max-age=86400"})
