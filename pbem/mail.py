"""The mails the server writes: one small function per message, each a .txt and .html template.

Composing a mail only adds a row to the outbox in the caller's transaction; `pbem.outbox`
delivers it later. Every mail to a seat carries a fresh seat key in its link, remembered in
the row's `secrets_json` so the stored copy can be blanked once the mail is out.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from datetime import datetime
from email.headerregistry import Address
from dataclasses import dataclass
from email.utils import getaddresses, make_msgid, parseaddr

from flask import current_app, g, render_template
from flask_babel import force_locale
from .i18n import gettext as _
from sqlalchemy import false
from sqlmodel import Session, select

from . import i18n, turnfile, turns
from .db import insert_later, locked, utcnow
from .games import GameRules, choices, rules_for
from .models import TO_ALL, DigestItem, Game, OutboxMessage, PlayerKey, Seat, SeatKey
from .tokens import hash_token, new_token


@dataclass(frozen=True)
class QueuedMail:
    """A mail as `queue` wrote it to the outbox (the columns it set)."""

    game_id: int | None
    seat_id: int | None
    kind: str
    to_addr: str
    subject: str
    text_body: str
    html_body: str
    message_id: str
    secrets_json: str
    reply_to: str | None
    created_at: datetime
    next_attempt_at: datetime
    in_reply_to: str | None = None
    references: str | None = None
    picture_json: str | None = None


REPLY_PREFIX = re.compile(r"^(re|aw|sv|antw|wg|r)(\[\d+\])?\s*:", re.IGNORECASE)


def seat_link(token: str) -> str:
    return f"{current_app.config['BASE_URL'].rstrip('/')}/seat/{token}"


def mint_key(session: Session, seat: Seat, turn: int | None = None,
             talk_to: int | None = None) -> str:
    """A new secret link key for `seat`, mailed at game turn `turn` (with a message: `talk_to`,
    the audience of a reply); the token is returned once and never stored."""
    token = new_token()
    insert_later(session, SeatKey, {"seat_id": seat.id, "token_hash": hash_token(token),
                                    "turn": turn, "talk_to": talk_to, "created_at": utcnow()})
    return token


def games_link(token: str) -> str:
    return f"{current_app.config['BASE_URL'].rstrip('/')}/me/{token}"


def mint_player_key(session: Session, email: str) -> str:
    """A new secret link key to the "my games" page of `email`, returned once, never stored."""
    token = new_token()
    insert_later(session, PlayerKey, {"email": email.lower(), "token_hash": hash_token(token),
                                      "created_at": utcnow()})
    return token


def reply_address(token: str) -> str | None:
    """The Reply-To that carries a seat's key, when replies are configured."""
    # While a reply is handled, the domain it came to stands in for an unset setting, so the
    # mails it causes carry a Reply-To whichever process wrote them.
    domain = current_app.config["MAIL_REPLY_DOMAIN"] or g.get("reply_domain")
    return f"play+{token}@{domain}" if domain else None


