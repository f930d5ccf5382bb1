"""Tournament pages: the public standings page of each tournament (/tournaments/<public_id>:
names and public ids only, never an address; each game linked to its spectator page), and the
organisers' pages under /admin/tournaments to create one, watch it, start a league's next
season and close it. The admin pages share the admin login (pbem.web.admin); every form is a
POST with its CSRF token, every action audited by pbem.services.tournaments; a GET changes
nothing.
"""

from __future__ import annotations

import dataclasses
from typing import cast

from flask import (
    Blueprint,
    abort,
    current_app,
    flash,
    g,
    redirect,
    render_template,
    request,
    url_for,
)

from ..games import DEFAULT_KIND, SetupProblem, game_kinds, rules_for
from ..ground import i18n
from ..ground.i18n import gettext
from ..services import tournaments
from ..services.deadlines import MAX_HOURS, MIN_HOURS, TimeControl, time_control
from ..services.errors import ServiceError
from ..services.pairings import FORMATS, LEAGUE
from ..services.players import parse_player
from . import admin
from .site import answer_refusals, form_number, refused_with, wake_sender

bp = Blueprint("tournaments", __name__)
admin_bp = Blueprint("admin_tournaments", __name__, url_prefix="/admin/tournaments")
admin_bp.before_request(admin.require_login)

MAX_LINES = tournaments.MAX_PLAYERS


@bp.get("/tournaments/<public_id>")
def standings(public_id: str):
    if len(public_id) > 32:
        abort(404)
    view = tournaments.overview(public_id=public_id, public=True)
    if view is None:
        return render_template("error.html", status=404, message=gettext(
            "There is no tournament at this address. Check that it was copied whole.")), 404
    return render_template("tournaments/standings.html", view=view,
                           rules=rules_for(view.tournament.kind),
                           status_words=tournaments.STATUS_WORDS,
                           format_words=tournaments.FORMAT_WORDS)


# --- the organisers' pages ----------------------------------------------------------------------

@admin_bp.get("/")
def index():
    return render_template("tournaments/admin_index.html",
                           tournaments=tournaments.all_tournaments(),
                           status_words=tournaments.STATUS_WORDS,
                           format_words=tournaments.FORMAT_WORDS)


def _new_page(form, errors: dict, status: int = 200):
    kind = form.get("game") if form.get("game") in game_kinds() else DEFAULT_KIND
    config = current_app.config
    defaults = {"deadline_hours": config["GAMES_MOVE_DEADLINE_HOURS"],
                "reminders": config["GAMES_REMINDER_HOURS"],
                "timezone": config["GAMES_TIMEZONE"], "table_size": 4, "promotion": 1,
                "rounds": 3, "cycles": 1}
    return render_template("tournaments/admin_new.html", form=form, errors=errors,
                           games=game_kinds(), rules=rules_for(kind), formats=FORMATS,
                           format_words=tournaments.FORMAT_WORDS, defaults=defaults,
                           min_hours=MIN_HOURS, max_hours=MAX_HOURS), status


@admin_bp.get("/new")
def new():
    return _new_page({"game": request.args.get("game", "")}, {})


def _players(text: str, errors: dict, key: str) -> list:
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if len(lines) > MAX_LINES:
        errors[key] = gettext("at most %(most)d players", most=MAX_LINES)
        return []
    found = []
    for line in lines:
        # "Name <email>", or "Name <email> de": the player's language after the address.
        head, bracket, tail = line.rstrip().rpartition(">")
        try:
            language = i18n.check_language(tail) if bracket and tail.strip() else None
            spec = parse_player(head + bracket if language else line)
        except (SetupProblem, ValueError) as exc:
            errors[key] = str(exc)
            return []
        found.append(dataclasses.replace(spec, language=language))
    return found


