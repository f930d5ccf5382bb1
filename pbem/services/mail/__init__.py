"""The mails the server writes: one small function per message, each a .txt and .html template.

Composing a mail only adds a row to the outbox in the caller's transaction; `pbem.scheduler.outbox`
delivers it later. Every mail to a seat carries a fresh seat key in its link, remembered in
the row's `secrets_json` so the stored copy can be blanked once the mail is out.

The mails here are written when they are queued; the mails a move causes are described in
`pbem.services.mail.intents` and written when they are delivered. Both are written by one
function, `written`. This module is the building blocks (links and keys, addresses, the
outbox row, the board picture and table) and the mails written at once: invitations, notices,
digests, table talk, the admins' mails and the mails of games players start.
"""

from __future__ import annotations

import functools
import json
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from email.headerregistry import Address
from email.utils import getaddresses, parseaddr

import orjson
from flask import current_app, g
from flask_babel import force_locale
from markupsafe import Markup
from sqlalchemy import false
from sqlmodel import Session, select

from ...games import GameRules, choices, rules_for
from ...ground import i18n
from ...ground.db import insert_later, locked, utcnow
from ...ground.i18n import gettext as _
from ...ground.models import TO_ALL, DigestItem, Game, OutboxMessage, PlayerKey, Seat, SeatKey
from ...ground.tokens import hash_token, new_token
from .. import turnfile, turns


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
    intent_json: str | None = None  # a mail written when delivered (see `later`)
    seat_dead_at: datetime | None = None  # the seat's address marked dead then (pbem.services.bounces)


REPLY_PREFIX = re.compile(r"^(re|aw|sv|antw|wg|r)(\[\d+\])?\s*:", re.IGNORECASE)


def seat_link(token: str) -> str:
    return f"{current_app.config['BASE_URL'].rstrip('/')}/seat/{token}"


def mint_key(session: Session, seat: Seat, turn: int | None = None,
             talk_to: int | None = None) -> str:
    """A new secret link key for `seat`, mailed at game turn `turn` (with a message: `talk_to`,
    the audience of a reply); the token is returned once and never stored."""
    return mint_keys(session, seat, turn, talk_to)[0]


def mint_keys(session: Session, seat: Seat, turn: int | None = None,
              talk_to: int | None = None) -> tuple[str, str]:
    """`mint_key`'s link token and the reply key of the same row (the key of the mail's
    reply address, `reply_address`): a secret of its own, which opens no page, revoked and
    expired with the link. Both returned once, only their hashes stored."""
    token, reply = new_token(), new_token()
    insert_later(session, SeatKey, {"seat_id": seat.id, "token_hash": hash_token(token),
                                    "reply_hash": hash_token(reply), "turn": turn,
                                    "talk_to": talk_to, "created_at": utcnow()})
    return token, reply


def games_link(token: str) -> str:
    return f"{current_app.config['BASE_URL'].rstrip('/')}/me/{token}"


def mint_player_key(session: Session, email: str) -> str:
    """A new secret link key to the "my games" page of `email`, returned once, never stored."""
    token = new_token()
    insert_later(session, PlayerKey, {"email": email.lower(), "token_hash": hash_token(token),
                                      "created_at": utcnow()})
    return token


def reply_address(token: str) -> str | None:
    """The Reply-To that carries a seat's reply key (`mint_keys`), when replies are
    configured."""
    # While a reply is handled, the domain it came to stands in for an unset setting, so the
    # mails it causes carry a Reply-To whichever process wrote them.
    domain = current_app.config["MAIL_REPLY_DOMAIN"] or g.get("reply_domain") \
        or local_reply_domain(current_app.config)
    return f"play+{token}@{domain}" if domain else None


LOCAL_REPLY_DOMAIN = "mailbox.localhost"  # a reserved name (RFC 6761): no mail goes there


def local_reply_domain(config) -> str | None:
    """The reply domain of mail kept in the local folder and shown on the mailbox page (the
    demo's set-up) when none is set: the page's *Reply* button answers to it, through the
    same reading of replies as `pbem ingest-mail`, so the demo plays by reply out of the box.
    None where mail really goes out: replies need MAIL_REPLY_DOMAIN there."""
    if config["MAIL_BACKEND"] == "local" and config["MAIL_MAILBOX_PAGE"]:
        return LOCAL_REPLY_DOMAIN
    return None


