"""A game's log as its readers see it: each move's lines in the reader's words and language,
each with its turn as players count them (pbem.services.turns).

The latest moves of the games under way are kept by each process (`_Windows`): a page or an
API answer shows the same fifty entries after every move, so a move adds its own entry to
the window it finds (pbem.services.moves) instead of the next request reading them all again.
"""

from __future__ import annotations

import functools
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from flask import current_app
from sqlalchemy import bindparam, literal_column
from sqlalchemy.engine import Connection
from sqlmodel import Session, col, select

from ..games import GameRules
from ..ground import i18n
from ..ground.db import (
    insert_pending,
)
from ..ground.kept import Kept
from ..ground.models import (
    Game,
    MoveRecord,
)
from ..ground.rows import GameRow
from . import turns


class LogEntry(NamedTuple):
    """One applied move as the log shows it to one reader (a named tuple: a page shows fifty,
    and a tuple is made in a third of a frozen dataclass's time). Entries are shared between
    the pages and answers that show them (`log_for`): nothing changes one."""

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
def readers_lines(lines_json: str) -> dict[str, tuple[str, ...]]:
    """A log entry's lines by reader, parsed once per process: a record never changes, and
    a page or an API answer shows the same fifty entries again after every move."""
    return {reader: tuple(lines) for reader, lines in json.loads(lines_json).items()}


_RENDERED = Kept(16384)


def rendered_lines(lines_json: str, reader: str, language: str) -> tuple[str, ...]:
    """A log entry's lines for `reader` written in `language`, once per process: a page or an
    API answer shows the same fifty entries again after every move, and writing them was most
    of its time (`language` is part of the key, and what it is written in)."""
    return _RENDERED.get_or_make((lines_json, reader, language),
                                 lambda: _render_lines(lines_json, reader, language))


def _render_lines(lines_json: str, reader: str, language: str) -> tuple[str, ...]:
    """Written in `language` whatever the language in use: a move extends every reader's
    window (`Window.extended`) in the mover's context."""
    lines = readers_lines(lines_json).get(reader, ())
    if i18n.language() == language:
        return tuple(i18n.render(line) for line in lines)
    with i18n.in_language(language):
        return tuple(i18n.render(line) for line in lines)


_LOG_COLUMNS = (col(MoveRecord.number), col(MoveRecord.seat), col(MoveRecord.notation),
                col(MoveRecord.actor), col(MoveRecord.via), col(MoveRecord.created_at),
                col(MoveRecord.lines_json))


_LOG = (select(*_LOG_COLUMNS).where(col(MoveRecord.game_id) == bindparam("game_id"))
        .order_by(col(MoveRecord.number).desc()))


# What names a game's log: a log changes only by a move (the turn counter goes on, the game's
# `updated_at` is the move's time) or by a move taken back (the turn counter goes back and the
# clock starts anew: `clock_version` goes on), each in the transaction that changes the records.
# So within one database these columns never name two different logs; `updated_at` keeps a
# database replaced under a running server (a restored copy that went another way) from being
# taken for the one it was, and the app's database token keeps two databases apart (an
# imported copy of a game has the same watch id).
_WINDOW_KEY = (Game.watch_id, Game.turn, Game.clock_version, Game.updated_at)


def window_key(game: Game | GameRow) -> tuple:
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
        .where(col(MoveRecord.game_id) == bindparam("game_id")) \
        .order_by(col(MoveRecord.number).desc()).limit(bindparam("limit"))


@functools.lru_cache(maxsize=8192)
def _entry(row: tuple, reader: str, language: str, turn_number: int) -> LogEntry:
    """The log entry of a record's row (`_LOG_COLUMNS`) for `reader` in `language`, made once
    per process: the key is the whole row, so a record taken back and made anew (another row)
    is another entry."""
    number, seat, notation, actor, via, created_at, lines_json = row
    return LogEntry(number, seat, notation, actor, via, created_at,
                    rendered_lines(lines_json, reader, language), turn_number)


