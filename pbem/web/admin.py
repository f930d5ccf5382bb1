"""The admin pages: log in, see every game, create games, and look after them.

Every page but the login page refuses anyone not logged in; every form carries a CSRF token
(Flask-WTF, app-wide); failed logins are counted in the database and limited
(`stewardship.login`). Actions on a game go
through a confirmation page that changes nothing, and then through `pbem.services.stewardship`, which
checks them, writes the audit log and mails the players.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import cast

from flask import (
    Blueprint,
    current_app,
    flash,
    g,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask.sessions import SecureCookieSessionInterface
from itsdangerous import BadSignature, URLSafeTimedSerializer

from ..games import DEFAULT_KIND, game_kinds, rules_for
from ..ground import i18n
from ..ground.db import utcnow
from ..ground.i18n import N_, gettext
from ..ground.models import (
    ABORTED,
    FINISHED,
    PAUSED,
    RUNNING,
    Game,
    Seat,
)
from ..services import admin_views, notices, ratings, stewardship, talk
from ..services.creating import create_game
from ..services.deadlines import MAX_HOURS, MIN_HOURS
from ..services.errors import ServiceError
from ..services.game_settings import read_admin_form
from ..services.record import FULL
from .record import record_response
from .site import (
    HINTS,
    answer_refusals,
    error_page,
    form_number,
    refused_with,
    wake_sender,
)

bp = Blueprint("admin", __name__, url_prefix="/admin")
logger = logging.getLogger(__name__)
answer_refusals(bp, setup_problems=True)

STATUS_ORDER = (RUNNING, PAUSED, FINISHED, ABORTED)
MAX_SEATS = 99  # more than any game has: a seat number in a form beyond it is no seat
OPEN = (RUNNING, PAUSED)
EVERY = (RUNNING, PAUSED, FINISHED, ABORTED)


@dataclass(frozen=True)
class Action:
    """An action on a game: its label, the game states it is offered in, whether it is for one
    seat, and the other fields its form asks for (only those reach its confirmation page)."""

    label: str
    statuses: tuple[str, ...]
    seat: bool = False
    fields: tuple[str, ...] = ()
    note: str = ""
    person: bool = False  # only for a person's seat: a computer player has no link or address


ACTIONS = {
    "resend": Action(N_("Resend the seat's link"), EVERY, seat=True, person=True),
    "new_link": Action(N_("Issue a new link (the old ones stop working at once)"), EVERY, seat=True,
                       person=True),
    "email": Action(N_("Change the seat's email address"), OPEN, seat=True, fields=("email",),
                    person=True),
    "hand_over": Action(N_("Hand the seat to a new player"), OPEN, seat=True,
                        fields=("name", "email")),
    "revoke_games": Action(N_("Revoke the player's “my games” links"), EVERY, seat=True,
                           note=N_("Their seat links keep working."), person=True),
    "bot": Action(N_("Let a computer player play the seat"), OPEN, seat=True, fields=("bot",)),
    "pause": Action(N_("Pause the game"), (RUNNING,)),
    "resume": Action(N_("Resume the game"), (PAUSED,)),
    "extend": Action(N_("Extend the current deadline"), (RUNNING,), fields=("hours",)),
    "take_back": Action(N_("Take back the last turn"), (RUNNING, FINISHED),
                        note=N_("The whole turn of the player who moved last: the placement or "
                                "exchange and the cards drawn after it.")),
    "absent_bot": Action(N_("Choose who plays absent players' turns"), OPEN, fields=("absent_bot",)),
    "abort": Action(N_("Abort the game"), OPEN),
}
FIELDS = ("action", "seat", "email", "name", "hours", "reason", "bot")


def offered(game: Game, rules, has_moves: bool) -> dict[str, Action]:
    """The actions that can be done to `game` in its present state."""
    return {key: action for key, action in ACTIONS.items()
            if game.status in action.statuses
            and (key != "take_back" or has_moves)
            and (key not in ("bot", "absent_bot") or rules.bots)}


class AdminSessions(SecureCookieSessionInterface):
    """Flask's signed-cookie sessions, whose cookie expires with the admin's login (its
    absolute limit, `_session_is_young`) instead of ADMIN_SESSION_HOURS after each answer."""

    def get_expiration_time(self, app, session):
        expires = super().get_expiration_time(app, session)
        logged_in = session.get("admin_login_at")
        if expires is not None and isinstance(logged_in, int):
            return min(expires, datetime.fromtimestamp(logged_in, UTC)
                       + app.permanent_session_lifetime)
        return expires


def _session_is_young(now) -> bool:
    """Whether the session's login was less than ADMIN_SESSION_HOURS ago: an absolute limit
    (Flask renews a permanent session's cookie with each answer, so its expiry alone would
    let an 11-hour-old session, used once, last 12 hours more)."""
    logged_in = session.get("admin_login_at")
    if not isinstance(logged_in, (int, float)) or isinstance(logged_in, bool):
        return False  # a session from before the login time was kept: log in again
    age = now.timestamp() - logged_in
    return 0 <= age < current_app.config["ADMIN_SESSION_HOURS"] * 3600


@bp.before_request
def require_login():
    g.admin = None
    admin_id = session.get("admin_id")
    if admin_id is not None and not _session_is_young(utcnow()):
        session.clear()
        admin_id = None
    if admin_id is not None:
        admin = admin_views.admin_by_id(admin_id)
        # A session copied before a logout (or a password change) is worth nothing after it.
        if admin is not None and session.get("admin_version") == admin.session_version:
            g.admin = admin
    if g.admin is None and request.endpoint not in ("admin.login", "admin.login_post"):
        if request.method == "GET":
            return redirect(url_for("admin.login", next=request.path), code=303)
        return render_template("admin/login.html", error="Please log in first; nothing was "
                               "done.", next=""), 401
    return None


def _safe_next(target: str | None) -> str:
    """Only a path on this site (no scheme, no host) may follow a login."""
    if target and target.startswith("/admin") and "//" not in target and "\\" not in target \
            and target.isprintable() and target.isascii() and len(target) < 500:
        return target
    return url_for("admin.dashboard")


@bp.get("/login")
def login():
    return render_template("admin/login.html", error=None, next=request.args.get("next", ""))


# A browser an admin logged in from gets a signed cookie naming the account: during a login
# flood from many addresses its attempts are still checked (stewardship.login, "trusted").
DEVICE_COOKIE, DEVICE_DAYS = "pbem_admin_device", 180


def _devices() -> URLSafeTimedSerializer:
    # (the app always has its secret key: pbem.app)
    return URLSafeTimedSerializer(cast("str | bytes", current_app.secret_key),
                                  salt="pbem admin device")


def _trusted_device(account: str) -> bool:
    value = request.cookies.get(DEVICE_COOKIE, "")
    if not value or len(value) > 500:
        return False
    try:
        return _devices().loads(value, max_age=DEVICE_DAYS * 86400) == account
    except BadSignature:
        return False


@bp.post("/login")
def login_post():
    email = request.form.get("email", "")
    account = email.strip().lower()[:254]
    config = current_app.config
    admin_id = stewardship.login(email, request.form.get("password", "")[:200],
                                 request.remote_addr, config["ADMIN_LOGIN_LIMIT"],
                                 server_limit=config["ADMIN_LOGIN_LIMIT_ALL"],
                                 trusted=_trusted_device(account))
    if isinstance(admin_id, str):
        # DEBUG: a flood is refused by the thousand, and must not fill the log either (the
        # failures that led to the limit were each logged).
        logger.debug("admin login refused unchecked (%s limit) for %r from %s", admin_id,
                     account[:80], request.remote_addr)
        return render_template("error.html", status=429, message=HINTS[429]), 429
    if admin_id is None:
        logger.warning("admin login failed for %r from %s", account[:80], request.remote_addr)
        return render_template("admin/login.html", error="That email and password do not "
                               "match an admin account.", next=request.form.get("next", "")), 401
    logger.info("admin %r logged in from %s", account[:80], request.remote_addr)
    session.clear()  # a fresh session: nothing carried over from before the login
    session["admin_id"], session["admin_version"] = admin_id, stewardship.session_version(
        admin_id)
    session["admin_login_at"] = int(utcnow().timestamp())
    session.permanent = True
    response = redirect(_safe_next(request.form.get("next")), code=303)
    response.set_cookie(DEVICE_COOKIE, _devices().dumps(account), max_age=DEVICE_DAYS * 86400,
                        path=url_for("admin.login"), secure=config["SESSION_COOKIE_SECURE"],
                        httponly=True, samesite="Strict")
    return response


@bp.post("/logout")
def logout():
    stewardship.end_sessions(g.admin.id)
    session.clear()
    flash(gettext("You are logged out."))
    return redirect(url_for("admin.login"), code=303)


# --- overview -----------------------------------------------------------------------------------

@bp.get("/")
def dashboard():
    now = utcnow()
    games, seats, failed = admin_views.dashboard()
    by_game: dict[int, dict[int, Seat]] = {}
    for seat in seats:
        by_game.setdefault(seat.game_id, {})[seat.number] = seat
    groups = {status: [] for status in STATUS_ORDER}
    for game in games:
        rules = rules_for(game.kind)
        state = rules.loads(game.state_json)
        to_move = rules.to_move(state)
        players = [by_game.get(game.id, {})[n] for n in sorted(by_game.get(game.id, {}))]
        winners = []
        if game.status == FINISHED:
            result = rules.outcome(state) or {}
            by_colour = {seat.colour: seat for seat in players}
            winners = [by_colour[c] for c in result.get("winners", []) if c in by_colour]
        groups.setdefault(game.status, []).append({
            "game": game, "to_move": by_game.get(game.id, {}).get(to_move),
            "players": players, "winners": winners,
            # A computer player's turn is due at once and played at the scheduler's next run:
            # not overdue.
            "overdue": game.status == RUNNING and game.deadline_at is not None
            and game.deadline_at < now and not getattr(by_game.get(game.id, {}).get(to_move),
                                                       "bot", None)})
    return render_template("admin/dashboard.html", groups=groups, failed=failed, now=now)


# --- creating a game ----------------------------------------------------------------------------

def _kind(value) -> str:
    """The game a create form is for: a known kind, else the default."""
    return value if value in game_kinds() else DEFAULT_KIND


def _new_game_page(form, errors, status=200, kind: str = DEFAULT_KIND):
    rules = rules_for(kind)
    config = current_app.config
    defaults = {"deadline_hours": config["GAMES_MOVE_DEADLINE_HOURS"],
                "reminders": config["GAMES_REMINDER_HOURS"],
                "timezone": config["GAMES_TIMEZONE"]}
    return render_template("admin/new_game.html", form=form, errors=errors, rules=rules,
                           games=game_kinds(), defaults=defaults, min_hours=MIN_HOURS,
                           max_hours=MAX_HOURS), status


@bp.get("/games/new")
def new_game():
    return _new_game_page({}, {}, kind=_kind(request.args.get("game")))


def _new_game_again(exc: ServiceError):
    return _new_game_page(request.form, {"players": exc.message}, 422,
                          _kind(request.form.get("game")))


@bp.post("/games/new")
@refused_with(_new_game_again)
def new_game_post():
    kind = _kind(request.form.get("game"))
    rules = rules_for(kind)
    data, errors = read_admin_form(request.form, rules)
    if errors:
        return _new_game_page(request.form, errors, 422, kind)
    created = create_game(data.players, data.seed, kind=kind, colours=data.colours,
                          start=data.start, title=data.title, time=data.time,
                          variant=data.variant, absent_bot=data.absent_bot, rated=data.rated)
    wake_sender()
    flash(gettext("Game %(id)d is created; the players' invitations are on their way.",
                  id=created.game_id))
    return redirect(url_for("admin.game", game_id=created.game_id), code=303)


# --- one game -----------------------------------------------------------------------------------

def _load_game(game_id: int):
    record = admin_views.game_record(game_id)
    if record is None:
        return None
    game = record["game"]
    rules = rules_for(game.kind)
    return {**record, "rules": rules, "state": rules.loads(game.state_json),
            "log": [(r, [i18n.render(line) for line in json.loads(r.lines_json).get("-1", [])])
                    for r in record["log"]]}


def _no_game(game_id: int):
    return render_template("error.html", status=404, message=f"There is no game {game_id}."), 404


@bp.get("/games/<int:game_id>")
def game(game_id: int):
    data = _load_game(game_id)
    if data is None:
        return _no_game(game_id)
    return _game_page(data)


def _game_page(data: dict, error: str | None = None) -> str:
    """The game's admin page; `error`: why the form sent from it was refused."""
    to_move = data["rules"].to_move(data["state"])
    return render_template("admin/game.html", **data, to_move=to_move, error=error,
                           talk_counts=talk.counts(data["game"].id),
                           actions=offered(data["game"], data["rules"], bool(data["log"])),
                           kind_template=f"games/{data['game'].kind}/", now=utcnow(),
                           notices_on=notices.is_enabled(), notice_kinds=notices.KIND_WORDS,
                           game_kinds=notices.GAME_KINDS,
                           notice_targets=notices.targets(notices.GAME, data["game"].id)
                           if notices.is_enabled() else [],
                           notice_language=current_app.config["GAMES_LANGUAGE"],
                           languages=i18n.LANGUAGES, language_names=i18n.LANGUAGE_NAMES)


