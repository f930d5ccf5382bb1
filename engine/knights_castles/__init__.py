"""Knights & Castles, the rules and nothing else: no web, no database, no mail, no clock.

The same shape as every game in `engine/`: `cards` (the card list as data), `state` (one
position, secrets included), `moves` (moves and their notation), `rules` (`legal_moves`,
`apply_move`, the default move), `view` (what a seat or a spectator may see), `outcome` (gold
and winners), `narrate`, `serialize`, `svg`, `playout` and `bots` (computer players). The
readings we referee by are in docs/rules-notes.md, the notation in docs/notation.md.

A turn runs draw, tax, build, research, event, trade and end. Every decision is a move, and
some belong to a seat that is not the turn's player: the target of a disaster chooses its
losses, the target of an offer accepts or declines. `state.to_move` is whoever decides now.
Automatic steps (draws, tax, dice, a decision with one possible answer) happen inside
`apply_move`. Dice come from the seed and are kept in `state.dice`.
"""

from . import bots  # noqa: F401  (the bots package: engine.games finds it here)
from .cards import DECK_SIZE, KINDS, Kind
from .moves import (
                    COLOURS,
                    Abandon,
                    Accept,
                    Build,
                    Buy,
                    Decline,
                    Discard,
                    Done,
                    Keep,
                    Lose,
                    Move,
                    Offer,
                    Pay,
                    Play,
                    Research,
                    Share,
                    War,
                    parse_move,
                    parse_moves,
)
from .narrate import describe
from .outcome import Outcome, outcome, score
from .playout import playout_result, random_playout
from .rules import (
                    LegalMoves,
                    apply_move,
                    default_move,
                    effect_on_target,
                    legal_moves,
                    lost_dp,
                    new_game,
                    unsupported,
                    why_illegal,
)
from .serialize import from_json, replay, to_json
from .state import MAX_PLAYERS, MIN_PLAYERS, VARIANTS, GameState, Loss, round_of, turn_player
from .view import SeatView, view_for

GAME = "knights-castles"
TITLE = "Knights & Castles"

__all__ = [
                    "COLOURS",
                    "DECK_SIZE",
                    "GAME",
                    "KINDS",
                    "MAX_PLAYERS",
                    "MIN_PLAYERS",
                    "TITLE",
                    "VARIANTS",
                    "Abandon",
                    "Accept",
                    "Build",
                    "Buy",
                    "Decline",
                    "Discard",
                    "Done",
                    "GameState",
                    "Keep",
                    "Kind",
                    "LegalMoves",
                    "Lose",
                    "Loss",
                    "Move",
                    "Offer",
                    "Outcome",
                    "Pay",
                    "Play",
                    "Research",
                    "SeatView",
                    "Share",
                    "War",
                    "apply_move",
                    "default_move",
                    "describe",
                    "effect_on_target",
                    "from_json",
                    "legal_moves",
                    "lost_dp",
                    "new_game",
                    "outcome",
                    "parse_move",
                    "parse_moves",
                    "playout_result",
                    "random_playout",
                    "replay",
                    "round_of",
                    "score",
                    "to_json",
                    "turn_player",
                    "unsupported",
                    "view_for",
                    "why_illegal",
]
