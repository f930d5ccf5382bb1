"""Turn notices in chat apps and push services, beside the mail (issue 45).

Targets (`add`, `targets`, `remove`, `send_test`) are Apprise URLs (pbem.ground.chat), each
with the kinds of notice it gets, owned by a player's address (their profile: all their
games), one seat (its page: that game, while the address that added it holds the seat) or a
game (its channel, added by an organiser). A move queues notices for the targets it concerns
(`after_turn`, one call from the move path), the scheduler's reminder one (`reminder`); each
is a `Notice` row written in the move's transaction, in the reader's language, delivered by
the scheduler (pbem.scheduler.notices) with the mail outbox's rules.

What a notice may carry: a player's own target gets its seat's link; a game's channel (a
target of the game, which every seat may read) gets only public lines and the spectator link,
never a seat's link, hand or message. Mail stays the first channel: it carries the hand and
takes the reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import orjson
from flask import current_app
from sqlalchemy import bindparam, func, or_, select
from sqlmodel import col

from ..ground import chat, i18n
from ..ground.db import insert_later, insert_pending, reading, utcnow, writing
from ..ground.i18n import N_, _
from ..ground.models import FINISHED, Game, MoveRecord, Notice, NoticeTarget, Seat
from . import mail
from .errors import Malformed, NotFound, TooMany
from .my_games import email_of
from .seats import seat_and_game

# The kinds of notice: a player's targets choose among PLAYER_KINDS, a game's channel gets
# GAME_KINDS.
TURN, REMINDER, TIMEOUT, END, PUBLIC = "turn", "reminder", "timeout", "end", "public"
# Not a notice but a choice: the target's reminder stands in for the reminder mail, which is
# then not sent (the mail reduced to what the chat does not carry: the reminder says nothing
# else; "your move" mail carries the hand and takes the reply, and stays).
NO_REMINDER_MAIL = "quiet"
PLAYER_KINDS = (TURN, REMINDER, TIMEOUT, END, NO_REMINDER_MAIL)
GAME_KINDS = (PUBLIC, END)
OFF_BY_DEFAULT = (NO_REMINDER_MAIL,)
KIND_WORDS = {TURN: N_("your move"), REMINDER: N_("a reminder before the deadline"),
              TIMEOUT: N_("a turn the server played for you"), END: N_("the game's end"),
              PUBLIC: N_("each turn, in public words"),
              NO_REMINDER_MAIL: N_("no reminder mail: this reminder stands in for it")}


def is_enabled() -> bool:
    return bool(current_app.config["NOTIFY_ENABLED"])


def schemes() -> list[str]:
    return [s.strip() for s in current_app.config["NOTIFY_ALLOW_SCHEMES"].split(",")
            if s.strip()]


def allow_hosts() -> list[str]:
    return [h.strip() for h in current_app.config["NOTIFY_ALLOW_HOSTS"].split(",") if h.strip()]


# --- targets -------------------------------------------------------------------------------------

def _checked_url(url: str):
    """The plugin of `url`, or Malformed saying what to do."""
    try:
        return chat.parse_target(url, schemes())
    except ValueError as exc:
        reason = str(exc)
    if reason == "empty":
        raise Malformed(_("Paste the address of the target (an Apprise URL such as "
                          "ntfys://your-topic or a Discord webhook address)."))
    if reason == "scheme":
        raise Malformed(_("This server does not send to that kind of service; it sends to: "
                          "%(schemes)s.", schemes=", ".join(schemes())))
    raise Malformed(_("This address is not one the server can send to; copy the whole "
                      "webhook or Apprise URL (docs/playing.md says where to find it)."))


def _checked_kinds(kinds, allowed: tuple[str, ...]) -> str:
    chosen = [k for k in allowed if k in set(kinds or ())]
    if not [k for k in chosen if k != NO_REMINDER_MAIL] or len(chosen) != len(set(kinds or ())):
        raise Malformed(_("Choose at least one kind of notice from the list."))
    if NO_REMINDER_MAIL in chosen and REMINDER not in chosen:
        raise Malformed(_("Only a target that gets the reminders can stand in for the reminder "
                          "mail: choose both, or neither."))
    return ",".join(chosen)


@dataclass(frozen=True)
class ShownTarget:
    """A target as its owner sees it: never its URL."""

    id: int
    shown: str
    kinds: str
    dead_at: datetime | None
    dead_reason: str | None


# Who owns a target: a player's address (the profile, by its "my games" key), one seat (by its
# link's key: for that game only) or a game (by its id, for its organisers: its channel).
PLAYER, SEAT, GAME = "player", "seat", "game"
KINDS_OF = {PLAYER: PLAYER_KINDS, SEAT: PLAYER_KINDS, GAME: GAME_KINDS}


@dataclass(frozen=True)
class _Owner:
    column: object
    value: object
    language: str
    # A seat's target belongs to the address that held the seat when it was added: once the
    # seat is handed over, it gets nothing more (the new holder's links are not the old one's).
    email: str | None = None

    def where(self):
        if self.email is None:
            return self.column == self.value
        return (self.column == self.value) & (NoticeTarget.email == self.email)


def _owner(session, owner: str, key, now: datetime | None = None) -> _Owner:
    """The owner `key` names (NotFound for one that does not exist)."""
    if owner == PLAYER:
        email = email_of(session, key, now=now)
        return _Owner(NoticeTarget.email, email, _language_of(session, email))
    if owner == SEAT:
        seat, __ = seat_and_game(session, key)
        if seat.bot is not None:
            raise NotFound(_("There is no such target (it may have been removed)."))
        return _Owner(NoticeTarget.seat_id, seat.id, seat.language, seat.email.lower())
    game = session.get(Game, key)
    if game is None:
        raise NotFound(_("There is no such target (it may have been removed)."))
    return _Owner(NoticeTarget.game_id, game.id, current_app.config["GAMES_LANGUAGE"])


def targets(owner: str, key) -> list[ShownTarget]:
    """The targets of an owner (PLAYER, SEAT or GAME and its key), oldest first."""
    with reading() as session:
        found = _owner(session, owner, key)
        return [ShownTarget(*row) for row in session.execute(
            select(NoticeTarget.id, NoticeTarget.shown, NoticeTarget.kinds,
                   NoticeTarget.dead_at, NoticeTarget.dead_reason)
            .where(found.where()).order_by(NoticeTarget.id))]


def add(owner: str, key, url: str, kinds, language: str | None = None,
        now: datetime | None = None) -> str:
    """Add a target for an owner; returns what is shown of it. Malformed (and nothing saved)
    for an address the server will not send to or kinds of notice it cannot have; a game's
    channel is written in `language` (default: the server's)."""
    if not is_enabled():
        raise NotFound(_("This server sends no notices to chat apps."))
    now = now or utcnow()
    plugin = _checked_url(url)
    chosen = _checked_kinds(kinds, KINDS_OF[owner])
    if language is not None:
        try:
            language = i18n.check_language(language)
        except ValueError as exc:
            raise Malformed(str(exc)) from None
    with writing() as session:
        found = _owner(session, owner, key, now)
        count = session.scalar(select(func.count()).select_from(NoticeTarget)
                               .where(found.where()))
        if count >= current_app.config["NOTIFY_TARGETS_PER_OWNER"]:
            raise TooMany(_("You have as many targets as this server allows; remove one "
                            "first."))
        shown = chat.shown(url, plugin)
        owned = {found.column.key: found.value}
        if found.email is not None:
            owned["email"] = found.email
        session.add(NoticeTarget(**owned, url=url.strip(),
                                 shown=shown, kinds=chosen, created_at=now,
                                 language=language or found.language))
    return shown


def _own_target(session, owner: str, key, target_id) -> tuple[NoticeTarget, _Owner]:
    found = _owner(session, owner, key)
    try:
        target = session.get(NoticeTarget, int(target_id))
    except (TypeError, ValueError, OverflowError):
        target = None
    if target is None or getattr(target, found.column.key) != found.value or (
            found.email is not None and target.email != found.email):
        raise NotFound(_("There is no such target (it may have been removed)."))
    return target, found


def remove(owner: str, key, target_id) -> None:
    """Remove one of an owner's targets, and its notices."""
    with writing() as session:
        target, __ = _own_target(session, owner, key, target_id)
        session.execute(Notice.__table__.delete().where(Notice.target_id == target.id))
        session.delete(target)


def send_test(owner: str, key, target_id) -> str | None:
    """Send a test notice to one of an owner's targets at once; None when the service took
    it (a dead target lives again), else why not."""
    with reading() as session:
        target, found = _own_target(session, owner, key, target_id)
    with i18n.in_language(target.language if owner == GAME else found.language):
        title = _("Test from %(server)s", server=current_app.config["BASE_URL"])
        body = _("Turn notices will arrive here.")
    error = chat.send(target.url, title, body, allow_hosts=allow_hosts(), schemes=schemes(),
                      timeout=current_app.config["NOTIFY_TIMEOUT_SECONDS"])
    if error is None and target.dead_at is not None:
        with writing() as session:
            session.execute(NoticeTarget.__table__.update()
                            .where(NoticeTarget.id == target.id)
                            .values(dead_at=None, dead_reason=None))
    return error


def _language_of(session, email: str) -> str:
    seat = session.scalars(select(Seat).where(func.lower(Seat.email) == email)
                           .order_by(col(Seat.id).desc()).limit(1)).first()
    return seat.language if seat is not None else current_app.config["GAMES_LANGUAGE"]


# --- queueing, in the transaction of the change that causes it ------------------------------------

_TARGETS = (select(NoticeTarget.id, NoticeTarget.email, NoticeTarget.seat_id,
                   NoticeTarget.game_id, NoticeTarget.kinds, NoticeTarget.language)
            .where(or_(col(NoticeTarget.email).in_(bindparam("emails", expanding=True))
                       & col(NoticeTarget.seat_id).is_(None),
                       col(NoticeTarget.seat_id).in_(bindparam("seat_ids", expanding=True)),
                       col(NoticeTarget.game_id) == bindparam("game_id")),
                   col(NoticeTarget.dead_at).is_(None)))


def _targets(session, game, seats) -> list:
    people = [seat for seat in seats if seat.bot is None]
    return list(session.connection().execute(_TARGETS, {
        "emails": [seat.email.lower() for seat in people],
        "seat_ids": [seat.id for seat in people], "game_id": game.id}))


def _queue(session, target, game, kind: str, title: str, body: str, now: datetime,
           secrets: list[str] = ()) -> None:
    insert_later(session, Notice, {
        "target_id": target.id, "game_id": game.id, "kind": kind,
        "title": title[:chat.MAX_TITLE], "body": body[:chat.MAX_BODY],
        "secrets_json": orjson.dumps(list(secrets)).decode(), "status": "queued",
        "attempts": 0, "created_at": now, "next_attempt_at": now})


def _deadline(game, seat) -> str:
    if game.deadline_at is None:
        return _("none")
    return i18n.format_local(game.deadline_at, seat.timezone or game.timezone)


def _seat_notice(session, target, game, seat, kind: str, now: datetime, mover=None,
                 next_seat=None) -> None:
    """A notice about `seat`, to a target of its player's own: with its seat link."""
    with i18n.in_language(seat.language):
        name = f"{game.title} #{game.id}"
        secrets: list[str] = []
        if kind in (TURN, REMINDER):
            token = mail.mint_key(session, seat, game.turn)
            secrets.append(token)
            link = mail.seat_link(token)
            if kind == TURN:
                title = _("Your move in %(game)s", game=name)
                body = _("%(name)s moved; it is your move now. Deadline: %(deadline)s. "
                         "%(link)s", name=mover.name, deadline=_deadline(game, seat), link=link)
            else:
                title = _("Reminder: your move in %(game)s", game=name)
                body = _("Your deadline is %(deadline)s. %(link)s",
                         deadline=_deadline(game, seat), link=link)
        elif kind == TIMEOUT:
            title = _("Deadline passed in %(game)s", game=name)
            body = _("The server played your turn for you; %(name)s is to move.",
                     name=next_seat.name if next_seat is not None else "-")
        else:
            title = _("%(game)s is over", game=name)
            body = _("The game has ended; your mail has the final scores.")
    _queue(session, target, game, kind, title, body, now, secrets)


def _watch_link(game) -> str:
    return f"{current_app.config['BASE_URL'].rstrip('/')}/watch/{game.watch_id}"


PUBLIC_MOVES = 20  # the most moves of one turn a channel's notice tells
_TURN_LOG = (select(MoveRecord.seat, MoveRecord.lines_json)
             .where(MoveRecord.game_id == bindparam("game_id"))
             .order_by(col(MoveRecord.number).desc()).limit(PUBLIC_MOVES))


def _turn_told(session, game, mover) -> list:
    """The turn that just ended in a spectator's words (stored data, as the spectator page's
    log has it): the mover's moves since another seat last moved, this one included."""
    insert_pending(session, MoveRecord)  # this move's record, and its turn's, are read
    told: list = []
    for seat, lines_json in session.connection().execute(_TURN_LOG, {"game_id": game.id}):
        if seat != mover.number:
            break
        told[:0] = orjson.loads(lines_json).get("-1", [])
    return told


def _public_notice(session, target, game, kind: str, now: datetime, mover,
                   next_seat, told: list) -> None:
    """A notice to a game's channel: the turn in a spectator's words, and the spectator link
    only."""
    with i18n.in_language(target.language):
        name = f"{game.title} #{game.id}"
        if kind == END:
            title = _("%(game)s is over", game=name)
            body = _("The game has ended. %(link)s", link=_watch_link(game))
        else:
            title = name
            body = _("%(name)s moved; %(next)s to move, deadline %(deadline)s. %(link)s",
                     name=mover.name, next=next_seat.name,
                     deadline=_deadline(game, next_seat), link=_watch_link(game))
        lines = [str(i18n.lazy(line)) for line in told]
    # The link last, where a service that cuts a long text leaves it whole: the lines first.
    room = chat.MAX_BODY - len(body) - 1
    text = "\n".join(lines)
    if len(text) > room:
        text = "…" + text[len(text) - room + 1:]
    _queue(session, target, game, kind, title, f"{text}\n{body}" if text else body, now)


def after_turn(session, game, seats, mover, actor: str, to_move: int | None,
               before: int | None, now: datetime) -> None:
    """Queue the notices a move causes, in its transaction: "your move" to the next seat's
    player, a timeout played to the mover's, the end of the game to everyone's, and a public
    line to the game's channels. Nothing while the same seat goes on."""
    if not is_enabled() or (to_move is not None and to_move == before):
        return
    targets = _targets(session, game, seats)
    if not targets:
        return
    by_email = {seat.email.lower(): [] for seat in seats}
    for seat in seats:
        by_email[seat.email.lower()].append(seat)
    by_id = {seat.id: [seat] for seat in seats}
    next_seat = seats[to_move] if to_move is not None else None
    told = None  # the turn in a spectator's words, read once for the channels
    for target in targets:
        kinds = set(target.kinds.split(","))
        if target.game_id is not None:  # the game's channel: public words only
            if to_move is None and END in kinds:
                _public_notice(session, target, game, END, now, mover, None, [])
            elif to_move is not None and PUBLIC in kinds:
                if told is None:
                    told = _turn_told(session, game, mover)
                _public_notice(session, target, game, PUBLIC, now, mover, next_seat, told)
            continue
        if target.seat_id is not None:  # while the address that added it holds the seat
            owned = [seat for seat in by_id.get(target.seat_id, [])
                     if seat.email.lower() == target.email]
        else:
            owned = by_email.get(target.email, [])
        for seat in owned:
            if seat.bot is not None:
                continue
            if to_move is None:
                if END in kinds:
                    _seat_notice(session, target, game, seat, END, now)
            elif seat.number == to_move and not seat.absent and TURN in kinds:
                _seat_notice(session, target, game, seat, TURN, now, mover=mover)
            elif seat.number == mover.number and actor == "timeout" and TIMEOUT in kinds:
                _seat_notice(session, target, game, seat, TIMEOUT, now, next_seat=next_seat)


def reminder(session, game: Game, seat: Seat, now: datetime) -> bool:
    """Queue the reminder before `seat`'s deadline to its player's targets that take one;
    whether one of them stands in for the reminder mail (NO_REMINDER_MAIL)."""
    if not is_enabled() or game.status == FINISHED:
        return False
    instead = False
    for target in _targets(session, game, [seat]):
        kinds = target.kinds.split(",")
        if target.game_id is None and REMINDER in kinds and target.email == seat.email.lower():
            _seat_notice(session, target, game, seat, REMINDER, now)
            instead = instead or NO_REMINDER_MAIL in kinds
    return instead
