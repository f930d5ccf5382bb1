"""The open lobby (`[games] lobby = true`): a player posts an open game from their games page
(the game, its rules, how many players, the time control, rated or not, a minimum rating),
others join it from the lobby with their own "my games" link, and it starts when full, made
by `create_game` as every game is (seats in the order joined, or drawn), with the usual first
mails. The poster can withdraw it before it starts; one nobody fills is taken down after
`[games] lobby_hours` (a Chore of the scheduler) and its poster told.

The "my games" key proves the address, so joining needs no confirmation mail; the lobby page
itself (/lobby) is public and shows names and ratings, never an address. Abuse guards, counted
in the database so that every server process sees them: open games posted a day per address
(`lobby_posts_per_address`) and per client network (`lobby_posts_per_ip`: an IPv4 /24 or an
IPv6 /64, as `pbem.services.players.network_of` counts it, which is also what a post or join
keeps), games joined a day
per address (`lobby_joins_per_address`). A player below a game's minimum rating is refused
with their rating and the minimum.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from flask import current_app
from sqlalchemy import func, update
from sqlmodel import Session, col, select

from ..games import rules_for
from ..ground import i18n
from ..ground.db import get_row, one_at_a_time, reading, utcnow, writing
from ..ground.i18n import _
from ..ground.models import (
    EXPIRED,
    FULL,
    LOBBY_EXPIRY,
    OPEN,
    PAUSED,
    RUNNING,
    STARTED,
    WITHDRAWN,
    Chore,
    Game,
    LobbySeat,
    OpenGame,
    Profile,
    Rating,
)
from .creating import create_game
from .deadlines import TimeControl
from .errors import GameNotRunning, Malformed, NotFound, Rejected, TooMany
from .game_settings import Posting
from .mail import kinds
from .mail.sending import send
from .my_games import email_of
from .players import PlayerSpec, network_of
from .profiles import profile_for, profile_or_default
from .ratings import MODEL, standings

MAX_SHOWN = 200  # open games the lobby lists, the newest first


def is_open() -> bool:
    return bool(current_app.config["GAMES_LOBBY"])


def _rating_of(session: Session, kind: str, email: str) -> float:
    """The shown number (ordinal) of `email` in game `kind`; a new player's is openskill's
    starting one (0)."""
    held = session.exec(select(Rating.ordinal).where(Rating.kind == kind,
                                                      Rating.player == email)).first()
    return held if held is not None else MODEL.rating().ordinal()


# --- posting ----------------------------------------------------------------------------------

def post(token: str, posting: Posting, client: str, now: datetime | None = None) -> int:
    """Post an open game for the address the "my games" key `token` opens; its id."""
    now = now or utcnow()
    config = current_app.config
    client = network_of(client) or "unknown"
    with writing() as session:
        email = email_of(session, token, now=now)
        one_at_a_time(session, f"lobby post {email}", f"lobby post ip {client}")
        since = now - timedelta(days=1)
        mine = session.exec(select(func.count()).select_from(OpenGame).where(
            OpenGame.poster == email, OpenGame.created_at > since)).one()
        if mine >= config["GAMES_LOBBY_POSTS_PER_ADDRESS"]:
            raise TooMany(_("You have posted %(count)d open games today, as many as this "
                            "server takes from one player in a day. Try again tomorrow; "
                            "nothing was posted.", count=mine))
        theirs = session.exec(select(func.count()).select_from(OpenGame).where(
            OpenGame.client == client, OpenGame.created_at > since)).one()
        if theirs >= config["GAMES_LOBBY_POSTS_PER_IP"]:
            raise TooMany(_("Too many open games were posted from your network today. Try "
                            "again tomorrow; nothing was posted."))
        profile_for(session, email)  # the name the lobby shows
        game = OpenGame(kind=posting.kind, variant=posting.variant, players=posting.players,
                        deadline_hours=posting.time.deadline_hours,
                        reminder_hours=posting.time.reminders_text,
                        weekend_pause=posting.time.weekend_pause,
                        timezone=posting.time.timezone, rated=posting.rated,
                        min_rating=posting.min_rating, seating=posting.seating, poster=email,
                        client=client, status=OPEN, created_at=now,
                        expires_at=now + timedelta(hours=config["GAMES_LOBBY_HOURS"]))
        session.add(game)
        session.flush()
        session.add(LobbySeat(open_game_id=game.id, email=email, client=client, joined_at=now))
        session.add(Chore(kind=LOBBY_EXPIRY, ref_id=game.id, due_at=game.expires_at))
        return game.id


def _game_id(raw: object) -> int:
    text = str(raw)
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise Malformed(_("Choose a game from the lobby."))
    return int(text)


def _locked(session: Session, open_game_id: object) -> OpenGame:
    game = get_row(session, OpenGame, _game_id(open_game_id), with_for_update=True)
    if game is None:
        raise NotFound(_("There is no such open game in the lobby."))
    return game


def _seats(session: Session, game: OpenGame) -> list[LobbySeat]:
    return list(session.exec(select(LobbySeat).where(LobbySeat.open_game_id == game.id)
                             .order_by(col(LobbySeat.joined_at), col(LobbySeat.id))))


def join(token: str, open_game_id: object, client: str, now: datetime | None = None) -> int | None:
    """The address `token` opens joins an open game; the id of the game made when this join
    filled it, else None."""
    now = now or utcnow()
    config = current_app.config
    client = network_of(client) or "unknown"
    with writing() as session:
        email = email_of(session, token, now=now)
        game = _locked(session, open_game_id)
        rules = rules_for(game.kind)
        if game.status != OPEN or game.expires_at <= now:
            raise GameNotRunning(_("This game is no longer open: it started, was withdrawn or "
                                   "expired. Nothing was changed."))
        seats = _seats(session, game)
        if len(seats) >= game.players:  # full, its start failed and left it open: no more
            raise GameNotRunning(_("This game is no longer open: it started, was withdrawn or "
                                   "expired. Nothing was changed."))
        if any(s.email == email for s in seats):
            raise Rejected(_("You are already in this game."))
        if game.min_rating is not None:
            mine = _rating_of(session, game.kind, email)
            if mine < game.min_rating:
                raise Rejected(_("This game asks for a rating of at least %(least).1f in "
                                 "%(game)s; yours is %(mine).1f. Nothing was changed.",
                                 least=game.min_rating, game=rules.title, mine=mine))
        one_at_a_time(session, f"lobby join {email}")
        since = now - timedelta(days=1)
        joined = session.exec(select(func.count()).select_from(LobbySeat).join(
            OpenGame, col(OpenGame.id) == LobbySeat.open_game_id).where(
            LobbySeat.email == email, LobbySeat.joined_at > since,
            OpenGame.poster != email)).one()
        if joined >= config["GAMES_LOBBY_JOINS_PER_ADDRESS"]:
            raise TooMany(_("You have joined %(count)d games today, as many as this server "
                            "allows in a day. Try again tomorrow; nothing was changed.",
                            count=joined))
        profile_for(session, email)
        session.add(LobbySeat(open_game_id=game.id, email=email, client=client, joined_at=now))
        if len(seats) + 1 < game.players:
            return None
        game.status = FULL  # taken: a second start finds it so
        session.add(game)
    return _start(game.id, now)


def _start(open_game_id: int, now: datetime) -> int:
    """Make the full open game's Game by `create_game`, seats in the order joined or drawn."""
    with reading() as session:
        game = session.get(OpenGame, open_game_id)
        seats = _seats(session, game)
        names = {p.email: p for p in session.exec(
            select(Profile).where(col(Profile.email).in_([s.email for s in seats])))}
    order = [s.email for s in seats]
    if game.seating == "drawn":
        secrets.SystemRandom().shuffle(order)
    rules = rules_for(game.kind)
    try:
        created = create_game(
            [PlayerSpec(names[e].name, e) for e in order], None, kind=game.kind,
            title=rules.title, now=now, variant=game.variant, rated=game.rated,
            time=TimeControl(game.deadline_hours,
                             tuple(int(h) for h in game.reminder_hours.split(",") if h),
                             game.weekend_pause, game.timezone))
    except Exception:
        with writing() as session:  # not started: open again for another try
            session.exec(update(OpenGame).where(col(OpenGame.id) == open_game_id,
                                                col(OpenGame.status) == FULL).values(status=OPEN))
        raise
    with writing() as session:
        session.exec(update(OpenGame).where(col(OpenGame.id) == open_game_id)
                     .values(status=STARTED, game_id=created.game_id))
    return created.game_id


