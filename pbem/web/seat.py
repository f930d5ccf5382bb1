"""The seat page: one seat's view of its game, and the move form (build, preview, confirm).

A GET only ever shows. The preview is a POST that changes nothing; only the confirming POST,
quoting the turn number the page was built for, calls `submit_move`.
"""

from __future__ import annotations

from typing import Any, cast

from flask import (
    Blueprint,
    Response,
    current_app,
    flash,
    redirect,
    render_template,
    request,
    url_for,
)

from ..games import MoveError, choices
from ..ground.db import utcnow
from ..ground.i18n import N_, format_local, gettext, ngettext
from ..ground.models import (
    FEED_SEAT,
    NOTIFY_CHOICES,
    TALK_CHOICES,
    UNDO_ASKED,
    UNDO_DECLINED,
    UNDO_DONE,
)
from ..services import feeds, notices, talk, turnfile, undo
from ..services.errors import Malformed, NotYourTurn, Rejected, ServiceError
from ..services.moves import moved_on, submit_move, submit_orders
from ..services.seat_settings import (
    come_back,
    end_vacation_now,
    set_language,
    set_notify,
    set_timezone,
    take_vacation,
)
from ..services.seats import SeatContext, load_seat
from .site import answer_refusals, refused_with, wake_sender

bp = Blueprint("seat", __name__, url_prefix="/seat")

MAX_TURN_FILE = 32 * 1024

COMMON_ZONES = ("UTC", "Europe/London", "Europe/Berlin", "Europe/Madrid", "Europe/Athens",
                "America/New_York", "America/Chicago", "America/Los_Angeles",
                "America/Sao_Paulo", "Asia/Kolkata", "Asia/Tokyo", "Australia/Sydney")


def _render(ctx: SeatContext, token: str, status: int = 200, error: str | None = None,
            form=None, notice: str | None = None, talk_error: str | None = None):
    seat = ctx.seat
    view = ctx.rules.view(ctx.state, seat.number)
    to_move = ctx.rules.to_move(ctx.state)
    now = utcnow()
    return render_template(
        "seat/page.html", ctx=ctx, game=ctx.game, seat=seat, seats=ctx.seats, rules=ctx.rules,
        view=view, token=token, is_my_turn=to_move == seat.number,
        to_move=ctx.seats[to_move] if to_move is not None else None,
        legal=ctx.rules.legal(ctx.state) if to_move == seat.number else [],
        patterns=ctx.rules.move_patterns(ctx.state) if to_move == seat.number else [],
        outcome=ctx.rules.outcome_lines(ctx.state), error=error, notice=notice,
        form=form or {}, notify_choices=NOTIFY_CHOICES, now=now, tz=seat_zone(ctx),
        on_vacation=seat.vacation_until is not None and seat.vacation_until > now,
        vacation_left=current_app.config["GAMES_VACATION_DAYS"] - seat.vacation_days_used,
        zones=COMMON_ZONES, talk=talk.thread_of(seat, ctx.seats), talk_choices=TALK_CHOICES,
        talk_max=current_app.config["TALK_MAX_LENGTH"], talk_error=talk_error,
        undo_request=undo.pending_for(ctx.game, seat, ctx.seats, now),
        may_ask_undo=current_app.config["GAMES_UNDO"] and ctx.game.status == "running"
        and bool(ctx.log) and ctx.log[0].seat == seat.number,
        feed_link=feeds.feed_url(feeds.seat_feed_token(seat.id, seat.email), FEED_SEAT)
        if seat.bot is None else None,
        notices_on=notices.is_enabled(), notice_kinds=notices.KIND_WORDS,
        player_kinds=notices.PLAYER_KINDS, off_kinds=notices.OFF_BY_DEFAULT,
        notice_targets=notices.targets(notices.SEAT, token)
        if notices.is_enabled() and seat.bot is None else [],
        kind_template=f"games/{ctx.game.kind}/"), status


def seat_zone(ctx: SeatContext) -> str:
    """The zone a seat's times are shown in: its own choice, else the game's."""
    return ctx.seat.timezone or ctx.game.timezone


def _load(token: str) -> SeatContext:
    return load_seat(token)


def _form_turn() -> int:
    raw = request.form.get("turn", "")
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 9:
        raise Malformed(gettext("The form did not say which turn it was made for. Reload the "
                                "page and make the move again."))
    return int(raw)


def _refusal(exc: ServiceError, token: str, **_view_args):
    """The page again, current, with the reason nothing was done (and the form as sent)."""
    form = request.form if isinstance(exc, (Rejected, Malformed)) else None
    return _render(_load(token), token, exc.status, error=exc.message, form=form)


answer_refusals(bp, _refusal)


@bp.get("/<token>")
def page(token: str):
    return _render(_load(token), token)


