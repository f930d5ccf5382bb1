"""What every page shares: CSRF protection, security headers, error pages, waking the sender.

Errors under /api/ are answered in JSON, everywhere else as a page that says what to do.
"""

from __future__ import annotations

import logging

import orjson
from flask import Blueprint, Flask, current_app, g, jsonify, make_response, render_template, request
from flask.json.provider import DefaultJSONProvider
from flask_wtf.csrf import CSRFError, CSRFProtect, same_origin, validate_csrf
from sqlalchemy.exc import SQLAlchemyError
from werkzeug.exceptions import HTTPException
from werkzeug.routing import IntegerConverter
from wtforms import ValidationError

from ..games.interface import SetupProblem, move_words
from ..ground import i18n
from ..ground.db import SCHEMA_OK
from ..ground.i18n import N_, gettext
from ..ground.logs import HideSecrets, guard, hide_secrets
from ..services import turnfile
from ..services.errors import Rejected, ServiceError

logger = logging.getLogger(__name__)
UNGUARDED = ("/health", "/favicon.ico")  # answered without the schema check


class SiteCSRF(CSRFProtect):
    """Flask-WTF's CSRF protection, which also takes a same-origin `Origin` header for a
    missing Referer over https, and logs every refusal.

    Over https Flask-WTF wants the form's Referer to be this site; the pages' Referrer-Policy
    (same-origin) sends it to this site only, so a form posts here and a seat's link never
    reaches another site. A browser or a privacy extension that sends no Referer at all still
    sends Origin with a POST: when it names this site, the form is taken. Each refusal is
    logged as a WARNING with its reason, the method, the path (keys masked) and the client's
    address; never the token."""

    def protect(self, apply_exemptions: bool = False) -> None:
        if apply_exemptions and (not request.endpoint or self._is_exempt()):
            return
        if request.method not in current_app.config["WTF_CSRF_METHODS"]:
            return
        try:
            validate_csrf(self._get_csrf_token())
        except ValidationError as exc:
            self._error_response(exc.args[0])
        if request.is_secure and current_app.config["WTF_CSRF_SSL_STRICT"]:
            good = f"https://{request.host}/"
            if request.referrer:
                if not same_origin(request.referrer, good):
                    self._error_response("The referrer does not match the host.")
            elif not request.origin:
                self._error_response("The referrer and origin headers are missing.")
            elif request.origin == "null" or not same_origin(request.origin, good):
                self._error_response("The origin does not match the host (no referrer).")
        g.csrf_valid = True

    def _error_response(self, reason: str):
        logger.warning("refused a form (CSRF check): %s %s from %s: %s", request.method,
                       hide_secrets(request.path), request.remote_addr, reason)
        super()._error_response(reason)


csrf = SiteCSRF()

HINTS = {  # translated where shown
    400: N_("The request could not be read. Go back, reload the page and try again."),
    404: N_("There is nothing here. Check the address, or use the link in your latest mail."),
    405: N_("This address does not take that kind of request."),
    413: N_("That was too much data for one request. Send a shorter move."),
    429: N_("Too many attempts. Wait a minute, then try again."),
}


HSTS_SECONDS = 365 * 24 * 3600  # browsers keep to https for a year once they saw it

HideSeatSecrets = HideSecrets  # its former name

# Pages reached by a secret link (a hand, a player's games, an invitation, a starter's game),
# pages that show every hand (admin, mailbox) and the API: never kept by a cache, a proxy or
# the browser's back button.
PRIVATE_PATHS = ("/seat/", "/me/", "/invite/", "/new/game/", "/api/", "/mailbox", "/admin")


class BoundedInt(IntegerConverter):
    """`<int:...>` in every route: a number SQLite can hold (64 bits), so a huge id in an
    address is a plain 404, not an overflow (PostgreSQL's keys hold 32 bits: `db.get_row`)."""

    def __init__(self, map, fixed_digits=0, min=None, max=2**63 - 1, signed=False):
        super().__init__(map, fixed_digits, min, max, signed)


