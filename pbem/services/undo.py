"""Undo by agreement: a player asks to take back their own last turn, and it is taken back when
every other player agrees before anyone moves on (issue 33).

The rules, in one place:
- **The last turn** is what an organiser's take-back undoes: the moves the seat that moved
  last made since another seat moved (in a game whose turn is a move and the draws after it:
  that move and its draws). Only that seat may ask. Some games let another seat decide within
  a turn (the target of an offer answers it, the target of a misfortune chooses its losses): when
  the move before those was such a decision, made while the turn was already the asker's,
  another seat has decided something in the turn, and it is refused (an organiser can still
  take back the moves after the decision); the turn's player is the state's `current`.
- **Once per turn**: a turn can be asked about once (UndoRequest's unique (game, first move)),
  whatever became of the request, and a turn made again after being taken back is the same turn.
- **Who agrees**: every other seat played by a person answers on its page (or the API); seats
  of computer players agree at once, except in a rated or tournament game, where they never
  do (so it is refused at once). One decline ends the request (the asker is told).
- **Nothing seen**: a turn that showed a card of the hidden deck (drawn, or turned face up:
  `reveals_hidden` of the game's rules) is refused: the card would be back on top of the deck
  and its drawer would play again knowing it. An organiser can still take it back.
- **No time won**: a turn the server played for the seat (a timeout, or a computer player for
  an absent person) taken back leaves the deadline in force as it is: the seat does not get
  a fresh turn's time by asking.
- **Until**: any move in the game ends it (the asker is told); it expires `[games] undo_hours`
  after it was asked, or at the game's current deadline if that comes first (a timeout is a
  move too). A request that expired simply stops counting: nobody is mailed.
- **Done**: the same take-back as an organiser's (pbem.services.takeback), written to the audit
  log (no admin), and everyone is mailed; the seat that drew a deck card in that turn is told
  the card is back on top.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from flask import current_app
from flask_babel import lazy_gettext as L_
from sqlalchemy import update
from sqlalchemy.engine import Connection
from sqlmodel import Session, col, select

from ..games import rules_for
from ..games.interface import move_words
from ..ground import i18n
from ..ground.db import insert_later, reading, utcnow, writing
from ..ground.i18n import N_
from ..ground.i18n import gettext as _
from ..ground.models import (
    NOTIFY_DIGEST,
    RUNNING,
    UNDO_ASKED,
    UNDO_DECLINED,
    UNDO_DONE,
    UNDO_MOVED_ON,
    AuditEntry,
    DigestItem,
    Game,
    Seat,
    UndoRequest,
)
from . import takeback, tournaments
from .errors import GameNotRunning, Rejected
from .events import UndoOvertaken
from .mail import kinds
from .mail.sending import send
from .seats import seat_game_seats

AGREE, DECLINE = "agree", "decline"

SEEN_A_CARD = N_("Your last turn showed you a card from the deck, and what you have seen cannot "
                 "be unseen: it is not taken back by agreement, or you could play again knowing "
                 "the card. An organiser can still take it back.")
NO_BOT_AGREES = N_("Computer players do not agree to take back a turn in a rated game or a "
                   "tournament game.")


@dataclass(frozen=True)
class Pending:
    """A request that still stands, as a seat's page shows it."""

    request: UndoRequest
    asker: Seat
    waiting_for: list[Seat]  # the people who have not answered yet
    answered: str | None  # the reading seat's own answer, if any
    moves: str  # the moves it would take back, in the reader's words


def _answers(request: UndoRequest) -> dict[str, str]:
    return json.loads(request.answers_json or "{}")


def _stands(request: UndoRequest | None, game: Game, now: datetime) -> bool:
    return (request is not None and request.status == UNDO_ASKED and request.turn == game.turn
            and request.expires_at > now and game.status == RUNNING)


def _open_request(session: Session, game: Game, now: datetime) -> UndoRequest | None:
    request = session.exec(select(UndoRequest).where(
        UndoRequest.game_id == game.id, UndoRequest.status == UNDO_ASKED)
        .order_by(col(UndoRequest.id).desc())).first()
    return request if _stands(request, game, now) else None


def _turn_player(rules, state) -> int | None:
    """Whose turn a position is in: the turn's player (`current`), who may differ from the
    seat deciding now (in games where another seat decides within a turn); `to_move` for
    rules without one."""
    current = getattr(state, "current", None)
    return current if isinstance(current, int) else rules.to_move(state)


def _last_turn(session: Session, game: Game):
    """The game's records, the index of the first move of the last turn (the moves the seat
    that moved last made since another seat moved, as an organiser's take-back counts it), and
    whether another seat decided something within that turn: the move before it was made by
    another seat while the turn was already this seat's (an offer answered, losses chosen). Such a turn is not taken back by agreement."""
    records = takeback.records_of(session, game)
    if not records:
        return records, 0, False
    first = takeback.last_run(records)
    if first == 0:
        return records, first, False
    rules = rules_for(game.kind)
    before = rules.history_state(rules.loads(game.state_json),
                                 [r.notation for r in records[:first - 1]])
    return records, first, _turn_player(rules, before) == records[-1].seat


