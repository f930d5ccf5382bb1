"""A player's profile, without a password: the address is the identity, proved by a "my games"
link (pbem.services.my_games), which every mail to a seat carries and which anyone may ask for
at /me by typing the address (`request_link`: mailed to that address only).

A `Profile` row holds what the address chose: the name others see, its language, time zone
and mail choices, which become its seats' defaults in new games once saved (`defaults_for`),
and the public id its public page (/players/<public id>) goes by. That page shows the name,
the ratings and the finished games with their places; never the address.

`profile_for` makes the row with its defaults on first use (in a write transaction); a page
that only shows it uses `profile_or_default`, which writes nothing (GET never acts).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from flask import current_app
from sqlalchemy import func
from sqlmodel import Session, col, select

from ..games import SetupProblem, game_kinds, rules_for
from ..ground import clock, i18n
from ..ground.db import insert_pending, one_at_a_time, reading, utcnow, writing
from ..ground.i18n import _
from ..ground.models import (
    FINISHED,
    NOTIFY_CHOICES,
    TALK_CHOICES,
    Game,
    LinkRequest,
    Profile,
    Rating,
    Seat,
)
from . import mail
from .errors import Malformed, NotFound, TooMany
from .mail import kinds
from .mail.sending import send
from .my_games import email_of, held_by
from .players import EMAIL_PATTERN, check_player, network_of
from .ratings import is_listed, name_is_taken, ranks_of

PAGE_FINISHED = 20  # finished games a public page lists at a time, the newest first
MAX_PAGES = 10000


def _latest_seat(session: Session, email: str) -> Seat | None:
    return session.exec(select(Seat).where(held_by(email)).order_by(col(Seat.id).desc())
                        .limit(1)).first()


def _default(session: Session, email: str) -> Profile:
    """The profile `email` has before it chose anything (not added to the session): the name
    and language of its latest seat; without one a name made from its public id (never a
    part of the address, which public pages must not show)."""
    seat = _latest_seat(session, email)
    language = seat.language if seat is not None else current_app.config["GAMES_LANGUAGE"]
    profile = Profile(email=email, name="", language=language)
    profile.name = seat.name if seat is not None else f"Player {profile.public_id[:6]}"
    return profile


def profile_or_default(session: Session, email: str) -> Profile:
    """The profile of `email`, or (without a row) its defaults, unsaved: for reading."""
    email = email.lower()
    found = session.exec(select(Profile).where(Profile.email == email)).first()
    return found if found is not None else _default(session, email)


def profile_for(session: Session, email: str) -> Profile:
    """The profile of `email` (lower-cased), its row made with the defaults on first use; in
    a write transaction. Two transactions making it at once: the second waits for the first
    (an advisory lock on PostgreSQL, SQLite's one writer) and finds its row."""
    email = email.lower()
    found = session.exec(select(Profile).where(Profile.email == email)).first()
    if found is not None:
        return found
    one_at_a_time(session, f"profile {email}")
    found = session.exec(select(Profile).where(Profile.email == email)).first()
    if found is not None:
        return found
    profile = _default(session, email)
    session.add(profile)
    session.flush()
    return profile


@dataclass(frozen=True)
class SeatDefaults:
    """What a saved profile gives a new seat of its address."""

    language: str
    timezone: str | None
    notify: str
    talk_notify: str


def defaults_for(session: Session, emails: list[str]) -> dict[str, SeatDefaults]:
    """The saved profiles' choices for new seats, by lower-case address (only those saved)."""
    wanted = sorted({e.lower() for e in emails if e})
    if not wanted:
        return {}
    rows = session.exec(select(Profile).where(col(Profile.email).in_(wanted),
                                              col(Profile.chosen).is_(True)))
    return {p.email: SeatDefaults(p.language, p.timezone, p.notify, p.talk_notify)
            for p in rows}


# --- the profile's own page -------------------------------------------------------------------

@dataclass(frozen=True)
class ShownRating:
    """A rating as the pages show it: the conservative estimate (ordinal) and games played."""

    kind: str
    title: str
    ordinal: float
    games: int
    provisional: bool


def ratings_of(session: Session, player: str) -> list[ShownRating]:
    """The ratings of `player` (an address, or a computer player's key), by game kind; one not
    listed on its ranking yet is provisional (pbem.services.ratings.standings)."""
    kinds = game_kinds()
    return [ShownRating(r.kind, rules_for(r.kind).title, r.ordinal, r.games,
                        not is_listed(session, r.kind, player))
            for r in session.exec(select(Rating).where(Rating.player == player)
                                  .order_by(Rating.kind)) if r.kind in kinds]


def own_profile(token: str) -> tuple[Profile, bool, list[ShownRating]]:
    """The profile the "my games" key `token` opens (saved or not: the flag), its ratings."""
    with reading() as session:
        email = email_of(session, token)
        profile = profile_or_default(session, email)
        return profile, profile.id is not None, ratings_of(session, email)


def read_profile_form(form, email: str) -> tuple[dict | None, dict[str, str]]:
    """The profile form checked: the values, or the errors by field name."""
    errors: dict[str, str] = {}
    values: dict = {}
    try:
        values["name"] = check_player(form.get("name", ""), email).name
    except SetupProblem as exc:
        errors["name"] = str(exc)
    try:
        values["language"] = i18n.check_language(form.get("language", ""))
    except ValueError as exc:
        errors["language"] = str(exc)
    zone = (form.get("timezone") or "").strip()
    if zone:
        try:
            clock.zone(zone)
            values["timezone"] = zone
        except ValueError:
            errors["timezone"] = _("unknown time zone %(name)s; use a name like Europe/Berlin "
                                   "or UTC, or leave it blank for each game's own",
                                   name=repr(zone[:64]))
    else:
        values["timezone"] = None
    for field, choices in (("notify", NOTIFY_CHOICES), ("talk_notify", TALK_CHOICES)):
        if form.get(field) not in choices:
            errors[field] = _("choose one of the options offered")
        else:
            values[field] = form.get(field)
    return (None, errors) if errors else (values, {})


def save_profile(token: str, form, now: datetime | None = None) -> dict[str, str]:
    """Save the profile form for the address `token` opens; the errors by field (nothing
    saved then), or none."""
    now = now or utcnow()
    with writing() as session:
        email = email_of(session, token, now=now)
        read, errors = read_profile_form(form, email)
        if errors:
            return errors
        values = cast(dict, read)  # None only with errors
        profile = profile_for(session, email)
        if name_is_taken(session, values["name"], email):
            return {"name": _("the name %(name)s is taken: another rated player or a computer "
                              "player has it (or one that looks the same); choose another",
                              name=repr(values["name"]))}
        for name, value in values.items():
            setattr(profile, name, value)
        profile.chosen, profile.updated_at = True, now
        session.add(profile)
    return {}


# --- the public page ----------------------------------------------------------------------------

@dataclass(frozen=True)
class FinishedGame:
    """A finished game on a public page: what, when, the place, and its spectator page."""

    game_id: int
    title: str
    kind_title: str
    finished_at: datetime | None
    rank: int | None
    players: int
    watch_id: str
    rated: bool


def finished_games(session: Session, email: str, page: int = 1,
                   size: int = PAGE_FINISHED) -> tuple[list[FinishedGame], int]:
    """One page of the finished games whose seats `email` holds, the newest first, with its
    place; and how many there are in all."""
    mine = [held_by(email), Game.status == FINISHED]
    total = session.exec(select(func.count()).select_from(Seat).join(
        Game, col(Game.id) == Seat.game_id).where(*mine)).one()
    seats = session.exec(select(Seat, Game).join(Game, col(Game.id) == Seat.game_id).where(
        *mine).order_by(col(Game.finished_at).desc(), col(Game.id).desc())
        .offset((page - 1) * size).limit(size)).all()
    counts = dict(session.exec(select(Seat.game_id, func.count()).where(
        col(Seat.game_id).in_([g.id for _, g in seats])).group_by(col(Seat.game_id))).all())
    games = []
    for seat, game in seats:
        rules = rules_for(game.kind)
        rank = ranks_of(rules, rules.loads(game.state_json)).get(seat.colour)
        game_id = cast(int, game.id)  # a saved game's
        games.append(FinishedGame(game_id, game.title, rules.title, game.finished_at, rank,
                                  counts.get(game_id, 0), game.watch_id, game.rated))
    return games, total


@dataclass(frozen=True)
class PublicProfile:
    public_id: str
    name: str
    ratings: list[ShownRating]
    finished: list[FinishedGame]
    page: int
    pages: int  # pages of finished games (at least 1)


def check_page(raw: object) -> int:
    """A page number from a query string (blank: the first); Malformed says what to write."""
    text = str(raw if raw is not None else "1").strip() or "1"
    if not (text.isascii() and text.isdigit()) or len(text) > 5 \
            or not 1 <= int(text) <= MAX_PAGES:
        raise Malformed(_("The page must be a whole number from 1 to %(most)d.",
                          most=MAX_PAGES))
    return int(text)


def public_profile(public_id: str, page: object = None) -> PublicProfile:
    """What anyone may see of a player: the name, ratings and one page of finished games;
    never the address. NotFound for an unknown id or a page past the last."""
    if not isinstance(public_id, str) or not 0 < len(public_id) <= 32 \
            or not all(c.isascii() and (c.isalnum() or c in "-_") for c in public_id):
        raise NotFound(_("There is no such player."))
    with reading() as session:
        profile = session.exec(select(Profile).where(Profile.public_id == public_id)).first()
        if profile is None:
            raise NotFound(_("There is no such player."))
        number = check_page(page)
        finished, total = finished_games(session, profile.email, number)
        pages = max(1, -(-total // PAGE_FINISHED))
        if number > pages:
            raise NotFound(_("There is no such page: this player's finished games fill "
                             "%(pages)d.", pages=pages))
        return PublicProfile(profile.public_id, profile.name,
                             ratings_of(session, profile.email), finished, number, pages)


# --- asking for the link ------------------------------------------------------------------------

def check_address(text: object) -> str:
    """An address typed into the /me form, lower-cased; Malformed says what to type."""
    email = str(text or "").strip()
    if len(email) > 254 or not EMAIL_PATTERN.fullmatch(email):
        raise Malformed(_("Type your email address, like anna@example.org."))
    return email.lower()


def request_link(typed: object, client: str, now: datetime | None = None) -> str:
    """Someone at /me asks for the link to the games of the address they typed: a mail with a
    fresh "my games" link goes to that address if it is known here, and nothing otherwise; the
    answer is the same either way (it tells nobody whether an address plays here), and so is
    the work done for it: the key and the mail are made for an unknown address too, and taken
    back (a savepoint rolled back), so that the time taken tells nothing either.

    Counted a day per requester, known or not (TooMany): requests for one address from one
    network (an IPv4 /24 or IPv6 /64: others asking for someone's address never lock that
    person out), and requests from one network. Returns the address."""
    email = check_address(typed)
    now = now or utcnow()
    config = current_app.config
    network = network_of(client) or "unknown"
    with writing() as session:
        one_at_a_time(session, f"link to {email}", f"link ip {network}")
        since = now - timedelta(days=1)
        asked = session.exec(select(func.count()).select_from(LinkRequest).where(
            LinkRequest.email == email, LinkRequest.client == network,
            LinkRequest.at > since)).one()
        if asked >= config["GAMES_LINK_REQUESTS_PER_ADDRESS"]:
            raise TooMany(_("A link for this address was asked for %(count)d times today from "
                            "your network, as often as this server sends one in a day. The "
                            "link in any mail this server sent you still works: use the newest "
                            "one, or try again tomorrow; nothing was sent.", count=asked))
        from_client = session.exec(select(func.count()).select_from(LinkRequest).where(
            LinkRequest.client == network, LinkRequest.at > since)).one()
        if from_client >= config["GAMES_LINK_REQUESTS_PER_IP"]:
            raise TooMany(_("Too many links were asked for from your network today. The link "
                            "in any mail this server sent you still works; or try again "
                            "tomorrow. Nothing was sent."))
        session.add(LinkRequest(email=email, client=network, at=now))
        # The same two look-ups for every address (no short cut for a known one).
        seat = _latest_seat(session, email)
        profile = session.exec(select(Profile).where(Profile.email == email)).first()
        known = seat is not None or profile is not None
        language = profile.language if profile is not None else \
            seat.language if seat is not None else config["GAMES_LANGUAGE"]
        mailed = session.begin_nested()
        token = mail.mint_player_key(session, email)
        with i18n.in_language(language):
            send(session, kinds.MY_LINK, to=email, secrets=(token,), site=config["BASE_URL"],
                 link=mail.games_link(token))
        insert_pending(session)
        if known:
            mailed.commit()
        else:
            mailed.rollback()
    return email