def one_line(text: str) -> str:
    """`text` fit for a mail header: anything unprintable (line separators included) becomes a
    space. Names are checked when they are entered; this keeps a name stored before that check
    from making every mail that names it fail."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


# A plain address (a dot-atom before and after its one @) and a name without specials, which
# the standard library's Address would give back unchanged: written directly, because parsing
# them into an Address costs a tenth of a millisecond for each of the thousands of mails of a
# deadline burst. Anything else still goes through Address.
_PLAIN_ADDRESS = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
                            r"@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*")
_SPECIALS = frozenset('()<>@,:;."[]\\')


def formatted_address(name: str, email: str) -> str:
    name = one_line(name)
    if _PLAIN_ADDRESS.fullmatch(email) and _SPECIALS.isdisjoint(name):
        return f"{name} <{email}>" if name else email
    return str(Address(display_name=name, addr_spec=email))


def _domain() -> str:
    return _domain_of(current_app.config["MAIL_FROM"])


def new_message_id(prefix: str = "") -> str:
    """A Message-ID (or Content-ID) no other mail has: 128 bits from the operating system.
    Not the standard library's make_msgid, which takes its bits from the global `random`:
    whoever seeds that (a test framework does, for every example it tries) makes two mails
    queued in the same hundredth of a second share an id, and the outbox refuses the second."""
    return f"<{prefix}{secrets.token_hex(16)}@{_domain()}>"


@functools.lru_cache(maxsize=8)
def _domain_of(sender: str) -> str:
    _, address = parseaddr(sender)
    return address.rpartition("@")[2] or "pbem.localhost"


def queue(session: Session, *, kind: str, to: str, subject: str, template: str,
          game: Game | None = None, seat: Seat | None = None, secrets: tuple[str, ...] = (),
          reply_to: str | None = None, picture: bool = False,
          answering: Answering | None = None, **context) -> QueuedMail:
    """Write `templates/email/<template>.txt|.html` (`written`) and queue the message.

    With `picture`, the HTML part shows the game's board as a PNG attached inline (rendered
    when the mail is built, from the game as it is now). `answering` threads the mail under
    a player's own mail."""
    picture_json = _picture(game) if picture and game is not None else None
    if answering is not None:
        subject = answering.subject(subject)
    text, html = written(template, context, game, seat, picture_json)
    now = utcnow()
    message = QueuedMail(
        game_id=game.id if game else None, seat_id=seat.id if seat else None, kind=kind,
        to_addr=to, subject=one_line(subject), text_body=text, html_body=html,
        message_id=new_message_id(), secrets_json=json.dumps(list(secrets)),
        reply_to=reply_to, created_at=now, next_attempt_at=now,
        in_reply_to=answering.message_id if answering else None,
        references=answering.references if answering else None, picture_json=picture_json,
        seat_dead_at=getattr(seat, "mail_dead_at", None))
    # A row, not an ORM object: building an OutboxMessage costs more than rendering it.
    insert_later(session, OutboxMessage, dict(vars(message)))
    return message


def written(template: str, context: dict, game, seat, picture_json: str | None
            ) -> tuple[str, str]:
    """The text and HTML of a mail: `templates/email/<template>.txt|.html` with `context`, the
    board picture of `picture_json` (its Content-ID), and for a mail to a seat the position
    in short. The one place a mail's text is written, whether when it is queued or (a mail
    queued as an intent, `render`) when it is delivered."""
    if picture_json is not None:
        context["picture_cid"] = orjson.loads(picture_json)["cid"]
    if game is not None and seat is not None and "summary" not in context:
        rules = rules_for(game.kind)
        context["summary"] = rules.position_summary(rules.loads(game.state_json), seat.number)
    context.update(game=game, seat=seat, base_url=current_app.config["BASE_URL"].rstrip("/"))
    return (render_template(f"email/{template}.txt", context),
            render_template(f"email/{template}.html", context))


def render_template(name: str, context: dict) -> str:
    """A mail template rendered with `context` by the app's Jinja environment. Not Flask's
    render_template: mail templates use nothing of a request (Flask's context processors add
    `g`, `request` and `session`, and its signals are for pages), and thousands of mails in a
    burst each paid for them twice."""
    return current_app.jinja_env.get_template(name).render(context)


