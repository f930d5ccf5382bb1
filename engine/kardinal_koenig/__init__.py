"""Kardinal & König, the rules and nothing else: no web, no database, no mail, no clock.

The same shape as every game in `engine/`: `board` (the map as data, from `data/`), `state`
(one position, secrets included), `moves` (moves and their notation), `rules` (`legal_moves`,
`apply_move`), `view` (what a seat or a spectator may see), `scoring` and `outcome` (points with
their breakdown, the winners), `narrate` (moves in a reader's words), `serialize` (JSON, replay),
`position` (hand-written positions to score), `svg` (the board picture), `playout` (seeded random
games) and `bots` (computer players).

A turn is a `Place` (1-3 cards, 1-2 pieces in one country) or an `Exchange` (one card), then one
`Draw` per card the hand takes back, each from the deck or a face-up card; `Pass` only when a seat
can do neither. `legal_moves(state)` is the one source of truth; `apply_move(state, move)` checks
the move and returns the next state or raises `IllegalMoveError` / `NotationError`.
"""

from ..errors import BoardError, IllegalMoveError, NotationError, SetupError, StateError
from .board import Board, default_board, load_board
from .moves import ADVISOR, DECK, Draw, Exchange, Move, Pass, Place, parse_move, parse_moves
from .narrate import describe, foretell
from .outcome import Outcome, outcome
from .playout import playout_result, random_playout
from .position import Position, parse_position
from .rules import apply_move, legal_moves
from .scoring import Breakdown, final_breakdown, intermediate_breakdown
from .serialize import from_json, replay, to_json
from .state import MAX_PLAYERS, MIN_PLAYERS, PLAYER_COLOURS, GameState, new_game
from .view import SeatView, view_for

GAME = "kardinal-koenig"
TITLE = "Kardinal & König"

__all__ = [
    "ADVISOR", "DECK", "GAME", "MAX_PLAYERS", "MIN_PLAYERS", "PLAYER_COLOURS", "TITLE", "Board",
    "BoardError", "Breakdown", "Draw", "Exchange", "GameState", "IllegalMoveError", "Move",
    "NotationError", "Outcome", "Pass", "Place", "Position", "SeatView", "SetupError",
    "StateError", "apply_move", "default_board", "describe", "final_breakdown", "foretell",
    "from_json", "intermediate_breakdown", "legal_moves", "load_board", "new_game", "outcome",
    "parse_move", "parse_moves", "parse_position", "playout_result", "random_playout", "replay",
    "to_json", "view_for",
]

from . import bots as bots  # `kk.bots`, the computer players, loaded with the game
