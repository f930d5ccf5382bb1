"""A finished game's review by the strong computer player: each seat's chances at each of its
decisions, before and after the move it made, and the strong bot's own choice.

The chances are those of the seat as it knew the game then: every estimate starts from deals
of the cards hidden from it (`sampled_state` of the game's bots, consistent with its view) and
plays each deal to the end with a fast policy (`greedy` for every seat in Knights & Castles,
the same greedy placement in Kardinal & König); the share of deals the seat wins (or shares
the win of) is its chance. The move played and the bot's choice meet the same deals (common
random numbers), so their difference is the moves' and not the luck's. Pure and seeded: the
same position, moves, seed and number of play-outs give the same figures. This module knows
no database and no clock: the server stores the figures and decides when to make them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .games import game_package
from .kardinal_koenig import view_for as kk_view_for
from .kardinal_koenig.bots.evaluate import Projection, margin
from .kardinal_koenig.bots.players import thrifty
from .kardinal_koenig.bots.view_state import sampled_state as kk_sampled_state
from .kardinal_koenig.moves import Exchange, Place
from .kardinal_koenig.moves import Move as KkMove
from .kardinal_koenig.outcome import outcome as kk_outcome
from .kardinal_koenig.rules import apply_move as kk_apply_move
from .kardinal_koenig.rules import legal_moves as kk_legal_moves
from .kardinal_koenig.state import PLAY
from .knights_castles import view_for as kc_view_for
from .knights_castles.bots.strong import play_out as kc_play_out
from .knights_castles.bots.view_state import sampled_state as kc_sampled_state

# The strong bot's choice is named where its chances beat the move played by more than this.
THRESHOLD = 0.05


@dataclass(frozen=True)
class Decision:
    """The review of one decision: `seat`'s chances before it and after `played`, and the
    strong bot's choice with its chances when it is another move."""

    seat: int
    played: str  # the move's notation
    before: float  # 0..1
    after: float
    bot_move: str | None  # None: the bot would have played the same move
    bot_after: float | None

    @property
    def differs(self) -> bool:
        """Whether the bot's choice is named: its chances beat the move's by `THRESHOLD`."""
        return self.bot_after is not None and self.bot_after - self.after > THRESHOLD

    @property
    def cost(self) -> float:
        """The chances the move gave away: the best of the chances before it and of the bot's
        choice, less the chances after it (never below 0)."""
        best = max(self.before, self.bot_after if self.bot_after is not None else 0.0)
        return max(0.0, best - self.after)


# --- per game: the deals, the fast play-out to the end, the winners --------------------------

def _kk_deal(state: Any, seat: int, rng: random.Random) -> Any:
    return kk_sampled_state(kk_view_for(state, seat), state.board, rng)


def _kk_play_out(state: Any, seat: int, rng: random.Random) -> bool:
    """Whether `seat` wins (or shares the win of) the game from `state`, every seat placing
    where the projected margin grows most, exchanging a card at random when no placement
    helps, and drawing at random from the deck or the face-up cards."""
    while not state.is_over:
        moves = kk_legal_moves(state)
        move: KkMove
        if len(moves) > 1 and state.phase == PLAY:
            mover = state.current
            proj = Projection.of(state)
            best: KkMove | None = None
            best_value = margin(proj.totals, mover)
            for option in thrifty(moves):
                if isinstance(option, Place):
                    value = margin(proj.after(mover, option), mover)
                    if value > best_value:
                        best, best_value = option, value
            if best is None:
                exchanges: list[KkMove] = [m for m in moves if isinstance(m, Exchange)]
                best = rng.choice(exchanges or moves)
            move = best
        else:
            move = moves[0] if len(moves) == 1 else rng.choice(moves)
        state = kk_apply_move(state, move)
    result = kk_outcome(state)
    return result is not None and seat in result.winners


def _kc_deal(state: Any, seat: int, rng: random.Random) -> Any:
    return kc_sampled_state(kc_view_for(state, seat), rng)


def _kc_play_out(state: Any, seat: int, rng: random.Random) -> bool:
    return kc_play_out(state, seat) >= 0  # a share of the win counts, as the strong bot counts it