def _lock(session: Session, token: str) -> tuple[Seat, Game, list[Seat]]:
    seat, game, seats = seat_game_seats(session, token)
    # (the seat's game is there)
    game = cast(Game, session.get(Game, game.id, with_for_update=True, populate_existing=True))
    return seat, game, seats


def tell(session, game, seat, subject, lines: list) -> None:
    """A short mail to a person's seat (a computer player gets none); one who chose the daily
    digest finds it in the digest, and on the page at once."""
    if seat.bot is not None:
        return
    with i18n.in_language(seat.language):
        _tell_in_language(session, game, seat, subject, lines)


def _tell_in_language(session, game, seat, subject, lines: list) -> None:
    if seat.notify == NOTIFY_DIGEST:
        text = [str(subject), *(str(line) for line in lines)]
        insert_later(session, DigestItem, {"seat_id": seat.id, "created_at": utcnow(),
                                           "text": json.dumps(text, ensure_ascii=False)})
        return
    send(session, kinds.UNDO, game=game, seat=seat, heading=subject, lines=lines)


def ask(token: str, now: datetime | None = None) -> UndoRequest:
    """Ask the other players to let the seat a link opens take back its last turn (a POST).
    Done at once when every other seat is a computer player."""
    now = now or utcnow()
    with writing() as session:
        seat, game, seats = _lock(session, token)
        if not current_app.config["GAMES_UNDO"]:
            raise Rejected(_("Taking back a turn by agreement is not offered on this server."))
        if game.status != RUNNING:
            raise GameNotRunning(_("This game is %(status)s; no turn can be taken back now.",
                                   status=i18n.status_word(game.status)))
        records, first, interrupted = _last_turn(session, game)
        if not records or records[-1].seat != seat.number:
            raise Rejected(_("You can ask to take back only your own last turn, before anyone "
                             "else moves; the last move in this game is not yours."))
        if interrupted:
            raise Rejected(_("Another player already decided something in your last turn, so "
                             "it cannot be taken back by agreement; ask an organiser."))
        rules = rules_for(game.kind)
        state = rules.loads(game.state_json)
        if rules.reveals_hidden(rules.history_state(state, [r.notation for r in
                                                            records[:first]]), state):
            raise Rejected(_(SEEN_A_CARD))
        if (game.rated or tournaments.is_tournament_game(session, game)) and any(
                s.bot is not None for s in seats if s.id != seat.id):
            raise Rejected(_(NO_BOT_AGREES))
        earlier = session.exec(select(UndoRequest).where(
            UndoRequest.game_id == game.id, UndoRequest.first_move == records[first].number)
            ).first()
        if earlier is not None:
            raise Rejected(_("You already asked to take back this turn; each turn can be asked "
                             "about once."))
        hours = current_app.config["GAMES_UNDO_HOURS"]
        expires = now + timedelta(hours=hours)
        if game.deadline_at is not None:
            expires = min(expires, game.deadline_at)
        # (saved rows: they have ids)
        request = UndoRequest(game_id=cast(int, game.id), seat_id=cast(int, seat.id),
                              seat=seat.number,
                              turn=game.turn, first_move=records[first].number,
                              created_at=now, expires_at=expires)
        session.add(request)
        game.undo_turn = game.turn
        others = [s for s in seats if s.id != seat.id and s.bot is None]
        if not others:  # computer players agree at once
            _done(session, game, request, records, first, now)
            return request
        for other in others:
            tell(session, game, other, L_("%(name)s asks to take back their turn",
                                           name=seat.name), [
                L_("%(name)s (%(colour)s) asks to take back their last turn. It is taken back "
                   "only if every other player agrees on their page before anyone moves; open "
                   "your page to agree or decline.", name=seat.name,
                   colour=i18n.lazy_colour(seat.colour)),
                L_("The request ends with the next move, and at %(until)s at the latest.",
                   until=i18n.format_local(expires, other.timezone or game.timezone))])
        session.flush()
        return request


