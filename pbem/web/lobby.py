"""The open lobby's pages (pbem.services.lobby), there only with `[games] lobby = true`: the
public list /lobby, and the same list reached from a player's games page (/me/<key>/lobby),
where the player posts, joins and withdraws open games with buttons that POST.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from flask import Blueprint, abort, current_app, redirect, render_template, request, url_for

from ..games import DEFAULT_KIND, game_kinds, rules_for
from ..ground import i18n
from ..services.deadlines import MAX_HOURS, MIN_HOURS
from ..services.errors import ServiceError
from ..services.game_settings import read_lobby_form
from ..services.lobby import (
    is_open,
    join,
    open_games,
    post,
    reader,
    started_games,
    withdraw,
)
from .profiles import client_address
from .site import answer_refusals, refused_with, wake_sender

if TYPE_CHECKING:
    from ..services.game_settings import Posting

bp = Blueprint("lobby", __name__)


@bp.before_request
def _only_when_open():
    if not is_open():
        abort(404)


def _page(token: str | None, form=None, errors=None, status: int = 200, error: str | None = None):
    email = None
    if token is not None:
        email, language = reader(token)
        i18n.use(language)
    kind = (form or {}).get("game") or request.args.get("game") or DEFAULT_KIND
    kind = kind if kind in game_kinds() else DEFAULT_KIND
    config = current_app.config
    return render_template("lobby/index.html", token=token, listed=open_games(email),
                           form=form or {}, errors=errors or {}, error=error,
                           games=game_kinds(), kind=kind, rules=rules_for(kind),
                           default_hours=config["GAMES_MOVE_DEADLINE_HOURS"],
                           default_zone=config["GAMES_TIMEZONE"], min_hours=MIN_HOURS,
                           max_hours=MAX_HOURS, ask_url=_absolute("/me"),
                           started=started_games(email) if email else []), status


def _again(exc: ServiceError, token: str | None = None, **_view_args):
    """The lobby again with the reason nothing was done."""
    return _page(token, None, {}, exc.status, exc.message)


def _posting_again(exc: ServiceError, token: str):
    """The lobby again with the reason, the posting form as it was sent."""
    return _page(token, request.form, {}, exc.status, exc.message)


answer_refusals(bp, _again)


def _absolute(path: str) -> str:
    """An address on this server, from `base_url`: never from the request's Host header, which
    a client writes (a page with a made-up host's links could be shown to others)."""
    return current_app.config["BASE_URL"].rstrip("/") + path


@bp.get("/lobby")
def index():
    return _page(None)


@bp.get("/me/<token>/lobby")
def mine(token: str):
    return _page(token)


@bp.post("/me/<token>/lobby")
@refused_with(_posting_again)
def post_game(token: str):
    posting, errors = read_lobby_form(request.form)
    if errors:
        return _page(token, request.form, errors, 422)
    post(token, cast("Posting", posting), client_address())  # None only with errors
    return redirect(url_for("lobby.mine", token=token), code=303)


def _act(token: str, action):
    action()
    wake_sender()
    return redirect(url_for("lobby.mine", token=token), code=303)


@bp.post("/me/<token>/lobby/<game_id>/join")
def join_game(token: str, game_id: str):
    return _act(token, lambda: join(token, game_id, client_address()))


@bp.post("/me/<token>/lobby/<game_id>/withdraw")
def withdraw_game(token: str, game_id: str):
    return _act(token, lambda: withdraw(token, game_id))
