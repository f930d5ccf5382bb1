"""The move path: every move, and the mails it causes.

Every move, whether from the seat page, the API, an emailed turn file or the scheduler, goes
through `submit_move`, which says who acted (an `Actor`). It applies the move in one write
transaction together with its log entry and the mails it causes, so either all of them happen
or none does. What follows beyond the turn's mails is announced (pbem.services.events: a game
finished, a turn timed out, a request to take back a turn overtaken) and done by its listeners
in the same transaction: this module imports none of them (ratings, tournaments, feeds, the
timeouts' policy).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

import orjson
from sqlalchemy import bindparam, case, func
from sqlalchemy.engine import Connection
from sqlalchemy.orm.util import identity_key
from sqlmodel import Session, col, select

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
from . import notices, turns
from .deadlines import reset_clock, start_clock
from .errors import (
    GameNotRunning,
    Malformed,
    NotYourTurn,
    Rejected,
    ServiceError,
    StaleTurn,
)
from .events import TurnTimedOut, UndoOvertaken, publish
from .finished import finish_game
from .log import (
    Window,
    read_window,
    readers_lines,
    rendered_lines,
    window_key,
    windows,
)
from .mail import kinds
from .mail.sending import send
from .players import network_of
from .seats import SeatContext, seat_rows
from .turnfile import MAX_ORDERS, Orders

logger = logging.getLogger(__name__)


# --- moves --------------------------------------------------------------------------------------

class Actor(StrEnum):
    """Who chose a move (the log stores its value): the seat's player, a computer player (the
    seat's own, or the game's for an absent seat), or the server at a deadline (the default
    move: pbem.services.timeouts)."""

    PLAYER = "player"
    BOT = "bot"
    TIMEOUT = "timeout"


@dataclass(frozen=True)
class MoveRequest:
    """One move as `submit_move` was asked for it, checked for its types."""

    token: str | None
    text: str
    turn: int
    seat_id: int | None
    actor: Actor
    via: str
    now: datetime
    context_log: int | None
    client: str | None


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
                actor: Actor = Actor.PLAYER, via: str = "web", now: datetime | None = None,
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
    request = MoveRequest(token, text, turn, seat_id, Actor(actor), via, now or utcnow(),
                          context_log, client)
    if session is None:
        with writing_rows() as own:
            result = _move(own, False, request)
        for key, window in own.info.pop(_MADE, ()):  # committed: the log is so now
            windows.put(key, window)
        _log_move(result, request.actor, via)
        return result
    # What the caller changed is in the database before the rows are read: its ORM objects,
    # and the moves it made before this one (the latest moves are read back; the mails and
    # timers it queued wait to be written together).
    insert_pending(session, MoveRecord)
    session.flush()
    result = _move(session, True, request)
    _log_move(result, request.actor, via)  # made in the caller's transaction, which commits it
    return result


def _log_move(result: MoveResult, actor: Actor, via: str) -> None:
    """One INFO line per move: the game, the seat (as players count them), the move, who and
    how; never the link it came by."""
    if logger.isEnabledFor(logging.INFO):
        logger.info("move: game %d seat %d %s (%s, via %s)%s", result.game_id, result.seat + 1,
                    result.notation, actor.value, via, "; the game is over" if result.finished
                    else "")


_MADE = "pbem_log_windows"  # session.info: the windows a move made, kept once it is committed


def _move(session: Writer | Session, outer: bool, request: MoveRequest) -> MoveResult:
    """`submit_move` in a write transaction: its own (a Writer) or the caller's session
    (`outer`)."""
    text, turn, actor, now = request.text, request.turn, request.actor, request.now
    context_log = request.context_log
    # Plain rows read and written on the transaction's connection (pbem.ground.rows): the game's row
    # locked as it is read. The mails and the clock add their rows to the transaction
    # (insert_later).
    connection = session.connection()
    seat, game, seats = seat_rows(connection, request.token, request.seat_id, lock=True)
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
    lines = told_lines(rules, before, move, after, seats)
    if actor is Actor.BOT:  # every reader, in the log and in mail, sees who chose it
        for told in lines.values():
            told[:1] = [{"t": N_("Computer player (%(bot)s): %(line)s"),
                         "p": {"bot": _bot_word(_bot_of(game, seat)), "line": line}}
                        for line in told[:1]]
    notation = rules.notation(move)
    lines_json = orjson.dumps(lines).decode()  # read back by json.loads, like any JSON
    language = i18n.language()
    record = (game.turn, seat.number, notation, actor.value, request.via, now,
              lines_json)  # _LOG_COLUMNS
    insert_later(session, MoveRecord, {
        "game_id": game.id, "number": game.turn, "seat": seat.number, "notation": notation,
        "actor": actor.value, "via": request.via, "lines_json": lines_json, "created_at": now,
        "client": network_of(request.client)})
    # The log as it is before this move, if this process has it (a caller's session may have
    # changed it in ways the game row does not tell yet: read).
    window = None if outer else windows.get(window_key(game), max(context_log or 0, 1))
    game.state_json = rules.dumps(after)
    game.turn += 1
    game.updated_at = now
    came_back = actor is Actor.PLAYER and seat.absent
    if actor is Actor.PLAYER:
        seat.timeouts_in_row, seat.absent = 0, False
    _notify(Moved(session, game, seats, rules, before, after, seat, actor, now, lines), window)
    notices.after_turn(session, game, seats, seat, actor, rules.to_move(after),
                       rules.to_move(before), now)
    if game.undo_turn is not None:  # a request to take back a turn stood: it ends
        game.undo_turn = None
        publish(UndoOvertaken(session, game, seats, now))
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
        session.info.setdefault(_MADE, []).append((window_key(game), window))
    if context_log is not None:
        if window is None:  # read, with this move
            insert_pending(session)
            window = read_window(connection, game, max(context_log, 1), rules)[0]
            if not outer:
                session.info.setdefault(_MADE, []).append((window_key(game), window))
        log = window.log(str(seat.number), language, context_log)
        context = SeatContext(game, seat, seats, rules, after, log,
                              turns.in_progress(rules, window.last_turn, after),
                              window.before(log, str(seat.number), language))
    return MoveResult(game.id, seat.number, notation, game.turn,
                      list(rendered_lines(lines_json, str(seat.number), language)),
                      game.status == FINISHED, context)


def told_lines(rules: GameRules, before, move, after, seats: list) -> dict[str, list]:
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


def moved_on(game: Game | GameRow, turn: int) -> StaleTurn:
    """`_moved_on` in a session of its own (for the seat page's preview)."""
    with reading() as session:
        return _moved_on(session, game, turn)


# The latest move of each seat before move `:before`; the oldest of them is where the moves
# `_Recent` needs begin (move 0 while a seat of the `:seats` has not moved yet).
_LATEST_BY_SEAT = (select(func.max(MoveRecord.number).label("latest"))
                   .where(MoveRecord.game_id == bindparam("game_id"),
                          MoveRecord.number < bindparam("before"))
                   .group_by(col(MoveRecord.seat)).subquery())
_FIRST_NEEDED = (select(case((func.count() < bindparam("seats"), 0),
                             else_=func.min(_LATEST_BY_SEAT.c.latest)))
                 .select_from(_LATEST_BY_SEAT).scalar_subquery())
_RECENT = (select(MoveRecord.number, MoveRecord.seat, MoveRecord.lines_json, MoveRecord.actor)
           .where(MoveRecord.game_id == bindparam("game_id"),
                  MoveRecord.number >= _FIRST_NEEDED, MoveRecord.number < bindparam("before"))
           .order_by(col(MoveRecord.number)))


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
                 this: tuple[int, dict[str, list], str], window: Window | None):
        rows = None if window is None else window.recent(seats)
        if rows is None:
            rows = connection.execute(_RECENT, {"game_id": game.id, "before": before,
                                                "seats": seats}).all()
        self.records = [(number, seat, readers_lines(lines)) for number, seat, lines, _ in rows]
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


