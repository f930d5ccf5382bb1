"""The feeds a player follows games with, without mail: a game's moves as an Atom feed (public
for its spectator page, private for a seat) and an address's deadlines as an iCalendar feed.

This module owns the feeds' keys and what each feed holds; writing the Atom and iCalendar text
is the web floor's (pbem.web.feeds). A feed program polls one address for years, so a private
feed's key is stable: it is the HMAC of the server's secret key and the key row's random
nonce, so that a page can show it again, and only its SHA-256 is stored (to find the row). A
database alone therefore gives no working feed link; a server with another secret key shows
none of the old links (the player makes a new one). A new feed link revokes the old one; a
seat's feed key is also revoked with the seat's links (pbem.services.seats.revoke_seat_links)
and stops when the seat changes hands (the key holds the address that held the seat); an
address's calendar key is revoked with its "my games" links, which make it
(pbem.services.seats.revoke_address_links), whichever way they are revoked.

A seat's feed holds only what the seat's own page shows of the moves (its own draws, never
another seat's), and no message of the table talk, private or not; the public feed holds a
spectator's words only. Reading a feed changes nothing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from flask import current_app
from sqlalchemy import update
from sqlmodel import Session, col, select

from ..games import GameRules, rules_for
from ..ground import i18n
from ..ground.db import reading, utcnow, writing
from ..ground.i18n import N_, gettext
from ..ground.models import (
    FEED_CALENDAR,
    FEED_SEAT,
    RUNNING,
    FeedKey,
    Game,
    Seat,
)
from ..ground.tokens import hash_token, is_well_formed
from .errors import NotFound, ServiceError
from .log import LogEntry, log_for
from .my_games import email_of, held_by
from .seats import seat_game_seats

MAX_ENTRIES = 50  # the latest moves an Atom feed holds (feed readers keep the older ones)
MAX_GAMES = 500  # the running games a calendar lists

UNKNOWN_FEED = N_("There is no feed at this address: it may be mistyped or cut short. Copy the "
                  "feed link again from your page.")
REVOKED_FEED = N_("This feed link was replaced by a newer one, or the seat's links were "
                  "revoked, so it no longer works. Copy the new feed link from your page.")


class FeedGone(ServiceError):
    """A feed key that worked once and was revoked: 410, so that a feed reader stops asking."""

    status = 410


def feed_token(key: FeedKey) -> str:
    """The key's token: 32 characters of the URL-safe alphabet (like a seat key's), made from
    the server's secret key and the row's nonce."""
    secret = current_app.config["SECRET_KEY"].encode("utf-8")
    digest = hmac.new(secret, f"pbem-feed|{key.kind}|{key.nonce}".encode("ascii"),
                      hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest[:24]).decode("ascii")


def _shown(key: FeedKey | None) -> str | None:
    """The token of a live key, if this server's secret key still makes it."""
    if key is None:
        return None
    token = feed_token(key)
    return token if hmac.compare_digest(hash_token(token), key.token_hash) else None


def feed_url(token: str | None, kind: str) -> str | None:
    """The address of a private feed, for a page to show (None without a token)."""
    if token is None:
        return None
    base = current_app.config["BASE_URL"].rstrip("/")
    return f"{base}/feeds/{token}/{'moves.atom' if kind == FEED_SEAT else 'deadlines.ics'}"


def _new_key(session: Session, kind: str, email: str, seat_id: int | None,
             now: datetime) -> str:
    session.exec(update(FeedKey).where(col(FeedKey.kind) == kind, col(FeedKey.email) == email,
                                       col(FeedKey.seat_id) == seat_id if seat_id is not None
                                       else col(FeedKey.seat_id).is_(None),
                                       col(FeedKey.revoked_at).is_(None))
                 .values(revoked_at=now))
    key = FeedKey(kind=kind, email=email, seat_id=seat_id, nonce=secrets.token_urlsafe(18),
                  token_hash="", created_at=now)
    token = feed_token(key)
    key.token_hash = hash_token(token)
    session.add(key)
    return token