@bp.get("/games/<int:game_id>/record.<form>")
def game_record(game_id: int, form: str):
    """The game's full record (every move as played, and the seed): it imports."""
    return record_response(game_id, FULL, form)


@bp.post("/games/<int:game_id>/messages")
@refused_with(lambda exc, game_id: (_game_page(_load_game(game_id), exc.message), 422))
def messages(game_id: int):
    """Every message of the game, the private ones included: shown only once the audit log
    says which admin looked, when and why."""
    data = _load_game(game_id)
    if data is None:
        return _no_game(game_id)
    reason = stewardship.check_reason(request.form.get("reason"))
    public, private = talk.counts(game_id)
    stewardship.note(g.admin.id, game_id, "read_messages", reason,
                     f"{public} to everyone, {private} private")
    return render_template("admin/messages.html", game=data["game"],
                           thread=talk.admin_thread(game_id), reason=reason)


def _action_fields(form) -> dict:
    return {key: form.get(key, "").strip()[:300] for key in FIELDS}


def _shown_fields(action: str) -> tuple[str, ...]:
    """The fields an action's confirmation page carries on: its own, no other."""
    spec = ACTIONS[action]
    own = tuple("bot" if f == "absent_bot" else f for f in spec.fields)
    return ("action",) + (("seat",) if spec.seat else ()) + own


