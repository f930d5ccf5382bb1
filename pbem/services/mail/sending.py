"""The one way a mail is queued: `send(session, KIND, ...)` with a kind of the table in
pbem.services.mail.kinds, in the caller's transaction; `pbem.scheduler.outbox` delivers it.

`send` gives the outbox row its address, subject, links and Message-ID at once, in the
recipient's language; a kind counted per day (`Cap`) is not queued past its count. A kind
written when it is queued gets its text at once (`written`). A kind written when it is delivered
(`MailKind.later`: the mails a move causes) stores in `intent_json` what its text is written
from: the kind's name, its seat, its arguments (sentences as sentence data, seats by number),
and the game and seats as they were when it was queued. The outbox writes the text once, with
`render`, before it first sends the mail, and stores it in the row with the outcome of that
first try (one transaction: a sender that dies in between writes the same text again from the
same intent); so the move's transaction does not render mail, and a mail delivered after later
moves still shows the position after its own move. The intent format is the one the server has
written since intents began (`{"mail", "seat", "game", "seats", "args"}`): rows queued before an
upgrade are delivered after it (a reminder queued then says `"mail": "your_turn"` with
`reminder` among its arguments).

Imports the package's building blocks (pbem.services.mail) and its table of kinds, the games
and the ground.
"""

from __future__ import annotations

import json
import logging
from contextlib import nullcontext
from datetime import datetime, timedelta
from email.utils import getaddresses

import orjson
from flask import current_app
from sqlalchemy import bindparam, false, func, update
from sqlmodel import Session, col, select

from ...games import rules_for
from ...ground import i18n
from ...ground.db import Cached, insert_later, insert_pending, locked, utcnow
from ...ground.models import DigestItem, Game, OutboxMessage, Seat
from ...ground.rows import GameRow, SeatRow
from . import (
    Answering,
    QueuedMail,
    formatted_address,
    games_link,
    mint_keys,
    mint_player_key,
    new_message_id,
    one_line,
    picture_of,
    reply_address,
    seat_link,
    written,
)
from .kinds import DIGEST, KINDS, MailKind

log = logging.getLogger(__name__)


def send(session: Session, kind: MailKind, *, seat=None, game: Game | None = None,
         to: str | None = None, answering: Answering | None = None,
         talk_to: int | None = None, secrets: tuple[str, ...] = (),
         **args) -> QueuedMail | None:
    """Queue a mail of `kind` (a constant of pbem.services.mail.kinds) with its arguments
    `args`: to `seat` (at its address unless `to` says another), or to the address `to`, or
    for the admins' kind to every admin; about `game` when there is one.

    None, and nothing queued, for a mail with links to a computer player's seat (it has
    neither mail nor links) and for a kind counted per day that the seat (or address) had its
    count of in the last day. `answering` threads the mail under a player's own mail;
    `talk_to`: a reply to it is a message to that audience (see `mint_key`); `secrets`: keys
    the caller made for the mail (blanked in the stored copy once it is out)."""
    if kind.to_admins:
        return _to_admins(session, kind, game, args)
    if kind.links and seat.bot is not None:
        return None
    language = seat.language if seat is not None else None
    with i18n.in_language(language) if language else nullcontext():
        if kind.per_day is not None and _capped(session, kind, seat):
            return None
        if kind.covers_digest:
            insert_pending(session, DigestItem)
            _DIGEST_COVERED.execute(session.connection(), [{"of_seat": seat.id}])
        if kind.later:
            return _later(session, kind, game, seat, **args)
        subject = str(kind.subject(game=game, seat=seat, **args))
        if game is not None:
            subject = game_subject(game, subject)
        if answering is not None:
            subject = answering.subject(subject)
        context = {**args, "is_answer": answering is not None}
        if kind.context is not None:
            context.update(kind.context(session, game=game, seat=seat, **args))
        if kind.links:
            token, reply = mint_keys(session, seat, game.turn, talk_to)
            mine = mint_player_key(session, seat.email)
            secrets = (token, mine, reply)
            context.update(link=seat_link(token), games_link=games_link(mine))
        return _now(session, kind, to or formatted_address(seat.name, seat.email), subject,
                    game, seat, secrets, reply_address(reply) if kind.links else None,
                    answering, context)


def game_subject(game, text: str) -> str:
    """A mail about a game says which in its subject."""
    return f"[{game.title} #{game.id}] {text}"


def sent_today(session: Session, kind: MailKind, seat) -> int:
    """How many mails of `kind` went to `seat` (or, for a kind counted by address, to every
    seat of its address) in the last day."""
    since = utcnow() - timedelta(days=1)
    counted = select(func.count()).select_from(OutboxMessage).where(
        OutboxMessage.kind == kind.name, OutboxMessage.created_at > since)
    if kind.per_day is not None and kind.per_day.by_address:
        counted = counted.join(Seat, col(Seat.id) == OutboxMessage.seat_id).where(
            func.lower(Seat.email) == seat.email.strip().lower())
    else:
        counted = counted.where(OutboxMessage.seat_id == seat.id)
    return session.exec(counted).one()