def _picture(game: Game, whole_game: bool = False) -> str | None:
    """The board picture of a mail about `game` as it is now (made when the mail is built),
    with the Content-ID its HTML shows it by; None when pictures are off. With `whole_game`,
    the whole game's picture (pbem.services.game_picture) goes with it, attached."""
    if not current_app.config["MAIL_BOARD_PICTURE"]:
        return None
    cid = new_message_id("board.")[1:-1]
    whole = {"whole_game": game.watch_id} if whole_game else {}
    return orjson.dumps({"kind": game.kind, "state": game.state_json, "cid": cid,
                         "language": i18n.language(), **whole}).decode()


def board_table(game, pictured) -> Markup:
    """The game's board in words for HTML mail (`templates/games/<kind>/mail_board.html`): the
    same for every seat of a game at one move, so written once per position, language and
    picture setting (`pictured`: a picture is shown above it) and kept; the seats' mails of one
    move share it."""
    app = current_app._get_current_object()
    kept = app.extensions.get(_BOARD_TABLES)
    if kept is None:
        kept = app.extensions[_BOARD_TABLES] = functools.lru_cache(maxsize=64)(
            functools.partial(_board_table, app))
    return kept(game.kind, game.state_json, game.watch_id, bool(pictured), i18n.language(),
                current_app.config["BASE_URL"].rstrip("/"))


_BOARD_TABLES = "pbem_mail_board_tables"


def _board_table(app, kind: str, state_json: str, watch_id: str, pictured: bool,
                 language: str, base_url: str) -> Markup:
    """The board table's HTML; called in `language` (the current locale)."""
    template = app.jinja_env.get_template(f"games/{kind}/mail_board.html")
    game = _Table(kind=kind, state_json=state_json, watch_id=watch_id)
    return Markup(template.render(game=game, rules=rules_for(kind), picture_cid=pictured,
                                  base_url=base_url))


@dataclass(frozen=True)
class _Table:
    """What of a game its board table is written from."""

    kind: str
    state_json: str
    watch_id: str


def absolute(url: str) -> str:
    """A link for a mail: a path of this server's (`/rules/...`) after the base URL; any
    other link as it is."""
    if url.startswith("/") and not url.startswith("//"):
        return current_app.config["BASE_URL"].rstrip("/") + url
    return url


def init_app(app) -> None:
    app.add_template_global(board_table)
    app.add_template_filter(inert, "typed")
    app.add_template_filter(absolute, "absolute")


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
        with i18n.in_language(seat.language):
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
    token, reply = mint_keys(session, seat, game.turn, talk_to)
    mine = mint_player_key(session, seat.email)
    return queue(session, kind=kind, to=formatted_address(seat.name, seat.email),
                 subject=_subject(game, str(subject)), template=template, game=game, seat=seat,
                 secrets=(token, mine, reply), link=seat_link(token),
                 reply_to=reply_address(reply), games_link=games_link(mine), picture=picture,
                 **context)


def _deadline_text(deadline: datetime | None, seat: Seat, game: Game) -> str | None:
    """A deadline in the seat's own time zone, or the game's until the player chooses one."""
    return i18n.format_local(deadline, seat.timezone or game.timezone) if deadline else None


@_in_seat_language
def invitation(session: Session, game: Game, seat: Seat, seats: list[Seat], rules: GameRules,
               state, taking_over: bool = False) -> QueuedMail | None:
    to_move = rules.to_move(state)
    """The first mail of a seat: the players, the position and how to play; `taking_over` when
    it joins a game under way (the seat was handed to it), which it does not start."""
    # The starter sees in the subject that it moves first, without opening each mail.
    if to_move == seat.number:
        subject = (_("You take over a seat, and it is your move") if taking_over
                   else _("You are invited to play, and you start"))
    else:
        subject = _("You take over a seat") if taking_over else _("You are invited to play")
    turn_file = None
    if to_move == seat.number:  # the seat that starts gets its turn file, as a "your turn" mail
        turn_file = turnfile.render(
            game.title, game.id, seat.name, seat.colour, game.turn,
            rules.position_lines(state, seat.number), choices(rules, state),
            rules.order_examples, turn_number=turns.current(session, rules, game.id, state))
    return _to_seat(session, game, seat, "invitation", subject, "invitation",
                    taking_over=taking_over, turn_file=turn_file,
                    rules=rules, seats=seats, is_my_turn=to_move == seat.number,
                    to_move=seats[to_move] if to_move is not None else None,
                    position=rules.position_lines(state, seat.number),
                    deadline=_deadline_text(game.deadline_at, seat, game),
                    how_to_play=rules.how_to_play(state), rules_note=rules.variant_note(state))