def _take_back_words(data: dict) -> str:
    """What taking back the last turn will undo, named move by move."""
    log = data["log"]  # newest first
    if not log:
        return "Take back the last turn; no move has been made yet."
    seat = log[0][0].seat
    turn = []
    for record, _ in log:
        if record.seat != seat:
            break
        turn.append(record.notation)
    who = data["seats"][seat]
    return (f"Take back the last turn of {who.name} ({who.colour}): "
            f"{'; '.join(reversed(turn))}. The game is rebuilt from its log without it, and "
            f"{who.name} moves again. A card they drew from the deck in that turn goes back on "
            "top of it: they have seen it, and will draw it again if they draw from the deck.")


def _describe(data: dict, fields: dict) -> str | None:
    """The action in words for the confirmation page, or None when it is unknown."""
    action, seats = fields["action"], data["seats"]
    seat = None
    if action not in ACTIONS:
        return None
    if ACTIONS[action].seat:
        raw = fields["seat"]
        number = form_number(raw, high=MAX_SEATS)
        if number is None or number >= len(seats):
            return None
        seat = seats[number]
    who = "" if seat is None else f"{seat.name} ({seat.colour}, {seat.email})" \
        if seat.bot is None else f"{seat.name} ({seat.colour}, computer player {seat.bot})"
    return {
        "resend": f"Mail {who} their link again.",
        "new_link": f"Revoke every link of {who} now and mail them a new one.",
        "email": f"Change the address of {who} to {fields['email']}; their old links stop "
                 "working and a new one goes to the new address.",
        "hand_over": f"Give the seat of {who} to {fields['name']} <{fields['email']}>; the old "
                     "player's links stop working; both are told.",
        "revoke_games": f"Revoke every link to the “my games” page of "
                        f"{seat.email if seat else ''}, in all games; the seat links keep "
                        "working, and the next mail brings a new one.",
        "pause": "Pause the game: no moves, reminders or timeouts until it is resumed.",
        "resume": "Resume the game; the pause does not count against the player to move.",
        "extend": f"Give the player to move {fields['hours']} more hours.",
        "take_back": _take_back_words(data),
        "abort": "Call the game off: it ends without a result.",
        "bot": f"Let the computer player ({fields['bot']}) play the seat of {who} from now on; "
               "the person's links stop working and they are told. Hand the seat over to give "
               "it to a person again.",
        "absent_bot": "From now on, when a player is absent, "
                      + (f"the computer player ({fields['bot']}) plays their turns."
                         if fields["bot"] not in ("", "default")
                         else "the server plays the default move for them."),
    }.get(action)


