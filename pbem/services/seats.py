"""Seats and their links: a seat opened by its link's token (or by id, for trusted callers),
with its game and the other seats, as ORM objects to change or as plain rows (pbem.ground.rows)
to read; the expiry and revocation of links; and what a seat's page shows (`load_seat`).

A link opens its seat while its key is not revoked and, once a newer one was mailed, for
GAMES_OLD_LINK_DAYS more; the refusal (NotFound, LinkExpired) reveals nothing of the seat.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from flask import current_app
from sqlalchemy import bindparam, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import aliased
from sqlmodel import Session, col, select

from ..games import GameRules, rules_for
from ..ground import i18n
from ..ground.db import (
    Cached,
    reading_rows,
    utcnow,
)
from ..ground.i18n import N_, _
from ..ground.models import (
    FEED_CALENDAR,
    FeedKey,
    Game,
    PlayerKey,
    Seat,
    SeatKey,
)
from ..ground.rows import GameRow, SeatRow
from ..ground.tokens import hash_token, is_well_formed
from . import turns
from .errors import (
    LinkExpired,
    NotFound,
)
from .log import LogEntry, log_for, window_of

UNKNOWN_LINK = N_("This link is not valid: it may be mistyped, cut short by the mail program, or "
                "replaced by a newer one. Use the link in your latest mail from the game.")


EXPIRED_LINK = N_("This link has expired: the game mailed you a newer link more than %(days)d days "
                "ago, and older links stop working then. Open the newest mail you have from "
                "the game: each one carries a fresh link. No mail at hand? The \"My games\" "
                "link at the foot of any mail from this server lists your games, each with a "
                "fresh link; or ask the game's organiser to send you your link again.")


def superseded_at(key_table=SeatKey, owner: str = "seat_id"):
    """When the key was superseded: the creation of the first newer, unrevoked key of its seat
    (or NULL), as a column for the query that finds the key. Keys are numbered as they are
    made, so the first by id is the earliest (two transactions minting keys for one seat at
    the same moment may number them the other way round: milliseconds apart). Found by the
    seat's index in id order, it is one row however many keys the seat was mailed since.
    A "my games" key's is the same of its address: `superseded_at(PlayerKey, "email")`."""
    newer = aliased(key_table)
    return (select(newer.created_at)
            .where(getattr(newer, owner) == getattr(key_table, owner), newer.id > key_table.id,
                   newer.revoked_at.is_(None))
            .order_by(newer.id).limit(1)
            .correlate(key_table).scalar_subquery())


def revoke_seat_links(session: Session, seat: Seat, now: datetime) -> None:
    """Revoke every link of `seat` (a leaked link, a seat handed over or to a computer player)
    and every "my games" link of its address: each of those could mint a new link to the seat
    (pbem.web.players), whichever game's mail carried it, so revoking only the ones mailed with
    this seat's mails would leave a leaked one from another game working; the address's
    calendar feeds, made with those (`revoke_address_links`); and the seat's feed key. The mail
    that brings the seat's new link brings a new "my games" link too, as does any later mail of
    the address.
    The "my games" links go first: a "my games" POST that holds one (FOR UPDATE) and mints a
    seat key is waited for, and the seat keys' update then sees the key it made."""
    revoke_address_links(session, seat.email, now)
    session.exec(update(SeatKey).where(col(SeatKey.seat_id) == seat.id,
                                       col(SeatKey.revoked_at).is_(None))
                 .values(revoked_at=now))
    # The seat's private feed too (pbem.services.feeds): a leaked link may have leaked it.
    session.exec(update(FeedKey).where(col(FeedKey.seat_id) == seat.id,
                                       col(FeedKey.revoked_at).is_(None))
                 .values(revoked_at=now))


def revoke_address_links(session: Session, email: str, now: datetime) -> int:
    """Revoke every "my games" link of `email` and every calendar feed made with them (any of
    them could have made it, and a leaked one may have: a feed that outlived the links would
    keep showing the address's games, new ones too); returns how many links were live."""
    email = email.lower()
    result = session.exec(update(PlayerKey).where(col(PlayerKey.email) == email,
                                                  col(PlayerKey.revoked_at).is_(None))
                          .values(revoked_at=now))
    session.exec(update(FeedKey).where(col(FeedKey.kind) == FEED_CALENDAR,
                                       col(FeedKey.email) == email,
                                       col(FeedKey.revoked_at).is_(None))
                 .values(revoked_at=now))
    return result.rowcount or 0


