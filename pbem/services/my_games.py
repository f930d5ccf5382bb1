"""A player's "my games": every game of one email address, whose move it is, deadlines
and results, behind a secret link like a seat's (`PlayerKey`, only its hash stored).

Opening the page changes nothing (mail scanners open links); *Open* on a game is a POST that
mints a fresh seat key for that seat and goes to its page. It is not an account: there is no
password, and an organiser can revoke the links of an address (`revoke_player_links`).

A key is a key to every seat of its address, so it is held short: it lists and opens only the
seats its address holds now (not one handed to another person or to a computer player, checked
in the transaction that mints the seat key); revoking a seat's links revokes every key of its
address (`pbem.services.seats.revoke_seat_links`); and a key expires `[games] old_link_days` after a
newer one was mailed to the address, and `[games] my_games_link_days` after it was mailed in
any case, the newest too.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from flask import current_app
from sqlalchemy import func
from sqlmodel import Session, col, select

from ..games import rules_for
from ..ground import i18n
from ..ground.db import get_row, reading, utcnow, writing
from ..ground.i18n import N_, gettext
from ..ground.models import ABORTED, FINISHED, PAUSED, RUNNING, Game, PlayerKey, Profile, Seat
from ..ground.tokens import hash_token, is_well_formed
from .errors import LinkExpired, Malformed, NotFound
from .mail import mint_key, seat_link
from .seats import revoke_address_links, superseded_at

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
    deadline: str | None  # in the reader's time zone
    result: str | None
    game_deadline: str | None = None  # in the game's own zone, where that is another

    @property
    def order(self) -> tuple:
        status = {RUNNING: 1, PAUSED: 2, FINISHED: 3, ABORTED: 4}.get(self.game.status, 5)
        due = self.game.deadline_at.timestamp() if self.game.deadline_at else float("inf")
        return (0 if self.my_move else status, due if status == 1 else 0,
                -cast(int, self.game.id))  # a saved game's


EXPIRED = N_("This link to your games has expired: such a link stops working %(old)d days "
             "after a newer one was mailed to you, and %(most)d days after it was mailed in "
             "any case. Open the newest mail you have from any game: each one carries a fresh "
             "link to your games, and a link to your seat in that game.")


def email_of(session: Session, token: str, lock: bool = False,
              now: datetime | None = None) -> str:
    """The address of a live key: not revoked, not expired (see the module's docstring);
    NotFound or LinkExpired otherwise. With `lock`, the key's row stays locked until the
    transaction ends, so that revoking it waits for a seat key minted with it."""
    if not is_well_formed(token):
        raise NotFound(UNKNOWN)
    query = select(PlayerKey, superseded_at(PlayerKey, "email")).where(
        PlayerKey.token_hash == hash_token(token))
    row = session.exec(query.with_for_update(of=PlayerKey) if lock else query).first()
    if row is None or row[0].revoked_at is not None:
        raise NotFound(UNKNOWN)
    key, superseded = row
    now = now or utcnow()
    config = current_app.config
    if key.created_at < now - timedelta(days=config["GAMES_MY_GAMES_LINK_DAYS"]) or (
            superseded is not None
            and superseded < now - timedelta(days=config["GAMES_OLD_LINK_DAYS"])):
        raise LinkExpired(gettext(EXPIRED, old=config["GAMES_OLD_LINK_DAYS"],
                                  most=config["GAMES_MY_GAMES_LINK_DAYS"]))
    return key.email


def held_by(email: str):
    """The condition on Seat for the seats `email` holds now: its address, and a person (not
    a computer player) plays it."""
    return (func.lower(col(Seat.email)) == email) & col(Seat.bot).is_(None)


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
    names = and_.join(f"{i18n.shown_name(w.name)} ({i18n.colour(w.colour)})" for w in winners)
    if won and len(winners) > 1:
        head = gettext("You won together with %(names)s",
                       names=and_.join(i18n.shown_name(w.name) for w in winners if w != seat))
    else:
        head = gettext("You won") if won else gettext("Won by %(names)s", names=names)
    return gettext("%(head)s. Your score: %(score)s, place %(rank)d of %(players)d.", head=head,
                   score=mine, rank=rank, players=len(seats))


def my_games(token: str) -> tuple[str, list[Entry]]:
    """The address a player key belongs to, and its games (the ones to move in first)."""
    with reading() as session:
        email = email_of(session, token)
        mine = session.exec(select(Seat).where(held_by(email))
                            .order_by(col(Seat.game_id).desc()).limit(MAX_GAMES)).all()
        games = {g.id: g for g in session.exec(
            select(Game).where(col(Game.id).in_([s.game_id for s in mine])))}
        every = session.exec(select(Seat).where(col(Seat.game_id).in_(list(games)))
                             .order_by(col(Seat.game_id), col(Seat.number))).all()
        chosen_zone = session.exec(select(Profile.timezone)
                                   .where(Profile.email == email.lower())).first()
    if mine:  # the page in the language of the player's latest game
        i18n.use(mine[0].language)
    # Every time on the page in one zone, the reader's: their profile's, else their latest
    # seat's (issue 43, point 8: seats made before a profile had a zone kept the game's).
    reader_zone = chosen_zone or (mine[0].timezone or games[mine[0].game_id].timezone
                                  if mine else None)
    seats_of: dict[int, list[Seat]] = {}
    for seat in every:
        seats_of.setdefault(seat.game_id, []).append(seat)
    entries = []
    for seat in mine:
        game = games[seat.game_id]
        rules = rules_for(game.kind)
        state = rules.loads(game.state_json)
        seats = seats_of[cast(int, game.id)]  # a saved game's
        number = rules.to_move(state) if game.status in (RUNNING, PAUSED) else None
        to_move = seats[number] if number is not None else None
        deadline = game_deadline = None
        if game.deadline_at and game.status == RUNNING:
            deadline = i18n.format_local(game.deadline_at, reader_zone)
            if (game.timezone or "UTC") != (reader_zone or "UTC"):
                game_deadline = gettext("in the game's time zone: %(time)s",
                                        time=i18n.format_local(game.deadline_at, game.timezone))
        entries.append(Entry(game, seat, to_move is not None and to_move.id == seat.id
                             and game.status == RUNNING, to_move, deadline,
                             _result(rules, state, seats, seat)
                             if game.status == FINISHED else None, game_deadline))
    return email, sorted(entries, key=lambda e: e.order)


def open_seat(token: str, game_id: object, now: datetime | None = None) -> str:
    """A fresh link to the player's seat in `game_id` (a POST: it writes the new key), if the
    key is live and its address holds that seat now. All of it in one transaction, with the
    key's row and the game's locked: an organiser's revocation, hand-over or change of address
    (each locks the game first, then revokes this address's keys) either comes before, and is
    seen here, or waits for this one and revokes the key minted here too."""
    with writing() as session:
        email = email_of(session, token, lock=True, now=now)
        raw = str(game_id)
        if not (raw.isascii() and raw.isdigit()) or len(raw) > 9:  # within 32 bits
            raise Malformed("Choose a game from the list.")
        game = get_row(session, Game, int(raw), with_for_update=True)
        seat = None if game is None else session.exec(
            select(Seat).where(Seat.game_id == game.id, held_by(email))).first()
        if seat is None:
            raise NotFound("You have no seat in that game.")
        return seat_link(mint_key(session, seat, game.turn))


def revoke_player_links(session: Session, email: str, now: datetime | None = None) -> int:
    """Revoke every "my games" link of `email`, and the calendar feeds made with them; returns
    how many links were live."""
    return revoke_address_links(session, email, now or utcnow())
