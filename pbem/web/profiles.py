"""A player's profile pages (pbem.services.profiles): asking for the link to one's games at
/me, the profile reached from the "my games" page by the same key, and the public profile
/players/<public id>, which never shows an address.

Every GET only shows a page (mail scanners open links); the forms POST with CSRF.
"""

from __future__ import annotations

from typing import NamedTuple

from flask import Blueprint, redirect, render_template, request, url_for

from ..ground import i18n
from ..ground.i18n import LANGUAGE_NAMES, LANGUAGES, _
from ..ground.models import FEED_CALENDAR, NOTIFY_CHOICES, TALK_CHOICES
from ..services import notices
from ..services.errors import ServiceError
from ..services.feeds import calendar_feed_token, feed_url
from ..services.profiles import own_profile, public_profile, request_link, save_profile
from .seat import COMMON_ZONES
from .site import answer_refusals, error_page, refused_with, wake_sender

bp = Blueprint("profiles", __name__)


class Result(NamedTuple):
    """What happened to a target, said on the profile page."""

    ok: bool
    text: str


def client_address() -> str:
    """The client's address as the limits count it (see [serve] trusted_proxies)."""
    return (request.remote_addr or "unknown")[:64]


answer_refusals(bp)


@bp.get("/me")
def ask():
    return render_template("profiles/ask.html", form={}, error=None)


def _ask_again(exc: ServiceError):
    return render_template("profiles/ask.html", form=request.form, error=exc.message), exc.status


@bp.post("/me")
@refused_with(_ask_again)
def ask_post():
    email = request_link(request.form.get("email"), client_address())
    wake_sender()
    return render_template("profiles/asked.html", email=email)


def _edit_page(token: str, form=None, errors=None, status: int = 200, saved: bool = False,
               notice_result=None):
    profile, is_saved, ratings = own_profile(token)
    calendar_link = feed_url(calendar_feed_token(token), FEED_CALENDAR)
    targets = notices.targets(notices.PLAYER, token) if notices.is_enabled() else []
    i18n.use(profile.language)  # the page in the language the player chose
    return render_template("profiles/edit.html", token=token, profile=profile,
                           is_saved=is_saved, ratings=ratings, form=form, errors=errors or {},
                           saved=saved, languages=LANGUAGES, language_names=LANGUAGE_NAMES,
                           notify_choices=NOTIFY_CHOICES, talk_choices=TALK_CHOICES,
                           zones=COMMON_ZONES, calendar_link=calendar_link,
                           notices_on=notices.is_enabled(), targets=targets,
                           notice_kinds=notices.KIND_WORDS, player_kinds=notices.PLAYER_KINDS,
                           off_kinds=notices.OFF_BY_DEFAULT,
                           notice_result=notice_result), status


@bp.get("/me/<token>/profile")
def edit(token: str):
    return _edit_page(token, saved=request.args.get("saved") == "1")


@bp.post("/me/<token>/profile")
def edit_post(token: str):
    errors = save_profile(token, request.form)
    if errors:
        return _edit_page(token, request.form, errors, 422)
    return redirect(url_for("profiles.edit", token=token, saved=1), code=303)


def _notice_refused(exc: ServiceError, token: str):
    """The profile page again, saying why the target was not added (the error page for a
    link that is not a profile's)."""
    if exc.status == 404:
        return error_page(exc)
    return _edit_page(token, status=422, notice_result=Result(False, exc.message))


@bp.post("/me/<token>/notices")
@refused_with(_notice_refused)
def notice_add(token: str):
    shown = notices.add(notices.PLAYER, token, request.form.get("url", ""),
                        request.form.getlist("kinds"))
    return _edit_page(token, notice_result=Result(True, _(
        "Added %(target)s. Send a test to see that it arrives.", target=shown)))


@bp.post("/me/<token>/notices/<target_id>/test")
def notice_test(token: str, target_id: str):
    error = notices.send_test(notices.PLAYER, token, target_id)
    if error is None:
        return _edit_page(token, notice_result=Result(True, _(
            "The test was sent, and the service took it: look for it there.")))
    return _edit_page(token, status=422, notice_result=Result(False, _(
        "The test did not arrive: %(reason)s", reason=error)))


@bp.post("/me/<token>/notices/<target_id>/remove")
def notice_remove(token: str, target_id: str):
    notices.remove(notices.PLAYER, token, target_id)
    return redirect(url_for("profiles.edit", token=token, _anchor="notices"), code=303)


@bp.get("/players/<public_id>")
def public(public_id: str):
    profile = public_profile(public_id, request.args.get("page"))
    return render_template("profiles/public.html", profile=profile)