def one_line(text: str) -> str:
    """`text` fit for a mail header: anything unprintable (line separators included) becomes a
    space. Names are checked when they are entered; this keeps a name stored before that check
    from making every mail that names it fail."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


def formatted_address(name: str, email: str) -> str:
    return str(Address(display_name=one_line(name), addr_spec=email))


def _domain() -> str:
    _, address = parseaddr(current_app.config["MAIL_FROM"])
    return address.rpartition("@")[2] or "pbem.localhost"


def queue(session: Session, *, kind: str, to: str, subject: str, template: str,
          game: Game | None = None, seat: Seat | None = None, secrets: tuple[str, ...] = (),
          reply_to: str | None = None, picture: bool = False,
          answering: Answering | None = None, **context) -> QueuedMail:
    """Render `templates/email/<template>.txt|.html` and queue the message.

    With `picture`, the HTML part shows the game's board as a PNG attached inline (rendered
    when the mail is built, from the game as it is now). `answering` threads the mail under
    a player's own mail."""
    picture_json = None
    if picture and game is not None and current_app.config["MAIL_BOARD_PICTURE"]:
        cid = make_msgid("board", domain=_domain())[1:-1]
        picture_json = json.dumps({"kind": game.kind, "state": game.state_json, "cid": cid,
                                   "language": i18n.language()})
        context["picture_cid"] = cid
    if game is not None and seat is not None and "summary" not in context:
        rules = rules_for(game.kind)
        summary = getattr(rules, "position_summary", rules.position_lines)
        context["summary"] = summary(rules.loads(game.state_json), seat.number)
    context.update(game=game, seat=seat, base_url=current_app.config["BASE_URL"].rstrip("/"))
    if answering is not None:
        subject = answering.subject(subject)
    now = utcnow()
    message = QueuedMail(
        game_id=game.id if game else None, seat_id=seat.id if seat else None, kind=kind,
        to_addr=to, subject=one_line(subject),
        text_body=render_template(f"email/{template}.txt", **context),
        html_body=render_template(f"email/{template}.html", **context),
        message_id=make_msgid(domain=_domain()), secrets_json=json.dumps(list(secrets)),
        reply_to=reply_to, created_at=now, next_attempt_at=now,
        in_reply_to=answering.message_id if answering else None,
        references=answering.references if answering else None, picture_json=picture_json)
    # A row, not an ORM object: building an OutboxMessage costs more than rendering the mail.
    insert_later(session, OutboxMessage, dict(vars(message)))
    return message


@dataclass(frozen=True)
class Answering:
    """The player's mail an answer threads under: its Message-ID, References and Subject."""

    message_id: str | None
    prior_references: str
    their_subject: str

    @property
    def references(self) -> str | None:
        ids = self.prior_references.split() + ([self.message_id] if self.message_id else [])
        return " ".join(ids[-10:]) or None  # RFC 5322: theirs, then the one answered

    def subject(self, ours: str) -> str:
        """'Re: ' and the subject they wrote (ours when they wrote none), as mail programs
        answer, so the answer sits in the same conversation ('AW: Re: x' becomes 'Re: x')."""
        theirs = " ".join(self.their_subject.split())[:200]
        while REPLY_PREFIX.match(theirs):
            theirs = REPLY_PREFIX.sub("", theirs, count=1).strip()
        return f"Re: {theirs or ours}"


def _in_seat_language(compose):
    """Compose a mail to a seat (the third argument) in the seat's language, subject and all."""
    @functools.wraps(compose)
    def in_language(session, game, seat, *args, **kwargs):
        with force_locale(seat.language):
            return compose(session, game, seat, *args, **kwargs)
    return in_language


def _subject(game: Game, text: str) -> str:
    return f"[{game.title} #{game.id}] {text}"


def _to_seat(session: Session, game: Game, seat: Seat, kind: str, subject: str,
             template: str, picture: bool = True, talk_to: int | None = None,
             **context) -> QueuedMail | None:
    """Queue a mail to a seat with a fresh link, its HTML part showing the board (`picture`);
    None for a computer player's seat, which has neither mail nor links. `talk_to`: a reply
    to it is a message to that audience (see `mint_key`)."""
    if seat.bot is not None:
        return None
    token = mint_key(session, seat, game.turn, talk_to)
    mine = mint_player_key(session, seat.email)
    return queue(session, kind=kind, to=formatted_address(seat.name, seat.email),
                 subject=_subject(game, str(subject)), template=template, game=game, seat=seat,
                 secrets=(token, mine), link=seat_link(token), reply_to=reply_address(token),
                 games_link=games_link(mine), picture=picture, **context)


def _deadline_text(deadline: datetime | None, seat: Seat, game: Game) -> str | None:
    """A deadline in the seat's own time zone, or the game's until the player chooses one."""
    return i18n.format_local(deadline, seat.timezone or game.timezone) if deadline else None


@_in_seat_language
def invitation(session: Session, game: Game, seat: Seat, seats: list[Seat], rules: GameRules,
               state, taking_over: bool = False) -> QueuedMail | None:
    to_move = rules.to_move(state)
    """The first mail of a seat: the players, the position and how to play; `taking_over` when
    it joins a game under way (the seat was handed to it), which it does not start."""
    subject = _("You take over a seat") if taking_over else _("You are invited to play")
    return _to_seat(session, game, seat, "invitation", subject, "invitation",
                    taking_over=taking_over,
                    rules=rules, seats=seats, is_my_turn=to_move == seat.number,
                    to_move=seats[to_move] if to_move is not None else None,
                    position=rules.position_lines(state, seat.number),
                    deadline=_deadline_text(game.deadline_at, seat, game),
                    how_to_play=rules.how_to_play(state), rules_note=rules.variant_note(state))