def _live(session: Session, kind: str, email: str, seat_id: int | None) -> FeedKey | None:
    query = select(FeedKey).where(FeedKey.kind == kind, FeedKey.email == email,
                                  col(FeedKey.revoked_at).is_(None))
    query = query.where(FeedKey.seat_id == seat_id) if seat_id is not None \
        else query.where(col(FeedKey.seat_id).is_(None))
    return session.exec(query.order_by(col(FeedKey.id).desc())).first()


def _found(session: Session, token: str, kind: str) -> FeedKey:
    """The feed key of `token`: NotFound for one that never was, FeedGone for a revoked one."""
    if not is_well_formed(token):
        raise NotFound(gettext(UNKNOWN_FEED))
    key = session.exec(select(FeedKey).where(FeedKey.token_hash == hash_token(token))).first()
    if key is None or key.kind != kind:
        raise NotFound(gettext(UNKNOWN_FEED))
    if key.revoked_at is not None:
        raise FeedGone(gettext(REVOKED_FEED))
    return key


# --- a seat's Atom feed -------------------------------------------------------------------------

def seat_feed_token(seat_id: int, email: str) -> str | None:
    """The feed token of a seat (opened by its link) held by `email` (None: none made yet)."""
    with reading() as session:
        return _shown(_live(session, FEED_SEAT, email.lower(), seat_id))


def new_seat_feed(token: str, now: datetime | None = None) -> str:
    """A new feed key for the seat a link opens (a POST); the old one stops working."""
    now = now or utcnow()
    with writing() as session:
        seat = seat_game_seats(session, token)[0]
        if seat.bot is not None:
            raise NotFound(gettext("A computer player has no feed."))
        return _new_key(session, FEED_SEAT, seat.email.lower(), seat.id, now)


@dataclass(frozen=True)
class MovesFeed:
    """What an Atom feed of a game's moves says, read in one snapshot."""

    game: Game
    seats: list[Seat]
    rules: GameRules
    reader: int  # a seat number, or -1 for a spectator
    language: str
    entries: list[LogEntry]  # newest first, in the reader's words and language

    @property
    def version(self) -> str:
        """What names the feed's text: it changes only when this does (ETag)."""
        game = self.game
        names = "|".join(f"{s.name}/{s.colour}" for s in self.seats)
        raw = (f"{game.watch_id}|{game.turn}|{game.clock_version}|{game.updated_at.isoformat()}"
               f"|{game.status}|{self.reader}|{self.language}|{names}")
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:32]


def _seats(session: Session, game: Game) -> list[Seat]:
    return list(session.exec(select(Seat).where(col(Seat.game_id) == game.id)
                             .order_by(col(Seat.number))))


def _moves_feed(session: Session, game: Game, seats: list[Seat], reader: int,
                language: str, with_entries: bool) -> MovesFeed:
    rules = rules_for(game.kind)
    i18n.use(language)  # the feed's words, and what the web floor writes around them
    entries = log_for(session, game, reader, MAX_ENTRIES, rules)[0] if with_entries else []
    return MovesFeed(game, seats, rules, reader, language, list(entries))


WATCH_ID = re.compile(r"[A-Za-z0-9_-]{8,32}")
UNKNOWN_GAME = N_("There is no game to watch at this address. Check that it was copied whole; "
                  "the address is in every mail of the game, under “See the board”.")


def public_moves(watch_id: str, language: str, with_entries: bool = True) -> MovesFeed:
    """The public feed of the game of a spectator address: a spectator's words."""
    if not WATCH_ID.fullmatch(watch_id):
        raise NotFound(gettext(UNKNOWN_GAME))
    with reading() as session:
        game = session.exec(select(Game).where(Game.watch_id == watch_id)).first()
        if game is None:
            raise NotFound(gettext(UNKNOWN_GAME))
        return _moves_feed(session, game, _seats(session, game), -1, language, with_entries)


