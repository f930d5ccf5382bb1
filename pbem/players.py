"""A player's "my games" page: every game of one email address, whose move it is, deadlines
and results, behind a secret link like a seat's (`PlayerKey`, only its hash stored).

Opening the page changes nothing (mail scanners open links); *Open* on a game is a POST that
mints a fresh seat key for that seat and goes to its page. It is not an account: there is no
password, and an organiser can revoke the links of an address (`revoke_player_links`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from flask import Blueprint, redirect, render_template, request, url_for
from .i18n import gettext
from sqlalchemy import func, update
from sqlmodel import Session, select

from . import i18n
from .db import reading, utcnow, writing
from .games import rules_for
from .mail import mint_key, seat_link
from .models import ABORTED, FINISHED, PAUSED, RUNNING, Game, PlayerKey, Seat
from .services import GameNotRunning, Malformed, NotFound, ServiceError
from .tokens import hash_token, is_well_formed

bp = Blueprint("players", __name__, url_prefix="/me")

UNKNOWN = ("This link to your games is not valid: it may be mistyped, cut short by the mail "
           "program, or revoked by an organiser. Use the link in your latest mail from a game.")
MAX_GAMES = 500


@dataclass(frozen=True)
class Entry:
    """One of the player's games, as the page lists it."""

    game: Game
    seat: Seat
    my_move: bool
    to_move: Seat | None
    deadline: str | None
    result: str | None

    @property
    def order(self) -> tuple:
        status = {RUNNING: 1, PAUSED: 2, FINISHED: 3, ABORTED: 4}.get(self.game.status, 5)
        due = self.game.deadline_at.timestamp() if self.game.deadline_at else float("inf")
        return (0 if self.my_move else status, due if status == 1 else 0, -self.game.id)


def _email_of(session: Session, token: str) -> str:
    if not is_well_formed(token):
        raise NotFound(UNKNOWN)
    key = session.exec(select(PlayerKey).where(PlayerKey.token_hash == hash_token(token))).first()
    if key is None or key.revoked_at is not None:
        raise NotFound(UNKNOWN)
    return key.email


def _result(rules, state, seats: list[Seat], seat: Seat) -> str | None:
    outcome = rules.outcome(state)
    if outcome is None:
        return None
    scores = outcome["scores"]
    by_colour = {s.colour: s for s in seats}
    winners = [by_colour[c] for c in outcome["winners"] if c in by_colour]
    pieces = outcome.get("pieces_left") or {}

    def standing(colour: str) -> tuple:  # ties on points go to the most pieces left
        return (scores.get(colour, 0), pieces.get(colour, 0))

    mine = scores.get(seat.colour)
    rank = 1 + sum(1 for c in scores if standing(c) > standing(seat.colour))
    won = seat in winners
    and_ = gettext(" and ")
    names = and_.join(f"{w.name} ({i18n.colour(w.colour)})" for w in winners)
    if won and len(winners) > 1:
        head = gettext("You won together with %(names)s",
                       names=and_.join(w.name for w in winners if w != seat))
    else:
        head = gettext("You won") if won else gettext("Won by %(names)s", names=names)
    return gettext("%(head)s. Your score: %(score)s, place %(rank)d of %(players)d.", head=head,
                   score=mine, rank=rank, players=len(seats))


def my_games(token: str) -> tuple[str, list[Entry]]:
    """The address a player key belongs to, and its games (the ones to move in first)."""
    with reading() as session:
        email = _email_of(session, token)
        mine = session.exec(select(Seat).where(func.lower(Seat.email) == email)
                            .order_by(Seat.game_id.desc()).limit(MAX_GAMES)).all()
        games = {g.id: g for g in session.exec(
            select(Game).where(Game.id.in_([s.game_id for s in mine])))}
        every = session.exec(select(Seat).where(Seat.game_id.in_(list(games)))
                             .order_by(Seat.game_id, Seat.number)).all()
    if mine:  # the page in the language of the player's latest game
        i18n.use(mine[0].language)
    seats_of: dict[int, list[Seat]] = {}
    for seat in every:
        seats_of.setdefault(seat.game_id, []).append(seat)
    entries = []
    for seat in mine:
        game = games[seat.game_id]
        rules = rules_for(game.kind)
        state = rules.loads(game.state_json)
        seats = seats_of[game.id]
        number = rules.to_move(state) if game.status in (RUNNING, PAUSED) else None
        to_move = seats[number] if number is not None else None
        zone = seat.timezone or game.timezone
        deadline = i18n.format_local(game.deadline_at, zone) \
            if game.deadline_at and game.status == RUNNING else None
        entries.append(Entry(game, seat, to_move is not None and to_move.id == seat.id
                             and game.status == RUNNING, to_move, deadline,
                             _result(rules, state, seats, seat)
                             if game.status == FINISHED else None))
    return email, sorted(entries, key=lambda e: e.order)


def open_seat(token: str, game_id: object) -> str:
    """A fresh link to the player's seat in `game_id` (a POST: it writes the new key)."""
    with writing() as session:
        email = _email_of(session, token)
        raw = str(game_id)
        if not (raw.isascii() and raw.isdigit()) or len(raw) > 9:  # within 32 bits
            raise Malformed("Choose a game from the list.")
        seat = session.exec(select(Seat).where(Seat.game_id == int(raw),
                                               func.lower(Seat.email) == email)).first()
        if seat is None:
            raise NotFound("You have no seat in that game.")
        game = session.get(Game, seat.game_id)
        if game is None:
            raise GameNotRunning("That game no longer exists.")
        return seat_link(mint_key(session, seat, game.turn))


def revoke_player_links(session: Session, email: str, now: datetime | None = None) -> int:
    """Revoke every "my games" link of `email`; returns how many were live."""
    result = session.exec(update(PlayerKey).where(PlayerKey.email == email.lower(),
                                                  PlayerKey.revoked_at.is_(None))
                          .values(revoked_at=now or utcnow()))
    return result.rowcount or 0


def _error(exc: ServiceError):
    return render_template("error.html", status=exc.status, message=exc.message), exc.status


@bp.get("/<token>")
def page(token: str):
    try:
        email, entries = my_games(token)
    except ServiceError as exc:
        return _error(exc)
    return render_template("players/games.html", email=email, entries=entries, token=token,
                           waiting=sum(1 for e in entries if e.my_move))


@bp.post("/<token>/open")
def open_game(token: str):
    try:
        link = open_seat(token, request.form.get("game", ""))
    except ServiceError as exc:
        return _error(exc)
    return redirect(url_for("seat.page", token=link.rsplit("/", 1)[1]), code=303)