class Window:
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

    def extended(self, row: tuple, rules: GameRules) -> Window:
        """The window after move `row`, the game's next, of the same size; the entries made so
        far are carried over (the new one's lines were written when it was made)."""
        number = turns.numbered(rules, self.last_turn, [(row[0], row[2], row[6])])[0]
        full = len(self.rows) == self.size
        rows = ((row, *self.rows[:-1]) if full else (row, *self.rows))
        numbers = ((number, *self.numbers[:-1]) if full else (number, *self.numbers))
        logs: dict[tuple, list] = {}
        for (reader, language, *limit), log in list(self._logs.items()):
            if not limit:
                logs[reader, language] = [_entry(row, reader, language, number),
                                          *(log[:-1] if full else log)]
                logs[reader, language, "before"] = log
        return Window(rows, numbers, self.size, self.complete and not full, logs)

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
    """The windows of the latest logs read or written by this process, by `window_key`: the
    latest of each game (a newer one replaces it; an older one coming late is not kept), at
    most ROWS rows in all (the games not asked about for longest go first). Safe for
    threads. Kept small: what a process keeps, its garbage collector walks through."""

    ROWS = 20000

    def __init__(self):
        self._windows: OrderedDict[tuple, Window] = OrderedDict()
        self._latest: dict[tuple, tuple] = {}  # (database, watch id) -> its window's key
        self._rows = 0
        self._lock = threading.Lock()

    def get(self, key: tuple, size: int) -> Window | None:
        """The window of `key` holding the latest `size` moves (or all), if kept."""
        with self._lock:
            window = self._windows.get(key)
            if window is None or not (window.size >= size or window.complete):
                return None
            self._windows.move_to_end(key)
            return window

    def put(self, key: tuple, window: Window) -> None:
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


windows = _Windows()


def _turns_of(connection: Connection, game: Game | GameRow, rules: GameRules,
              rows: Sequence[Any],
              begun: int) -> list[int]:
    """The turn of each of the log's `rows` (newest first), `begun` turns having begun before
    the oldest (pbem.services.turns); rules that say it in Python only count the whole log."""
    oldest_first = [(row[0], row[2], row[6]) for row in reversed(rows)]
    if turns.starts_sql(rules) is None:
        counted = turns.numbers(rules, turns.notations(connection, game.id))
        numbers = [counted[number] for number, *__ in oldest_first]
    else:
        numbers = turns.numbered(rules, begun, oldest_first)
    numbers.reverse()
    return numbers


def read_window(connection: Connection, game: Game | GameRow, size: int,
                 rules: GameRules) -> tuple[Window, tuple | None]:
    """The latest `size` moves of `game` read from the database, and the `window_key` of the
    game as the same statement saw it (None without moves)."""
    # Moves are numbered from 0 without gaps, so the oldest row shown is move `before`.
    before = max(game.turn - size, 0)
    rows = connection.execute(_log_latest(rules), {
        "game_id": game.id, "limit": size, "before": before}).all()
    if not rows:  # no move yet; the game row says so when its turn counter is 0
        return Window((), (), size, True), window_key(game) if game.turn == 0 else None
    begun = rows[0][7]
    if rows[-1][0] != before:  # not so: count before the oldest row shown
        begun = turns.of_move(connection, rules, game.id, rows[-1][0] - 1)
    numbers = _turns_of(connection, game, rules, rows, begun)
    key = (current_app.extensions["pbem_db_token"], *rows[0][8:])
    return (Window(tuple(tuple(row[:7]) for row in rows), tuple(numbers), size,
                    len(rows) < size), key)


def window_of(connection: Connection, game: Game | GameRow, size: int, rules: GameRules,
              readers: tuple[str, ...] = ()) -> Window:
    """The window of the latest `size` moves of `game` as read in this transaction: kept by the
    process, or read and then kept, with the entries of `readers` in the language in use made
    at once (the seats: each shows its own from then on, one move added at a time)."""
    key = window_key(game)
    window = windows.get(key, size)
    if window is None:
        window, read_key = read_window(connection, game, size, rules)
        language = i18n.language()
        for reader in readers:
            window.log(reader, language)
        if read_key == key:  # what the game row says, not a later log (PostgreSQL)
            windows.put(key, window)
    return window


def log_for(session: Session | Connection, game: Game | GameRow, reader: int, limit: int | None,
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
        window = window_of(connection, game, max(limit, 1), rules, readers)
        return window.log(key, language, limit), window.last_turn
    rows = connection.execute(_LOG, {"game_id": game.id}).all()
    numbers = _turns_of(connection, game, rules, rows, 0)
    return ([_entry(tuple(row), key, language, number) for row, number in zip(rows, numbers)],
            numbers[0] if numbers else 0)
