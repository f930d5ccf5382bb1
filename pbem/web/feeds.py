"""The feeds (pbem.services.feeds) as feed programs read them: a game's moves as Atom, public
at `/watch/<watch_id>/feed.atom` (a spectator's words, in `[games] language` or `?lang=`) and
private for a seat at `/feeds/<key>/moves.atom` (its own words and language), and an address's
deadlines as iCalendar at `/feeds/<key>/deadlines.ics`; the POSTs that make a new feed link.

Atom is written by feedgen and iCalendar by icalendar (both maintained libraries: escaping,
dates and line folding are theirs). A feed program polls every few minutes, so each answer has
an ETag and a Last-Modified made from the game rows alone, checked before the log is read:
a poll of an unchanged feed is answered 304 from one or two indexed reads. Private feeds are
`Cache-Control: private, no-cache` (a feed program keeps the copy and asks again; no shared
cache may keep it) rather than a page's `no-store`, which would keep feed programs from
asking conditionally. Every route here that is a GET changes nothing.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import cast

from feedgen.feed import FeedGenerator
from flask import Blueprint, Response, current_app, flash, redirect, request, url_for
from icalendar import Alarm, Event
from icalendar import Calendar as ICalendar

from ..games import rules_for
from ..ground import i18n
from ..ground.i18n import gettext
from ..services import feeds
from ..services.errors import Malformed, ServiceError
from .site import answer_refusals, error_response

bp = Blueprint("feeds", __name__)

ATOM = "application/atom+xml; charset=utf-8"
ICS = "text/calendar; charset=utf-8"


def _base() -> str:
    return current_app.config["BASE_URL"].rstrip("/")


def _error(exc: ServiceError, **_view_args):
    response, status = error_response(exc.status, exc.message)
    response = current_app.make_response((response, status))
    response.headers["Cache-Control"] = "no-store"
    return response


answer_refusals(bp, _error)


def _conditional(version: str, modified, private: bool) -> Response:
    """An empty answer with the feed's validators, already 304 when the poller has this
    version (the caller fills in the body otherwise)."""
    response = Response(status=200)
    response.set_etag(version)
    response.last_modified = modified
    response.headers["Cache-Control"] = "private, no-cache" if private else "no-cache"
    response.headers["X-Robots-Tag"] = "noindex, nofollow"
    response = cast(Response, response.make_conditional(request))  # it answers itself
    # make_conditional adds a Date of its own; the HTTP server (gunicorn, Werkzeug) adds the
    # one an answer needs, and gunicorn would send both.
    del response.headers["Date"]
    return response


def _atom(feed: feeds.MovesFeed, self_link: str | None) -> bytes:
    game, seats = feed.game, feed.seats
    watch = f"{_base()}/watch/{game.watch_id}"
    generator = FeedGenerator()
    generator.id(uuid.uuid5(uuid.NAMESPACE_URL, f"{watch}#{feed.reader}").urn)
    generator.title(gettext("%(title)s #%(id)d: the moves", title=game.title, id=game.id))
    generator.subtitle(", ".join(f"{i18n.shown_name(s.name)} ({i18n.colour(s.colour)})" for s in seats))
    generator.link(href=watch, rel="alternate", type="text/html")
    if self_link:
        generator.link(href=self_link, rel="self", type="application/atom+xml")
    generator.language(feed.language)
    generator.author({"name": gettext("Board games by post")})
    generator.generator("pbem")
    generator.updated(feed.entries[0].created_at if feed.entries else game.updated_at)
    rules = rules_for(game.kind)
    state = rules.loads(game.state_json)  # its players and start name the turns
    for entry in feed.entries:  # newest first, as feeds list them
        mover = seats[entry.seat] if 0 <= entry.seat < len(seats) else None
        item = generator.add_entry(order="append")
        item.id(uuid.uuid5(uuid.NAMESPACE_URL, f"{watch}#move-{entry.number}-"
                           f"{entry.created_at.isoformat()}-{feed.reader}").urn)
        first = entry.lines[0] if entry.lines else entry.notation
        item.title(gettext("%(turn)s: %(line)s", turn=rules.turn_label(
            state, entry.turn_number or 1), line=first))
        item.content("\n".join(entry.lines), type="text")
        item.link(href=f"{watch}?at={entry.number + 1}", rel="alternate", type="text/html")
        item.published(entry.created_at)
        item.updated(entry.created_at)
        if mover is not None:
            item.author({"name": f"{i18n.shown_name(mover.name)} ({i18n.colour(mover.colour)})"})
    return generator.atom_str(pretty=True)


@bp.get("/watch/<watch_id>/feed.atom")
def public_moves(watch_id: str):
    """A game's moves as a spectator sees them (no hand, no private message)."""
    raw = request.args.get("lang")
    try:
        language = i18n.check_language(raw) if raw is not None \
            else current_app.config["GAMES_LANGUAGE"]
    except ValueError as exc:
        raise Malformed(str(exc)) from None
    head = feeds.public_moves(watch_id, language, with_entries=False)
    response = _conditional(head.version, head.game.updated_at, private=False)
    if response.status_code == 304:
        return response
    feed = feeds.public_moves(watch_id, language)
    self_link = f"{_base()}/watch/{watch_id}/feed.atom" + (f"?lang={language}" if raw else "")
    response = _conditional(feed.version, feed.game.updated_at, private=False)
    response.set_data(_atom(feed, self_link))
    response.mimetype = "application/atom+xml"
    return response


