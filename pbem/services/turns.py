"""Turn numbers as players count them: a placement or an exchange and the draws after it are
one turn (the log and the API count moves; a turn is one to four of them).

A game's rules say which logged moves go on with the turn in progress (`continues_turn`:
notation prefixes, such as K&K's "draw"), or which log sentence a move that begins a turn
holds (`turn_begins`: message ids, such as "Round %(round)d: ... draws and collects tax.",
told in the move that ends the turn before: a turn there is a dozen moves whose notation does
not say where it ends), and whether a position is in the middle of a turn
(`mid_turn(state)`); by default (pbem.games.RulesBase) every move is a turn. The prefixes are
counted by the database (a move's turn is the number of turn-beginning moves up to it), so
numbering a page's latest moves, or finding the turn in progress, costs the same at move 10
and at move 200. Rules that only say it in Python (`starts_turn(notation)`) are counted here,
from the whole log.
"""

from __future__ import annotations

import functools

import orjson
from sqlalchemy import ColumnElement, and_, bindparam, func, or_, select, true
from sqlalchemy.engine import Connection
from sqlmodel import Session, col

from ..ground.models import MoveRecord


def _prefixes(rules) -> tuple[str, ...] | None:
    """The notation prefixes of moves that go on with a turn; None when only a Python
    `starts_turn` knows."""
    return rules.continues_turn


@functools.cache
def _markers(rules) -> tuple[str, ...] | None:
    """What the stored lines (`MoveRecord.lines_json`) of a move that begins a turn hold, for
    rules that say `turn_begins` (a message id, or several: the one written now and those
    older moves hold)."""
    messages = rules.turn_begins
    if messages is None:
        return None
    if isinstance(messages, str):
        messages = (messages,)
    return tuple('"t":' + orjson.dumps(message).decode() for message in messages)


@functools.cache
def _starts(rules):
    """Whether a logged move (its notation and stored lines) begins a turn, the first move
    aside."""
    markers = _markers(rules)
    if markers is not None:
        return lambda notation, lines_json: any(m in (lines_json or "") for m in markers)
    prefixes = _prefixes(rules)
    if prefixes is None:
        return lambda notation, lines_json: rules.starts_turn(notation)
    return lambda notation, lines_json: not notation.startswith(prefixes)


@functools.cache
def starts_sql(rules) -> ColumnElement[bool] | None:
    """SQL: the move row begins a turn (the first move always does); None when the rules
    say it only in Python."""
    markers = _markers(rules)
    if markers is not None:
        return or_(col(MoveRecord.number) == 0,
                   *(col(MoveRecord.lines_json).contains(m, autoescape=True) for m in markers))
    prefixes = _prefixes(rules)
    if prefixes is None:
        return None
    if not prefixes:
        return true()
    return or_(col(MoveRecord.number) == 0,
               and_(*(func.substr(MoveRecord.notation, 1, len(p)) != p for p in prefixes)))


@functools.cache
def begun_before_sql(rules, bounded: bool = True):
    """SQL: how many moves of game `:game_id` (before move `:before` when `bounded`) begin a
    turn: the turn of the move before; None when the rules say it only in Python. The database
    counts them without handing us a row, so this costs next to nothing at any length of game."""
    starts = starts_sql(rules)
    if starts is None:
        return None
    query = select(func.count()).select_from(MoveRecord).where(
        col(MoveRecord.game_id) == bindparam("game_id"), starts)
    if bounded:
        query = query.where(MoveRecord.number < bindparam("before"))
    return query.scalar_subquery()


def numbered(rules, begun: int, moves: list[tuple]) -> list[int]:
    """The turns of consecutive logged moves `moves` ((number, notation, lines_json), oldest
    first), `begun` turns having begun before the first of them."""
    starts = _starts(rules)
    out = []
    for number, notation, lines_json in moves:
        if number == 0 or starts(notation, lines_json):
            begun += 1
        out.append(begun)
    return out


_NOTATIONS = (select(col(MoveRecord.notation))
              .where(col(MoveRecord.game_id) == bindparam("game_id"))
              .order_by(col(MoveRecord.number)))


def notations(session: Session | Connection, game_id: int) -> list[str]:
    """The game's moves in the notation, first to last (read in a session or on a connection,
    as every function here that takes `session`)."""
    return list(session.execute(_NOTATIONS, {"game_id": game_id}).scalars())


def numbers(rules, moves: list[str]) -> list[int]:
    """For each move of the log (first to last), the turn it belongs to, the first being 1
    (for rules that tell turns by notation only)."""
    return numbered(rules, 0, [(n, notation, None) for n, notation in enumerate(moves)])


def of_move(session: Session | Connection, rules, game_id: int,
            number: int | None = None) -> int:
    """The turn move `number` belongs to (the latest move's when None; 0 before any move)."""
    condition = starts_sql(rules)
    if condition is None:
        counted = numbers(rules, notations(session, game_id))
        if number is not None:
            counted = counted[:number + 1]
        return counted[-1] if counted else 0
    if number is None:
        return session.execute(_counted(rules, False), {"game_id": game_id}).scalar_one()
    return session.execute(_counted(rules, True),
                           {"game_id": game_id, "before": number + 1}).scalar_one()


@functools.cache
def _counted(rules, bounded: bool):
    return select(begun_before_sql(rules, bounded))


def in_progress(rules, last: int, state) -> int:
    """The turn in progress in `state`, the latest logged move being of turn `last`."""
    over = state is not None and rules.to_move(state) is None
    return max(last, 1) if (over or (state is not None and rules.mid_turn(state))) \
        else last + 1


def current(session: Session | Connection, rules, game_id: int, state) -> int:
    """The turn in progress in `state`, the game's position after its logged moves."""
    return in_progress(rules, of_move(session, rules, game_id), state)


def at(rules, moves: list[str], played: int, state=None) -> int:
    """The turn in progress after the first `played` moves (`state`: the position then, needed
    only for the latest one, to tell whether its turn is still going on)."""
    counted = numbers(rules, moves[:played + 1])
    if played < len(counted):
        return counted[played]  # the turn that the next logged move belongs to
    return in_progress(rules, counted[-1] if counted else 0, state)


def current_of(game) -> int:
    """`current` for a game as it is now, read in a session of its own."""
    from ..games import rules_for
    from ..ground.db import reading

    rules = rules_for(game.kind)
    with reading() as session:
        return current(session, rules, game.id, rules.loads(game.state_json))
