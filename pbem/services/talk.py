"""Table talk: messages between the seats of a game, to every seat or privately to one.

A message is posted from the seat page, the API or a reply to a message mail (`post_message`),
checked (length, characters, the seat's rate, the audience), stored, and mailed in the same
transaction to each seat of its audience as that seat chose: each message, a daily digest
(a `Chore` the scheduler claims), or none. `thread` is what one seat may read: the messages to
everyone and the private ones it wrote or was sent, never another pair's private messages.
This module does not read mail (pbem.mailin.inbox does) nor render pages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from flask import current_app
from limits import parse_many
from sqlalchemy import func, or_, update
from sqlmodel import Session, col, select

from ..ground.db import claim_rows, is_status, new_claim, one_at_a_time, reading, utcnow, writing
from ..ground.i18n import gettext as _
from ..ground.i18n import ngettext
from ..ground.models import (
    ABORTED,
    CLAIMED,
    DONE,
    INVITATION_EXPIRY,
    LOBBY_EXPIRY,
    PENDING,
    TALK_CHOICES,
    TALK_DIGEST,
    TALK_DIGEST_CHORE,
    TALK_EACH,
    TO_ALL,
    TOURNAMENT_ROUND,
    TOURNAMENT_SEASON,
    TOURNAMENT_TABLES,
    Chore,
    Game,
    Seat,
    TalkMessage,
)
from ..ground.rows import SeatRow
from . import tournaments
from .errors import GameNotRunning, Malformed, Rejected, ServiceError
from .mail import kinds
from .mail.sending import send
from .players import unsafe_character
from .seats import seat_game_seats

THREAD_LIMIT = 200  # the newest messages a page or an API answer shows


class TooMany(ServiceError):
    status = 429


@dataclass(frozen=True)
class Entry:
    """One message as one seat reads it.

    `number` is what the seat sees of the message's identity (the API's `id`, the page's
    anchor and its "mark as read" form): its place among the messages this seat may read, 1
    for the first, with no gaps. The database's ids count every message of every game,
    private ones between other seats included, so a seat that saw ids 14 and 18 would know
    that three messages it may not read passed between; they stay inside (`key`)."""

    number: int
    key: int  # the message's row id: never shown
    sender: Seat
    to: Seat | None  # None: to everyone
    body: str
    via: str
    created_at: datetime
    mine: bool
    unread: bool

    def as_dict(self) -> dict:
        return {"id": self.number, "from": self.sender.number, "from_name": self.sender.name,
                "to": "all" if self.to is None else self.to.number, "text": self.body,
                "at": self.created_at.isoformat(), "mine": self.mine, "unread": self.unread}


def visible_to(number: int):
    """The condition on TalkMessage for what seat `number` may read."""
    return or_(col(TalkMessage.to_seat).is_(None), col(TalkMessage.to_seat) == number,
               col(TalkMessage.sender) == number)


def clean_text(text: object) -> str:
    """A message's text checked: 1 to TALK_MAX_LENGTH characters, lines kept, no control
    characters; Malformed says what to change."""
    if not isinstance(text, str):
        raise Malformed(_("Write the message as text."))
    text = "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n")
                     .split("\n")).strip("\n")
    limit = current_app.config["TALK_MAX_LENGTH"]
    if not text.strip():
        raise Malformed(_("The message is empty: write something to send."))
    if len(text) > limit:
        raise Malformed(_("The message is %(length)d characters long; at most %(limit)d are "
                          "sent. Shorten it, or send it in parts.", length=len(text),
                          limit=limit))
    bad = unsafe_character(text.replace("\n", "").replace("\t", ""))
    if bad:
        raise Malformed(_("The message contains %(what)s; remove it and send it again.",
                          what=bad))
    return text


def _audience(seats: list[Seat], me: Seat, to: object) -> Seat | None:
    """The seat a message is for (None: every seat), from the form's or the API's `to`."""
    if to in (None, "", "all"):
        return None
    raw = str(to)
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 3 or int(raw) >= len(seats):
        raise Malformed(_("Choose who the message is for: everyone, or one of the players."))
    seat = seats[int(raw)]
    if seat.id == me.id:
        raise Malformed(_("A private message goes to another player, not to yourself."))
    if seat.bot is not None:
        raise Rejected(_("%(name)s is a computer player and reads no messages.",
                         name=seat.name))
    return seat


def _check_rate(session: Session, seat: Seat, now: datetime) -> None:
    """At most TALK_RATE messages per seat (e.g. "10 per minute;100 per day"), counted in the
    database so that every server process and every way in shares the count."""
    one_at_a_time(session, f"talk seat {seat.id}")
    for item in parse_many(current_app.config["TALK_RATE"]):
        span = timedelta(seconds=item.get_expiry())
        sent = session.exec(select(func.count()).select_from(TalkMessage).where(
            TalkMessage.sender_seat_id == seat.id, TalkMessage.created_at > now - span)).one()
        if sent >= item.amount:
            raise TooMany(_("You have sent %(count)d messages in this game in the last "
                            "%(span)s, as many as the server takes; wait a while, then send "
                            "it again. Nothing was sent.", count=sent,
                            span=_span_words(span)))


def _span_words(span: timedelta) -> str:
    seconds = int(span.total_seconds())
    if seconds % 86400 == 0:
        return ngettext("%(num)d day", "%(num)d days", seconds // 86400)
    if seconds % 3600 == 0:
        return ngettext("%(num)d hour", "%(num)d hours", seconds // 3600)
    if seconds % 60 == 0:
        return ngettext("%(num)d minute", "%(num)d minutes", seconds // 60)
    return ngettext("%(num)d second", "%(num)d seconds", seconds)


@dataclass(frozen=True)
class Posted:
    id: int  # the row's id: for finding it again, never to show
    game_id: int
    to: int | None  # the seat number it is for; None: everyone


def post_message(token: str | None, text: object, to: object = None, *,
                 seat_id: int | None = None, via: str = "web",
                 now: datetime | None = None) -> Posted:
    """Post a message from the seat a link's `token` opens (or, for trusted callers such as a
    reply by mail, `seat_id`) to every seat (`to` None, "" or "all") or to one seat number,
    and queue its mails. Raises a ServiceError that says why nothing was sent."""
    now = now or utcnow()
    body = clean_text(text)
    with writing() as session:
        me, game, seats = seat_game_seats(session, token, seat_id)
        if game.status == ABORTED:
            raise GameNotRunning(_("This game was aborted: no more messages can be sent."))
        target = _audience(seats, me, to)
        _check_rate(session, me, now)
        message = TalkMessage(game_id=game.id, sender_seat_id=me.id, sender=me.number,
                              to_seat=None if target is None else target.number, body=body,
                              via=via, created_at=now)
        session.add(message)
        session.flush()
        me.talk_read_id = max(me.talk_read_id, message.id)  # what one wrote is read
        session.add(me)
        for seat in seats if target is None else [target]:
            if seat.id == me.id or seat.bot is not None:
                continue
            if seat.talk_notify == TALK_EACH:
                send(session, kinds.TALK, game=game, seat=seat, message=message, sender=me,
                     recipient=target,
                     talk_to=me.number if message.to_seat is not None else TO_ALL)
                seat.talk_mailed_id = max(seat.talk_mailed_id, message.id)
                session.add(seat)
            elif seat.talk_notify == TALK_DIGEST:
                _digest_due(session, seat, now)
        return Posted(message.id, game.id, message.to_seat)


def _digest_due(session: Session, seat: Seat, now: datetime) -> None:
    """A digest of messages for `seat`, due a digest period from now unless one is waiting."""
    waiting = session.exec(select(Chore.id).where(
        is_status(Chore.status, PENDING), Chore.kind == TALK_DIGEST_CHORE,
        Chore.ref_id == seat.id)).first()
    if waiting is None:
        hours = current_app.config["GAMES_DIGEST_HOURS"]
        session.add(Chore(kind=TALK_DIGEST_CHORE, ref_id=seat.id,
                          due_at=now + timedelta(hours=hours)))


def _entries(session: Session, seat: Seat | SeatRow, seats: Sequence[Seat | SeatRow],
             limit: int) -> list[Entry]:
    # The window numbers every message the seat may read before the newest `limit` are taken.
    place = func.row_number().over(order_by=TalkMessage.id)
    rows = session.exec(select(TalkMessage, place).where(
        TalkMessage.game_id == seat.game_id, visible_to(seat.number))
        .order_by(col(TalkMessage.id).desc()).limit(limit)).all()
    return [Entry(number, m.id, seats[m.sender],
                  None if m.to_seat is None else seats[m.to_seat],
                  m.body, m.via, m.created_at, m.sender == seat.number,
                  m.sender != seat.number and m.id > seat.talk_read_id)
            for m, number in reversed(rows)]


def thread(token: str, limit: int = THREAD_LIMIT) -> list[Entry]:
    """The messages the seat of `token` may read, newest last."""
    with reading() as session:
        seat, _game, seats = seat_game_seats(session, token)
        return _entries(session, seat, seats, limit)


def thread_of(seat: Seat | SeatRow, seats: Sequence[Seat | SeatRow],
              limit: int = THREAD_LIMIT) -> list[Entry]:
    with reading() as session:
        return _entries(session, seat, seats, limit)


def mark_read(token: str, upto: object = None) -> None:
    """Mark the seat's messages read up to its message number `upto` (`Entry.number`; all it
    may read when None or not a number). A page's button or script does this, never opening
    a link."""
    with writing() as session:
        seat, _game, _seats = seat_game_seats(session, token)
        mine = select(TalkMessage.id).where(TalkMessage.game_id == seat.game_id,
                                            visible_to(seat.number)).order_by(col(TalkMessage.id))
        raw = str(upto) if upto is not None else ""
        mark = None
        if raw.isascii() and raw.isdigit() and len(raw) < 12 and int(raw) > 0:
            mark = session.exec(mine.offset(int(raw) - 1).limit(1)).first()  # its row
        if mark is None:  # not a number, or more than the seat has: all it may read
            mark = session.exec(mine.order_by(None).order_by(col(TalkMessage.id).desc())
                                .limit(1)).first()
        seat.talk_read_id = max(seat.talk_read_id, mark or 0)
        session.add(seat)


def set_talk_notify(token: str, choice: str) -> None:
    if choice not in TALK_CHOICES:
        raise Rejected(_("Choose one of the offered mail settings for messages."))
    with writing() as session:
        seat, _game, _seats = seat_game_seats(session, token)
        seat.talk_notify = choice
        session.add(seat)


def admin_thread(game_id: int) -> list[tuple[TalkMessage, Seat, Seat | None]]:
    """Every message of a game, private ones included: only for an admin, after the audit
    entry that says they looked (pbem.web.admin)."""
    with reading() as session:
        seats = list(session.exec(select(Seat).where(Seat.game_id == game_id)
                                  .order_by(col(Seat.number))))
        rows = session.exec(select(TalkMessage).where(TalkMessage.game_id == game_id)
                            .order_by(col(TalkMessage.id))).all()
        return [(m, seats[m.sender], None if m.to_seat is None else seats[m.to_seat])
                for m in rows]


def counts(game_id: int) -> tuple[int, int]:
    """How many messages a game has: to everyone, and private."""
    with reading() as session:
        rows = dict(session.exec(select(col(TalkMessage.to_seat).is_(None), func.count())
                                 .where(TalkMessage.game_id == game_id)
                                 .group_by(col(TalkMessage.to_seat).is_(None))).all())
    return rows.get(True, 0), rows.get(False, 0)


# --- the scheduler's chores -------------------------------------------------------------------

CHORE_BATCH = 200


def run_due_chores(now: datetime) -> dict[str, int]:
    """Claim the chores due at `now` (atomically: two schedulers never take the same one) and
    do each; returns how many of each kind were done."""
    counts = {COUNTED[kind]: 0 for kind in CHORES}
    given_up = now - timedelta(seconds=current_app.config["SCHEDULER_CLAIM_SECONDS"])
    claim = new_claim()
    with writing() as session:
        session.exec(update(Chore).where(is_status(Chore.status, CLAIMED),
                                         col(Chore.claimed_at) < given_up)
                     .values(status=PENDING, claim=None, claimed_at=None))
        ids = claim_rows(session, Chore, select(Chore.id)
                         .where(is_status(Chore.status, PENDING), Chore.due_at <= now)
                         .order_by(col(Chore.due_at), col(Chore.id)).limit(CHORE_BATCH),
                         status=CLAIMED, claim=claim, claimed_at=now)
    for chore_id in ids:
        with writing() as session:
            chore = session.get(Chore, chore_id, with_for_update=True)
            if chore is None or chore.claim != claim or chore.status != CLAIMED:
                continue
            handler = CHORES.get(chore.kind)
            if handler is not None and handler(session, chore.ref_id, now):
                counts[COUNTED[chore.kind]] += 1
            chore.status, chore.done_at = DONE, now
            session.add(chore)
    return counts


def _send_digest(session: Session, seat_id: int, now: datetime) -> bool:
    """Mail a seat the messages for it it has neither read nor been mailed; False when none."""
    seat = session.get(Seat, seat_id, with_for_update=True)
    if seat is None or seat.bot is not None or seat.talk_notify != TALK_DIGEST:
        return False
    game = session.get(Game, seat.game_id)
    seats = list(session.exec(select(Seat).where(Seat.game_id == game.id)
                              .order_by(col(Seat.number))))
    since = max(seat.talk_read_id, seat.talk_mailed_id)
    messages = session.exec(select(TalkMessage).where(
        TalkMessage.game_id == game.id, visible_to(seat.number), TalkMessage.id > since,
        col(TalkMessage.sender) != seat.number).order_by(col(TalkMessage.id))).all()
    if not messages:
        return False
    send(session, kinds.TALK_DIGEST, game=game, seat=seat, talk_to=TO_ALL,
         messages=list(messages), names={s.number: s for s in seats})
    seat.talk_mailed_id = messages[-1].id
    session.add(seat)
    return True


def _expire_invitation(session: Session, invitation_id: int, now: datetime) -> bool:
    from .starting import expire_invitation

    return expire_invitation(session, invitation_id, now)


def _expire_open_game(session: Session, open_game_id: int, now: datetime) -> bool:
    from .lobby import expire_open_game

    return expire_open_game(session, open_game_id, now)


CHORES = {TALK_DIGEST_CHORE: _send_digest, INVITATION_EXPIRY: _expire_invitation,
          LOBBY_EXPIRY: _expire_open_game, TOURNAMENT_ROUND: tournaments.round_over,
          TOURNAMENT_SEASON: tournaments.season_due,
          TOURNAMENT_TABLES: tournaments.make_tables}
COUNTED = {TALK_DIGEST_CHORE: "message_digests", INVITATION_EXPIRY: "invitations_expired",
           LOBBY_EXPIRY: "open_games_expired", TOURNAMENT_ROUND: "tournament_rounds",
           TOURNAMENT_SEASON: "tournament_seasons",
           TOURNAMENT_TABLES: "tournament_tables"}  # their names in the scheduler's counts