@bp.post("/games/<int:game_id>/confirm")
def confirm(game_id: int):
    """The confirmation page of an action: it says what will happen and changes nothing."""
    data = _load_game(game_id)
    if data is None:
        return _no_game(game_id)
    fields = _action_fields(request.form)
    summary = _describe(data, fields)
    if summary is None:  # refused on the page it came from, which says why
        return _game_page(data, "Choose an action (and a seat) from the lists; nothing was "
                                "done."), 422
    game = data["game"]
    if fields["action"] not in offered(game, data["rules"], bool(data["log"])):
        return _game_page(data, f"“{ACTIONS[fields['action']].label}” is not possible while "
                                f"the game is {game.status}"
                                f"{'' if data['log'] else ' and no move has been made'}; "
                                "nothing was done."), 409
    return render_template("admin/confirm.html", game=game, fields=fields, summary=summary,
                           shown=_shown_fields(fields["action"]),
                           label=ACTIONS[fields["action"]].label)


def _action_again(exc: ServiceError, game_id: int):
    """The confirmation page again with the reason nothing was done (the error page for a game
    or an action that cannot be described)."""
    fields = _action_fields(request.form)
    data = _load_game(game_id)
    summary = _describe(data, fields) if data else None
    if summary is None:
        return error_page(exc)
    return render_template("admin/confirm.html", game=data["game"], fields=fields,
                           summary=summary, error=exc.message,
                           shown=_shown_fields(fields["action"]),
                           label=ACTIONS[fields["action"]].label), exc.status