@bp.post("/<token>/edit")
def edit(token: str):
    """Back from the preview to the form, filled in as it was; changes nothing."""
    return _render(_load(token), token, form=request.form)


@bp.post("/<token>/preview")
def preview(token: str):
    ctx = _load(token)
    turn = _form_turn()
    if turn != ctx.game.turn:
        raise moved_on(ctx.game, turn)
    if ctx.rules.to_move(ctx.state) != ctx.seat.number:
        raise NotYourTurn(gettext("It is not your move now; nothing was changed."))
    try:
        text = ctx.rules.move_from_form(ctx.state, request.form)
        move = ctx.rules.parse(ctx.state, text)
        after = ctx.rules.apply(ctx.state, move)
    except MoveError as exc:
        raise Rejected(str(exc)) from None
    # Never the card a draw would take: foretell names no hidden card and the map shows only
    # the position the game kind says a preview may show; describe is told in a spectator's
    # words, on the map as it is now (for a game kind that cannot foretell).
    lines = ctx.rules.foretell(ctx.state, move, after)
    if lines is not None:
        shown = ctx.rules.foretold_state(ctx.state, move, after)
        # a game that foretells takes move= too (pbem.games.interface.Shown)
        picture = cast(Any, ctx.rules).board_picture(shown, ctx.seat.number, False,
                                                     move=move if shown is after else None)
    else:
        lines = ctx.rules.describe(ctx.state, move, after, None)
        shown = ctx.state
        picture = ctx.rules.board_picture(shown, ctx.seat.number, False)
    return render_template("seat/preview.html", ctx=ctx, game=ctx.game, seat=ctx.seat,
                           seats=ctx.seats, rules=ctx.rules, token=token,
                           notation=ctx.rules.notation(move), lines=lines, form=request.form,
                           view=ctx.rules.view(shown, ctx.seat.number), picture=picture,
                           foreseen=shown is after, kind_template=f"games/{ctx.game.kind}/")


@bp.post("/<token>/move")
def move(token: str):
    turn = _form_turn()
    text = request.form.get("move", "")
    if not text:
        ctx = _load(token)
        try:
            text = ctx.rules.move_from_form(ctx.state, request.form)
        except MoveError as exc:
            raise Rejected(str(exc)) from None
    result = submit_move(token, text, turn, via="web", client=request.remote_addr)
    wake_sender()
    for line in result.lines:
        flash(line)
    return redirect(url_for("seat.page", token=token), code=303)


def _seat_action(token: str, action, done):
    """Run one of the seat's own settings actions (POST), then show the page again; `done`
    makes the message from the action's result and the seat's context (for its time zone)."""
    result = action()
    flash(done(result, load_seat(token, log_limit=0)))
    return redirect(url_for("seat.page", token=token), code=303)


def turn_file_text(ctx: SeatContext) -> str:
    rules, state, seat = ctx.rules, ctx.state, ctx.seat
    legal = choices(rules, state) if rules.to_move(state) == seat.number else []
    return turnfile.render(ctx.game.title, ctx.game.id, seat.name, seat.colour, ctx.game.turn,
                           rules.position_lines(state, seat.number), legal, rules.order_examples,
                           turn_number=ctx.turn_number or None)


@bp.get("/<token>/turnfile")
def turn_file(token: str):
    """This seat's turn file as a text download (it changes nothing)."""
    ctx = load_seat(token, log_limit=0)
    name = turnfile.file_name(ctx.game.kind, ctx.game.id, ctx.turn_number or 1, ctx.seat.colour)
    return Response(turn_file_text(ctx), mimetype="text/plain",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})


@bp.post("/<token>/turnfile")
def upload_turn_file(token: str):
    """Orders from an uploaded turn file (or pasted into the box), applied one by one.

    The link is checked before the file is read: a made-up link costs one lookup, not the
    reading of 32 KB of text (issue 34)."""
    load_seat(token, log_limit=0)
    upload = request.files.get("turnfile")
    raw = upload.read(MAX_TURN_FILE + 1) if upload and upload.filename else \
        request.form.get("orders", "").encode("utf-8")
    if len(raw) > MAX_TURN_FILE:
        raise Malformed(gettext("That file is too long for a turn file; upload the one "
                                "you downloaded, with your orders written in."))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    result = submit_orders(token, turnfile.read(text), via="web", client=request.remote_addr)
    wake_sender()
    for applied in result.applied:
        for line in applied.lines:
            flash(line)
    if result.failed:
        flash(gettext("Stopped at '%(order)s': %(reason)s", order=result.failed,
                      reason=result.error) + " " + gettext("The moves before it were made."))
    return redirect(url_for("seat.page", token=token), code=303)


@bp.post("/<token>/settings")
def settings(token: str):
    return _seat_action(token, lambda: set_notify(token, request.form.get("notify", "")),
                        lambda result, ctx: gettext("Your mail setting is saved."))