def _capped(session: Session, kind: MailKind, seat) -> bool:
    most = kind.per_day.most
    if isinstance(most, str):
        most = current_app.config[most]
    sent = sent_today(session, kind, seat)
    if sent >= most:
        log.warning("seat %d: no %s mail sent, %d today already (at most %d a day)",
                    seat.id, kind.name, sent, most)
        return True
    return False


def _now(session: Session, kind: MailKind, to: str, subject: str, game, seat,
         secrets: tuple[str, ...], reply_to: str | None, answering: Answering | None,
         context: dict) -> QueuedMail:
    """Write `kind`'s template with `context` and queue the message. For a kind with a
    picture, the HTML part shows the game's board as a PNG attached inline (rendered when the
    mail is built, from the game as it is now)."""
    picture_json = picture_of(game) if kind.picture and game is not None else None
    text, html = written(kind.template, context, game, seat, picture_json)
    now = utcnow()
    message = QueuedMail(
        game_id=game.id if game else None, seat_id=seat.id if seat else None, kind=kind.name,
        to_addr=to, subject=one_line(subject), text_body=text, html_body=html,
        message_id=new_message_id(), secrets_json=json.dumps(list(secrets)),
        reply_to=reply_to, created_at=now, next_attempt_at=now,
        in_reply_to=answering.message_id if answering else None,
        references=answering.references if answering else None, picture_json=picture_json,
        seat_dead_at=getattr(seat, "mail_dead_at", None))
    # A row, not an ORM object: building an OutboxMessage costs more than rendering it.
    insert_later(session, OutboxMessage, dict(vars(message)))
    return message


def _to_admins(session: Session, kind: MailKind, game, args: dict) -> QueuedMail | None:
    """A message to every address in MAIL_ADMINS (logged too, so it is never lost), in the
    games' language: its heading and lines may be lazy strings, written now."""
    addresses = [a for __, a in getaddresses([current_app.config["MAIL_ADMINS"]]) if a]
    with i18n.in_language(current_app.config["GAMES_LANGUAGE"]):
        current_app.logger.warning("%s: %s", args["heading"], " ".join(map(str, args.get("lines", []))))
        subject = str(kind.subject(game=game, seat=None, **args))
        queued = [_now(session, kind, address, subject, game, None, (), None, None,
                       {**args, "is_answer": False}) for address in addresses]
    return queued[-1] if queued else None


def due_digests(session: Session, now: datetime) -> int:
    """Queue a digest for every seat whose oldest waiting news is a digest period old."""
    cutoff = now.timestamp() - current_app.config["GAMES_DIGEST_HOURS"] * 3600
    # Locked: a second scheduler waits here, then finds these items sent.
    items = session.exec(locked(select(DigestItem).where(DigestItem.sent == false())
                                .order_by(col(DigestItem.seat_id), col(DigestItem.id)))).all()
    by_seat: dict[int, list[DigestItem]] = {}
    for item in items:
        by_seat.setdefault(item.seat_id, []).append(item)
    queued = 0
    for seat_id, waiting in by_seat.items():
        if waiting[0].created_at.timestamp() > cutoff:
            continue
        seat = session.get(Seat, seat_id)
        game = session.get(Game, seat.game_id)
        rules = rules_for(game.kind)
        for item in waiting:
            item.sent = True
            session.add(item)
        send(session, DIGEST, game=game, seat=seat, rules=rules,
             state=rules.loads(game.state_json), items=waiting)
        queued += 1
    return queued


_DIGEST_COVERED = Cached(update(DigestItem)
                         .where(col(DigestItem.seat_id) == bindparam("of_seat"),
                                col(DigestItem.sent) == false())
                         .values(sent=True))


# What of the game and its seats a mail is written from, as it was when it was queued.
_GAME_AT = ("state_json", "turn", "status", "title", "timezone")
_SEAT_AT = ("name", "colour", "timezone", "language")
# A seat named in an intent: an ORM object, or the plain row the move path reads (pbem.ground.rows).
SEATS = (Seat, SeatRow)


def _later(session: Session, kind: MailKind, game: Game, seat: Seat,
           **args) -> QueuedMail | None:
    """Queue mail `kind` to `seat` as an intent: its address, subject, links and Message-ID
    now, its text when it is delivered (`render`). `args` are sentences, seats (a list of all
    of them, or one), and plain values. Called in the seat's language."""
    rules = rules_for(game.kind)
    for told in ("news", "lines"):  # what happened, without the steps that say nothing
        if isinstance(args.get(told), list):
            args[told] = rules.news(args[told])
    subject = game_subject(game, str(kind.subject(game=game, seat=seat, **args)))
    named = {seat.number: seat}  # the seats the mail names, as they are now
    for value in args.values():
        for other in value if isinstance(value, list) else [value]:
            if isinstance(other, SEATS):
                named[other.number] = other
    token, reply = mint_keys(session, seat, game.turn)
    mine = mint_player_key(session, seat.email)
    now = utcnow()
    stored = {"mail": kind.name, "seat": seat.number,
              "game": {**{field: getattr(game, field) for field in _GAME_AT},
                       "deadline_at": game.deadline_at.isoformat() if game.deadline_at else None},
              "seats": {str(n): [getattr(s, field) for field in _SEAT_AT]
                        for n, s in named.items()},
              "args": {key: _encoded(value) for key, value in args.items()}}
    message = QueuedMail(
        game_id=game.id, seat_id=seat.id, kind=kind.name,
        to_addr=formatted_address(seat.name, seat.email), subject=one_line(subject),
        text_body="", html_body="", message_id=new_message_id(),
        secrets_json=json.dumps([token, mine, reply]), reply_to=reply_address(reply),
        created_at=now, next_attempt_at=now, picture_json=picture_of(game, kind.whole_game),
        intent_json=orjson.dumps(stored).decode(),  # read back by orjson.loads
        seat_dead_at=seat.mail_dead_at)
    insert_later(session, OutboxMessage, dict(vars(message)))
    return message