def _read_setup(form) -> tuple[tournaments.Setup | None, dict]:
    errors: dict[str, str] = {}
    kind = form.get("game", "")
    if kind not in game_kinds():
        return None, {"game": gettext("choose one of the games offered")}
    rules = rules_for(kind)
    fmt = form.get("format", "")
    if fmt not in FORMATS:
        errors["format"] = gettext("choose a league, a Swiss event or a round-robin")
    numbers = {}
    for name, low, high in (("table_size", rules.min_players, rules.max_players),
                            ("promotion", 0, 2), ("rounds", 1, tournaments.MAX_ROUNDS),
                            ("cycles", 1, 3)):
        numbers[name] = form_number(form.get(name), low, high)
        if numbers[name] is None:
            errors[name] = gettext("a whole number from %(low)d to %(high)d", low=low,
                                   high=high)
    days = (form.get("season_days") or "").strip()
    season_days = form_number(days, 1, 60) if days else None
    if days and season_days is None:
        errors["season_days"] = gettext("a whole number from %(low)d to %(high)d", low=1,
                                        high=60)
    hours = form_number(form.get("deadline_hours"), 0, 10**6)
    try:
        time = time_control(-1 if hours is None else hours, form.get("reminders", ""),
                            form.get("weekend_pause") == "on",
                            (form.get("timezone") or "").strip() or "UTC")
    except SetupProblem as exc:
        errors[getattr(exc, "field", "timezone")] = str(exc)
        time = None
    variant = form.get("variant") or next(iter(rules.variants))
    if variant not in rules.variants:
        errors["variant"] = gettext("choose one of the rules offered")
    players = _players(form.get("players", ""), errors, "players")
    if errors:
        return None, errors
    # Without errors, the time control and every number were read.
    return tournaments.Setup(
        name=form.get("name", ""), kind=kind, variant=variant, format=fmt,
        time=cast(TimeControl, time), players=players,
        table_size=cast(int, numbers["table_size"]), promotion=cast(int, numbers["promotion"]),
        rounds=cast(int, numbers["rounds"]), cycles=cast(int, numbers["cycles"]),
        season_days=season_days, rated=form.get("rated") == "on"), {}


def _create_again(exc: ServiceError):
    return _new_page(request.form, {"setup": exc.message}, 422)


def _show_again(exc: ServiceError, tournament_id: int):
    return _show(tournament_id, exc.message, exc.status if exc.status != 400 else 422)


answer_refusals(admin_bp, setup_problems=True)


@admin_bp.post("/new")
@refused_with(_create_again)
def create():
    setup, errors = _read_setup(request.form)
    if setup is None:
        return _new_page(request.form, errors, 422)
    tid = tournaments.create_tournament(g.admin.id, setup)
    wake_sender()
    flash(gettext("The tournament is created; its first games' invitations are on their way."))
    return redirect(url_for("admin_tournaments.show", tournament_id=tid), code=303)


def _show(tournament_id: int, error: str | None = None, status: int = 200):
    season = form_number(request.args.get("season"), 1, 10**6)
    view = tournaments.overview(tournament_id, season=season)
    if view is None:
        return render_template("error.html", status=404,
                               message=f"There is no tournament {tournament_id}."), 404
    return render_template("tournaments/admin_show.html", view=view, error=error,
                           rules=rules_for(view.tournament.kind), LEAGUE=LEAGUE,
                           status_words=tournaments.STATUS_WORDS,
                           format_words=tournaments.FORMAT_WORDS), status


@admin_bp.get("/<int:tournament_id>")
def show(tournament_id: int):
    return _show(tournament_id)


@admin_bp.post("/<int:tournament_id>/next-season")
@refused_with(_show_again)
def next_season(tournament_id: int):
    errors: dict[str, str] = {}
    joining = _players(request.form.get("joining", ""), errors, "joining")
    leaving = [line.strip() for line in request.form.get("leaving", "").splitlines()
               if line.strip()][:MAX_LINES]
    if errors:
        return _show(tournament_id, errors["joining"], 422)
    tournaments.start_next_season(g.admin.id, tournament_id, leaving, joining,
                                  request.form.get("reason", ""))
    wake_sender()
    flash(gettext("The next season has begun; its games' invitations are on their way."))
    return redirect(url_for("admin_tournaments.show", tournament_id=tournament_id), code=303)


@admin_bp.post("/<int:tournament_id>/close")
@refused_with(_show_again)
def close(tournament_id: int):
    tournaments.close_tournament(g.admin.id, tournament_id, request.form.get("reason", ""))
    flash(gettext("The tournament is closed: no further rounds."))
    return redirect(url_for("admin_tournaments.show", tournament_id=tournament_id), code=303)
