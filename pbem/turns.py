"""Turn numbers as players count them: a placement or an exchange and the draws after it are
one turn (the log and the API count moves; a turn is one to four of them).

A game's rules may say which logged moves begin a turn (`starts_turn(notation)`) and whether a
position is in the middle of one (`mid_turn(state)`); without them every move is a turn.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlmodel import Session

from .models import MoveRecord


def notations(session: Session, game_id: int) -> list[str]:
    """The game's moves in the notation, first to last."""
    return list(session.exec(select(MoveRecord.notation).where(MoveRecord.game_id == game_id)
                             .order_by(MoveRecord.number)).scalars())


def numbers(rules, moves: list[str]) -> list[int]:
    """For each move of the log (first to last), the turn it belongs to, the first being 1."""
    starts = getattr(rules, "starts_turn", None)
    out, turn = [], 0
    for notation in moves:
        if turn == 0 or starts is None or starts(notation):
            turn += 1
        out.append(turn)
    return out


def at(rules, moves: list[str], played: int, state=None) -> int:
    """The turn in progress after the first `played` moves (`state`: the position then, needed
    only for the latest one, to tell whether its turn is still going on)."""
    counted = numbers(rules, moves[:played + 1])
    if played < len(counted):
        return counted[played]  # the turn that the next logged move belongs to
    last = counted[-1] if counted else 0
    mid = getattr(rules, "mid_turn", None)
    over = state is not None and rules.to_move(state) is None
    return max(last, 1) if (over or (mid is not None and state is not None and mid(state))) \
        else last + 1
