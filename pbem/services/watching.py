"""What a spectator's page of a game reads: the game by its watch id, its seats, its state and
its log in a spectator's words.

Imports the games, the ground and the log (pbem.services.log).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlmodel import Session, col, select

from ..games import GameRules, rules_for
from ..ground.db import reading
from ..ground.models import Game, Seat
from .errors import NotFound
from .log import LogEntry, log_for

WATCH_ID = re.compile(r"[A-Za-z0-9_-]{8,32}")
UNKNOWN_GAME = ("There is no game to watch at this address. Check that it was copied whole; "
                "the address is in every mail of the game, under “See the board”.")
SPECTATOR = -1  # the log's reader number for a spectator's words


@dataclass(frozen=True)
class Watched:
    """What a spectator page needs about one game, read in one snapshot."""

    game: Game
    seats: list[Seat]
    rules: GameRules
    state: object
    log: list[LogEntry]  # oldest first, in a spectator's words


def _game_for(session: Session, watch_id: str) -> Game:
    if not WATCH_ID.fullmatch(watch_id):
        raise NotFound(UNKNOWN_GAME)
    game = session.exec(select(Game).where(Game.watch_id == watch_id)).first()
    if game is None:
        raise NotFound(UNKNOWN_GAME)
    return game


def load_watched(watch_id: str, with_log: bool = True) -> Watched:
    with reading() as session:
        game = _game_for(session, watch_id)
        rules = rules_for(game.kind)
        seats = list(session.exec(select(Seat).where(Seat.game_id == game.id)
                                  .order_by(col(Seat.number))))
        log = log_for(session, game, SPECTATOR, None, rules)[0][::-1] if with_log else []
        return Watched(game, seats, rules, rules.loads(game.state_json), log)