def _tell(session: Session, email: str, game: OpenGame, lines: list[str]) -> None:
    profile = profile_for(session, email)
    rules = rules_for(game.kind)
    with i18n.in_language(profile.language):
        send(session, kinds.LOBBY_NEWS, to=email, lines=[str(line) for line in lines],
             rules=rules)


def withdraw(token: str, open_game_id: object, now: datetime | None = None) -> None:
    """The poster takes their open game down before it starts; those who joined are told."""
    now = now or utcnow()
    with writing() as session:
        email = email_of(session, token, now=now)
        game = _locked(session, open_game_id)
        if game.poster != email:
            raise NotFound(_("There is no such open game of yours in the lobby."))
        if game.status != OPEN:
            raise GameNotRunning(_("This game is no longer open: it started, was withdrawn or "
                                   "expired. Nothing was changed."))
        game.status = WITHDRAWN
        session.add(game)
        rules = rules_for(game.kind)
        for seat in _seats(session, game):
            if seat.email != email:
                with i18n.in_language(profile_for(session, seat.email).language):
                    line = _("The open game of %(game)s you joined was withdrawn by its "
                             "poster; it will not start.", game=rules.title)
                _tell(session, seat.email, game, [line])


def expire_open_game(session: Session, open_game_id: int, now: datetime) -> bool:
    """The scheduler's chore: an open game still not full at its expiry is taken down and its
    poster told; False when it started or was withdrawn meanwhile."""
    game = session.get(OpenGame, open_game_id, with_for_update=True)
    if game is None or game.status != OPEN or game.expires_at > now:
        return False
    game.status = EXPIRED
    session.add(game)
    joined = len(_seats(session, game))
    rules = rules_for(game.kind)
    with i18n.in_language(profile_for(session, game.poster).language):
        line = _("Nobody filled your open game of %(game)s in time (%(joined)d of %(players)d "
                 "players), so it was taken down. Post it again from your games page if you "
                 "like.", game=rules.title, joined=joined, players=game.players)
    _tell(session, game.poster, game, [line])
    return True