@_in_seat_language
def your_turn(session: Session, game: Game, seat: Seat, rules: GameRules, state,
              news: list[str], reminder: bool = False,
              first_turn: bool = False) -> QueuedMail | None:
    """`news`: what happened since the seat last moved (since the start, in its `first_turn`)."""
    for item in session.exec(select(DigestItem).where(DigestItem.seat_id == seat.id,
                                                      DigestItem.sent == false())):
        item.sent = True  # the news below covers what the digest would have said
        session.add(item)
    subject = _("Reminder: your move is due %(deadline)s",
                deadline=_deadline_text(game.deadline_at, seat, game)) \
        if reminder else _("Your turn")
    position = rules.position_lines(state, seat.number)
    # The legal moves are the seat to move's: listed for that seat only (they show its hand).
    legal = choices(rules, state) if rules.to_move(state) == seat.number else []
    turn_number = turns.current(session, rules, game.id, state)
    turn_file = turnfile.render(game.title, game.id, seat.name, seat.colour, game.turn, position,
                                legal, rules.order_examples, turn_number=turn_number)
    return _to_seat(session, game, seat, "reminder" if reminder else "your_turn", subject,
                    "your_turn", rules=rules, news=news, reminder=reminder, position=position,
                    turn_number=turn_number,
                    first_turn=first_turn,
                    turn_file=turn_file, deadline=_deadline_text(game.deadline_at, seat, game))


@_in_seat_language
def played_for_you(session: Session, game: Game, seat: Seat, rules: GameRules, state,
                   lines: list[str], absent: bool,
                   bot: str | None = None) -> QueuedMail | None:
    """The server moved for the seat: its default move after a deadline, or, for an absent
    seat in a game that says so, the computer player `bot`."""
    subject = (_("You are absent: the computer player (%(bot)s) moved for you", bot=bot) if bot
               else _("Your deadline passed: the server moved for you"))
    return _to_seat(session, game, seat, "played_for_you", subject, "played_for_you",
                    rules=rules, lines=lines, absent=absent, bot=bot,
                    position=rules.position_lines(state, seat.number))


@_in_seat_language
def notice(session: Session, game: Game, seat: Seat, subject: str, lines: list[str],
           answering: Answering | None = None,
           links_revoked: bool = False) -> QueuedMail | None:
    """A short message about the game (paused, resumed, deadline moved) with the seat's link;
    with `answering`, the answer to the seat's own mail, threaded under it; `links_revoked`
    when the link in it replaces every earlier one."""
    return _to_seat(session, game, seat, "notice", subject, "notice", picture=False,
                    lines=lines, answering=answering, heading=subject,
                    is_answer=answering is not None, links_revoked=links_revoked)


def to_admins(session: Session, subject: str, lines: list[str],
              game: Game | None = None) -> list[QueuedMail]:
    """A message to every address in MAIL_ADMINS (logged too, so it is never lost)."""
    current_app.logger.warning("%s: %s", subject, " ".join(lines))
    addresses = [a for _, a in getaddresses([current_app.config["MAIL_ADMINS"]]) if a]
    with force_locale(current_app.config["GAMES_LANGUAGE"]):
        return [queue(session, kind="admin", to=address, subject=f"[pbem] {subject}",
                      template="admin", game=game, lines=lines) for address in addresses]


@_in_seat_language
def moved(session: Session, game: Game, seat: Seat, rules: GameRules, state, lines: list[str],
          next_seat: Seat) -> QueuedMail | None:
    return _to_seat(session, game, seat, "moved", _("%(name)s is next", name=next_seat.name), "moved",
                    rules=rules, lines=lines, next_seat=next_seat,
                    position=rules.position_lines(state, seat.number))