@_in_seat_language
def notice(session: Session, game: Game, seat: Seat, subject: str, lines: list[str],
           answering: Answering | None = None,
           links_revoked: bool = False, kind: str = "notice") -> QueuedMail | None:
    """A short message about the game (paused, resumed, deadline moved) with the seat's link;
    with `answering`, the answer to the seat's own mail, threaded under it; `links_revoked`
    when the link in it replaces every earlier one. `kind`: the outbox row's (pbem.mailin.inbox
    counts its refusals by theirs)."""
    return _to_seat(session, game, seat, kind, subject, "notice", picture=False,
                    lines=lines, answering=answering, heading=subject,
                    is_answer=answering is not None, links_revoked=links_revoked)


def to_admins(session: Session, subject: str, lines: list[str],
              game: Game | None = None) -> list[QueuedMail]:
    """A message to every address in MAIL_ADMINS (logged too, so it is never lost)."""
    addresses = [a for _, a in getaddresses([current_app.config["MAIL_ADMINS"]]) if a]
    # In the default language: `subject` and `lines` may be lazy strings (flask_babel's
    # lazy_gettext), written now.
    with force_locale(current_app.config["GAMES_LANGUAGE"]):
        current_app.logger.warning("%s: %s", subject, " ".join(map(str, lines)))
        return [queue(session, kind="admin", to=address, subject=f"[pbem] {subject}",
                      template="admin", game=game, lines=lines) for address in addresses]


@_in_seat_language
def digest(session: Session, game: Game, seat: Seat, rules: GameRules, state,
           items: list[DigestItem]) -> QueuedMail | None:
    return _to_seat(session, game, seat, "digest", _("What happened today"), "digest",
                    rules=rules, items=items, position=rules.position_lines(state, seat.number))


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


# --- games players start (pbem.services.starting): mail to addresses, before there is a seat ----------------
#
# These go to addresses a stranger typed on the public /new page, so nothing typed there may
# reach another address's subject (a title such as "Your account is locked - call ..."): the
# subjects name the kind of game only (the starter's own title only in mail to the starter). In
# the body, the names, titles and addresses typed are quoted as typed (`inert`: nothing in them
# reads as a link), and no mail is addressed by a typed name (the To is the address alone).

_LINKISH = re.compile(r"[.\u3002\uff0e\uff61](?=\w)|:(?=//)")


def inert(text) -> str:
    """Text someone typed, for quoting in a mail to another address: one line, and nothing in
    it reads as a link (a dot before a letter or digit, as in a domain, is written [.], and
    :// as [:]//)."""
    return _LINKISH.sub(lambda match: f"[{match.group()}]", one_line(str(text)))


def _start_mail(session: Session, kind: str, invitation, subject: str, template: str,
                **context) -> QueuedMail:
    return queue(session, kind=kind, to=invitation.email, subject=subject, template=template,
                 invitation=invitation, **context)


def start_confirm(session: Session, proposal, starter, link: str, friends) -> QueuedMail:
    """The starter's link that confirms their address (and then shows their game's page). Its
    subject names the kind of game only: whoever typed the form may not own the address."""
    rules = rules_for(proposal.kind)
    return _start_mail(session, "start_confirm", starter,
                       _("Confirm your address to start a game of %(game)s", game=rules.title),
                       "start_confirm", proposal=proposal, link=link, friends=friends,
                       rules=rules)


def start_invitation(session: Session, proposal, invitation, starter, everyone,
                     link: str) -> QueuedMail:
    """An invitation to a game a player starts, with the link to accept or decline it; its
    subject names the kind of game only, the names the starter typed are quoted in it."""
    rules = rules_for(proposal.kind)
    return _start_mail(session, "start_invite", invitation,
                       _("Invitation to a game of %(game)s", game=rules.title),
                       "start_invitation", proposal=proposal, starter=starter,
                       everyone=everyone, link=link, rules=rules,
                       expires=i18n.format_local(invitation.expires_at, proposal.timezone))


def start_news(session: Session, proposal, invitation, link: str | None, lines: list[str],
               status: list[str]) -> QueuedMail:
    """News of a proposed game for the starter (a decline, an expiry; `link`: their page) or
    for a friend (the game called off: a subject without the starter's title)."""
    rules = rules_for(proposal.kind)
    subject = (_("News of %(title)s", title=proposal.title) if invitation.number == 0
               else _("News of a game of %(game)s", game=rules.title))
    return _start_mail(session, "start_news", invitation, subject, "start_news",
                       proposal=proposal, link=link, lines=lines, status=status, rules=rules)