@dataclass(frozen=True)
class Moved:
    """A move just made, as what follows it needs it: the game and its seats (plain rows, as
    the move changed them), the positions before and after, the mover, who chose the move,
    when, and what it did in each reader's words (as stored)."""

    session: Writer | Session
    game: GameRow
    seats: list[SeatRow]
    rules: GameRules
    before: object
    after: object
    mover: SeatRow
    actor: Actor
    now: datetime
    told: dict[str, list]


def _notify(moved: Moved, window: Window | None = None) -> None:
    """What follows a move that ends a turn: what its actor's move causes (`_BY_ACTOR`), then
    the end of the game or the next turn's mails. The mails are queued as kinds written later
    (pbem.services.mail.kinds): written when they are delivered, not in the move's
    transaction, from the game as it is after this move."""
    rules, mover = moved.rules, moved.mover
    to_move = rules.to_move(moved.after)
    if to_move is not None and to_move == rules.to_move(moved.before):
        return  # the same seat goes on (its draws): nobody needs a mail yet
    recent = _Recent(moved.session.connection(), moved.game, len(moved.seats),
                     moved.game.turn - 1, (mover.number, moved.told, moved.actor), window)
    _BY_ACTOR[moved.actor](moved, recent)
    if to_move is None:
        _finished(moved, recent)
    else:
        _next_turn(moved, recent, to_move)


