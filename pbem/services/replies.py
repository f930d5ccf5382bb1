"""What mail coming in (pbem.mailin.inbox) reads and writes: the key a reply was sent to, the
mails already read, and the answers to a player's mail (each a kind of pbem.services.mail.kinds,
some counted per day).

Imports the games, the ground, the seats' keys (pbem.services.seats) and the mail.
"""

from __future__ import annotations

from typing import cast

from sqlalchemy import and_, func, or_, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from ..games import rules_for
from ..ground.db import reading, writing
from ..ground.models import PAUSED, RUNNING, Game, IncomingMail, Seat, SeatKey
from .mail import Answering, kinds
from .mail.sending import send
from .seats import superseded_at


def key_of(hashed: str):
    """The seat key whose reply key (or, for keys made before reply keys were, whose link
    token) hashes to `hashed`, with when it was superseded; (None, None) when none does."""
    with reading() as session:
        return session.exec(select(SeatKey, superseded_at()).where(or_(
            col(SeatKey.reply_hash) == hashed,
            and_(col(SeatKey.token_hash) == hashed, col(SeatKey.reply_hash).is_(None))))).first() \
            or (None, None)


def count_repeat(message_id: str) -> tuple[int, int] | None:
    """The id and earlier repeats of the mail `message_id` if it was read before (counting
    this delivery as one more repeat); None for a mail not seen yet."""
    with writing() as session:
        seen = session.exec(select(IncomingMail.id, IncomingMail.repeats).where(
            IncomingMail.message_id == message_id)).first()
        if seen is not None:
            session.exec(update(IncomingMail).where(col(IncomingMail.id) == seen[0])
                         .values(repeats=IncomingMail.repeats + 1))
    return None if seen is None else (cast(int, seen[0]), seen[1])  # a saved row's id


def remember(message_id: str, seat_id: int | None, outcome: str, detail: str) -> bool:
    """Record a processed mail; False when another delivery of it was recorded first."""
    try:
        with writing() as session:
            session.add(IncomingMail(message_id=message_id, seat_id=seat_id, outcome=outcome,
                                     detail=detail[:2000]))
        return True
    except IntegrityError:
        return False


def seat_language(seat_id: int) -> str:
    with reading() as session:
        return cast(Seat, session.get(Seat, seat_id)).language  # the caller's seat is there


def seat_and_game(seat_id: int) -> tuple[Seat, Game]:
    with reading() as session:
        # (the caller's seat is there, and so is its game)
        seat = cast(Seat, session.get(Seat, seat_id))
        return seat, cast(Game, session.get(Game, seat.game_id))


def state_json_of(game_id: int) -> str:
    with reading() as session:
        return cast(Game, session.get(Game, game_id)).state_json  # the caller's game is there


def answer_stranger(sender: str, answering: Answering) -> str | None:
    """Answer a mail to no live key from `sender` (lower case) when it is the address of a
    seat in a game under way, once a day (kinds.MISDIRECTED): None when answered, else why
    not."""
    with writing() as session:
        seat = session.exec(select(Seat).join(Game, col(Game.id) == Seat.game_id).where(
            func.lower(col(Seat.email)) == sender, col(Game.status).in_((RUNNING, PAUSED)),
            col(Seat.bot).is_(None)).order_by(col(Seat.id).desc())).first()
        if seat is None:
            return "not a player's address"
        if send(session, kinds.MISDIRECTED, seat=seat, answering=answering) is None:
            return "answered today already"
    return None


def answer(seat_id: int, subject: str, lines: list, answering: Answering,
           capped: bool = True) -> bool:
    """Answer the seat's own address with `lines` and its position, threaded under the
    player's mail. An answer that applied nothing (`capped`, kinds.ANSWER) is sent at most
    MAIL_ANSWERS_PER_DAY times a day per seat; beyond that, False and nothing sent. Orders
    applied are always answered (kinds.NOTICE): each needs a move of its own, so they cannot
    come in a flood."""
    with writing() as session:
        # (the caller's seat is there, and so is its game)
        seat = cast(Seat, session.get(Seat, seat_id))
        game = cast(Game, session.get(Game, seat.game_id))
        rules = rules_for(game.kind)
        state = rules.loads(game.state_json)
        queued = send(session, kinds.ANSWER if capped else kinds.NOTICE, game=game, seat=seat,
                      heading=subject, lines=[*lines, "", *rules.position_lines(state, seat.number)],
                      answering=answering)
    return queued is not None or not capped


def answer_revoked(seat_id: int, sender: str, answering: Answering) -> bool:
    """A polite answer to a replaced key, only to the seat's own address and only when the
    mail came from it, a few times a day (kinds.REVOKED); False when none."""
    with writing() as session:
        seat = cast(Seat, session.get(Seat, seat_id))  # the caller's seat is there
        if sender.strip().lower() != seat.email.strip().lower():
            return False
        return send(session, kinds.REVOKED, seat=seat, answering=answering) is not None