# --- what the lobby shows -----------------------------------------------------------------------

@dataclass(frozen=True)
class Joined:
    name: str
    public_id: str
    rating: float
    games: int
    provisional: bool  # not listed on the ranking yet (pbem.services.ratings)


@dataclass(frozen=True)
class Listed:
    game: OpenGame
    title: str
    variant_label: str
    players: list[Joined]
    mine: bool  # posted by the reader
    joined: bool  # the reader is in it


def open_games(email: str | None = None, now: datetime | None = None) -> list[Listed]:
    """The open games (not full, not expired), the newest first, with who joined and their
    ratings; `email`: the reader, for their buttons."""
    now = now or utcnow()
    with reading() as session:
        games = list(session.exec(select(OpenGame).where(OpenGame.status == OPEN,
                                                         OpenGame.expires_at > now)
                                  .order_by(col(OpenGame.id).desc()).limit(MAX_SHOWN)))
        seats = list(session.exec(select(LobbySeat).where(
            col(LobbySeat.open_game_id).in_([g.id for g in games]))
            .order_by(col(LobbySeat.joined_at), col(LobbySeat.id))))
        emails = sorted({s.email for s in seats})
        profiles = {p.email: p for p in session.exec(select(Profile).where(
            col(Profile.email).in_(emails)))}
        ratings = {(r.kind, r.player): r for r in session.exec(select(Rating).where(
            col(Rating.player).in_(emails)))}
        held = {kind: standings(session, kind) for kind in {g.kind for g in games}}
    listed = []
    start = MODEL.rating().ordinal()
    for game in games:
        people = []
        for seat in (s for s in seats if s.open_game_id == game.id):
            profile = profiles.get(seat.email)
            rating = ratings.get((game.kind, seat.email))
            people.append(Joined(profile.name if profile else "?",
                                 profile.public_id if profile else "",
                                 rating.ordinal if rating else start,
                                 rating.games if rating else 0,
                                 not getattr(held[game.kind].get(seat.email), "listed", False)))
        mine_seats = [s.email for s in seats if s.open_game_id == game.id]
        rules = rules_for(game.kind)
        listed.append(Listed(game, rules.title, rules.variant_label(game.variant)
                             if len(rules.variants) > 1 else "", people, game.poster == email,
                             email in mine_seats))
    return listed


@dataclass(frozen=True)
class Started:
    """An open game of the reader's that filled and started: its game's title and number."""

    title: str
    game_id: int


def started_games(email: str) -> list[Started]:
    """The reader's open games that started and are being played (the lobby no longer lists
    them: it says where they went)."""
    with reading() as session:
        rows = session.exec(
            select(col(Game.title), col(Game.id)).join(OpenGame, col(OpenGame.game_id) == Game.id)
            .join(LobbySeat, col(LobbySeat.open_game_id) == OpenGame.id)
            .where(LobbySeat.email == email.lower(), OpenGame.status == STARTED,
                   col(Game.status).in_((RUNNING, PAUSED)))
            .order_by(col(Game.id).desc()).limit(MAX_SHOWN)).all()
    return [Started(title, game_id) for title, game_id in rows]


def reader(token: str) -> tuple[str, str]:
    """The address a "my games" key opens (for the lobby's buttons) and its language."""
    with reading() as session:
        email = email_of(session, token)
        return email, profile_or_default(session, email).language