def _by_player(moved: Moved, recent: _Recent) -> None:
    """A player's own move causes nothing beyond the turn's mails."""


def _by_bot(moved: Moved, recent: _Recent) -> None:
    """A computer player's move: an absent person's seat (no computer player of its own) is
    told what was played for it."""
    mover = moved.mover
    if mover.bot is None:
        lines = recent.lines_since(mover.number, recent.last_move_not_of(mover.number),
                                   Actor.BOT)
        send(moved.session, kinds.PLAYED_FOR_YOU, game=moved.game, seat=mover, lines=lines,
             absent=True, bot=moved.game.absent_bot)


def _by_timeout(moved: Moved, recent: _Recent) -> None:
    """The server ended the mover's turn at its deadline: announced (pbem.services.timeouts
    counts it and tells the seat), with what it played."""
    mover = moved.mover
    lines = recent.lines_since(mover.number, recent.last_move_not_of(mover.number),
                               Actor.TIMEOUT)
    publish(TurnTimedOut(moved.session, moved.game, mover, lines))


_BY_ACTOR: dict[Actor, Callable[[Moved, _Recent], None]] = {
    Actor.PLAYER: _by_player, Actor.BOT: _by_bot, Actor.TIMEOUT: _by_timeout}


def _finished(moved: Moved, recent: _Recent) -> None:
    """The move ended the game: finished (and announced), every seat told how."""
    finish_game(moved.session, moved.game, moved.now)
    this_move = moved.game.turn - 1
    for seat in moved.seats:
        lines = recent.lines_since(seat.number, recent.last_move_of(seat.number, this_move))
        send(moved.session, kinds.FINAL, game=moved.game, seat=seat, seats=moved.seats,
             lines=lines)


def _next_turn(moved: Moved, recent: _Recent, to_move: int) -> None:
    """The move handed the turn to `to_move`: its clock starts, it is told its turn (unless
    absent), and the others what happened, each as they chose (every move or a digest)."""
    session, game, seats, mover, now = (moved.session, moved.game, moved.seats, moved.mover,
                                        moved.now)
    this_move = game.turn - 1
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
            send(session, kinds.YOUR_TURN, game=game, seat=seat, news=news, first_turn=first)
        elif seat.number in (mover.number, to_move):
            continue
        else:
            lines = recent.lines_since(seat.number, turn_began)
            if seat.notify == NOTIFY_EVERY:
                send(session, kinds.MOVED, game=game, seat=seat, lines=lines,
                     next_seat=seats[to_move])
            elif seat.notify == NOTIFY_DIGEST:
                insert_later(session, DigestItem, {
                    "seat_id": seat.id, "created_at": now, "text": json.dumps(
                        [line.data for line in lines], ensure_ascii=False)})


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