def _encoded(value):
    if isinstance(value, i18n.Sentence):
        return {"sentence": value.data}
    if isinstance(value, SEATS):
        return {"seat": value.number}
    if isinstance(value, list):
        if value and all(isinstance(v, SEATS) for v in value):
            return {"seats": True}
        return [_encoded(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"a mail written later cannot keep {type(value).__name__}")


def _decoded(value, seats: list):
    if isinstance(value, list):
        return [_decoded(v, seats) for v in value]
    if isinstance(value, dict):
        if "sentence" in value:
            return i18n.lazy(value["sentence"])
        if "seat" in value:
            return seats[value["seat"]]
        if "seats" in value:
            return seats
    return value


class _As:
    """A game or seat as it was when a mail was queued: the stored values, the rest read
    from the row as it is (its id, kind and the like, which do not change)."""

    def __init__(self, row, values: dict):
        self._row = row
        self.__dict__.update(values)

    def __getattr__(self, name):
        return getattr(self._row, name)


_READ = "pbem_mail_read"  # session.info: the games and seats `render` read, by game id
# Games with their seats (in seat order) as plain rows (pbem.ground.rows), in one statement.
_GAMES_AND_SEATS = (select(*Game.__table__.c, *Seat.__table__.c)
                    .join(Seat, col(Seat.game_id) == Game.id)
                    .where(col(Game.id).in_(bindparam("game_ids", expanding=True)))
                    .order_by(col(Game.id), col(Seat.number)))
_GAME_COLUMNS = len(Game.__table__.c)


def read_games(session: Session, game_ids) -> None:
    """Read the games `game_ids` and their seats for the mails `render` writes in `session`,
    in one statement: a sender reads those of a whole claim at once."""
    read = session.info.setdefault(_READ, {})
    wanted = sorted(set(game_ids) - set(read))
    if not wanted:
        return
    rows = session.connection().execute(_GAMES_AND_SEATS, {"game_ids": wanted}).all()
    for row in rows:
        if row[0] not in read:
            read[row[0]] = GameRow(row[:_GAME_COLUMNS]), []
        read[row[0]][1].append(SeatRow(row[_GAME_COLUMNS:]))


def _game_and_seats(session: Session, game_id: int) -> tuple[GameRow, list[SeatRow]]:
    """A game and its seats as `session` reads them, read once per session: the mails of one
    move (and of one game in a sender's claim) are written from the same rows."""
    read_games(session, [game_id])
    found = session.info[_READ].get(game_id)
    if found is None:
        raise LookupError(f"game {game_id} does not exist any more")
    return found


def render(session: Session, row: OutboxMessage | QueuedMail) -> tuple[str, str]:
    """The text and HTML of an outbox row queued as an intent, written as they would have been
    when it was queued: from the game and seats as they were then, in the seat's language of
    then, with the row's own links and picture. Needs the app's context; reads only (the game
    and its seats once per session: one session may write many mails)."""
    stored = orjson.loads(row.intent_json)  # written by orjson (`_later`)
    game_row, seat_rows = _game_and_seats(session, row.game_id)
    at = dict(stored["game"])
    deadline = at.pop("deadline_at")
    game = _As(game_row, {**at, "deadline_at": datetime.fromisoformat(deadline)
                          if deadline else None})
    named = stored["seats"]
    seats = [_As(s, dict(zip(_SEAT_AT, named[str(s.number)]))) if str(s.number) in named else s
             for s in seat_rows]
    seat = seats[stored["seat"]]
    if seat.id != row.seat_id:
        raise LookupError(f"seat {stored['seat']} of game {row.game_id} is not the mail's")
    rules = rules_for(game_row.kind)
    args = {name: _decoded(value, seats) for name, value in stored["args"].items()}
    kind = KINDS[stored["mail"]]
    token, mine, *__ = orjson.loads(row.secrets_json)
    with i18n.in_language(seat.language):
        context = kind.context(session, game=game, seat=seat, rules=rules,
                               state=rules.loads(game.state_json), **args)
        context.update(link=seat_link(token), games_link=games_link(mine))
        return written(kind.template, context, game, seat, row.picture_json)