_GAMES: dict[str, tuple[Callable[[Any, int, random.Random], Any],
                        Callable[[Any, int, random.Random], bool]]] = {
    "kardinal-koenig": (_kk_deal, _kk_play_out),
    "knights-castles": (_kc_deal, _kc_play_out),
}


def _mover(state: Any) -> int:
    seat: int = state.to_move
    return seat


def _parse(package: ModuleType, state: Any, text: str) -> Any:
    board = getattr(state, "board", None)  # Kardinal & König reads a move on its board
    return package.parse_move(text) if board is None else package.parse_move(text, board)


def _strong_move(package: ModuleType, state: Any, view: Any, rng: random.Random) -> Any:
    board = getattr(state, "board", None)
    if board is None:
        return package.bots.choose_move("strong", view, rng)
    return package.bots.choose_move("strong", view, rng, board)


# --- the review -------------------------------------------------------------------------------

def choices(game: str, state: Any) -> int:
    """How many legal moves the seat to move in `state` has (0 once the game is over)."""
    if state.is_over:
        return 0
    moves = game_package(game).legal_moves(state)
    return len(getattr(moves, "moves", moves))


def is_decision(game: str, state: Any) -> bool:
    """Whether the seat to move in `state` has a choice (more than one legal move)."""
    return choices(game, state) > 1


def review_decision(game: str, state: Any, played: str, seed: str | int,
                    playouts: int) -> Decision:
    """The review of the move `played` (notation) by the seat to move in `state`: its chances
    before and after it and after the strong bot's choice, each over the same `playouts`
    deals of what that seat could not see. Deterministic given `seed`."""
    package = game_package(game)
    deal_of, play_out = _GAMES[game]
    seat = _mover(state)
    move = _parse(package, state, played)
    rng = random.Random(f"review:{seed}")
    view = package.view_for(state, seat)
    bot = _strong_move(package, state, view, random.Random(f"review-bot:{seed}"))
    other = None if str(bot) == str(move) else bot
    wins = {"before": 0, "after": 0, "bot": 0}
    for i in range(playouts):
        deal = deal_of(state, seat, rng)
        chooser = f"review-play:{seed}:{i}"
        wins["before"] += play_out(deal, seat, random.Random(chooser))
        wins["after"] += play_out(package.apply_move(deal, move), seat, random.Random(chooser))
        if other is not None:
            wins["bot"] += play_out(package.apply_move(deal, other), seat,
                                    random.Random(chooser))
    n = max(playouts, 1)
    return Decision(seat, str(move), wins["before"] / n, wins["after"] / n,
                    None if other is None else str(other),
                    None if other is None else wins["bot"] / n)


def decisions(game: str, first: Any, notations: list[str]) -> list[tuple[int, Any]]:
    """The moves of a game's log to review, one a turn: for each (index in `notations`, state
    before it), from the set-up `first`, the turn player's move of the turn where it had the
    most to choose from (the first of those on a tie): in Kardinal & König the placement or
    exchange, in Knights & Castles the build, event or trade decision that mattered most by
    that count. A turn begins where the turn's player (`current`) changes."""
    package = game_package(game)
    found: list[tuple[int, Any]] = []
    best: tuple[int, int, Any] | None = None  # (choices, index, state) of the turn so far
    state, turn_of = first, None
    for i, text in enumerate(notations):
        if state.current != turn_of:
            if best is not None:
                found.append((best[1], best[2]))
            turn_of, best = state.current, None
        if _mover(state) == state.current:
            count = choices(game, state)
            if count > 1 and (best is None or count > best[0]):
                best = (count, i, state)
        state = package.apply_move(state, _parse(package, state, text))
    if best is not None:
        found.append((best[1], best[2]))
    return found


def costliest(reviews: list[Decision], seat: int, count: int = 3) -> list[int]:
    """The indices in `reviews` of `seat`'s `count` costliest decisions (those that gave
    chances away), the costliest first."""
    mine = [i for i, r in enumerate(reviews) if r.seat == seat and r.cost > 0]
    return sorted(mine, key=lambda i: (-reviews[i].cost, i))[:count]