@_in_seat_language
def digest(session: Session, game: Game, seat: Seat, rules: GameRules, state,
           items: list[DigestItem]) -> QueuedMail | None:
    return _to_seat(session, game, seat, "digest", _("What happened today"), "digest",
                    rules=rules, items=items, position=rules.position_lines(state, seat.number))


@_in_seat_language
def final(session: Session, game: Game, seat: Seat, seats: list[Seat], rules: GameRules, state,
          lines: list[str]) -> QueuedMail | None:
    result = rules.outcome_lines(state)
    lines = [line for line in lines if line not in set(result)]  # told once, below
    table = getattr(rules, "result_table", None)
    return _to_seat(session, game, seat, "final", _("The game is over"), "final", rules=rules,
                    seats=seats, lines=lines, result=result,
                    outcome=rules.outcome(state), table=table(state) if table else None)


@_in_seat_language
def talk_message(session: Session, game: Game, seat: Seat, message, sender: Seat,
                 to: Seat | None) -> QueuedMail | None:
    """A message of the table talk for `seat`: a reply to it answers the same audience (every
    seat, or the sender alone for a private message)."""
    private = message.to_seat is not None
    subject = (_("Private message from %(name)s", name=sender.name) if private
               else _("%(name)s to everyone", name=sender.name))
    return _to_seat(session, game, seat, "talk", subject, "talk", picture=False,
                    talk_to=sender.number if private else TO_ALL, message=message,
                    sender=sender, private=private, recipient=to)


@_in_seat_language
def talk_digest(session: Session, game: Game, seat: Seat, messages: list,
                names: dict[int, Seat]) -> QueuedMail | None:
    """The messages a seat that chose the digest has not read yet, in one mail; a reply to it
    goes to every seat."""
    return _to_seat(session, game, seat, "talk_digest", _("Messages in the game"),
                    "talk_digest", picture=False, talk_to=TO_ALL, messages=messages,
                    names=names)


def due_digests(session: Session, now: datetime) -> int:
    """Queue a digest for every seat whose oldest waiting news is a digest period old."""
    cutoff = now.timestamp() - current_app.config["GAMES_DIGEST_HOURS"] * 3600
    # Locked: a second scheduler waits here, then finds these items sent.
    items = session.exec(locked(select(DigestItem).where(DigestItem.sent == false())
                                .order_by(DigestItem.seat_id, DigestItem.id))).all()
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
        digest(session, game, seat, rules, rules.loads(game.state_json), waiting)
        queued += 1
    return queued


# --- games players start (pbem.start): mail to addresses, before there is a seat ----------------

def _start_mail(session: Session, kind: str, invitation, subject: str, template: str,
                **context) -> QueuedMail:
    return queue(session, kind=kind, to=formatted_address(invitation.name, invitation.email),
                 subject=subject, template=template, invitation=invitation, **context)


def start_confirm(session: Session, proposal, starter, link: str, friends) -> QueuedMail:
    """The starter's link that confirms their address (and then shows their game's page)."""
    return _start_mail(session, "start_confirm", starter,
                       _("Confirm your address to start %(title)s", title=proposal.title),
                       "start_confirm", proposal=proposal, link=link, friends=friends,
                       rules=rules_for(proposal.kind))


def start_invitation(session: Session, proposal, invitation, starter, everyone,
                     link: str) -> QueuedMail:
    """An invitation to a game a player starts, with the link to accept or decline it."""
    return _start_mail(session, "start_invite", invitation,
                       _("%(name)s invites you to play %(game)s", name=starter.name,
                         game=rules_for(proposal.kind).title),
                       "start_invitation", proposal=proposal, starter=starter,
                       everyone=everyone, link=link, rules=rules_for(proposal.kind),
                       expires=i18n.format_local(invitation.expires_at, proposal.timezone))


def start_news(session: Session, proposal, invitation, link: str | None, lines: list[str],
               status: list[str]) -> QueuedMail:
    """News of a proposed game for the starter (a decline, an expiry; `link`: their page) or
    for a friend (the game called off)."""
    return _start_mail(session, "start_news", invitation,
                       _("News of %(title)s", title=proposal.title), "start_news",
                       proposal=proposal, link=link, lines=lines, status=status)
