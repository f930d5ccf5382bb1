"""The move path: every move, and the mails it causes.

Every move, whether from the seat page, the API, an emailed turn file or the scheduler, goes
through `submit_move`. It applies the move in one write transaction together with its log
entry and the mails it causes, so either all of them happen or none does.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime

import orjson
from flask import current_app
from flask_babel import lazy_gettext as L_
from sqlalchemy import bindparam, case, func
from sqlalchemy.engine import Connection
from sqlalchemy.orm.util import identity_key
from sqlmodel import Session, select

from ..games import GameRules, MoveError, rules_for
from ..ground import i18n
from ..ground.db import (
    Writer,
    insert_later,
    insert_pending,
    reading,
    utcnow,
    writing_rows,
)
from ..ground.i18n import N_, _
from ..ground.models import (
    FINISHED,
    NOTIFY_DIGEST,
    NOTIFY_EVERY,
    PAUSED,
    RUNNING,
    DigestItem,
    Game,
    MoveRecord,
    Seat,
)
from ..ground.rows import GameRow, SeatRow, write_changes
from . import mail, notices, turns, undo
from .deadlines import reset_clock, start_clock, stop_clock
from .errors import (
    GameNotRunning,
    Malformed,
    NotYourTurn,
    Rejected,
    ServiceError,
    StaleTurn,
)
from .finished import on_game_finished
from .log import (
    _read_window,
    _readers_lines,
    _rendered_lines,
    _Window,
    _window_key,
    _windows,
)
from .mail import intents
from .players import network_of
from .seats import SeatContext, _seat_rows
from .turnfile import MAX_ORDERS, Orders

logger = logging.getLogger(__name__)


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
                context_log: int | None = None, session: Session | None = None,
                client: str | None = None) -> MoveResult:
    """Apply one move for the seat the token opens (or `seat_id`, for trusted callers).

    `turn` is the game's turn counter the move was built for; anything else is refused as
    stale. Raises a ServiceError subclass and changes nothing when the move cannot be applied.
    With `context_log`, the result also holds the mover's SeatContext after the move, read in
    the same transaction, with that many log entries. With `session` (the scheduler's, for a
    timeout), the move is made in that session's write transaction, which the caller commits;
    a refused move changes nothing in it either. `client`: the address a page or API request
    came from; the move keeps its network (for ratings: pbem.services.ratings).
    """
    if isinstance(turn, bool) or not isinstance(turn, int) or not 0 <= turn < 2 ** 53:
        raise Malformed(_("the move must say which turn it was made for (a whole number)"))
    if not isinstance(text, str):
        raise Malformed(_("the move must be text in the notation, as `legal` lists them"))
    now = now or utcnow()
    if session is None:
        with writing_rows() as own:
            result = _move(own, False, token, text, turn, seat_id, actor, via, now,
                           context_log, client)
        for key, window in own.info.pop(_MADE, ()):  # committed: the log is so now
            _windows.put(key, window)
        _log_move(result, actor, via)
        return result
    # What the caller changed is in the database before the rows are read: its ORM objects,
    # and the moves it made before this one (the latest moves are read back; the mails and
    # timers it queued wait to be written together).
    insert_pending(session, MoveRecord)
    session.flush()
    result = _move(session, True, token, text, turn, seat_id, actor, via, now, context_log,
                   client)
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
          context_log: int | None, client: str | None = None) -> MoveResult:
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
    lines = _told(rules, before, move, after, seats)
    if actor == "bot":  # every reader, in the log and in mail, sees who chose it
        for told in lines.values():
            told[:1] = [{"t": N_("Computer player (%(bot)s): %(line)s"),
                         "p": {"bot": _bot_word(_bot_of(game, seat)), "line": line}}
                        for line in told[:1]]
    notation = rules.notation(move)
    lines_json = orjson.dumps(lines).decode()  # read back by json.loads, like any JSON
    language = i18n.language()
    record = (game.turn, seat.number, notation, actor, via, now, lines_json)  # _LOG_COLUMNS
    insert_later(session, MoveRecord, {
        "game_id": game.id, "number": game.turn, "seat": seat.number, "notation": notation,
        "actor": actor, "via": via, "lines_json": lines_json, "created_at": now,
        "client": network_of(client)})
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
    notices.after_turn(session, game, seats, seat, actor, rules.to_move(after), to_move, now)
    if game.undo_turn is not None:  # a request to take back a turn stood: it ends
        game.undo_turn = None
        asker = undo.moved_on(connection, game.id, now)
        if asker is not None:
            undo.tell_moved_on(session, game, seats[asker])
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
            if not outer:
                session.info.setdefault(_MADE, []).append((_window_key(game), window))
        log = window.log(str(seat.number), language, context_log)
        context = SeatContext(game, seat, seats, rules, after, log,
                              turns.in_progress(rules, window.last_turn, after),
                              window.before(log, str(seat.number), language))
    return MoveResult(game.id, seat.number, notation, game.turn,
                      list(_rendered_lines(lines_json, str(seat.number), language)),
                      game.status == FINISHED, context)


def _told(rules: GameRules, before, move, after, seats: list[SeatRow]) -> dict[str, list]:
    """What `move` did in each reader's words (-1: a spectator's), as stored data: players
    named by name and colour, the reader as "you" (issue 43, point 11)."""
    names = {s.colour: s.name for s in seats}
    lines = {}
    for reader in range(-1, len(seats)):
        told = rules.describe(before, move, after, None if reader < 0 else reader)
        you = seats[reader].colour if reader >= 0 else None
        lines[str(reader)] = [i18n.phrase_data(line, names, you) for line in told]
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


def _bot_word(bot: str | None):
    """A computer player's level as sentence data, in each reader's words when shown."""
    return {"t": i18n.BOT_LEVELS[bot]} if bot in i18n.BOT_LEVELS else bot


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
    queued as intents (pbem.services.mail.intents): written when they are delivered, not in the
    move's transaction, from the game as it is after this move."""
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
        intents.played_for_you(session, game, mover, lines, absent=True, bot=game.absent_bot)
    if to_move is None:
        game.status, game.finished_at = FINISHED, now
        stop_clock(session, game, now)
        on_game_finished(session, game, now)  # ratings, tournaments
        for seat in seats:
            lines = recent.lines_since(seat.number, recent.last_move_of(seat.number, this_move))
            intents.final(session, game, seat, seats, lines)
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
            intents.your_turn(session, game, seat, news, first_turn=first)
        elif seat.number in (mover.number, to_move):
            continue
        else:
            lines = recent.lines_since(seat.number, turn_began)
            if seat.notify == NOTIFY_EVERY:
                intents.moved(session, game, seat, lines, seats[to_move])
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
    intents.played_for_you(session, game, mover, lines, absent=mover.absent)


# --- orders: several moves at once, from a turn file or a reply --------------------------------

@dataclass(frozen=True)
class OrdersResult:
    applied: list[MoveResult]
    failed: str | None = None  # the order that could not be applied, as written
    error: str | None = None  # why


def submit_orders(token: str | None, orders: Orders, *, seat_id: int | None = None,
                  via: str = "web", client: str | None = None) -> OrdersResult:
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
            result = submit_move(token, line, turn, seat_id=seat_id, via=via, client=client)
        except ServiceError as exc:
            if not applied:
                exc.message = f"'{line[:80]}': {exc.message}"
                raise
            return OrdersResult(applied, line, exc.message)
        applied.append(result)
        turn = result.turn
    return OrdersResult(applied)