def answer(token: str, choice: object, now: datetime | None = None) -> str:
    """The seat's answer to the request that stands in its game (a POST): AGREE or DECLINE.
    Returns what became of the request: UNDO_ASKED (waiting for others), UNDO_DONE or
    UNDO_DECLINED."""
    now = now or utcnow()
    if choice not in (AGREE, DECLINE):
        raise Rejected(_("Answer with agree or decline."))
    with writing() as session:
        seat, game, seats = _lock(session, token)
        request = _open_request(session, game, now)
        if request is None:
            raise Rejected(_("No request to take back a turn stands in this game now: it was "
                             "answered, it expired, or someone moved."))
        if request.seat == seat.number:
            raise Rejected(_("This is your own request; the other players answer it."))
        answers = _answers(request)
        answers[str(seat.number)] = choice
        request.answers_json = json.dumps(answers, sort_keys=True)
        asker = seats[request.seat]
        if choice == DECLINE:
            request.status, request.ended_at = UNDO_DECLINED, now
            game.undo_turn = None
            tell(session, game, asker, L_("Your turn stays as it was"), [
                L_("%(name)s (%(colour)s) declined to take back your last turn; it stays as "
                   "it was.", name=seat.name, colour=i18n.lazy_colour(seat.colour))])
            return UNDO_DECLINED
        waiting = [s for s in seats if s.number != request.seat and s.bot is None
                   and answers.get(str(s.number)) != AGREE]
        if waiting:
            session.add(request)
            return UNDO_ASKED
        records, first, __ = _last_turn(session, game)
        _done(session, game, request, records, first, now)
        return UNDO_DONE


def _done(session: Session, game: Game, request: UndoRequest, records, first: int,
          now: datetime) -> None:
    """Everyone agreed: the turn taken back as an organiser's take-back does it."""
    played_for = [r for r in records[first:] if r.actor != "player"]
    done = takeback.take_back(session, game, records, first, now,
                              keep_deadline=bool(played_for))
    request.status, request.ended_at = UNDO_DONE, now
    game.undo_turn = None
    session.add(request)
    who, to_move = done.mover, done.to_move
    for seat in done.seats:
        lines = [L_("Every player agreed: the last turn of %(name)s (%(colour)s) is taken "
                    "back: %(moves)s.", name=who.name, colour=i18n.lazy_colour(who.colour),
                    moves=done.told_to(seat)),
                 L_("%(name)s (%(colour)s) is to move.", name=to_move.name,
                    colour=i18n.lazy_colour(to_move.colour))]
        if seat.id == who.id:
            lines.append(L_("If you drew a card from the deck in that turn, it is back on "
                            "top of the deck: you have seen it, and you will draw it again "
                            "if you draw from the deck."))
        with i18n.in_language(seat.language):
            send(session, kinds.UNDO, game=game, seat=seat, heading=L_("A turn was taken back"),
                 lines=lines)
    numbers = f"move {done.undone[0].number}" if len(done.undone) == 1 else \
        f"moves {done.undone[0].number}-{done.undone[-1].number}"
    session.add(AuditEntry(admin_id=None, game_id=game.id, action="undo by agreement",
                           reason="every other player agreed",
                           detail=f"{numbers} by seat {who.number + 1}: {done.notations}"))


def moved_on(connection: Connection, game_id: int, now: datetime) -> int | None:
    """A move was made in the game: a request that stands ends. Returns the asker's seat
    number when one did (the move path tells them), else None. One UPDATE by the game's index."""
    row = connection.execute(
        update(UndoRequest).where(col(UndoRequest.game_id) == game_id,
                                  col(UndoRequest.status) == UNDO_ASKED)
        .values(status=UNDO_MOVED_ON, ended_at=now)
        .returning(col(UndoRequest.seat), col(UndoRequest.expires_at))).first()
    if row is None or row[1] <= now:
        return None  # none, or one that had expired: nobody is waiting for it
    return row[0]


def on_undo_overtaken(event: UndoOvertaken) -> None:
    """A move was made while a request stood: the request ends, and its asker, when one is
    still waiting for it, is told. Listens to UndoOvertaken, in the move's transaction."""
    asker = moved_on(event.session.connection(), event.game.id, event.now)
    if asker is not None:
        tell(event.session, event.game, event.seats[asker], L_("Your turn stays as it was"), [
            L_("A move was made before every player agreed, so your last turn stays as it "
               "was.")])


def pending_for(game, seat, seats, now: datetime | None = None) -> Pending | None:
    """The request that stands in the game, as the seat's page shows it (None: none)."""
    now = now or utcnow()
    with reading() as session:
        request = session.exec(select(UndoRequest).where(
            UndoRequest.game_id == game.id, UndoRequest.status == UNDO_ASKED)
            .order_by(col(UndoRequest.id).desc())).first()
        if request is None or not (request.turn == game.turn and request.expires_at > now
                                   and game.status == RUNNING):
            return None
        records = takeback.records_of(session, cast(Game, session.get(Game, game.id)))
    answers = _answers(request)
    asker = seats[request.seat]
    rules = rules_for(game.kind)
    state = rules.loads(game.state_json)
    moves = "; ".join(move_words(rules, rules.notation_for(state, r.notation, r.seat,
                                                           seat.number))
                      for r in records if r.number >= request.first_move)
    waiting = [s for s in seats if s.number != request.seat and s.bot is None
               and answers.get(str(s.number)) != AGREE]
    return Pending(request, asker, waiting, answers.get(str(seat.number)), moves)