def is_expired(superseded: datetime | None, now: datetime | None = None) -> bool:
    """A key superseded longer ago than GAMES_OLD_LINK_DAYS no longer opens its seat; the
    newest key of a seat never expires."""
    days = current_app.config["GAMES_OLD_LINK_DAYS"]
    return superseded is not None and superseded < (now or utcnow()) - timedelta(days=days)


# Statements built once: building one costs more than SQLite takes to run it.
_KEYED = aliased(Seat)


def _seats_by_token(*columns):
    """Every seat of the game whose seat a key opens (`:token_hash`), in seat order."""
    return (select(*columns)
            .select_from(SeatKey)
            .join(_KEYED, _KEYED.id == SeatKey.seat_id)
            .join(Game, Game.id == _KEYED.game_id)
            .join(Seat, Seat.game_id == Game.id)
            .where(SeatKey.token_hash == bindparam("token_hash"), SeatKey.revoked_at.is_(None))
            .order_by(Seat.number))


def _seats_by_seat(*columns):
    """Every seat of the game of seat `:seat_id`, in seat order."""
    return (select(*columns)
            .select_from(_KEYED)
            .join(Game, Game.id == _KEYED.game_id)
            .join(Seat, Seat.game_id == Game.id)
            .where(_KEYED.id == bindparam("seat_id"))
            .order_by(Seat.number))


_SEATS_BY_TOKEN = _seats_by_token(Seat, Game, _KEYED.id, superseded_at())
_SEATS_BY_SEAT = _seats_by_seat(Seat, Game, _KEYED.id)
# The same as plain rows (pbem.ground.rows): each row the seat's columns, the game's, the id of the
# seat opened and (by token) when its key was superseded.
# (SQLModel sets each model's __table__, which its typing does not declare.)
_ROW_COLUMNS = (*Seat.__table__.c, *Game.__table__.c, _KEYED.id)  # type: ignore[attr-defined]
_ROWS_BY_TOKEN = _seats_by_token(*_ROW_COLUMNS, superseded_at())
_ROWS_BY_SEAT = _seats_by_seat(*_ROW_COLUMNS)
# A move locks its game's row as it reads it (FOR UPDATE OF game; SQLite renders nothing, its
# BEGIN IMMEDIATE already serialises writers): two moves for one game wait for each other, and
# the game's row is read as the other one left it.
_LOCKED_BY_TOKEN = _ROWS_BY_TOKEN.with_for_update(of=Game.__table__)  # type: ignore[attr-defined]
_LOCKED_BY_SEAT = _ROWS_BY_SEAT.with_for_update(of=Game.__table__)  # type: ignore[attr-defined]
# Run on the DBAPI cursor (db.Cached): every page, answer and move starts with one of them.
_ROWS = {(how, lock): Cached(statement) for how, lock, statement in (
    ("token", False, _ROWS_BY_TOKEN), ("token", True, _LOCKED_BY_TOKEN),
    ("seat", False, _ROWS_BY_SEAT), ("seat", True, _LOCKED_BY_SEAT))}
_SEAT_END = len(SeatRow.names)
_GAME_END = _SEAT_END + len(GameRow.names)




def _opened(seat_id: int | None, token: str | None) -> tuple[str, dict] | None:
    """How the seat is looked up: by the hash of its link's token, or by id; None for a
    token that cannot be a link's."""
    if seat_id is not None:
        return "seat", {"seat_id": seat_id}
    if not is_well_formed(token):
        return None
    return "token", {"token_hash": hash_token(token)}


