"""A finished game's review by the strong computer player: queued when a game ends, made by
the scheduler a few turns a run, read by the history pages.

For each turn of each seat (its move with the most to choose from: `engine.review.decisions`) the
review keeps the mover's chances of winning before and after the move it made and the strong
bot's own choice with its chances (`engine.review.review_decision`, seeded by the game and the
move, so a turn reviewed twice gives the same figures). A scheduler run claims one review
(atomically, in `gamereview`: two schedulers never work on the same one), reviews at most
`[scheduler] review_turns` turns (and none once the game's review has spent `[scheduler]
review_cpu_seconds`), saving each turn as its own row as soon as it is made, and
gives the review back: the next run goes on from the first turn without a row, so a scheduler
killed mid-review loses at most the turn in hand, and its claim, once older than `[scheduler]
claim_seconds`, is taken by another run. Never in a web request: the pages only read rows.
Only finished games are reviewed or shown: a review names what each seat held.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from flask import current_app
from sqlalchemy import update
from sqlmodel import col, select

from engine import review as engine_review

from ..games import rules_for
from ..ground.db import insert_if_missing, is_status, locked, new_claim, reading, utcnow, writing
from ..ground.models import (
    CLAIMED,
    DONE,
    FAILED,
    FINISHED,
    PENDING,
    Game,
    GameReview,
    MoveRecord,
    TurnReview,
)

logger = logging.getLogger(__name__)

QUEUE_BATCH = 50  # finished games without a review queued a run (old games, after an upgrade)
COSTLIEST = 3  # the turns a player's summary names


def on_game_finished(event) -> None:
    """A game finished: its review is queued (listens to pbem.services.events' GameFinished)."""
    queue_review(event.session, event.game, event.now)


def queue_review(session, game, now: datetime | None = None) -> None:
    """Queue the review of `game`, which finishes in this transaction (`session` a Session or
    the move path's Writer); nothing if it has one already."""
    connection = session.connection()
    _insert_missing(connection, {"game_id": game.id, "status": PENDING, "playouts": 0,
                                 "cpu_seconds": 0.0, "created_at": now or utcnow()})


def _insert_missing(connection, row: dict) -> None:
    # (the dialects' inserts differ in type only; SQLModel sets __table__, untyped)
    if connection.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
    connection.execute(insert(GameReview.__table__)  # type: ignore[attr-defined]
                       .values(**row).on_conflict_do_nothing())


def queue_missing(session, now: datetime, limit: int = QUEUE_BATCH) -> int:
    """Queue the reviews of finished games that have none (games finished before reviews
    were made); returns how many."""
    ids = list(session.exec(
        select(col(Game.id)).outerjoin(GameReview, col(GameReview.game_id) == Game.id)
        .where(col(Game.status) == FINISHED, col(GameReview.game_id).is_(None))
        .order_by(col(Game.id)).limit(limit)))
    for game_id in ids:
        insert_if_missing(session, GameReview, game_id=game_id, status=PENDING, playouts=0,
                          cpu_seconds=0.0, created_at=now)
    return len(ids)


def _claim(now: datetime) -> tuple[str, int | None]:
    """Claim the oldest review waiting (or left by a scheduler that died)."""
    claim = new_claim()
    given_up = now - timedelta(seconds=current_app.config["SCHEDULER_CLAIM_SECONDS"])
    with writing() as session:
        queue_missing(session, now)
        session.exec(update(GameReview).where(is_status(GameReview.status, CLAIMED),
                                              col(GameReview.claimed_at) < given_up)
                     .values(status=PENDING, claim=None, claimed_at=None))
        game_id = session.exec(locked(
            select(GameReview.game_id).where(is_status(GameReview.status, PENDING))
            .order_by(col(GameReview.created_at), col(GameReview.game_id)).limit(1),
            skip_locked=True)).first()
        if game_id is None:
            return claim, None
        session.exec(update(GameReview).where(col(GameReview.game_id) == game_id,
                                              is_status(GameReview.status, PENDING))
                     .values(status=CLAIMED, claim=claim, claimed_at=now))
    return claim, game_id


def _held(session, game_id: int, claim: str) -> GameReview | None:
    row = session.get(GameReview, game_id, with_for_update=True)
    return row if row is not None and row.claim == claim and row.status == CLAIMED else None


def run_due_reviews(now: datetime, should_stop: Callable[[], bool] = lambda: False,
                    turns: int | None = None) -> dict[str, int]:
    """Review at most `turns` (default `[scheduler] review_turns`) turns of one claimed
    review, each saved as it is made; returns {"review_turns": how many were made}."""
    budget = current_app.config["SCHEDULER_REVIEW_TURNS"] if turns is None else turns
    made = 0
    if budget <= 0:
        return {"review_turns": 0}
    claim, game_id = _claim(now)
    if game_id is None:
        return {"review_turns": 0}
    playouts = current_app.config["SCHEDULER_REVIEW_PLAYOUTS"]
    most_cpu = current_app.config["SCHEDULER_REVIEW_CPU_SECONDS"]
    capped = False
    try:
        with reading() as session:
            game = cast(Game, session.get(Game, game_id))  # a reviewed game is there
            notations = list(session.exec(select(MoveRecord.notation)
                                          .where(MoveRecord.game_id == game_id)
                                          .order_by(col(MoveRecord.number))))
            done = set(session.exec(select(TurnReview.number)
                                    .where(TurnReview.game_id == game_id)))
        rules = rules_for(game.kind)
        first = rules.history_state(rules.loads(game.state_json), [])
        todo = engine_review.decisions(game.kind, first, notations)
        with writing() as session:
            held = _held(session, game_id, claim)
            if held is None:
                return {"review_turns": 0}
            held.turns, held.playouts = len(todo), playouts
            spent_before = held.cpu_seconds
            session.add(held)
        for index, state in todo:
            if made >= budget or should_stop():
                break
            if index in done:
                continue
            if spent_before >= most_cpu:  # the game's budget is spent: the review ends here
                capped = True
                logger.warning("review: game %d stopped after %.0f CPU seconds, %d of %d "
                               "turns reviewed", game_id, spent_before, len(done), len(todo))
                break
            began = time.process_time()
            decision = engine_review.review_decision(game.kind, state, notations[index],
                                                     f"{game_id}:{index}", playouts)
            spent = time.process_time() - began
            with writing() as session:
                held = _held(session, game_id, claim)
                if held is None:  # given back meanwhile (this run took too long): stop here
                    break
                insert_if_missing(session, TurnReview, game_id=game_id, number=index,
                                  seat=decision.seat, played=decision.played,
                                  before=decision.before, after=decision.after,
                                  bot_move=decision.bot_move, bot_after=decision.bot_after,
                                  created_at=now)
                held.cpu_seconds += spent
                spent_before = held.cpu_seconds
                session.add(held)
            done.add(index)
            made += 1
            logger.info("review: game %d move %d reviewed (%.2f CPU seconds)", game_id,
                        index, spent)
        finished = capped or all(index in done for index, _ in todo)
    except Exception:  # one broken game must not hold up the others' reviews
        logger.exception("review of game %d failed; it is not tried again", game_id)
        _give_back(game_id, claim, FAILED, now)
        return {"review_turns": made}
    _give_back(game_id, claim, DONE if finished else PENDING, now)
    if finished:
        logger.info("review: game %d done", game_id)
    return {"review_turns": made}


def _give_back(game_id: int, claim: str, status: str, now: datetime) -> None:
    with writing() as session:
        held = _held(session, game_id, claim)
        if held is None:
            return
        held.status, held.claim, held.claimed_at = status, None, None
        if status != PENDING:
            held.done_at = now
        session.add(held)


# --- what the history pages show --------------------------------------------------------------

@dataclass(frozen=True)
class ReviewedTurn:
    """One reviewed turn, as the page shows it."""

    number: int  # the move's number in the log (0-based)
    seat: int
    played: str  # notation
    before: float
    after: float
    bot_move: str | None  # named only where it beats the move by the threshold
    bot_after: float | None
    cost: float


@dataclass(frozen=True)
class Review:
    """A finished game's review as far as it is made: its turns in order, each seat's
    costliest turns (indices into `turns`), and how many turns it will have."""

    turns: tuple[ReviewedTurn, ...]
    costliest: dict[int, list[int]]
    total: int | None
    playouts: int
    cpu_seconds: float
    ended: bool  # no more turns will be reviewed (all are, or its CPU budget ran out)

    @property
    def threshold_points(self) -> int:
        """How many points of chances the bot's choice must gain to be named."""
        return round(engine_review.THRESHOLD * 100)

    @property
    def is_complete(self) -> bool:
        return self.total is not None and len(self.turns) >= self.total

    @property
    def is_cut_short(self) -> bool:
        """Whether the review ended before its last turn: its CPU budget ran out."""
        return self.ended and not self.is_complete


def review_of(game) -> Review | None:
    """The review of `game` (a row) for its history pages: None unless the game is finished
    and its review queued."""
    if game.status != FINISHED:
        return None
    with reading() as session:
        head = session.get(GameReview, game.id)
        if head is None:
            return None
        rows = list(session.exec(select(TurnReview).where(TurnReview.game_id == game.id)
                                 .order_by(col(TurnReview.number))))
    decisions = [engine_review.Decision(r.seat, r.played, r.before, r.after, r.bot_move,
                                        r.bot_after) for r in rows]
    turns = tuple(ReviewedTurn(r.number, r.seat, r.played, r.before, r.after,
                               r.bot_move if d.differs else None,
                               r.bot_after if d.differs else None, d.cost)
                  for r, d in zip(rows, decisions))
    seats = sorted({d.seat for d in decisions})
    costliest = {s: engine_review.costliest(decisions, s, COSTLIEST) for s in seats}
    return Review(turns, costliest, head.turns, head.playouts, head.cpu_seconds,
                  head.status in (DONE, FAILED))