@bp.post("/games/<int:game_id>/do")
@refused_with(_action_again)
def do(game_id: int):
    fields = _action_fields(request.form)
    admin_id, action, reason = g.admin.id, fields["action"], fields["reason"]
    seat = form_number(fields["seat"], high=MAX_SEATS)
    if action in ACTIONS and ACTIONS[action].seat and seat is None:
        raise stewardship.Malformed("choose a seat from the list")
    chosen = cast(int, seat)  # for the actions on a seat, which has one (checked above)
    if action == "resend":
        stewardship.resend_link(admin_id, game_id, chosen, reason)
    elif action == "new_link":
        stewardship.new_link(admin_id, game_id, chosen, reason)
    elif action == "email":
        stewardship.change_email(admin_id, game_id, chosen, fields["email"], reason)
    elif action == "hand_over":
        stewardship.hand_over(admin_id, game_id, chosen, fields["name"], fields["email"],
                              reason)
    elif action == "revoke_games":
        stewardship.revoke_games_links(admin_id, game_id, chosen, reason)
    elif action in ("pause", "resume", "extend"):
        hours = int(fields["hours"]) if fields["hours"].isdigit() and \
            fields["hours"].isascii() and len(fields["hours"]) < 5 else None
        stewardship.clock_action(admin_id, game_id, action, reason, hours)
    elif action == "bot":
        stewardship.hand_to_bot(admin_id, game_id, chosen, fields["bot"], reason)
    elif action == "absent_bot":
        stewardship.set_absent_bot(admin_id, game_id, fields["bot"], reason)
    elif action == "take_back":
        stewardship.take_back(admin_id, game_id, reason)
    elif action == "abort":
        stewardship.abort_game(admin_id, game_id, reason)
    else:
        raise stewardship.Malformed("choose an action from the list")
    wake_sender()
    flash(gettext("Done: %(action)s.", action=gettext(ACTIONS[action].label)))
    return redirect(url_for("admin.game", game_id=game_id), code=303)


