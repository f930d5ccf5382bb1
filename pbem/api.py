"""The JSON API for scripts and bots (documented in docs/api.md).

The token in the path is the seat's secret, as in a move link; there are no cookies, so CSRF
does not apply. Moves go through the same `submit_move` as the seat page.
"""

from __future__ import annotations

from flask import Blueprint, jsonify, request

from .services import SeatContext, ServiceError, load_seat, submit_move
from .web import csrf, wake_sender

bp = Blueprint("api", __name__, url_prefix="/api/v1")
csrf.exempt(bp)

API_LOG = 50


def seat_document(ctx: SeatContext) -> dict:
    rules, state, seat = ctx.rules, ctx.state, ctx.seat
    to_move = rules.to_move(state)
    document = {
        "game": ctx.game.id,
        "kind": ctx.game.kind,
        "seat": seat.number,
        "name": seat.name,
        "colour": seat.colour,
        "players": [{"seat": s.number, "name": s.name, "colour": s.colour} for s in ctx.seats],
        "status": ctx.game.status,
        "turn": ctx.game.turn,
        "to_move": to_move == seat.number,
        "waiting_for": to_move,
        "deadline": ctx.game.deadline_at.isoformat() if ctx.game.deadline_at else None,
        "view": rules.view_dict(state, seat.number),
        "legal": rules.legal(state) if to_move == seat.number else [],
        "log": [{"turn": r.number, "seat": r.seat, "move": r.notation, "lines": lines,
                 "at": r.created_at.isoformat()} for r, lines in ctx.log],
    }
    outcome = rules.outcome(state)
    if outcome is not None:
        document["outcome"] = outcome
    return document


def _error(exc: ServiceError):
    return jsonify(error=exc.message, status=exc.status), exc.status


@bp.get("/seat/<token>")
def seat(token: str):
    try:
        return jsonify(seat_document(load_seat(token, API_LOG)))
    except ServiceError as exc:
        return _error(exc)


@bp.post("/seat/<token>/move")
def move(token: str):
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        return jsonify(error='send a JSON object: {"move": "<notation>", "turn": <turn>}',
                       status=400), 400
    unknown = sorted(set(body) - {"move", "turn"})
    if unknown or "move" not in body or "turn" not in body:
        return jsonify(error='the body must hold exactly "move" (text) and "turn" (a number)'
                       + (f"; unknown: {', '.join(map(str, unknown))[:80]}" if unknown else ""),
                       status=400), 400
    try:
        result = submit_move(token, body["move"], body["turn"], via="api")
        ctx = load_seat(token, API_LOG)
    except ServiceError as exc:
        return _error(exc)
    wake_sender()
    document = seat_document(ctx)
    document["applied"] = {"move": result.notation, "lines": result.lines}
    return jsonify(document)
