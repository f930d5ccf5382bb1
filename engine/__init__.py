"""Kardinal & König, the rules and nothing else: no web, no database, no mail, no clock.

Vocabulary, used the same way everywhere in this project:
- engine: these rules, as pure functions over immutable values;
- board: the map as data (countries, cloister fields, roads, alliances, card colours);
- state: one position of one game (`GameState`), secrets included;
- view: what one seat, or a spectator, may see of a state (`SeatView`);
- move: one action (`Place`, `Exchange`, `Draw`, `Pass`), with a text notation that round-trips;
- seat: a player's place at the table, 0..n-1 clockwise, shown by the player's colour;
- Game: one hosted playthrough (a database row, in `pbem`); it is not part of the engine.

A turn is a `Place` (1-3 cards, 1-2 pieces in one country) or an `Exchange` (one card), then one
`Draw` per card the hand takes back, each from the deck or a face-up card; `Pass` only when a seat
can do neither. `legal_moves(state)` is the one source of truth; `apply_move(state, move)` checks
the move and returns the next state or raises `IllegalMoveError` / `NotationError`.
"""

from .board import Board, default_board, load_board
from .errors import BoardError, IllegalMoveError, NotationError, SetupError, StateError
from .moves import ADVISOR, DECK, Draw, Exchange, Move, Pass, Place, parse_move, parse_moves
from .narrate import describe, foretell
from .outcome import Outcome, outcome
from .position import Position, parse_position
from .rules import apply_move, legal_moves
from .scoring import Breakdown, final_breakdown, intermediate_breakdown
from .serialize import from_json, replay, to_json
from .state import PLAYER_COLOURS, GameState, new_game
from .view import SeatView, view_for

__all__ = [
    "ADVISOR", "DECK", "PLAYER_COLOURS", "Board", "BoardError", "Breakdown", "Draw", "Exchange",
    "GameState", "IllegalMoveError", "Move", "NotationError", "Outcome", "Pass", "Place",
    "Position", "SeatView", "SetupError", "StateError", "apply_move", "default_board", "describe",
    "final_breakdown", "foretell", "from_json", "intermediate_breakdown", "legal_moves", "load_board",
    "new_game", "outcome", "parse_move", "parse_moves", "parse_position", "replay", "to_json",
    "view_for",
]