# --- mail and audit -----------------------------------------------------------------------------

@bp.get("/outbox")
def outbox(error: str | None = None):
    wanted = request.args.get("status", "")
    rows = admin_views.outbox(wanted)
    return render_template("admin/outbox.html", rows=rows, wanted=wanted, error=error)


def _outbox_again(exc: ServiceError, message_id: int):
    """Refused on the outbox page, which says why."""
    return outbox(f"{exc.message[:1].upper()}{exc.message[1:]}; nothing was done."), exc.status


def _notices_again(exc: ServiceError, game_id: int, target_id: str | None = None):
    """The game's page again, saying why its channels were not changed."""
    return _game_page(_load_game(game_id), exc.message), exc.status


@bp.post("/games/<int:game_id>/notices")
@refused_with(_notices_again)
def notice_add(game_id: int):
    """A channel for the game (a chat or push target), given by an organiser."""
    if _load_game(game_id) is None:
        return _no_game(game_id)
    shown = notices.add(notices.GAME, game_id, request.form.get("url", ""),
                        request.form.getlist("kinds"), request.form.get("language", ""))
    flash(gettext("Added %(target)s. Send a test to see that it arrives.", target=shown))
    return redirect(url_for("admin.game", game_id=game_id, _anchor="notices"), code=303)


@bp.post("/games/<int:game_id>/notices/<target_id>/test")
@refused_with(_notices_again)
def notice_test(game_id: int, target_id: str):
    data = _load_game(game_id)
    if data is None:
        return _no_game(game_id)
    error = notices.send_test(notices.GAME, game_id, target_id)
    if error is not None:
        return _game_page(data, gettext("The test did not arrive: %(reason)s",
                                        reason=error)), 422
    flash(gettext("The test was sent, and the service took it: look for it there."))
    return redirect(url_for("admin.game", game_id=game_id, _anchor="notices"), code=303)


@bp.post("/games/<int:game_id>/notices/<target_id>/remove")
@refused_with(_notices_again)
def notice_remove(game_id: int, target_id: str):
    if _load_game(game_id) is None:
        return _no_game(game_id)
    notices.remove(notices.GAME, game_id, target_id)
    return redirect(url_for("admin.game", game_id=game_id, _anchor="notices"), code=303)


@bp.post("/outbox/<int:message_id>/retry")
@refused_with(_outbox_again)
def retry(message_id: int):
    stewardship.retry_mail(g.admin.id, message_id)
    wake_sender()
    flash(gettext("Mail %(id)d is queued again.", id=message_id))
    return redirect(url_for("admin.outbox"), code=303)


@bp.get("/audit")
def audit():
    rows = admin_views.audit_log()
    return render_template("admin/audit.html", rows=rows)


# --- rated games ------------------------------------------------------------------------------

@bp.get("/ratings")
def rated_games(error: str | None = None):
    """The rated games, the flagged ones first to look at: why, who, and a form to void one."""
    flagged = request.args.get("show") != "all"
    return render_template("admin/ratings.html", entries=ratings.rated_games(flagged),
                           flagged=flagged, words=ratings.FLAG_WORDS, error=error)


@bp.post("/ratings/<int:game_id>/void")
@refused_with(lambda exc, game_id: (rated_games(exc.message), exc.status))
def void_rating(game_id: int):
    ratings.void_result(g.admin.id, game_id, request.form.get("reason", ""))
    flash(gettext("The result of game %(id)d is voided; the ratings were computed again "
                  "without it.", id=game_id))
    return redirect(url_for("admin.rated_games"), code=303)
