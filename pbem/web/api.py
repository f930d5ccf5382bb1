"""The JSON API for scripts and bots (documented in docs/api.md).

The token in the path is the seat's secret, as in a move link; there are no cookies, so CSRF
does not apply. Moves go through the same `submit_move` as the seat page.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import cast

import yaml
from flask import Blueprint, current_app, jsonify, request

from ..ground.kept import Kept
from ..ground.models import RUNNING
from ..services import talk, undo
from ..services.errors import Malformed, ServiceError
from ..services.log import LogEntry
from ..services.moves import submit_move
from ..services.seats import SeatContext, load_seat
from .site import answer_refusals, csrf, refused_with, wake_sender

bp = Blueprint("api", __name__, url_prefix="/api/v1")
csrf.exempt(bp)

API_LOG = 50


class _LogItems:
    """Each log entry as the answer shows it, made once per process: an answer shows the same
    fifty entries after every move, and the entries (`pbem.services.log.LogEntry`) are shared
    objects that never change, so one is looked up by its identity. The item holds the move
    as the reader sees it (`notation_for`), which is compared, not assumed."""

    def __init__(self, size: int = 4096):
        # A plain dict: a lookup per entry of every answer, where a lock cost more than the
        # rest; when full it is emptied, and items are made again as they are asked for.
        self._items: dict[int, tuple[LogEntry, str, dict]] = {}
        self.size = size

    def __call__(self, entry: LogEntry, move: str) -> dict:
        held = self._items.get(id(entry))
        if held is not None and held[0] is entry and held[1] == move:
            return held[2]
        item = {"move_number": entry.number, "turn": entry.number,
                "turn_number": entry.turn_number, "seat": entry.seat, "lines": entry.lines,
                "move": move, "at": entry.created_at.isoformat()}
        if len(self._items) >= self.size:
            self._items.clear()
        self._items[id(entry)] = (entry, move, item)  # the entry held keeps its id its own
        return item


_log_item = _LogItems()
# The items of a whole log list, by the list's identity: a log list (pbem.services.log's windows)
# is one seat's view of one position of one game, so its items never differ.
_log_lists = Kept(512)


def _log_items(ctx: SeatContext) -> list[dict]:
    log, reader = ctx.log, ctx.seat.number
    held = _log_lists.get(id(log))
    if held is not None and held[0] is log and held[1] == reader:
        return held[2]
    rules, state = ctx.rules, ctx.state
    before = ctx.log_before
    held = None if before is None else _log_lists.get(id(before))
    if held is not None and held[0] is before and held[1] == reader:
        # The previous move's items, the new entry's added: a move as a reader sees it
        # (notation_for) depends on the reader and the game's players, not the position.
        new = log[:len(log) - len(before)] if len(log) > len(before) else log[:1]
        items = [_log_item(r, rules.notation_for(state, r.notation, r.seat, reader))
                 for r in new] + held[2][:len(log) - len(new)]
    else:
        items = [_log_item(r, rules.notation_for(state, r.notation, r.seat, reader))
                 for r in log]
    _log_lists.put(id(log), (log, reader, items))  # the list held keeps its id its own
    return items


def seat_document(ctx: SeatContext) -> dict:
    """The seat's answer: the game, the seat's view, its moves and the latest log entries.
    Parts of it (the view, the log's items) are shared with other answers: serialise it, do
    not change them."""
    rules, state, seat = ctx.rules, ctx.state, ctx.seat
    to_move = rules.to_move(state)
    # Only a running game takes moves: a paused one lists none, even for the seat it waits for.
    mine = ctx.game.status == RUNNING and to_move == seat.number
    document = {
        "game": ctx.game.id,
        "kind": ctx.game.kind,
        "seat": seat.number,
        "name": seat.name,
        "colour": seat.colour,
        "players": [{"seat": s.number, "name": s.name, "colour": s.colour} for s in ctx.seats],
        "status": ctx.game.status,
        "moves_played": ctx.game.turn,
        "turn": ctx.game.turn,  # the old name of moves_played, kept for existing clients
        "turn_number": ctx.turn_number,
        "to_move": mine,
        "waiting_for": to_move,
        "deadline": ctx.game.deadline_at.isoformat() if ctx.game.deadline_at else None,
        "view": rules.view_dict(state, seat.number),
        "legal": rules.legal(state) if mine else [],
        "patterns": rules.move_patterns(state) if mine else [],
        "log": _log_items(ctx),
    }
    outcome = rules.outcome(state)
    if outcome is not None:
        document["outcome"] = outcome
    return document


def _error(exc: ServiceError, **_view_args):
    return jsonify(error=exc.message, status=exc.status), exc.status


answer_refusals(bp, _error)


OPENAPI = "docs/openapi.yaml"


@cache
def _openapi_file() -> dict:
    from ..ground.config import ROOT

    with (ROOT / OPENAPI).open(encoding="utf-8") as f:
        return yaml.safe_load(f)


@cache
def _openapi_for(max_length: int) -> dict:
    document = copy.deepcopy(_openapi_file())
    document["components"]["schemas"]["MessageRequest"]["properties"]["text"]["maxLength"] = \
        max_length
    return document


def openapi_document() -> dict:
    """docs/openapi.yaml, read once per process, as this server keeps it: the longest message
    is the server's `[talk] max_length` (the file says the default), so that a request the
    document calls valid is one the server takes. The API's contract (tests/server/test_openapi.py)."""
    return _openapi_for(current_app.config["TALK_MAX_LENGTH"])


@bp.get("/openapi.json")
def openapi():
    return jsonify(openapi_document())


@bp.get("/seat/<token>")
def seat(token: str):
    return jsonify(seat_document(load_seat(token, API_LOG)))


# Turn numbers a client may send: JSON's safe whole numbers. Anything larger cannot be a turn,
# and would not fit the database's integer column when compared with the move log.
MAX_TURN = 2**53 - 1


def _bad_request(message: str):
    """400: the body is not of the form docs/openapi.yaml gives. Only that: a request the
    document calls valid is never answered 400 (a rule it cannot state is a 422)."""
    return jsonify(error=message, status=400), 400


def _unprocessable(message: str):
    return jsonify(error=message, status=422), 422


def _whole(value: object) -> int | None:
    """A JSON number that is a whole number, as an int (JSON Schema's "integer" takes 664.0 as
    well as 664); None for anything else, true and false included."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


@bp.post("/seat/<token>/move")
def move(token: str):
    try:
        body = request.get_json(silent=True)
    except RecursionError:  # nesting deep enough to exhaust the JSON parser's stack
        body = None
    if not isinstance(body, dict):
        return _bad_request('send a JSON object with the header Content-Type: application/json: '
                            '{"move": "<notation>", "moves_played": <moves_played>}')
    # "moves_played" is the name that says what the number counts; "turn", its old name, is
    # still taken, and both may be sent when they agree.
    unknown = sorted(set(body) - {"move", "turn", "moves_played"})
    counters = [body[k] for k in ("moves_played", "turn") if k in body]
    if unknown or "move" not in body or not counters:
        return _bad_request('the body must hold exactly "move" (text) and "moves_played" (a '
                            'number; "turn" is its old name)'
                            + (f"; unknown: {', '.join(map(str, unknown))[:80]}" if unknown
                               else ""))
    numbers = [_whole(counter) for counter in counters]
    if None in numbers or not all(0 <= n <= MAX_TURN for n in cast("list[int]", numbers)):
        return _bad_request(f'"moves_played" must be the number of moves the game has '
                            f'played, a whole number from 0 to {MAX_TURN}')
    if len(set(numbers)) > 1:
        return _unprocessable('"moves_played" and "turn" are one number under two names; send '
                              'one of them')
    result = submit_move(token, body["move"], numbers[0], via="api", context_log=API_LOG,
                         client=request.remote_addr)
    wake_sender()
    document = seat_document(cast(SeatContext, result.context))  # asked for: context_log
    document["applied"] = {"move": result.notation, "lines": result.lines}
    return jsonify(document)


@bp.get("/seat/<token>/messages")
def messages(token: str):
    """The messages this seat may read (to everyone, and its own private ones), newest last."""
    entries = talk.thread(token)
    return jsonify(messages=[e.as_dict() for e in entries],
                   unread=sum(1 for e in entries if e.unread))


def _message_refused(exc: ServiceError, token: str):
    """The body has the documented form when a Malformed comes back: what it says is refused."""
    return _unprocessable(exc.message) if isinstance(exc, Malformed) else _error(exc)


@bp.post("/seat/<token>/messages")
@refused_with(_message_refused)
def post_message(token: str):
    try:
        body = request.get_json(silent=True)
    except RecursionError:
        body = None
    if not isinstance(body, dict) or set(body) - {"text", "to"} or "text" not in body:
        return _bad_request('send a JSON object {"text": "<the message>", "to": "all"} (or a '
                            'seat number for a private message) with the header '
                            'Content-Type: application/json')
    to = body.get("to", "all")
    if to != "all":
        to = _whole(to)
        if to is None or not 0 <= to < 100:
            return _bad_request('"to" must be "all" or the seat number of another player')
    text, limit = body["text"], current_app.config["TALK_MAX_LENGTH"]
    if not isinstance(text, str) or not 1 <= len(text) <= limit:
        return _bad_request(f'"text" must be the message, 1 to {limit} characters')
    posted = talk.post_message(token, text, to, via="api")
    entries = talk.thread(token)
    wake_sender()
    sent = next(e for e in entries if e.key == posted.id)
    return jsonify(sent.as_dict()), 201


@bp.post("/seat/<token>/undo")
def ask_undo(token: str):
    """Ask the other players to let this seat take back its last turn (pbem.services.undo)."""
    asked = undo.ask(token)
    wake_sender()
    return jsonify(status=asked.status, expires_at=asked.expires_at.isoformat())


@bp.post("/seat/<token>/undo/answer")
def answer_undo(token: str):
    """Agree to or decline the request of another seat that stands in the game."""
    try:
        body = request.get_json(silent=True)
    except RecursionError:
        body = None
    if not isinstance(body, dict) or set(body) != {"answer"} \
            or body["answer"] not in (undo.AGREE, undo.DECLINE):
        return _bad_request('send a JSON object {"answer": "agree"} or {"answer": "decline"} '
                            'with the header Content-Type: application/json')
    status = undo.answer(token, body["answer"])
    wake_sender()
    return jsonify(status=status)
