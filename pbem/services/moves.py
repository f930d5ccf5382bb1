"""The one place where games and the database meet: creating games and submitting moves.

Every move, whether from the seat page, the API, an emailed turn file or the scheduler, goes
through `submit_move`. It applies the move in one write transaction together with its log
entry and the mails it causes, so either all of them happen or none does.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import logging
import re
import secrets
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

import orjson
from flask import current_app
from flask_babel import lazy_gettext as L_
from sqlalchemy import bindparam, case, func, literal_column, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import aliased
from sqlalchemy.orm.util import identity_key
from sqlmodel import Session, select

from ..games import DEFAULT_KIND, GameRules, MoveError, SetupProblem, rules_for
from ..ground import clock, i18n
from ..ground.db import (
    Cached,
    Writer,
    get_row,
    insert_later,
    insert_pending,
    reading,
    reading_rows,
    utcnow,
    writing,
    writing_rows,
)
from ..ground.i18n import N_, _
from ..ground.kept import Kept
from ..ground.models import (
    FINISHED,
    NOTIFY_DIGEST,
    NOTIFY_EVERY,
    PAUSED,
    RUNNING,
    DigestItem,
    Game,
    MoveRecord,
    PlayerKey,
    Seat,
    SeatKey,
)
from ..ground.rows import GameRow, SeatRow, write_changes
from ..ground.tokens import hash_token, is_well_formed
from . import mail, turns
from .deadlines import TimeControl, add_pause, reset_clock, start_clock, stop_clock, time_control
from .turnfile import MAX_ORDERS, Orders

logger = logging.getLogger(__name__)

EMAIL_PATTERN = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+")
MAX_NAME = 60


class ServiceError(Exception):
    """A request the service refuses; `status` is the HTTP status the web layer answers with."""

    status = 400

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class Malformed(ServiceError):
    status = 400


class NotFound(ServiceError):
    status = 404


class StaleTurn(ServiceError):
    status = 409


class NotYourTurn(ServiceError):
    status = 409


class GameNotRunning(ServiceError):
    status = 409


class Rejected(ServiceError):
    status = 422


# --- players and games ------------------------------------------------------------------------

@dataclass(frozen=True)
class PlayerSpec:
    name: str
    email: str  # "" for a computer player
    bot: str | None = None  # the computer player that plays this seat; None: a person
    language: str | None = None  # en, de or es; None: the [games] language setting


def bot_player(bot: str, kind: str = DEFAULT_KIND, name: str | None = None) -> PlayerSpec:
    """A seat for computer player `bot` of game `kind` (named like "Computer (strong)" unless
    `name` is given); SetupProblem names the computer players there are."""
    check_bot(bot, kind)
    name = (name or "").strip() or f"Computer ({bot})"
    bad = unsafe_character(name)
    if bad or len(name) > MAX_NAME or any(c in "<>\"@" for c in name):
        raise SetupProblem(_("the name %(name)s must be one line of at most %(most)d "
                             "characters, without <, >, \", @ or control characters",
                             name=repr(name[:MAX_NAME]), most=MAX_NAME))
    return PlayerSpec(name, "", bot)


def check_bot(bot: object, kind: str = DEFAULT_KIND) -> str:
    rules = rules_for(kind)
    if bot not in rules.bots:
        raise SetupProblem(_("there is no computer player %(name)s; %(game)s has %(bots)s",
                             name=repr(str(bot)[:40]), game=rules.title,
                             bots=", ".join(rules.bots) if rules.bots
                             else _("no computer players")))
    return bot


PLAYER = re.compile(r"\s*(?P<name>[^<>]*?)\s*<(?P<email>[^<>]*)>\s*")
# Joiners that some scripts and names need; every other format character (bidi overrides,
# invisible marks) is refused with the controls and separators.
JOINERS = {"\u200c", "\u200d"}


def unsafe_character(text: str) -> str | None:
    """The first character of `text` that must not be in a name or title, described, or None.

    Line and paragraph separators (U+2028, U+2029, U+0085 too) and control characters break a
    mail header wherever the name is written, so every mail naming it would fail; bidi controls
    make a name read as something else."""
    for c in text:
        category = unicodedata.category(c)
        if category in ("Zl", "Zp") or c == "\x85":
            return _("a line or paragraph separator (U+%(code)s)", code=f"{ord(c):04X}")
        if category in ("Cc", "Cs", "Co", "Cn") or category == "Cf" and c not in JOINERS:
            return _("a control or invisible character (U+%(code)s)", code=f"{ord(c):04X}")
    return None


def parse_player(text: str) -> PlayerSpec:
    """Read 'Name <email>' exactly (nothing before, after or between is dropped silently);
    SetupProblem says what is wrong with it."""
    text = text or ""
    bad = unsafe_character(text)
    if bad:
        raise SetupProblem(_("%(text)s contains %(bad)s; write each player as one line "
                             "'Name <email>'", text=repr(text[:80]), bad=bad))
    match = PLAYER.fullmatch(text)
    if match is None:
        raise SetupProblem(_("write each player as 'Name <email>', not %(text)s",
                             text=repr(text[:80])))
    name = match["name"]
    if len(name) >= 2 and name[0] == name[-1] == '"':
        name = name[1:-1]
    return check_player(name, match["email"], text)


def check_player(name: str, email: str, shown: str | None = None) -> PlayerSpec:
    shown = shown if shown is not None else f"{name} <{email}>"
    name, email = (name or "").strip(), (email or "").strip()
    if not name or not email:
        raise SetupProblem(_("write each player as 'Name <email>', not %(text)s",
                             text=repr(shown)))
    bad = unsafe_character(name)
    if bad:
        raise SetupProblem(_("the name %(name)s contains %(bad)s; write it on one line "
                             "without control characters", name=repr(name[:MAX_NAME]),
                             bad=bad))
    if len(name) > MAX_NAME or any(c in "<>\"@" for c in name):
        raise SetupProblem(_("the name %(name)s must be at most %(most)d characters, "
                             "without <, >, \", @ or control characters",
                             name=repr(name[:MAX_NAME]), most=MAX_NAME))
    if len(email) > 254 or not EMAIL_PATTERN.fullmatch(email):
        raise SetupProblem(_("%(email)s is not an email address like anna@example.org",
                             email=repr(email[:80])))
    return PlayerSpec(name, email)


def check_title(title: str) -> str:
    """A game's name as shown in mail subjects: one line of 1 to 100 printable characters."""
    title = (title or "").strip()
    bad = unsafe_character(title)
    if bad:
        raise SetupProblem(_("the game's title contains %(bad)s; write it on one line", bad=bad))
    if not 0 < len(title) <= 100 or not title.isprintable():
        raise SetupProblem(_("the game's title must be one line of 1 to 100 printable "
                             "characters"))
    return title


