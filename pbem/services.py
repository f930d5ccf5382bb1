"""The one place where games and the database meet: creating games and submitting moves.

Every move, whether from the seat page, the API, an emailed turn file or the scheduler, goes
through `submit_move`. It applies the move in one write transaction together with its log
entry and the mails it causes, so either all of them happen or none does.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from email.utils import parseaddr

from flask import current_app
from sqlmodel import Session, select

from . import mail
from .db import reading, utcnow, writing
from .games import DEFAULT_KIND, GameRules, MoveError, SetupProblem, rules_for
from .models import (
    FINISHED,
    NOTIFY_DIGEST,
    NOTIFY_EVERY,
    RUNNING,
    DigestItem,
    Game,
    MoveRecord,
    Seat,
    SeatKey,
)
from .tokens import hash_token, is_well_formed

EMAIL_PATTERN = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+")
MAX_NAME = 60


class ServiceError(Exception):
    """A request the service refuses; `status` is the HTTP status the web layer answers with."""

    status = 400

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class Malformed(ServiceError):
    status = 400


class NotFound(ServiceError):
    status = 404


class StaleTurn(ServiceError):
    status = 409


class NotYourTurn(ServiceError):
    status = 409


class GameNotRunning(ServiceError):
    status = 409


class Rejected(ServiceError):
    status = 422


# --- players and games ------------------------------------------------------------------------

@dataclass(frozen=True)
class PlayerSpec:
    name: str
    email: str


def parse_player(text: str) -> PlayerSpec:
    """Read 'Name <email>'; SetupProblem says what is wrong with it."""
    name, email = parseaddr(text or "")
    return check_player(name, email, text)


def check_player(name: str, email: str, shown: str | None = None) -> PlayerSpec:
    shown = shown if shown is not None else f"{name} <{email}>"
    name, email = (name or "").strip(), (email or "").strip()
    if not name or not email:
        raise SetupProblem(f"write each player as 'Name <email>', not {shown!r}")
    if len(name) > MAX_NAME or any(ord(c) < 32 or c in "<>\"@" for c in name):
        raise SetupProblem(f"the name {name[:MAX_NAME]!r} must be at most {MAX_NAME} characters, "
                           "without <, >, \", @ or control characters")
    if len(email) > 254 or not EMAIL_PATTERN.fullmatch(email):
        raise SetupProblem(f"{email[:80]!r} is not an email address like anna@example.org")
    return PlayerSpec(name, email)


def check_title(title: str) -> str:
    """A game's name as shown in mail subjects: one line of 1 to 100 printable characters."""
    title = (title or "").strip()
    if not 0 < len(title) <= 100 or not title.isprintable():
        raise SetupProblem("the game's title must be one line of 1 to 100 printable characters")
    return title


@dataclass(frozen=True)
class CreatedGame:
    game_id: int
    links: list[tuple[str, str, str]]  # (name, colour, link) per seat, in seat order


def create_game(players: list[PlayerSpec], seed: str | None = None, *,
                kind: str = DEFAULT_KIND, colours: list[str] | None = None,
                start: int | None = None, title: str | None = None,
                now: datetime | None = None) -> CreatedGame:
    """Set up a game, its seats, and the invitation mails; returns each seat's first link."""
    rules = rules_for(kind)
    if not rules.min_players <= len(players) <= rules.max_players:
        raise SetupProblem(f"{rules.title} is for {rules.min_players} to {rules.max_players} "
                           f"players, not {len(players)}")
    emails = [p.email.lower() for p in players]
    if len(set(emails)) != len(emails):
        raise SetupProblem("each player needs their own email address")
    colours = list(colours or rules.colours[:len(players)])
    seed = seed if seed is not None else secrets.token_hex(8)
    if not isinstance(seed, str) or not 0 < len(seed) <= 100 or not seed.isprintable():
        raise SetupProblem("the seed must be 1 to 100 printable characters")
    title = check_title(title) if title is not None else rules.title
    state = rules.new_state(colours, seed, start)
    now = now or utcnow()
    with writing() as session:
        game = Game(kind=kind, title=title, seed=seed,
                    start_seat=rules.start_seat(state), turn=0, state_json=rules.dumps(state),
                    created_at=now, updated_at=now, turn_started_at=now,
                    deadline_at=_deadline(now))
        session.add(game)
        session.flush()
        seats = [Seat(game_id=game.id, number=n, name=p.name, email=p.email, colour=colours[n])
                 for n, p in enumerate(players)]
        session.add_all(seats)
        session.flush()
        links = []
        for seat in seats:
            message = mail.invitation(session, game, seat, seats, rules, state)
            links.append((seat.name, seat.colour, mail.seat_link(json.loads(
                message.secrets_json)[0])))
        return CreatedGame(game.id, links)


def _deadline(now: datetime) -> datetime:
    return now + timedelta(hours=current_app.config["GAMES_MOVE_DEADLINE_HOURS"])


# --- seats --------------------------------------------------------------------------------------