@bp.get("/feeds/<key>/moves.atom")
def seat_moves(key: str):
    """A seat's moves feed: its own view (its own draws), in its language."""
    head = feeds.seat_moves(key, with_entries=False)
    response = _conditional(head.version, head.game.updated_at, private=True)
    if response.status_code == 304:
        return response
    feed = feeds.seat_moves(key)
    response = _conditional(feed.version, feed.game.updated_at, private=True)
    response.set_data(_atom(feed, None))
    response.mimetype = "application/atom+xml"
    return response


def _ics(calendar: feeds.Calendar) -> bytes:
    base = _base()
    host = base.split("://", 1)[-1].split("/", 1)[0] or "pbem"
    ical = ICalendar()
    ical.add("prodid", "-//Board games by post//pbem//EN")
    ical.add("version", "2.0")
    ical.add("calscale", "GREGORIAN")
    ical.add("x-wr-calname", gettext("Deadlines of your games"))
    for turn in calendar.turns:
        game = turn.game
        event = Event()
        event.add("uid", f"pbem-{game.watch_id}-{turn.seat.number}@{host}")
        event.add("dtstamp", game.updated_at)
        event.add("last-modified", game.updated_at)
        event.add("sequence", game.clock_version + game.turn)
        event.add("dtstart", turn.deadline)
        event.add("dtend", turn.deadline + timedelta(minutes=15))
        event.add("transp", "TRANSPARENT")
        event.add("url", f"{base}/watch/{game.watch_id}")
        if turn.mine:
            event.add("summary", gettext("Your move in %(title)s #%(id)d: deadline",
                                         title=game.title, id=game.id))
            event.add("description", gettext(
                "It is your move in %(title)s #%(id)d. If you do not move by this time, the "
                "game plays the default move for you. Your seat's link is in your latest mail "
                "from the game.", title=game.title, id=game.id))
        else:
            event.add("summary", gettext("%(title)s #%(id)d: %(name)s's deadline",
                                         title=game.title, id=game.id, name=turn.to_move.name))
            event.add("description", gettext(
                "%(name)s (%(colour)s) is to move in %(title)s #%(id)d by this time; your "
                "turn may come after.", name=turn.to_move.name,
                colour=i18n.colour(turn.to_move.colour), title=game.title, id=game.id))
        for hours in turn.reminders:
            alarm = Alarm()
            alarm.add("action", "DISPLAY")
            alarm.add("description", gettext("Your move in %(title)s #%(id)d",
                                             title=game.title, id=game.id))
            alarm.add("trigger", timedelta(hours=-hours))
            event.add_component(alarm)
        ical.add_component(event)
    return ical.to_ical()


@bp.get("/feeds/<key>/deadlines.ics")
def deadlines(key: str):
    """An address's deadlines, for a calendar program to subscribe to."""
    calendar = feeds.calendar(key)
    i18n.use(calendar.language)
    newest = max((t.game.updated_at for t in calendar.turns), default=None)
    response = _conditional(calendar.version, newest, private=True)
    if response.status_code == 304:
        return response
    response.set_data(_ics(calendar))
    response.mimetype = "text/calendar"
    return response


@bp.post("/seat/<token>/feed")
def new_seat_feed(token: str):
    """A new private feed link for the seat (the old one stops working)."""
    feeds.new_seat_feed(token)
    flash(gettext("Your new feed link is below; the old one no longer works."))
    return redirect(url_for("seat.page", token=token, _anchor="feed"), code=303)


@bp.post("/me/<token>/calendar")
def new_calendar_feed(token: str):
    """A new calendar feed link for the address (the old one stops working)."""
    feeds.new_calendar_feed(token)
    flash(gettext("Your new calendar link is below; the old one no longer works."))
    return redirect(url_for("players.page", token=token, _anchor="calendar"), code=303)