def form_number(raw: object, low: int = 0, high: int = 2**31 - 1) -> int | None:
    """A whole number typed into a form or a query string, when it is one from `low` to
    `high` (by default what every database's keys hold); else None. Every number from outside
    goes through this or the like before it reaches a query: PostgreSQL refuses a number
    beyond its column's 32 bits, SQLite one beyond 64, and either would be a 500."""
    text = str(raw).strip() if raw is not None else ""
    if not (text.isascii() and text.isdigit()) or len(text) > len(str(high)):
        return None
    number = int(text)
    return number if low <= number <= high else None


def wants_json() -> bool:
    return request.path.startswith("/api/")


def error_response(status: int, message: str):
    if wants_json():
        return jsonify(error=message, status=status), status
    return render_template("error.html", status=status, message=message), status


def error_page(exc: ServiceError, **_view_args):
    """The error page with a refusal's status and message: the usual answer to a refusal."""
    return render_template("error.html", status=exc.status, message=exc.message), exc.status


def refused_with(answer):
    """Mark a view whose refusals get `answer(exc, **view_args)` instead of its blueprint's
    usual one (see `answer_refusals`)."""
    def mark(view):
        view.refusal = answer
        return view
    return mark


def answer_refusals(bp: Blueprint, usual=error_page, setup_problems: bool = False) -> None:
    """The one place a blueprint answers a ServiceError its views let through: with the view's
    own answer (`refused_with`), else with `usual`, both called as `answer(exc, **view_args)`.

    A refusal met while answering (the page that would say why cannot be read either) gets
    the error page of that refusal. With `setup_problems`, a game that cannot be set up as
    asked (SetupProblem) is answered as a Rejected with its words."""
    def refused(exc: Exception):
        if not isinstance(exc, ServiceError):
            exc = Rejected(str(exc))
        view = current_app.view_functions.get(request.endpoint or "")
        answer = getattr(view, "refusal", usual)
        try:
            return answer(exc, **(request.view_args or {}))
        except ServiceError as again:
            return error_page(again)

    bp.register_error_handler(ServiceError, refused)
    if setup_problems:
        bp.register_error_handler(SetupProblem, refused)


def site_name() -> str:
    """What the server calls itself: it hosts every game in `pbem.games`, so no game's name."""
    return gettext("Board games by post")


def game_title(game) -> str:
    """The title of the game a Game row plays (its game module's), or '' without one."""
    from ..games import rules_for

    kind = getattr(game, "kind", None)
    return rules_for(kind).title if kind else ""


def rules_note(game) -> str:
    """The reading of the rules a game is played with (its variant), for every page of it."""
    from ..games import rules_for

    kind, state_json = getattr(game, "kind", None), getattr(game, "state_json", None)
    if not kind or not state_json:
        return ""
    rules = rules_for(kind)
    return rules.variant_note(rules.loads(state_json))


def result_table_of(game):
    """The game's result as one table (a ResultTable), or None while it goes on or when its
    game has none (the pages then show its outcome lines)."""
    from ..games import rules_for

    kind, state_json = getattr(game, "kind", None), getattr(game, "state_json", None)
    if not kind or not state_json:
        return None
    rules = rules_for(kind)
    return rules.result_table(rules.loads(state_json))


def turn_number_of(game) -> int:
    """The turn a game is in, as players count them (a placement or exchange and its draws)."""
    from ..services import turns

    return turns.current_of(game)


def turn_label_of(game) -> str:
    """The turn a game is in, as its players name it ("Turn 7"; "Round 12, red's turn")."""
    from ..games import rules_for

    rules = rules_for(game.kind)
    return rules.turn_label(rules.loads(game.state_json), turn_number_of(game))