UNKNOWN_LINK = ("This link is not valid: it may be mistyped, cut short by the mail program, or "
                "replaced by a newer one. Use the link in your latest mail from the game.")


def _seat_and_game(session: Session, token: str) -> tuple[Seat, Game]:
    """The seat a link's token opens, and its game, in one query; NotFound reveals nothing."""
    if not is_well_formed(token):
        raise NotFound(UNKNOWN_LINK)
    row = session.exec(select(Seat, Game).join(SeatKey, SeatKey.seat_id == Seat.id)
                       .join(Game, Game.id == Seat.game_id)
                       .where(SeatKey.token_hash == hash_token(token),
                              SeatKey.revoked_at.is_(None))).first()
    if row is None:
        raise NotFound(UNKNOWN_LINK)
    return row


def seat_id_for_token(session: Session, token: str) -> int:
    """The seat a link's token opens; NotFound for anything else, revealing nothing."""
    return _seat_and_game(session, token)[0].id


@dataclass(frozen=True)
class LogEntry:
    """One applied move as the log shows it to one reader."""

    number: int
    seat: int
    notation: str
    actor: str
    via: str
    created_at: datetime
    lines: list[str]


def _log(session: Session, game_id: int, reader: int, limit: int | None) -> list[LogEntry]:
    """The game's log, newest first, in `reader`'s words (-1: a spectator's)."""
    query = (select(MoveRecord.number, MoveRecord.seat, MoveRecord.notation, MoveRecord.actor,
                    MoveRecord.via, MoveRecord.created_at, MoveRecord.lines_json)
             .where(MoveRecord.game_id == game_id).order_by(MoveRecord.number.desc()))
    if limit is not None:
        query = query.limit(limit)
    return [LogEntry(*row[:6], json.loads(row[6]).get(str(reader), []))
            for row in session.exec(query)]


def _seats(session: Session, game_id: int) -> list[Seat]:
    return list(session.exec(select(Seat).where(Seat.game_id == game_id)
                             .order_by(Seat.number)))


@dataclass
class SeatContext:
    """What a page or an API answer needs about one seat, read in one snapshot."""

    game: Game
    seat: Seat
    seats: list[Seat]
    rules: GameRules
    state: object
    log: list[LogEntry]  # newest first, in this seat's words


def load_seat(token: str, log_limit: int | None = 200) -> SeatContext:
    with reading() as session:
        seat, game = _seat_and_game(session, token)
        rules = rules_for(game.kind)
        return SeatContext(game, seat, _seats(session, game.id), rules,
                           rules.loads(game.state_json),
                           _log(session, game.id, seat.number, log_limit))


def set_notify(token: str, choice: str) -> None:
    from .models import NOTIFY_CHOICES

    if choice not in NOTIFY_CHOICES:
        raise Rejected("choose one of the offered mail settings")
    with writing() as session:
        seat = session.get(Seat, seat_id_for_token(session, token))
        seat.notify = choice
        session.add(seat)


# --- moves --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MoveResult:
    game_id: int
    seat: int
    notation: str
    turn: int  # the game's turn counter after the move
    lines: list[str]  # what happened, in the mover's words
    finished: bool
    context: SeatContext | None = None  # the mover's seat after the move, when asked for


def submit_move(token: str | None, text: str, turn: object, *, seat_id: int | None = None,
                actor: str = "player", via: str = "web", now: datetime | None = None,
                context_log: int | None = None) -> MoveResult:
    """Apply one move for the seat the token opens (or `seat_id`, for trusted callers).

    `turn` is the game's turn counter the move was built for; anything else is refused as
    stale. Raises a ServiceError subclass and changes nothing when the move cannot be applied.
    With `context_log`, the result also holds the mover's SeatContext after the move, read in
    the same transaction, with that many log entries.
    """
    if isinstance(turn, bool) or not isinstance(turn, int) or not 0 <= turn < 2 ** 53:
        raise Malformed("the move must say which turn it was made for (a whole number)")
    if not isinstance(text, str):
        raise Malformed("the move must be text in the notation, for example 'draw deck'")
    now = now or utcnow()
    with writing() as session:
        if seat_id is None:
            seat, game = _seat_and_game(session, token)
        else:
            seat = session.get(Seat, seat_id)
            if seat is None:
                raise NotFound(UNKNOWN_LINK)
            game = session.get(Game, seat.game_id)
        # On SQLite, BEGIN IMMEDIATE (pbem.db) already serialises writers; elsewhere this lock
        # makes two submissions for one game wait for each other.
        if session.get_bind().dialect.name != "sqlite":
            session.refresh(game, with_for_update=True)
        if game.status != RUNNING:
            raise GameNotRunning(f"This game is {game.status}; no more moves can be made.")
        if turn != game.turn:
            raise _stale(session, game, seat, text, turn)
        rules = rules_for(game.kind)
        before = rules.loads(game.state_json)
        to_move = rules.to_move(before)
        if to_move != seat.number:
            raise NotYourTurn(f"It is not your move: the game waits for "
                              f"{_seat_name(session, game, to_move)}. Nothing was changed.")
        try:
            move = rules.parse(before, text)
            after = rules.apply(before, move)
        except MoveError as exc:
            raise Rejected(str(exc)) from None
        seats = _seats(session, game.id)
        lines = {str(r): rules.describe(before, move, after, None if r < 0 else r)
                 for r in range(-1, len(seats))}  # -1: a spectator's words
        record = MoveRecord(game_id=game.id, number=game.turn, seat=seat.number,
                            notation=rules.notation(move), actor=actor, via=via,
                            lines_json=json.dumps(lines, ensure_ascii=False), created_at=now)
        session.add(record)
        game.state_json = rules.dumps(after)
        game.turn += 1
        game.updated_at = now
        session.add(game)
        session.flush()
        _notify(session, game, seats, rules, before, after, seat, now)
        context = None if context_log is None else SeatContext(
            game, seat, seats, rules, after, _log(session, game.id, seat.number, context_log))
        return MoveResult(game.id, seat.number, record.notation, game.turn,
                          lines[str(seat.number)], game.status == FINISHED, context)


