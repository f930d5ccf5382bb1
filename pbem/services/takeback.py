"""Taking back a game's last turn, the one way it is done: by an organiser (pbem.services.
stewardship.take_back) or when every player agreed (pbem.services.undo).

The state is rebuilt from the seed and the log without the moves taken back, so every seat's
view is again exactly what it was; a deck card the seat drew goes back on top of the deck,
where it will be drawn again, and that seat has seen it (its caller tells it so). A finished
tournament game reopens only within its round (pbem.services.tournaments.reopening). Telling
the players and writing the audit log are the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import delete, update
from sqlmodel import Session, col, select

from ..games import GameRules, rules_for
from ..games.interface import move_words
from ..ground import i18n
from ..ground.models import (
    FINISHED,
    RUNNING,
    UNDO_ASKED,
    UNDO_MOVED_ON,
    Game,
    MoveRecord,
    Seat,
    UndoRequest,
)
from . import tournaments
from .deadlines import reset_clock, start_clock


@dataclass(frozen=True)
class TakenBack:
    """What a take-back did: the moves undone (oldest first), by whom, and who is to move."""

    undone: list[MoveRecord]
    mover: Seat
    seats: list[Seat]
    to_move: Seat
    rules: GameRules
    state: object

    @property
    def notations(self) -> str:
        return "; ".join(r.notation for r in self.undone)

    def told_to(self, seat: Seat) -> str:
        """The moves taken back in `seat`'s words and language (no hidden card another seat
        drew)."""
        with i18n.in_language(seat.language):
            return "; ".join(move_words(self.rules, self.rules.notation_for(
                self.state, r.notation, r.seat, seat.number)) for r in self.undone)


def records_of(session: Session, game: Game) -> list[MoveRecord]:
    """The game's move records, first to last."""
    return list(session.exec(select(MoveRecord).where(MoveRecord.game_id == game.id)
                             .order_by(col(MoveRecord.number))))


def last_run(records: list[MoveRecord]) -> int:
    """The index of the first of the trailing moves made by the seat that moved last (the
    moves since another seat moved)."""
    mover = records[-1].seat
    first = len(records)
    while first > 0 and records[first - 1].seat == mover:
        first -= 1
    return first


def take_back(session: Session, game: Game, records: list[MoveRecord], first: int,
              now: datetime, keep_deadline: bool = False) -> TakenBack:
    """Undo `records[first:]` (the game's row locked by the caller): the log without them,
    the state replayed, the game running again with the clock started for the seat to move.
    `keep_deadline`: the clock goes on as it runs now, and the deadline stays where it is (a
    turn the server played for a seat that missed its deadline, taken back by agreement,
    must not give it a fresh turn's time)."""
    kept = (game.turn_started_at, game.extension_hours, game.clock_pauses) \
        if keep_deadline and game.status == RUNNING and game.deadline_at is not None else None
    if game.status == FINISHED:  # a tournament's game only within its round
        tournaments.reopening(session, game)
    undone = records[first:]
    rules = rules_for(game.kind)
    state = rules.replay(rules.loads(game.state_json), [r.notation for r in records[:first]])
    session.exec(delete(MoveRecord).where(col(MoveRecord.id).in_([r.id for r in undone])))
    game.state_json = rules.dumps(state)
    game.turn = undone[0].number
    game.status, game.finished_at = RUNNING, None
    game.updated_at = now
    if game.undo_turn is not None:  # a request of the players' stood: this ends it too
        game.undo_turn = None
        session.exec(update(UndoRequest).where(col(UndoRequest.game_id) == game.id,
                                               col(UndoRequest.status) == UNDO_ASKED)
                     .values(status=UNDO_MOVED_ON, ended_at=now))
    seats = list(session.exec(select(Seat).where(Seat.game_id == game.id)
                              .order_by(col(Seat.number))))
    to_move = seats[cast(int, rules.to_move(state))]  # the game goes on: someone is to move
    start_clock(session, game, to_move, now)
    if kept is not None:
        game.turn_started_at, game.extension_hours, game.clock_pauses = kept
        reset_clock(session, game, to_move, now)
    return TakenBack(undone, seats[undone[-1].seat], seats, to_move, rules, state)