def seat_moves(token: str, with_entries: bool = True) -> MovesFeed:
    """A seat's private feed: the moves in its own words and language. Refused (410) once the
    key is revoked or the seat is held by another address (or a computer player) now."""
    with reading() as session:
        key = _found(session, token, FEED_SEAT)
        seat = session.get(Seat, key.seat_id)
        if seat is None or seat.bot is not None or seat.email.lower() != key.email:
            raise FeedGone(gettext(REVOKED_FEED))
        game = cast(Game, session.get(Game, seat.game_id))  # a seat's game is there
        return _moves_feed(session, game, _seats(session, game), seat.number, seat.language,
                           with_entries)


# --- an address's calendar ----------------------------------------------------------------------

def calendar_feed_token(player_token: str) -> str | None:
    """The calendar feed token of the address a "my games" link opens (None: none made)."""
    with reading() as session:
        email = email_of(session, player_token)
        return _shown(_live(session, FEED_CALENDAR, email, None))


def new_calendar_feed(player_token: str, now: datetime | None = None) -> str:
    """A new calendar feed key for the address a "my games" link opens (a POST)."""
    now = now or utcnow()
    with writing() as session:
        email = email_of(session, player_token, lock=True, now=now)
        key = _new_key(session, FEED_CALENDAR, email, None, now)
        latest = session.exec(select(Seat.language).where(held_by(email))
                              .order_by(col(Seat.game_id).desc()).limit(1)).first()
    if latest:  # what is said next in the language of the "my games" page it is said on
        i18n.use(latest)
    return key


@dataclass(frozen=True)
class Turn:
    """One running game of the address as its calendar shows it: its deadline when it is the
    address's move, else the deadline of the seat to move (after which it may be theirs)."""

    game: Game
    seat: Seat  # the address's seat
    to_move: Seat
    mine: bool
    deadline: datetime
    reminders: tuple[int, ...]  # hours before the deadline


@dataclass(frozen=True)
class Calendar:
    email: str
    language: str
    turns: list[Turn]

    @property
    def version(self) -> str:
        raw = "|".join(f"{t.game.id}:{t.game.turn}:{t.game.clock_version}:"
                       f"{t.deadline.isoformat()}:{t.to_move.name}:{t.game.title}"
                       for t in self.turns)
        return hashlib.sha256(f"{self.language}|{raw}".encode()).hexdigest()[:32]


def _reminders(text: str) -> tuple[int, ...]:
    hours = []
    for part in (text or "").split(","):
        part = part.strip()
        if part.isascii() and part.isdigit():
            hours.append(int(part))
    return tuple(sorted(set(hours), reverse=True))


def calendar(token: str) -> Calendar:
    """The running games of the address a calendar key belongs to, with their deadlines."""
    with reading() as session:
        key = _found(session, token, FEED_CALENDAR)
        mine = session.exec(select(Seat).where(held_by(key.email))
                            .order_by(col(Seat.game_id).desc()).limit(MAX_GAMES)).all()
        games = {g.id: g for g in session.exec(
            select(Game).where(col(Game.id).in_([s.game_id for s in mine]),
                               col(Game.status) == RUNNING, col(Game.deadline_at).is_not(None)))}
        every = session.exec(select(Seat).where(col(Seat.game_id).in_(list(games)))
                             .order_by(col(Seat.game_id), col(Seat.number))).all() if games else []
        language = mine[0].language if mine else current_app.config["GAMES_LANGUAGE"]
    seats_of: dict[int, list[Seat]] = {}
    for seat in every:
        seats_of.setdefault(seat.game_id, []).append(seat)
    turns = []
    for seat in mine:
        game = games.get(seat.game_id)
        if game is None:
            continue
        rules = rules_for(game.kind)
        number = rules.to_move(rules.loads(game.state_json))
        if number is None:
            continue
        to_move = seats_of[cast(int, game.id)][number]  # a saved game's
        # (the games read have a deadline)
        turns.append(Turn(game, seat, to_move, to_move.id == seat.id,
                          cast(datetime, game.deadline_at),
                          _reminders(game.reminder_hours) if to_move.id == seat.id else ()))
    turns.sort(key=lambda t: (t.deadline, t.game.id))
    return Calendar(key.email, language, turns)
