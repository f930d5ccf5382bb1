"""A Knights & Castles position as JSON and back, and replaying a game from its set-up and log."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

from ..errors import NotationError, StateError
from .cards import N_KINDS
from .moves import Offer, parse_move
from .rules import apply_move, new_game
from .state import PHASE_OF, GameState, Loss

FORMAT = "knights-castles/1"


def to_json(state: GameState) -> str:
    """The whole position, secrets included (for the server's database, never for a player)."""
    data = {f.name: getattr(state, f.name) for f in fields(GameState)}
    data["loss"] = None if state.loss is None else [
        state.loss.target, state.loss.by, state.loss.card, state.loss.roll, list(state.loss.kinds)]
    data["offer"] = None if state.offer is None else str(state.offer)
    return json.dumps({"format": FORMAT, **data}, separators=(",", ":"))


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _offer(text: str) -> Offer:
    move = parse_move(text)
    if not isinstance(move, Offer):
        raise StateError("not a Knights & Castles position: its parts do not fit together")
    return move


def from_json(text: str) -> GameState:
    """A position from `to_json`; StateError when the text is not one."""
    try:
        data = json.loads(text)
        if data.pop("format") != FORMAT:
            raise StateError("not a Knights & Castles position (unknown format)")
        loss, offer = data.pop("loss"), data.pop("offer")
        state = GameState(**{k: _tuples(v) for k, v in data.items()},
                          loss=None if loss is None else Loss(loss[0], loss[1], loss[2], loss[3], tuple(loss[4])),
                          offer=None if offer is None else _offer(offer))
    except StateError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, NotationError) as exc:
        raise StateError(f"not a Knights & Castles position: {exc}") from None
    if (state.step not in PHASE_OF or any(len(v) != N_KINDS for v in state.hands + state.tableau)
            or (state.offer is not None and not isinstance(state.offer, Offer))
            or state.card_total() != 106):
        raise StateError("not a Knights & Castles position: its parts do not fit together")
    return state


def replay(players: int | tuple[str, ...] | list[str], seed: int | str,
           variants: tuple[str, ...] | list[str], notations: list[str],
           start: int | None = None) -> GameState:
    """The game set up from `players`, `seed`, `variants` (and `start`, when the organiser
    chose it) after the moves in `notations`."""
    state = new_game(players, seed, variants, start)
    for text in notations:
        state = apply_move(state, parse_move(text))
    return state