def seat_game_seats(session: Session, token: str | None,
                     seat_id: int | None = None) -> tuple[Seat, Game, list[Seat]]:
    """The seat a link's token (or, for trusted callers, `seat_id`) opens, its game and all
    its seats in seat order, as ORM objects to change, in one query; NotFound reveals nothing."""
    how = _opened(seat_id, token)
    if how is None:
        raise NotFound(_(UNKNOWN_LINK))
    rows = session.exec(_SEATS_BY_SEAT if how[0] == "seat" else _SEATS_BY_TOKEN,
                        params=how[1]).all()
    if not rows:
        raise NotFound(_(UNKNOWN_LINK))
    if seat_id is None:
        _check_key(rows[0][3])
    seats = [row[0] for row in rows]
    game, keyed = rows[0][1], rows[0][2]
    return _opened_seat(seats, keyed, seat_id), game, seats


def _check_key(superseded: datetime | None) -> None:
    if is_expired(superseded):
        raise LinkExpired(_(EXPIRED_LINK, days=current_app.config["GAMES_OLD_LINK_DAYS"]))


def _opened_seat(seats: list, keyed: int, seat_id: int | None):
    seat = next(s for s in seats if s.id == keyed)
    if seat_id is None:  # the seat's own link: what follows is said in its language
        i18n.use(seat.language)
    return seat


def seat_rows(connection: Connection, token: str | None, seat_id: int | None = None, *,
               lock: bool = False) -> tuple[SeatRow, GameRow, list[SeatRow]]:
    """`seat_game_seats` as plain rows (pbem.ground.rows), for reading them or writing them back
    with `write_changes`; with `lock`, the game's row is locked (a move)."""
    how = _opened(seat_id, token)
    if how is None:
        raise NotFound(_(UNKNOWN_LINK))
    statement = _ROWS[how[0], lock]
    rows = statement.fetch(connection, how[1])
    if not rows:
        raise NotFound(_(UNKNOWN_LINK))
    # Each row's seat converted; the game's columns (the same in every row) and the key's
    # time from the first.
    dialect, first = connection.dialect, rows[0]
    if seat_id is None:
        _check_key(statement.converted(dialect, first, _GAME_END + 1, _GAME_END + 2)[0])
    seats = [SeatRow(statement.converted(dialect, row, 0, _SEAT_END)) for row in rows]
    game = GameRow(statement.converted(dialect, first, _SEAT_END, _GAME_END))
    return _opened_seat(seats, first[_GAME_END], seat_id), game, seats


def seat_and_game(session: Session, token: str) -> tuple[Seat, Game]:
    """The seat a link's token opens, and its game; NotFound reveals nothing."""
    seat, game, __ = seat_game_seats(session, token)
    return seat, game




def seats_of_game(session: Session, game_id: int) -> list[Seat]:
    return list(session.exec(select(Seat).where(Seat.game_id == game_id)
                             .order_by(col(Seat.number))))


@dataclass
class SeatContext:
    """What a page or an API answer needs about one seat, read in one snapshot."""

    game: GameRow
    seat: SeatRow
    seats: list[SeatRow]
    rules: GameRules
    state: object
    log: list[LogEntry]  # newest first, in this seat's words
    turn_number: int = 0  # the turn in progress as players count them (pbem.services.turns)
    # The previous move's log of this seat that `log` was made from (its newest entry added,
    # its oldest dropped when full), when it was: what was made of its entries holds.
    log_before: list[LogEntry] | None = None


def load_seat(token: str, log_limit: int | None = 200) -> SeatContext:
    """The seat a link's token opens, with its game and seats (plain rows: pbem.ground.rows), the
    position and the latest `log_limit` moves of the log (None: all of them)."""
    with reading_rows() as connection:
        seat, game, seats = seat_rows(connection, token)
        rules = rules_for(game.kind)
        state = rules.loads(game.state_json)
        readers = tuple(str(s.number) for s in seats)
        if log_limit is None:
            log, last = log_for(connection, game, seat.number, None, rules)
            before = None
        else:  # a window (see log_for), and what its log was made from
            window = window_of(connection, game, max(log_limit, 1), rules, readers)
            key, language = str(seat.number), i18n.language()
            log, last = window.log(key, language, log_limit), window.last_turn
            before = window.before(log, key, language)
        return SeatContext(game, seat, seats, rules, state, log,
                           turns.in_progress(rules, last, state), before)