def _seat_name(session: Session, game: Game, number: int | None) -> str:
    if number is None:
        return "nobody"
    seat = session.exec(select(Seat).where(Seat.game_id == game.id,
                                           Seat.number == number)).one()
    return f"{seat.name} ({seat.colour})"


def _stale(session: Session, game: Game, seat: Seat, text: str, turn: int) -> ServiceError:
    record = session.exec(select(MoveRecord).where(MoveRecord.game_id == game.id,
                                                   MoveRecord.number == turn)).first()
    if record is not None and record.seat == seat.number:
        rules = rules_for(game.kind)
        try:
            same = rules.notation(rules.parse(rules.loads(game.state_json), text)) \
                == record.notation
        except MoveError:
            same = False
        if same:
            return StaleTurn(f"Your move '{record.notation}' was already recorded (a second "
                             "click or a second tab?). Nothing more was changed.")
    return StaleTurn(f"This move was made for turn {turn}, but the game has moved on to turn "
                     f"{game.turn}. Nothing was changed; look at the position as it is now.")


class _Recent:
    """The latest moves of a game, enough to go back to every seat's previous move."""

    def __init__(self, session: Session, game: Game, seats: int):
        # A turn is at most four moves (a placement or exchange, then up to three draws), and
        # every seat moves once a round, so 4n + 4 moves reach back past each seat's last one.
        rows = session.exec(select(MoveRecord.number, MoveRecord.seat, MoveRecord.lines_json)
                            .where(MoveRecord.game_id == game.id)
                            .order_by(MoveRecord.number.desc()).limit(4 * seats + 4)).all()
        self.records = [(number, seat, json.loads(lines)) for number, seat, lines
                        in reversed(rows)]

    def last_move_of(self, seat: int, before: int) -> int:
        """The number of `seat`'s latest move before move `before` (-1 when none)."""
        return max((n for n, s, _ in self.records if s == seat and n < before), default=-1)

    def last_move_not_of(self, seat: int) -> int:
        """The number of the latest move by anyone but `seat` (-1 when none)."""
        return max((n for n, s, _ in self.records if s != seat), default=-1)

    def lines_since(self, reader: int, after: int) -> list[str]:
        return [line for n, _, lines in self.records if n > after for line in lines[str(reader)]]


def _notify(session: Session, game: Game, seats: list[Seat], rules: GameRules, before, after,
            mover: Seat, now: datetime) -> None:
    """Queue the mails a move causes: the end of the game, or the end of a turn."""
    to_move = rules.to_move(after)
    if to_move is not None and to_move == rules.to_move(before):
        return  # the same seat goes on (its draws): nobody needs a mail yet
    recent = _Recent(session, game, len(seats))
    this_move = game.turn - 1
    if to_move is None:
        game.status, game.finished_at, game.deadline_at = FINISHED, now, None
        session.add(game)
        for seat in seats:
            lines = recent.lines_since(seat.number, recent.last_move_of(seat.number, this_move))
            mail.final(session, game, seat, seats, rules, after, lines)
        return
    game.turn_started_at, game.deadline_at = now, _deadline(now)
    session.add(game)
    # The turn that just ended: every move since someone other than the mover last moved.
    turn_began = recent.last_move_not_of(mover.number)
    for seat in seats:
        if seat.number == to_move:
            news = recent.lines_since(seat.number, recent.last_move_of(seat.number, this_move))
            mail.your_turn(session, game, seat, rules, after, news)
        elif seat.number == mover.number:
            continue
        else:
            lines = recent.lines_since(seat.number, turn_began)
            if seat.notify == NOTIFY_EVERY:
                mail.moved(session, game, seat, rules, after, lines, seats[to_move])
            elif seat.notify == NOTIFY_DIGEST:
                session.add(DigestItem(seat_id=seat.id, text="\n".join(lines), created_at=now))