class FastJSON(DefaultJSONProvider):
    """JSON answers written by orjson: an API document with its fifty log entries takes
    a tenth of the standard library's time. The same JSON as Flask's own provider (keys
    sorted, compact), but non-ASCII characters are written as UTF-8 instead of escaped; dates,
    dataclasses and anything else orjson does not write go through Flask's `default` as before.
    Reading JSON is Flask's own."""

    OPTIONS = (orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME
               | orjson.OPT_PASSTHROUGH_DATACLASS)

    def response(self, *args, **kwargs):
        if self.compact is False or (self.compact is None and self._app.debug):
            return super().response(*args, **kwargs)  # indented, for reading
        obj = self._prepare_response_obj(args, kwargs)
        try:
            body = orjson.dumps(obj, default=self.default, option=self.OPTIONS)
        except orjson.JSONEncodeError:  # integers beyond 64 bits, non-string keys
            return super().response(*args, **kwargs)
        return self._app.response_class(body + b"\n", mimetype=self.mimetype)


def init_app(app: Flask) -> None:
    """Call before the blueprints are registered: their routes use the bounded int."""
    app.json = FastJSON(app)
    app.url_map.converters["int"] = BoundedInt
    csrf.init_app(app)
    app.add_template_global(rules_note)
    app.add_template_global(site_name)
    app.add_template_global(game_title)
    app.add_template_global(result_table_of)
    app.add_template_global(turn_number_of)
    app.add_template_global(turn_label_of)
    app.add_template_global(turnfile.turn_line)

    @app.template_filter("player_letter")
    def _player_letter(colour: str) -> str:
        """'Y gelb': the letter that marks a colour's pieces on the map (its English name's
        first, as the map draws it), with the colour's name in the reader's language."""
        return f"{colour[:1].upper()} {i18n.colour(colour)}"
    app.add_template_global(move_words)
    # Also where pbem.ground.logs.setup has not run (`flask --app pbem run`, tests).
    for name in ("werkzeug", "gunicorn.access", app.logger.name):
        guard(logging.getLogger(name))

    @app.before_request
    def _schema_is_the_codes():
        """Before `pbem init-db` after an upgrade, every page would fail on a missing column:
        say instead that the server is being upgraded (503). Asked of the database once per
        process while all is well; /health names the problem itself."""
        if app.extensions.get(SCHEMA_OK) or request.path in UNGUARDED \
                or request.path.startswith("/static/"):
            return None
        from ..ground import schema  # Alembic: loaded by the first request, not by every app

        try:
            found = schema.checked(app)
        except SQLAlchemyError:  # unreachable: the page fails as it would have, /health says so
            return None
        if found is None:
            return None
        return error_response(503, gettext("The server is being upgraded. Try again in a few "
                                           "minutes."))

    @app.after_request
    def _headers(response):
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("X-Frame-Options", "DENY")
        # Seat links hold secrets: never send them on as a Referer to another site, but to
        # this one (Flask-WTF checks a form's Referer over https).
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault(
            "Content-Security-Policy",
            "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
            "frame-ancestors 'none'; form-action 'self'")
        # Seat pages hold a hand, admin pages every hand: no cache, no back-button copy.
        if request.path.startswith(PRIVATE_PATHS):
            response.headers["Cache-Control"] = "no-store"
        if app.config["BASE_URL"].startswith("https://"):
            response.headers.setdefault("Strict-Transport-Security",
                                        f"max-age={HSTS_SECONDS}; includeSubDomains")
        return response

    @app.errorhandler(CSRFError)
    def _csrf(error):
        return error_response(400, gettext("The form had expired or came from elsewhere, so "
                                           "nothing was done. Reload the page and try again."))

    @app.errorhandler(HTTPException)
    def _http(error):
        response, status = error_response(
            error.code or 500, gettext(HINTS[error.code]) if error.code in HINTS else
            error.description or gettext("Something went wrong."))
        if error.code == 405:  # keep the Allow header the original answer had
            response = make_response(response, status)
            response.headers["Allow"] = error.get_response().headers.get("Allow", "")
            return response
        return response, status


def wake_sender() -> None:
    """Ask the mail sender thread (when `pbem serve` runs one) to deliver now."""
    sender = current_app.extensions.get("pbem_sender")
    if sender is not None:
        sender.wake()