@bp.post("/<token>/notices")
def notice_add(token: str):
    return _seat_action(token, lambda: notices.add(notices.SEAT, token,
                                                   request.form.get("url", ""),
                                                   request.form.getlist("kinds")),
                        lambda shown, ctx: gettext(
                            "Added %(target)s. Send a test to see that it arrives.",
                            target=shown))


@bp.post("/<token>/notices/<target_id>/test")
def notice_test(token: str, target_id: str):
    return _seat_action(token, lambda: notices.send_test(notices.SEAT, token, target_id),
                        lambda error, ctx: gettext(
                            "The test was sent, and the service took it: look for it there.")
                        if error is None else gettext("The test did not arrive: %(reason)s",
                                                      reason=error))


@bp.post("/<token>/notices/<target_id>/remove")
def notice_remove(token: str, target_id: str):
    return _seat_action(token, lambda: notices.remove(notices.SEAT, token, target_id),
                        lambda _result, ctx: gettext("Removed."))


@bp.post("/<token>/language")
def language(token: str):
    """The seat's language for its pages and mails (a button of the switch on the page)."""
    return _seat_action(token, lambda: set_language(token, request.form.get("language", "")),
                        lambda code, ctx: gettext("This page and your mails are now in "
                                                  "English."))


@bp.post("/<token>/timezone")
def timezone(token: str):
    name = request.form.get("timezone", "").strip()[:64]
    return _seat_action(token, lambda: set_timezone(token, name),
                        lambda result, ctx: gettext("Times are now shown in %(zone)s.",
                                                    zone=name))


@bp.post("/<token>/vacation")
def vacation(token: str):
    raw = request.form.get("days", "")
    days = int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 4 else -1
    return _seat_action(token, lambda: take_vacation(token, days),
                        lambda until, ctx: gettext("Your clock is paused until %(until)s.",
                                                   until=format_local(until, seat_zone(ctx))))


@bp.post("/<token>/vacation/end")
def end_vacation(token: str):
    def told(days_back: int, ctx: SeatContext) -> str:
        back = " " + ngettext("%(num)d unused day is given back.",
                              "%(num)d unused days are given back.", days_back) \
            if days_back else ""
        return gettext("Your vacation is over: your clock runs again.") + back
    return _seat_action(token, lambda: end_vacation_now(token), told)


@bp.post("/<token>/back")
def back(token: str):
    return _seat_action(token, lambda: come_back(token),
                        lambda result, ctx: gettext("Welcome back: your turns wait for you "
                                                    "again from your next one."))


def _talk_refusal(exc: ServiceError, token: str):
    """The page again, the message kept in its box, and why (under the box)."""
    return _render(_load(token), token, exc.status, form=request.form, talk_error=exc.message)


@bp.post("/<token>/talk")
@refused_with(_talk_refusal)
def send_message(token: str):
    """A message to every seat or privately to one (the thread is under the board)."""
    posted = talk.post_message(token, request.form.get("text", ""), request.form.get("to"),
                               via="web")
    wake_sender()
    flash(gettext("Your message was sent to everyone.") if posted.to is None
          else gettext("Your private message was sent."))
    return redirect(url_for("seat.page", token=token, _anchor="talk"), code=303)


@bp.post("/<token>/talk/read")
def read_messages(token: str):
    return _seat_action(token, lambda: talk.mark_read(token, request.form.get("upto")),
                        lambda result, ctx: gettext("The messages are marked read."))


@bp.post("/<token>/talk/settings")
def talk_settings(token: str):
    return _seat_action(token, lambda: talk.set_talk_notify(token,
                                                            request.form.get("talk_notify", "")),
                        lambda result, ctx: gettext("Your mail setting for messages is saved."))


@bp.post("/<token>/undo")
def ask_undo(token: str):
    """Ask the others to let this seat take back its last turn."""
    def done(request, ctx: SeatContext) -> str:
        if request.status == UNDO_DONE:
            return gettext("Your last turn is taken back: the computer players agreed.")
        return gettext("The other players are asked; your turn is taken back if every one of "
                       "them agrees before anyone moves.")
    return _seat_action(token, lambda: undo.ask(token), done)


@bp.post("/<token>/undo/answer")
def answer_undo(token: str):
    """Agree to or decline another seat's request to take back its last turn."""
    # Said after the answer, in the seat's language (the request's may be another).
    told = {UNDO_DONE: N_("Everyone agreed: the turn is taken back."),
            UNDO_DECLINED: N_("You declined: the turn stays as it was."),
            UNDO_ASKED: N_("You agreed; the others have not all answered yet.")}
    return _seat_action(token, lambda: undo.answer(token, request.form.get("answer")),
                        lambda status, ctx: gettext(told[status]))