def game_seed(chosen: str) -> str:
    """The seed a new game is dealt from, and stored with it, for `chosen` (an admin's seed).

    With GAMES_SECRET_SEEDS (the default) it is an HMAC of the chosen seed under the server's
    secret key: a short seed such as "48213" could otherwise be found by a player, who tries
    seeds until one deals the cards they see, and then knows every hand and the deck. The same
    chosen seed still deals the same cards on this server. The stored seed is what the engine
    replays from, so games created before (whose stored seed is the chosen one) replay as
    they always did, and a new secret key changes no running game."""
    if not current_app.config["GAMES_SECRET_SEEDS"]:
        return chosen
    key = current_app.config["SECRET_KEY"].encode()
    return hmac.new(key, b"pbem game seed\0" + chosen.encode(), hashlib.sha256).hexdigest()[:32]


@dataclass(frozen=True)
class CreatedGame:
    game_id: int
    links: list[tuple[str, str, str | None]]  # (name, colour, link) per seat, in seat order;
    # a computer player's seat has no link (None)


def create_game(players: list[PlayerSpec], seed: str | None = None, *,
                kind: str = DEFAULT_KIND, colours: list[str] | None = None,
                start: int | None = None, title: str | None = None,
                time: TimeControl | None = None, now: datetime | None = None,
                variant: str | None = None, absent_bot: str | None = None) -> CreatedGame:
    """Set up a game, its seats, its clock and the invitation mails; returns each seat's
    first link. `time` defaults to the time control in the settings; `variant` is one of
    the game's `variants` (None: its default). A player made by `bot_player` is a computer
    player's seat. `absent_bot` names the computer player that plays an absent seat's turns
    (None: the default move)."""
    rules = rules_for(kind)
    if not rules.min_players <= len(players) <= rules.max_players:
        raise SetupProblem(_("%(game)s is for %(least)d to %(most)d players, not %(count)d",
                             game=rules.title, least=rules.min_players,
                             most=rules.max_players, count=len(players)))
    for p in players:
        if p.bot is not None:
            check_bot(p.bot, kind)
    if absent_bot is not None:
        check_bot(absent_bot, kind)
    emails = [p.email.lower() for p in players if p.bot is None]
    if len(set(emails)) != len(emails):
        raise SetupProblem(_("each player needs their own email address"))
    for p in players:
        if p.language is not None:
            try:
                i18n.check_language(p.language)
            except ValueError as exc:
                raise SetupProblem(str(exc)) from None
    colours = list(colours or rules.colours[:len(players)])
    seed = seed if seed is not None else secrets.token_hex(16)
    if not isinstance(seed, str) or not 0 < len(seed) <= 100 or not seed.isprintable():
        raise SetupProblem(_("the seed must be 1 to 100 printable characters"))
    seed = game_seed(seed)
    title = check_title(title) if title is not None else rules.title
    time = time or time_control()
    state = rules.new_state(colours, seed, start, variant)
    now = now or utcnow()
    with writing() as session:
        game = Game(kind=kind, title=title, seed=seed,
                    start_seat=rules.start_seat(state), turn=0, state_json=rules.dumps(state),
                    created_at=now, updated_at=now, turn_started_at=now,
                    deadline_hours=time.deadline_hours, reminder_hours=time.reminders_text,
                    weekend_pause=time.weekend_pause, timezone=time.timezone,
                    absent_bot=absent_bot)
        session.add(game)
        session.flush()
        seats = [Seat(game_id=game.id, number=n, name=p.name, email=p.email, colour=colours[n],
                      bot=p.bot, language=p.language or current_app.config["GAMES_LANGUAGE"])
                 for n, p in enumerate(players)]
        session.add_all(seats)
        session.flush()
        start_clock(session, game, seats[rules.to_move(state)], now)
        links = []
        for seat in seats:
            message = mail.invitation(session, game, seat, seats, rules, state)
            links.append((seat.name, seat.colour, None if message is None else mail.seat_link(
                json.loads(message.secrets_json)[0])))
        return CreatedGame(game.id, links)


# --- seats --------------------------------------------------------------------------------------

UNKNOWN_LINK = N_("This link is not valid: it may be mistyped, cut short by the mail program, or "
                "replaced by a newer one. Use the link in your latest mail from the game.")


EXPIRED_LINK = N_("This link has expired: the game mailed you a newer link more than %(days)d days "
                "ago, and older links stop working then. Open the newest mail you have from "
                "the game: each one carries a fresh link. No mail at hand? The \"My games\" "
                "link at the foot of any mail from this server lists your games, each with a "
                "fresh link; or ask the game's organiser to send you your link again.")


class LinkExpired(NotFound):
    status = 410


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
    this seat's mails would leave a leaked one from another game working. The mail that brings
    the seat's new link brings a new "my games" link too, as does any later mail of the address.
    The "my games" links go first: a "my games" POST that holds one (FOR UPDATE) and mints a
    seat key is waited for, and the seat keys' update then sees the key it made."""
    session.exec(update(PlayerKey).where(PlayerKey.email == seat.email.lower(),
                                         PlayerKey.revoked_at.is_(None))
                 .values(revoked_at=now))
    session.exec(update(SeatKey).where(SeatKey.seat_id == seat.id, SeatKey.revoked_at.is_(None))
                 .values(revoked_at=now))


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
_ROW_COLUMNS = (*Seat.__table__.c, *Game.__table__.c, _KEYED.id)
_ROWS_BY_TOKEN = _seats_by_token(*_ROW_COLUMNS, superseded_at())
_ROWS_BY_SEAT = _seats_by_seat(*_ROW_COLUMNS)
# A move locks its game's row as it reads it (FOR UPDATE OF game; SQLite renders nothing, its
# BEGIN IMMEDIATE already serialises writers): two moves for one game wait for each other, and
# the game's row is read as the other one left it.
_LOCKED_BY_TOKEN = _ROWS_BY_TOKEN.with_for_update(of=Game.__table__)
_LOCKED_BY_SEAT = _ROWS_BY_SEAT.with_for_update(of=Game.__table__)
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


