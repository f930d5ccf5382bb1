"""Turn notices in chat apps and push services, beside the mail (issue 45).

A player names targets on their profile (`add_target`): Apprise URLs (pbem.ground.chat), each
with the kinds of notice it gets. A move queues notices for the targets of the seats it
concerns (`after_turn`, one call from the move path), the scheduler's reminder one
(`reminder`); each is a `Notice` row written in the move's transaction, in the reader's
language, delivered by the scheduler (pbem.scheduler.notices) with the mail outbox's rules.

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

from ..ground import chat, i18n
from ..ground.db import insert_later, reading, utcnow, writing
from ..ground.i18n import N_, _
from ..ground.models import FINISHED, Game, Notice, NoticeTarget, Seat
from . import mail
from .errors import Malformed, NotFound, TooMany
from .my_games import _email_of

# The kinds of notice: a player's targets choose among PLAYER_KINDS, a game's channel gets
# GAME_KINDS.
TURN, REMINDER, TIMEOUT, END, PUBLIC, TEST = "turn", "reminder", "timeout", "end", "public", "test"
PLAYER_KINDS = (TURN, REMINDER, TIMEOUT, END)
GAME_KINDS = (PUBLIC, END)
KIND_WORDS = {TURN: N_("your move"), REMINDER: N_("a reminder before the deadline"),
              TIMEOUT: N_("a turn the server played for you"), END: N_("the game's end"),
              PUBLIC: N_("each turn, in public words")}


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
    if not chosen or len(chosen) != len(set(kinds or ())):
        raise Malformed(_("Choose at least one kind of notice from the list."))
    return ",".join(chosen)


@dataclass(frozen=True)
class ShownTarget:
    """A target as its owner sees it: never its URL."""

    id: int
    shown: str
    kinds: str
    dead_at: datetime | None
    dead_reason: str | None


def targets_of(token: str) -> list[ShownTarget]:
    """The targets of the address `token` opens, oldest first."""
    with reading() as session:
        email = _email_of(session, token)
        return [ShownTarget(*row) for row in session.execute(
            select(NoticeTarget.id, NoticeTarget.shown, NoticeTarget.kinds,
                   NoticeTarget.dead_at, NoticeTarget.dead_reason)
            .where(NoticeTarget.email == email).order_by(NoticeTarget.id))]


def add_target(token: str, url: str, kinds, now: datetime | None = None) -> str:
    """Add a target for the address `token` opens; returns what is shown of it. Malformed (and
    nothing saved) for an address the server will not send to."""
    if not is_enabled():
        raise NotFound(_("This server sends no notices to chat apps."))
    now = now or utcnow()
    plugin = _checked_url(url)
    chosen = _checked_kinds(kinds, PLAYER_KINDS)
    with writing() as session:
        email = _email_of(session, token, now=now)
        count = session.scalar(select(func.count()).select_from(NoticeTarget)
                               .where(NoticeTarget.email == email))
        if count >= current_app.config["NOTIFY_TARGETS_PER_OWNER"]:
            raise TooMany(_("You have as many targets as this server allows; remove one "
                            "first."))
        shown = chat.shown(url, plugin)
        session.add(NoticeTarget(email=email, url=url.strip(), shown=shown, kinds=chosen,
                                 created_at=now))
    return shown


def _own_target(session, token: str, target_id) -> NoticeTarget:
    email = _email_of(session, token)
    try:
        target = session.get(NoticeTarget, int(target_id))
    except (TypeError, ValueError):
        target = None
    if target is None or target.email != email:
        raise NotFound(_("There is no such target (it may have been removed)."))
    return target


def remove_target(token: str, target_id) -> None:
    """Remove one of the address's targets, and its notices not sent yet."""
    with writing() as session:
        target = _own_target(session, token, target_id)
        session.execute(Notice.__table__.delete().where(Notice.target_id == target.id))
        session.delete(target)


def send_test(token: str, target_id, now: datetime | None = None) -> str | None:
    """Send a test notice to one of the address's targets at once; None when the service took
    it (a dead target lives again), else why not."""
    now = now or utcnow()
    with reading() as session:
        target = _own_target(session, token, target_id)
        email = target.email
        language = _language_of(session, email)
    with i18n.in_language(language):
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
                           .order_by(Seat.id.desc()).limit(1)).first()
    return seat.language if seat is not None else current_app.config["GAMES_LANGUAGE"]


# --- queueing, in the transaction of the change that causes it ------------------------------------

_TARGETS = (select(NoticeTarget.id, NoticeTarget.email, NoticeTarget.game_id,
                   NoticeTarget.kinds, NoticeTarget.language)
            .where(or_(NoticeTarget.email.in_(bindparam("emails", expanding=True)),
                       NoticeTarget.game_id == bindparam("game_id")),
                   NoticeTarget.dead_at.is_(None)))


def _targets(session, game, seats) -> list:
    emails = [seat.email.lower() for seat in seats if seat.bot is None]
    return list(session.connection().execute(_TARGETS, {"emails": emails,
                                                        "game_id": game.id}))


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


def _public_notice(session, target, game, kind: str, now: datetime, mover,
                   next_seat) -> None:
    """A notice to a game's channel: public words and the spectator link only."""
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
    _queue(session, target, game, kind, title, body, now)


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
    next_seat = seats[to_move] if to_move is not None else None
    for target in targets:
        kinds = set(target.kinds.split(","))
        if target.game_id is not None and target.email is None:
            if to_move is None and END in kinds:
                _public_notice(session, target, game, END, now, mover, None)
            elif to_move is not None and PUBLIC in kinds:
                _public_notice(session, target, game, PUBLIC, now, mover, next_seat)
            continue
        for seat in by_email.get(target.email, []):
            if seat.bot is not None:
                continue
            if to_move is None:
                if END in kinds:
                    _seat_notice(session, target, game, seat, END, now)
            elif seat is next_seat and not seat.absent and TURN in kinds:
                _seat_notice(session, target, game, seat, TURN, now, mover=mover)
            elif seat is mover and actor == "timeout" and TIMEOUT in kinds:
                _seat_notice(session, target, game, seat, TIMEOUT, now, next_seat=next_seat)


def reminder(session, game: Game, seat: Seat, now: datetime) -> None:
    """Queue the reminder before `seat`'s deadline to its player's targets that take one."""
    if not is_enabled() or game.status == FINISHED:
        return
    for target in _targets(session, game, [seat]):
        if target.email == seat.email.lower() and REMINDER in target.kinds.split(","):
            _seat_notice(session, target, game, seat, REMINDER, now)
