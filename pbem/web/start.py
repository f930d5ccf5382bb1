"""The pages of games players start themselves (pbem.services.starting): the public "new
game" form, the starter's page, an invitation's page and a finished game's rematch.

Every link is a GET that only shows a page (mail scanners open links); the buttons on it POST.
"""

from __future__ import annotations

from flask import Blueprint, abort, current_app, redirect, render_template, request, url_for

from ..games import DEFAULT_KIND, game_kinds, rules_for
from ..ground import i18n
from ..ground.models import ACCEPTED, INVITING
from ..services.deadlines import MAX_HOURS, MIN_HOURS
from ..services.errors import GameNotRunning, ServiceError
from ..services.game_settings import read_new_form
from ..services.starting import (
    answer,
    cancel,
    confirm,
    invitation_view,
    proposal_of,
    propose,
    rematch,
    seat_view,
    start_game,
    starter_view,
)
from .site import answer_refusals, refused_with, wake_sender

bp = Blueprint("start", __name__)


def _client_address() -> str:
    return (request.remote_addr or "unknown")[:64]


def _open() -> None:
    if not current_app.config["GAMES_OPEN_CREATION"]:
        abort(404)


def _kind(value) -> str:
    return value if value in game_kinds() else DEFAULT_KIND


def _new_page(form, errors, status=200, kind=DEFAULT_KIND):
    rules = rules_for(kind)
    config = current_app.config
    return render_template("start/new.html", form=form, errors=errors, rules=rules,
                           games=game_kinds(), kind=kind,
                           default_hours=config["GAMES_MOVE_DEADLINE_HOURS"],
                           default_zone=config["GAMES_TIMEZONE"], min_hours=MIN_HOURS,
                           max_hours=MAX_HOURS), status


def _new_again(exc: ServiceError):
    """The form again, as sent, with the reason beside the players."""
    return _new_page(request.form, {"players": exc.message}, exc.status,
                     _kind(request.form.get("game")))


def _manage_again(exc: ServiceError, token: str):
    return _manage_page(token, exc.status, exc.message)


def _invitation_again(exc: ServiceError, token: str, choice: str):
    return _invitation_page(token, exc.status, exc.message, request.form)


answer_refusals(bp)


@bp.get("/new")
def new():
    _open()
    return _new_page({}, {}, kind=_kind(request.args.get("game")))


@bp.post("/new")
@refused_with(_new_again)
def new_post():
    _open()
    kind = _kind(request.form.get("game"))
    draft, errors = read_new_form(request.form, kind)
    if errors:
        return _new_page(request.form, errors, 422, kind)
    propose(draft, _client_address(), language=i18n.language())
    wake_sender()
    return render_template("start/sent.html", email=draft.starter.email)


def _manage_page(token: str, status: int = 200, error: str | None = None):
    view = starter_view(token)
    proposal, everyone = view.proposal, view.everyone
    rules = rules_for(proposal.kind)
    accepted = sum(1 for i in everyone if i.status == ACCEPTED)
    return render_template("start/manage.html", token=token, proposal=proposal,
                           everyone=everyone, rules=rules, accepted=accepted, error=error,
                           can_start=proposal.status == INVITING
                           and accepted >= rules.min_players, game=view.game,
                           has_seat=view.has_seat), status


@bp.get("/new/game/<token>")
def manage(token: str):
    return _manage_page(token)


def _starter_action(token: str, action):
    action()
    wake_sender()
    return redirect(url_for("start.manage", token=token), code=303)


@bp.post("/new/game/<token>/confirm")
@refused_with(_manage_again)
def confirm_post(token: str):
    return _starter_action(token, lambda: confirm(token))


@bp.post("/new/game/<token>/start")
@refused_with(_manage_again)
def start_post(token: str):
    def go():
        start_game(proposal_of(token), by_starter=True)
    return _starter_action(token, go)


@bp.post("/new/game/<token>/cancel")
@refused_with(_manage_again)
def cancel_post(token: str):
    return _starter_action(token, lambda: cancel(token))


def _invitation_page(token: str, status: int = 200, error: str | None = None, form=None):
    invitation, proposal, everyone = invitation_view(token)
    if invitation.number == 0:
        return redirect(url_for("start.manage", token=token), code=303)
    return render_template("start/invitation.html", token=token, invitation=invitation,
                           proposal=proposal, everyone=everyone, rules=rules_for(proposal.kind),
                           error=error, form=form or {}), status


@bp.get("/invite/<token>")
def invitation(token: str):
    return _invitation_page(token)


@bp.post("/invite/<token>/<choice>")
@refused_with(_invitation_again)
def answer_post(token: str, choice: str):
    if choice not in ("accept", "decline"):
        abort(404)
    if answer(token, choice == "accept", request.form.get("name"), language=i18n.language()):
        try:
            start_game(proposal_of(token))
        except GameNotRunning:  # the last two accepted at once: the other one started it
            pass
    wake_sender()
    return redirect(url_for("start.invitation", token=token), code=303)


@bp.get("/seat/<token>/rematch")
def rematch_page(token: str):
    seat, game, seats = seat_view(token)
    return render_template("start/rematch.html", token=token, seat=seat, game=game,
                           seats=seats)


@bp.post("/seat/<token>/rematch")
def rematch_post(token: str):
    link = rematch(token, _client_address())
    wake_sender()
    return redirect(link, code=303)