def _seat_game_seats(session: Session, token: str | None,
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


def _seat_rows(connection: Connection, token: str | None, seat_id: int | None = None, *,
               lock: bool = False) -> tuple[SeatRow, GameRow, list[SeatRow]]:
    """`_seat_game_seats` as plain rows (pbem.ground.rows), for reading them or writing them back
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


def _seat_and_game(session: Session, token: str) -> tuple[Seat, Game]:
    """The seat a link's token opens, and its game; NotFound reveals nothing."""
    seat, game, __ = _seat_game_seats(session, token)
    return seat, game


class LogEntry(NamedTuple):
    """One applied move as the log shows it to one reader (a named tuple: a page shows fifty,
    and a tuple is made in a third of a frozen dataclass's time). Entries are shared between
    the pages and answers that show them (`_log`): nothing changes one."""

    number: int
    seat: int
    notation: str
    actor: str
    via: str
    created_at: datetime
    lines: tuple[str, ...]
    turn_number: int = 0  # the players' turn this move belongs to (see pbem.services.turns)


# The caches here are sized for the games a server has under way, not for its history: what a
# process keeps, its garbage collector walks through (parsed lines are dozens of dicts each).
@functools.lru_cache(maxsize=1024)
def _readers_lines(lines_json: str) -> dict[str, tuple[str, ...]]:
    """A log entry's lines by reader, parsed once per process: a record never changes, and
    a page or an API answer shows the same fifty entries again after every move."""
    return {reader: tuple(lines) for reader, lines in json.loads(lines_json).items()}


_RENDERED = Kept(16384)


def _rendered_lines(lines_json: str, reader: str, language: str) -> tuple[str, ...]:
    """A log entry's lines for `reader` written in `language`, once per process: a page or an
    API answer shows the same fifty entries again after every move, and writing them was most
    of its time (`language` is the one in use when this is called; it is part of the key). A
    move puts in its own entry's lines for every reader (`_written`)."""
    return _RENDERED.get_or_make((lines_json, reader, language), lambda: tuple(
        i18n.render(line) for line in _readers_lines(lines_json).get(reader, ())))


def _written(lines: dict[str, list], lines_json: str, language: str) -> None:
    """Write a new entry's lines (`lines`, stored as `lines_json`) for every reader in
    `language`, each different list once: most readers are told the same (only the mover is
    told the card it drew)."""
    written: list[tuple[list, tuple[str, ...]]] = []
    for reader, told in lines.items():
        rendered = next((done for same, done in written if same == told), None)
        if rendered is None:
            rendered = tuple(i18n.render(line) for line in told)
            written.append((told, rendered))
        _RENDERED.put((lines_json, reader, language), rendered)


_LOG_COLUMNS = (MoveRecord.number, MoveRecord.seat, MoveRecord.notation, MoveRecord.actor,
                MoveRecord.via, MoveRecord.created_at, MoveRecord.lines_json)


_LOG = (select(*_LOG_COLUMNS).where(MoveRecord.game_id == bindparam("game_id"))
        .order_by(MoveRecord.number.desc()))


# What names a game's log: a log changes only by a move (the turn counter goes on, the game's
# `updated_at` is the move's time) or by a move taken back (the turn counter goes back and the
# clock starts anew: `clock_version` goes on), each in the transaction that changes the records.
# So within one database these columns never name two different logs; `updated_at` keeps a
# database replaced under a running server (a restored copy that went another way) from being
# taken for the one it was, and the app's database token keeps two databases apart (an
# imported copy of a game has the same watch id).
_WINDOW_KEY = (Game.watch_id, Game.turn, Game.clock_version, Game.updated_at)


def _window_key(game: Game | GameRow) -> tuple:
    return (current_app.extensions["pbem_db_token"], game.watch_id, game.turn,
            game.clock_version, game.updated_at)


@functools.cache
def _log_latest(rules: GameRules):
    """The latest `:limit` moves of a game, newest first, each row with the number of turns
    begun before move `:before` (pbem.services.turns) and the game's `_WINDOW_KEY` columns, read in the
    same statement as the moves (on PostgreSQL each statement of a read sees what was committed
    when it began); built once per kind of game."""
    begun = turns.begun_before_sql(rules)
    if begun is None:  # rules that say in Python only which moves begin a turn
        begun = literal_column("0")
    game = [select(column).where(Game.id == bindparam("game_id")).scalar_subquery()
            for column in _WINDOW_KEY]
    return select(*_LOG_COLUMNS, begun, *game) \
        .where(MoveRecord.game_id == bindparam("game_id")) \
        .order_by(MoveRecord.number.desc()).limit(bindparam("limit"))


@functools.lru_cache(maxsize=8192)
def _entry(row: tuple, reader: str, language: str, turn_number: int) -> LogEntry:
    """The log entry of a record's row (`_LOG_COLUMNS`) for `reader` in `language`, made once
    per process: the key is the whole row, so a record taken back and made anew (another row)
    is another entry."""
    number, seat, notation, actor, via, created_at, lines_json = row
    return LogEntry(number, seat, notation, actor, via, created_at,
                    _rendered_lines(lines_json, reader, language), turn_number)


class _Window:
    """A game's latest moves as the log shows them: their rows (`_LOG_COLUMNS`, newest first),
    the turn of each, and the entries made of them for each reader and language. `size` is how
    many were asked for; `complete` when that is every move of the game. Never changed once
    made: a move makes the next window (`extended`)."""

    __slots__ = ("_logs", "complete", "numbers", "rows", "size")

    def __init__(self, rows: tuple, numbers: tuple[int, ...], size: int, complete: bool,
                 logs: dict | None = None):
        self.rows, self.numbers, self.size, self.complete = rows, numbers, size, complete
        self._logs = logs or {}

    @property
    def last_turn(self) -> int:
        """The turn of the latest move (0 before any move)."""
        return self.numbers[0] if self.numbers else 0

    def log(self, reader: str, language: str, limit: int | None = None) -> list[LogEntry]:
        """The latest `limit` entries (None: all the window holds) in `reader`'s words (-1: a
        spectator's) in `language`, newest first: one list for every request that asks, so
        what is made of it can be kept by its identity (pbem.web.api)."""
        log = self._logs.get((reader, language))
        if log is None:  # a lost race makes the same list twice
            log = self._logs[reader, language] = [
                _entry(row, reader, language, number)
                for row, number in zip(self.rows, self.numbers)]
        if limit is None or len(log) <= limit:
            return log
        part = self._logs.get((reader, language, limit))
        if part is None:
            part = self._logs[reader, language, limit] = log[:limit]
        return part

    def extended(self, row: tuple, rules: GameRules) -> _Window:
        """The window after move `row`, the game's next, of the same size; the entries made so
        far are carried over (the new one's lines were written when it was made)."""
        number = turns.numbered(rules, self.last_turn, [(row[0], row[2])])[0]
        full = len(self.rows) == self.size
        rows = ((row, *self.rows[:-1]) if full else (row, *self.rows))
        numbers = ((number, *self.numbers[:-1]) if full else (number, *self.numbers))
        logs = {}
        for (reader, language, *limit), log in list(self._logs.items()):
            if not limit:
                logs[reader, language] = [_entry(row, reader, language, number),
                                          *(log[:-1] if full else log)]
                logs[reader, language, "before"] = log
        return _Window(rows, numbers, self.size, self.complete and not full, logs)

    def before(self, log: list[LogEntry], reader: str, language: str) -> list[LogEntry] | None:
        """The list `log` (this window's, whole) was made from by adding the latest move to
        the previous window's: all of it but the new entry is that list's (pbem.web.api keeps
        what it made of the entries so)."""
        if log is not self._logs.get((reader, language)):
            return None
        return self._logs.get((reader, language, "before"))

    def recent(self, seats: int) -> list[tuple] | None:
        """`_RECENT`'s rows from this window (oldest first), or None when it does not reach
        back to every seat's latest move."""
        latest: dict[int, int] = {}
        for row in self.rows:
            latest.setdefault(row[1], row[0])
        if len(latest) < seats and not self.complete:
            return None
        first = min(latest.values()) if len(latest) == seats else 0
        return [(row[0], row[1], row[6], row[3]) for row in reversed(self.rows)
                if row[0] >= first]


class _Windows:
    """The windows of the latest logs read or written by this process, by `_window_key`: the
    latest of each game (a newer one replaces it; an older one coming late is not kept), at
    most ROWS rows in all (the games not asked about for longest go first). Safe for
    threads. Kept small: what a process keeps, its garbage collector walks through."""

    ROWS = 20000

    def __init__(self):
        self._windows: OrderedDict[tuple, _Window] = OrderedDict()
        self._latest: dict[tuple, tuple] = {}  # (database, watch id) -> its window's key
        self._rows = 0
        self._lock = threading.Lock()

    def get(self, key: tuple, size: int) -> _Window | None:
        """The window of `key` holding the latest `size` moves (or all), if kept."""
        with self._lock:
            window = self._windows.get(key)
            if window is None or not (window.size >= size or window.complete):
                return None
            self._windows.move_to_end(key)
            return window

    def put(self, key: tuple, window: _Window) -> None:
        game = key[:2]
        with self._lock:
            latest = self._latest.get(game)
            if latest is not None and latest != key:
                # Moves and take-backs set the game's updated_at: the later one is the game
                # as it is now (a request that read it before is answered, not kept).
                if (latest[4], latest[3], latest[2]) > (key[4], key[3], key[2]):
                    return
                self._rows -= len(self._windows.pop(latest).rows)
            held = self._windows.pop(key, None)
            if held is not None:
                self._rows -= len(held.rows)
                if held.size > window.size and not window.complete:
                    window = held  # the larger one serves both
            self._windows[key] = window
            self._latest[game] = key
            self._rows += len(window.rows)
            while self._rows > self.ROWS and len(self._windows) > 1:
                old, dropped = self._windows.popitem(last=False)
                self._rows -= len(dropped.rows)
                del self._latest[old[:2]]


_windows = _Windows()


def _turns_of(connection: Connection, game: Game | GameRow, rules: GameRules, rows: list,
              begun: int) -> list[int]:
    """The turn of each of the log's `rows` (newest first), `begun` turns having begun before
    the oldest (pbem.services.turns); rules that say it in Python only count the whole log."""
    oldest_first = [(row[0], row[2]) for row in reversed(rows)]
    if turns.starts_sql(rules) is None:
        counted = turns.numbers(rules, turns.notations(connection, game.id))
        numbers = [counted[number] for number, __ in oldest_first]
    else:
        numbers = turns.numbered(rules, begun, oldest_first)
    numbers.reverse()
    return numbers


def _read_window(connection: Connection, game: Game | GameRow, size: int,
                 rules: GameRules) -> tuple[_Window, tuple | None]:
    """The latest `size` moves of `game` read from the database, and the `_window_key` of the
    game as the same statement saw it (None without moves)."""
    # Moves are numbered from 0 without gaps, so the oldest row shown is move `before`.
    before = max(game.turn - size, 0)
    rows = connection.execute(_log_latest(rules), {
        "game_id": game.id, "limit": size, "before": before}).all()
    if not rows:  # no move yet; the game row says so when its turn counter is 0
        return _Window((), (), size, True), _window_key(game) if game.turn == 0 else None
    begun = rows[0][7]
    if rows[-1][0] != before:  # not so: count before the oldest row shown
        begun = turns.of_move(connection, rules, game.id, rows[-1][0] - 1)
    numbers = _turns_of(connection, game, rules, rows, begun)
    key = (current_app.extensions["pbem_db_token"], *rows[0][8:])
    return (_Window(tuple(tuple(row[:7]) for row in rows), tuple(numbers), size,
                    len(rows) < size), key)


def _window(connection: Connection, game: Game | GameRow, size: int, rules: GameRules,
            readers: tuple[str, ...] = ()) -> _Window:
    """The window of the latest `size` moves of `game` as read in this transaction: kept by the
    process, or read and then kept, with the entries of `readers` in the language in use made
    at once (the seats: each shows its own from then on, one move added at a time)."""
    key = _window_key(game)
    window = _windows.get(key, size)
    if window is None:
        window, read_key = _read_window(connection, game, size, rules)
        language = i18n.language()
        for reader in readers:
            window.log(reader, language)
        if read_key == key:  # what the game row says, not a later log (PostgreSQL)
            _windows.put(key, window)
    return window


def _log(session: Session | Connection, game: Game | GameRow, reader: int, limit: int | None,
         rules: GameRules, readers: tuple[str, ...] = ()) -> tuple[list[LogEntry], int]:
    """The game's log, newest first, in `reader`'s words (-1: a spectator's), each entry with
    its turn (pbem.services.turns), and the turn of the latest move (0 before any move); read in a
    session or on a connection. The latest `limit` moves come from the process's windows when
    the game is as one was made; the whole log (None) is read every time."""
    # Log entries a session's transaction wrote are in the database first (they wait in
    # insert_later's batch until a statement of the session needs them).
    if isinstance(session, Connection):
        connection = session
    else:
        insert_pending(session)
        connection = session.connection()
    key, language = str(reader), i18n.language()
    if limit is not None:
        # One row at least: the latest move's turn is the one in progress.
        window = _window(connection, game, max(limit, 1), rules, readers)
        return window.log(key, language, limit), window.last_turn
    rows = connection.execute(_LOG, {"game_id": game.id}).all()
    numbers = _turns_of(connection, game, rules, rows, 0)
    return ([_entry(tuple(row), key, language, number) for row, number in zip(rows, numbers)],
            numbers[0] if numbers else 0)


def _seats(session: Session, game_id: int) -> list[Seat]:
    return list(session.exec(select(Seat).where(Seat.game_id == game_id)
                             .order_by(Seat.number)))


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
        seat, game, seats = _seat_rows(connection, token)
        rules = rules_for(game.kind)
        state = rules.loads(game.state_json)
        readers = tuple(str(s.number) for s in seats)
        if log_limit is None:
            log, last = _log(connection, game, seat.number, None, rules)
            before = None
        else:  # a window (see _log), and what its log was made from
            window = _window(connection, game, max(log_limit, 1), rules, readers)
            key, language = str(seat.number), i18n.language()
            log, last = window.log(key, language, log_limit), window.last_turn
            before = window.before(log, key, language)
        return SeatContext(game, seat, seats, rules, state, log,
                           turns.in_progress(rules, last, state), before)


def set_notify(token: str, choice: str) -> None:
    from ..ground.models import NOTIFY_CHOICES

    if choice not in NOTIFY_CHOICES:
        raise Rejected(_("choose one of the offered mail settings"))
    with writing() as session:
        seat, __ = _seat_and_game(session, token)
        seat.notify = choice
        session.add(seat)


# --- moves --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MoveResult:
    game_id: int
    seat: int
    notation: str
    turn: int  # the game's turn counter after the move
    lines: list[str]  # what happened, in the mover's words
    finished: bool
    context: SeatContext | None = None  # the mover's seat after the move, when asked for


def submit_move(token: str | None, text: str, turn: object, *, seat_id: int | None = None,
                actor: str = "player", via: str = "web", now: datetime | None = None,
                context_log: int | None = None, session: Session | None = None) -> MoveResult:
    """Apply one move for the seat the token opens (or `seat_id`, for trusted callers).

    `turn` is the game's turn counter the move was built for; anything else is refused as
    stale. Raises a ServiceError subclass and changes nothing when the move cannot be applied.
    With `context_log`, the result also holds the mover's SeatContext after the move, read in
    the same transaction, with that many log entries. With `session` (the scheduler's, for a
    timeout), the move is made in that session's write transaction, which the caller commits;
    a refused move changes nothing in it either.
    """
    if isinstance(turn, bool) or not isinstance(turn, int) or not 0 <= turn < 2 ** 53:
        raise Malformed(_("the move must say which turn it was made for (a whole number)"))
    if not isinstance(text, str):
        raise Malformed(_("the move must be text in the notation, as `legal` lists them"))
    now = now or utcnow()
    if session is None:
        with writing_rows() as own:
            result = _move(own, False, token, text, turn, seat_id, actor, via, now,
                           context_log)
        for key, window in own.info.pop(_MADE, ()):  # committed: the log is so now
            _windows.put(key, window)
        _log_move(result, actor, via)
        return result
    # What the caller changed is in the database before the rows are read: its ORM objects,
    # and the moves it made before this one (the latest moves are read back; the mails and
    # timers it queued wait to be written together).
    insert_pending(session, MoveRecord)
    session.flush()
    result = _move(session, True, token, text, turn, seat_id, actor, via, now, context_log)
    _log_move(result, actor, via)  # made in the caller's transaction, which commits it
    return result


def _log_move(result: MoveResult, actor: str, via: str) -> None:
    """One INFO line per move: the game, the seat (as players count them), the move, who and
    how; never the link it came by."""
    if logger.isEnabledFor(logging.INFO):
        logger.info("move: game %d seat %d %s (%s, via %s)%s", result.game_id, result.seat + 1,
                    result.notation, actor, via, "; the game is over" if result.finished
                    else "")


_MADE = "pbem_log_windows"  # session.info: the windows a move made, kept once it is committed


def _move(session: Writer | Session, outer: bool, token: str | None, text: str, turn: int,
          seat_id: int | None, actor: str, via: str, now: datetime,
          context_log: int | None) -> MoveResult:
    """`submit_move` in a write transaction: its own (a Writer) or the caller's session
    (`outer`)."""
    # Plain rows read and written on the transaction's connection (pbem.ground.rows): the game's row
    # locked as it is read. The mails and the clock add their rows to the transaction
    # (insert_later).
    connection = session.connection()
    seat, game, seats = _seat_rows(connection, token, seat_id, lock=True)
    if game.status != RUNNING:
        raise GameNotRunning(
            _("This game is paused by an organiser: no moves until it goes on (everyone "
              "gets a mail then). Nothing was changed.") if game.status == PAUSED else
            _("This game is %(status)s; no more moves can be made.",
              status=i18n.status_word(game.status)))
    if turn != game.turn:
        raise _stale(connection, game, seat, text, turn)
    rules = rules_for(game.kind)
    before = rules.loads(game.state_json)
    to_move = rules.to_move(before)
    if to_move != seat.number:
        raise NotYourTurn(_("It is not your move: the game waits for %(name)s. Nothing was "
                            "changed.", name=_seat_name(connection, game, to_move)))
    try:
        move = rules.parse(before, text)
        after = rules.apply(before, move)
    except MoveError as exc:
        raise Rejected(str(exc)) from None
    # Stored language-neutral (message ids and parameters), written in each reader's
    # language when shown.
    lines = _told(rules, before, move, after, len(seats))
    if actor == "bot":  # every reader, in the log and in mail, sees who chose it
        for told in lines.values():
            told[:1] = [{"t": N_("Computer player (%(bot)s): %(line)s"),
                         "p": {"bot": _bot_of(game, seat), "line": line}}
                        for line in told[:1]]
    notation = rules.notation(move)
    lines_json = orjson.dumps(lines).decode()  # read back by json.loads, like any JSON
    # Written now for every reader, in the language in use (the mover's): each seat's page
    # and API answer show this entry after every move from now on (`_log`).
    language = i18n.language()
    _written(lines, lines_json, language)
    record = (game.turn, seat.number, notation, actor, via, now, lines_json)  # _LOG_COLUMNS
    insert_later(session, MoveRecord, {
        "game_id": game.id, "number": game.turn, "seat": seat.number, "notation": notation,
        "actor": actor, "via": via, "lines_json": lines_json, "created_at": now})
    # The log as it is before this move, if this process has it (a caller's session may have
    # changed it in ways the game row does not tell yet: read).
    window = None if outer else _windows.get(_window_key(game), max(context_log or 0, 1))
    game.state_json = rules.dumps(after)
    game.turn += 1
    game.updated_at = now
    came_back = actor == "player" and seat.absent
    if actor == "player":
        seat.timeouts_in_row, seat.absent = 0, False
    _notify(session, game, seats, rules, before, after, seat, actor, now, lines, window)
    if came_back and rules.to_move(after) == seat.number:
        reset_clock(session, game, seat, now)  # its turn waits for it again
    # The game's row and any seat the move changed, each in one UPDATE of what changed.
    for row in (game, *seats):
        write_changes(connection, row)
    if outer:
        _forget(session, game, seats)
    context = None
    if window is not None:  # the next window: this move added to it, nothing read
        window = window.extended(record, rules)
        session.info.setdefault(_MADE, []).append((_window_key(game), window))
    if context_log is not None:
        if window is None:  # read, with this move
            insert_pending(session)
            window = _read_window(connection, game, max(context_log, 1), rules)[0]
            for reader in seats:
                window.log(str(reader.number), language)
            if not outer:
                session.info.setdefault(_MADE, []).append((_window_key(game), window))
        log = window.log(str(seat.number), language, context_log)
        context = SeatContext(game, seat, seats, rules, after, log,
                              turns.in_progress(rules, window.last_turn, after),
                              window.before(log, str(seat.number), language))
    return MoveResult(game.id, seat.number, notation, game.turn,
                      list(_rendered_lines(lines_json, str(seat.number), language)),
                      game.status == FINISHED, context)


def _told(rules: GameRules, before, move, after, seats: int) -> dict[str, list]:
    """What `move` did in each reader's words (-1: a spectator's), as stored data; readers the
    rules tell the same list of sentences share its conversion (each gets its own list)."""
    converted: dict[int, tuple[list, list]] = {}
    lines = {}
    for reader in range(-1, seats):
        told = rules.describe(before, move, after, None if reader < 0 else reader)
        held = converted.get(id(told))
        if held is None or held[0] is not told:
            held = converted[id(told)] = (told, [i18n.phrase_data(line) for line in told])
        lines[str(reader)] = list(held[1])
    return lines


def _forget(session: Session, game: GameRow, seats: list[SeatRow]) -> None:
    """The caller's ORM objects of this game and its seats, if its session holds any, are read
    again when next used: the move wrote their rows around the ORM."""
    for model, row in ((Game, game), *((Seat, s) for s in seats)):
        held = session.identity_map.get(identity_key(model, row.id))
        if held is not None:
            session.expire(held)


def _bot_of(game: Game | GameRow, seat: Seat | SeatRow) -> str | None:
    """The computer player that plays `seat` now, if any: its own, or the game's for an
    absent seat."""
    return seat.bot or (game.absent_bot if seat.absent else None)


def _seat_name(connection: Connection, game: Game | GameRow, number: int | None) -> str:
    if number is None:
        return _("nobody")
    name, colour = connection.execute(select(Seat.name, Seat.colour).where(
        Seat.game_id == game.id, Seat.number == number)).one()
    return f"{name} ({i18n.colour(colour)})"


def _stale(connection: Connection, game: Game | GameRow, seat: Seat | SeatRow, text: str,
           turn: int) -> ServiceError:
    # Only moves the game has made have records (a turn beyond may be any number at all).
    record = connection.execute(select(MoveRecord.seat, MoveRecord.notation).where(
        MoveRecord.game_id == game.id, MoveRecord.number == turn)).first() \
        if turn < game.turn else None
    if record is not None and record.seat == seat.number:
        rules = rules_for(game.kind)
        try:
            same = rules.notation(rules.parse(rules.loads(game.state_json), text)) \
                == record.notation
        except MoveError:
            same = False
        if same:
            return StaleTurn(_("Your move '%(move)s' was already recorded (a second click or a "
                               "second tab?). Nothing more was changed.", move=record.notation))
    return _moved_on(connection, game, turn)


def _moved_on(session: Session | Connection, game: Game | GameRow, turn: int) -> StaleTurn:
    """The refusal of a move or form made at move `turn` of a game that is elsewhere now, told
    in turns as players count them."""
    rules = rules_for(game.kind)
    now = turns.current(session, rules, game.id, rules.loads(game.state_json))
    if turn < game.turn:
        then = turns.of_move(session, rules, game.id, turn)
        return StaleTurn(_("This move was made for turn %(turn)d (after move %(move)d), but "
                           "the game has moved on to turn %(now)d (move %(now_move)d). Nothing "
                           "was changed; look at the position as it is now.",
                           turn=then, move=turn, now=now, now_move=game.turn))
    return StaleTurn(_("This move was made for move %(move)d, which the game has not reached: "
                       "it is at turn %(now)d (move %(now_move)d). Nothing was changed; look at "
                       "the position as it is now.", move=turn, now=now, now_move=game.turn))


def moved_on(game: Game, turn: int) -> StaleTurn:
    """`_moved_on` in a session of its own (for the seat page's preview)."""
    with reading() as session:
        return _moved_on(session, game, turn)


# The latest move of each seat before move `:before`; the oldest of them is where the moves
# `_Recent` needs begin (move 0 while a seat of the `:seats` has not moved yet).
_LATEST_BY_SEAT = (select(func.max(MoveRecord.number).label("latest"))
                   .where(MoveRecord.game_id == bindparam("game_id"),
                          MoveRecord.number < bindparam("before"))
                   .group_by(MoveRecord.seat).subquery())
_FIRST_NEEDED = (select(case((func.count() < bindparam("seats"), 0),
                             else_=func.min(_LATEST_BY_SEAT.c.latest)))
                 .select_from(_LATEST_BY_SEAT).scalar_subquery())
_RECENT = (select(MoveRecord.number, MoveRecord.seat, MoveRecord.lines_json, MoveRecord.actor)
           .where(MoveRecord.game_id == bindparam("game_id"),
                  MoveRecord.number >= _FIRST_NEEDED, MoveRecord.number < bindparam("before"))
           .order_by(MoveRecord.number))


class _Recent:
    """The latest moves of a game, enough to go back to every seat's previous move.

    How far back that is depends on the game, not on a fixed count: a turn may be many moves,
    and some of them may be other seats' (a decision a move asked of another seat). So the
    moves are read from the oldest of the seats' latest moves before `before` (every move of
    the game while a seat has not moved yet), and `this` move, the one being made (number
    `before`), is added as it is: it waits to be written with the transaction's other rows.
    The `window` of the log before this move serves instead of a read when it reaches back
    far enough.
    """

    def __init__(self, connection: Connection, game: Game | GameRow, seats: int, before: int,
                 this: tuple[int, dict[str, list], str], window: _Window | None):
        rows = None if window is None else window.recent(seats)
        if rows is None:
            rows = connection.execute(_RECENT, {"game_id": game.id, "before": before,
                                                "seats": seats}).all()
        self.records = [(number, seat, _readers_lines(lines)) for number, seat, lines, _ in rows]
        self.records.append((before, this[0], this[1]))  # its lines as made, not parsed again
        self.actors = {number: actor for number, _, _, actor in rows}
        self.actors[before] = this[2]

    def last_move_of(self, seat: int, before: int) -> int:
        """The number of `seat`'s latest move before move `before` (-1 when none)."""
        return max((n for n, s, _ in self.records if s == seat and n < before), default=-1)

    def last_move_not_of(self, seat: int) -> int:
        """The number of the latest move by anyone but `seat` (-1 when none)."""
        return max((n for n, s, _ in self.records if s != seat), default=-1)

    def lines_since(self, reader: int, after: int, actor: str | None = None) -> list[str]:
        """What happened after move `after`, in `reader`'s words (only `actor`'s moves)."""
        return [i18n.lazy(line) for n, _, lines in self.records
                if n > after and actor in (None, self.actors[n]) for line in lines[str(reader)]]


def _notify(session: Session, game: GameRow, seats: list[SeatRow], rules: GameRules, before,
            after, mover: SeatRow, actor: str, now: datetime, told: dict[str, list],
            window: _Window | None = None) -> None:
    """Queue the mails a move causes: the end of the game, or the end of a turn. They are
    queued as intents (pbem.services.mail, `later`): written when they are delivered, not in the move's
    transaction, from the game as it is after this move."""
    to_move = rules.to_move(after)
    if to_move is not None and to_move == rules.to_move(before):
        return  # the same seat goes on (its draws): nobody needs a mail yet
    this_move = game.turn - 1
    recent = _Recent(session.connection(), game, len(seats), this_move,
                     (mover.number, told, actor), window)
    if actor == "timeout":
        _timed_out(session, game, rules, after, mover, recent)
    elif actor == "bot" and mover.bot is None:  # an absent person's turn, played by the bot
        lines = recent.lines_since(mover.number, recent.last_move_not_of(mover.number), "bot")
        mail.played_for_you(session, game, mover, rules, after, lines, absent=True,
                            bot=game.absent_bot, later=True)
    if to_move is None:
        game.status, game.finished_at = FINISHED, now
        stop_clock(session, game, now)
        for seat in seats:
            lines = recent.lines_since(seat.number, recent.last_move_of(seat.number, this_move))
            mail.final(session, game, seat, seats, rules, after, lines, later=True)
        return
    start_clock(session, game, seats[to_move], now)
    # The turn that just ended: every move since someone other than the mover last moved.
    turn_began = recent.last_move_not_of(mover.number)
    for seat in seats:
        if seat.number == to_move and not seat.absent:
            last = recent.last_move_of(seat.number, this_move)
            news = recent.lines_since(seat.number, last)
            # Its first turn when it has no move in `recent`, which reaches back to the first
            # move while a seat has not moved (and this seat is not the mover).
            first = last < 0
            mail.your_turn(session, game, seat, rules, after, news, first_turn=first, later=True)
        elif seat.number in (mover.number, to_move):
            continue
        else:
            lines = recent.lines_since(seat.number, turn_began)
            if seat.notify == NOTIFY_EVERY:
                mail.moved(session, game, seat, rules, after, lines, seats[to_move], later=True)
            elif seat.notify == NOTIFY_DIGEST:
                insert_later(session, DigestItem, {
                    "seat_id": seat.id, "created_at": now, "text": json.dumps(
                        [line.data for line in lines], ensure_ascii=False)})


def _timed_out(session: Session, game: Game, rules: GameRules, after, mover: Seat,
               recent: _Recent) -> None:
    """The server ended `mover`'s turn for it: tell the seat, count it, maybe mark it absent."""
    lines = recent.lines_since(mover.number, recent.last_move_not_of(mover.number), "timeout")
    mover.timeouts_in_row += 1
    limit = current_app.config["GAMES_ABSENT_AFTER_TIMEOUTS"]
    newly_absent = mover.timeouts_in_row >= limit and not mover.absent
    if newly_absent:
        mover.absent = True
        mail.to_admins(session, L_("%(name)s is absent from %(game)s", name=mover.name,
                                   game=f"{game.title} #{game.id}"), [
            L_("Deadlines %(player)s (%(colour)s) missed in a row: %(count)d.",
               player=f"{mover.name} <{mover.email}>", colour=i18n.lazy_colour(mover.colour),
               count=mover.timeouts_in_row),
            L_("From now on the server plays the default move at once at each of their turns, "
               "until they make a move again."),
        ], game=game)
    mail.played_for_you(session, game, mover, rules, after, lines, absent=mover.absent,
                        later=True)


# --- the clock: admins' controls and the players' own ------------------------------------------

def _game_and_seat_to_move(session: Session, game_id: int) -> tuple[Game, Seat | None]:
    game = get_row(session, Game, game_id, with_for_update=True) \
        if isinstance(game_id, int) else None
    if game is None:
        raise NotFound(f"there is no game {game_id}")
    rules = rules_for(game.kind)
    to_move = rules.to_move(rules.loads(game.state_json))
    seat = None if to_move is None else session.exec(
        select(Seat).where(Seat.game_id == game.id, Seat.number == to_move)).one()
    return game, seat


def _tell_players(session: Session, game: Game, subject: str, lines: list[str]) -> None:
    for seat in _seats(session, game.id):
        mail.notice(session, game, seat, subject, lines)


def extend_deadline(game_id: int, hours: int, now: datetime | None = None,
                    also: Callable[[Session], None] | None = None) -> datetime:
    """Give the seat to move `hours` more (1 to 336); returns the new deadline.

    `also` runs in the same transaction (the admin pages write their audit entry there)."""
    if isinstance(hours, bool) or not isinstance(hours, int) or not 0 < hours <= 336:
        raise Malformed("extend by 1 to 336 hours")
    now = now or utcnow()
    with writing() as session:
        game, seat = _game_and_seat_to_move(session, game_id)
        if game.status != RUNNING:
            raise GameNotRunning(f"game {game.id} is {game.status}; only a running game has "
                                 "a deadline to extend")
        game.extension_hours += hours
        reset_clock(session, game, seat, now)
        _tell_players(session, game, L_("The deadline was extended"),
                      [L_("The deadline of %(name)s (%(colour)s) was extended by %(hours)d "
                          "hours.", name=seat.name, colour=i18n.lazy_colour(seat.colour),
                          hours=hours)])
        if also:
            also(session)
        return game.deadline_at


def pause_game(game_id: int, now: datetime | None = None,
               also: Callable[[Session], None] | None = None) -> None:
    """Stop the clock of a running game: no reminders, no timeouts, no moves until resumed."""
    now = now or utcnow()
    with writing() as session:
        game, __ = _game_and_seat_to_move(session, game_id)
        if game.status != RUNNING:
            raise GameNotRunning(f"game {game.id} is {game.status}, not running")
        game.status, game.paused_at = PAUSED, now
        stop_clock(session, game, now)
        _tell_players(session, game, L_("The game is paused"), [
            L_("An organiser paused the game: no moves, reminders or deadlines until it is "
               "resumed. You will get a mail then.")])
        if also:
            also(session)


def resume_game(game_id: int, now: datetime | None = None,
                also: Callable[[Session], None] | None = None) -> datetime | None:
    """Start a paused game's clock again; the pause does not count against the player."""
    now = now or utcnow()
    with writing() as session:
        game, seat = _game_and_seat_to_move(session, game_id)
        if game.status != PAUSED:
            raise GameNotRunning(f"game {game.id} is {game.status}, not paused")
        add_pause(game, game.paused_at, now)
        game.status, game.paused_at = RUNNING, None
        reset_clock(session, game, seat, now)
        _tell_players(session, game, L_("The game goes on"),
                      [L_("The game is running again. %(name)s (%(colour)s) is to move.",
                          name=seat.name, colour=i18n.lazy_colour(seat.colour))])
        if also:
            also(session)
        return game.deadline_at


def take_vacation(token: str, days: object, now: datetime | None = None) -> datetime:
    """Pause the seat's own clock for whole days from now, within its budget for the game."""
    budget = current_app.config["GAMES_VACATION_DAYS"]
    now = now or utcnow()
    with writing() as session:
        seat, game = _seat_and_game(session, token)
        left = budget - seat.vacation_days_used
        if isinstance(days, bool) or not isinstance(days, int) or not 0 < days <= left:
            raise Rejected(_("choose 1 to %(left)d days of vacation", left=left) if left > 0 else
                           _("you have used all %(budget)d days of vacation of this game",
                             budget=budget))
        if game.status not in (RUNNING, PAUSED):
            raise GameNotRunning(_("This game is %(status)s.",
                                   status=i18n.status_word(game.status)))
        active = seat.vacation_until is not None and seat.vacation_until > now
        seat.vacation_from = seat.vacation_from if active else now
        seat.vacation_until = (seat.vacation_until if active else now) + timedelta(days=days)
        seat.vacation_days_used += days
        session.add(seat)
        __, to_move = _game_and_seat_to_move(session, game.id)
        if game.status == RUNNING and to_move is not None and to_move.id == seat.id:
            reset_clock(session, game, seat, now)
        return seat.vacation_until


def end_vacation_now(token: str, now: datetime | None = None) -> int:
    """End the seat's vacation now; the whole days it did not use are given back (returned)."""
    now = now or utcnow()
    with writing() as session:
        seat, game = _seat_and_game(session, token)
        if seat.vacation_until is None or seat.vacation_until <= now:
            raise Rejected(_("you are not on vacation, so there is nothing to end"))
        if game.status not in (RUNNING, PAUSED):
            raise GameNotRunning(_("This game is %(status)s.",
                                   status=i18n.status_word(game.status)))
        unused = (seat.vacation_until - now) // timedelta(days=1)
        seat.vacation_until = now
        seat.vacation_days_used = max(0, seat.vacation_days_used - unused)
        session.add(seat)
        __, to_move = _game_and_seat_to_move(session, game.id)
        if game.status == RUNNING and to_move is not None and to_move.id == seat.id:
            reset_clock(session, game, seat, now)
        return unused


def set_language(token: str, code: str) -> str:
    """The seat's own language, for its pages and mails; returns it."""
    try:
        code = i18n.check_language(code)
    except ValueError as exc:
        raise Rejected(str(exc)) from None
    with writing() as session:
        seat, __ = _seat_and_game(session, token)
        seat.language = code
        session.add(seat)
    i18n.use(code)
    return code


def set_timezone(token: str, name: str) -> None:
    """The seat's own time zone, for the times its pages and mails show."""
    try:
        clock.zone(name)
    except ValueError as exc:
        raise Rejected(str(exc)) from None
    with writing() as session:
        seat, __ = _seat_and_game(session, token)
        seat.timezone = name
        session.add(seat)


def come_back(token: str) -> None:
    """An absent seat says it will play again: its turns wait for it from the next one on."""
    with writing() as session:
        seat, __ = _seat_and_game(session, token)
        seat.absent, seat.timeouts_in_row = False, 0
        session.add(seat)


# --- orders: several moves at once, from a turn file or a reply --------------------------------

@dataclass(frozen=True)
class OrdersResult:
    applied: list[MoveResult]
    failed: str | None = None  # the order that could not be applied, as written
    error: str | None = None  # why


def submit_orders(token: str | None, orders: Orders, *, seat_id: int | None = None,
                  via: str = "web") -> OrdersResult:
    """Apply a turn's orders one by one through `submit_move`, from the turn they were made for.

    Raises when the first order cannot be applied (nothing changed); when a later one fails, the
    earlier ones stand and the result says which line failed and why."""
    if not orders.lines:
        raise Malformed(_("No orders found: write your moves under the ORDERS line, one per line, "
                          "as the examples in the file show."))
    if len(orders.lines) > MAX_ORDERS:
        raise Malformed(_("A turn is at most %(most)d moves; this holds %(lines)d lines of "
                          "orders.", most=MAX_ORDERS, lines=len(orders.lines)))
    if orders.turn is None:
        raise Malformed(_("The turn file lacks its 'Turn:' line, so it cannot be told apart "
                          "from an old one. Download a new turn file and write your orders in "
                          "it."))
    applied: list[MoveResult] = []
    turn = orders.turn
    for line in orders.lines:
        try:
            result = submit_move(token, line, turn, seat_id=seat_id, via=via)
        except ServiceError as exc:
            if not applied:
                exc.message = f"'{line[:80]}': {exc.message}"
                raise
            return OrdersResult(applied, line, exc.message)
        applied.append(result)
        turn = result.turn
    return OrdersResult(applied)
