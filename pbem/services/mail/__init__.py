"""The mails the server writes, and their building blocks.

Every kind of mail is one entry of the table in `pbem.services.mail.kinds` (its template, subject,
whether it is written when queued or when delivered, whether it is counted per day), and every
mail is queued one way, `pbem.services.mail.sending.send`: that adds a row to the outbox in the
caller's transaction, and `pbem.scheduler.outbox` delivers it. Every mail to a seat carries a
fresh seat key in its link, remembered in the row's `secrets_json` so the stored copy can be
blanked once the mail is out. A mail's text is written by one function, `written`, whether
when it is queued or when it is delivered.

This module is the building blocks: links and keys, addresses, the outbox row as queued, the
board picture and table, threading under a player's mail, and the `typed` filter for text
strangers typed (`inert`). It imports the games and the ground.
"""

from __future__ import annotations

import functools
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from email.headerregistry import Address
from email.utils import parseaddr
from typing import TYPE_CHECKING, cast

import orjson
from flask import current_app, g
from markupsafe import Markup
from sqlmodel import Session

from ...games import rules_for
from ...ground import i18n
from ...ground.db import insert_later, utcnow
from ...ground.models import Game, PlayerKey, Seat, SeatKey
from ...ground.tokens import hash_token, new_token

if TYPE_CHECKING:
    from flask import Flask
    from werkzeug.local import LocalProxy


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
    intent_json: str | None = None  # a mail written when delivered (MailKind.later)
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


def picture_of(game: Game, whole_game: bool = False) -> str | None:
    """The board picture of a mail about `game` as it is now (made when the mail is built),
    with the Content-ID its HTML shows it by; None when pictures are off. With `whole_game`,
    the whole game's picture (pbem.services.game_picture) goes with it, attached."""
    if not current_app.config["MAIL_BOARD_PICTURE"]:
        return None
    cid = new_message_id("board.")[1:-1]
    whole = {"whole_game": game.watch_id} \
        if whole_game and current_app.config["MAIL_GAME_PICTURE"] else {}
    return orjson.dumps({"kind": game.kind, "state": game.state_json, "cid": cid,
                         "language": i18n.language(), **whole}).decode()


def board_table(game, pictured) -> Markup:
    """The game's board in words for HTML mail (`templates/games/<kind>/mail_board.html`): the
    same for every seat of a game at one move, so written once per position, language and
    picture setting (`pictured`: a picture is shown above it) and kept; the seats' mails of one
    move share it."""
    app = cast("LocalProxy[Flask]", current_app)._get_current_object()
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


def deadline_text(deadline: datetime | None, seat: Seat, game: Game) -> str | None:
    """A deadline in the seat's own time zone, or the game's until the player chooses one."""
    return i18n.format_local(deadline, seat.timezone or game.timezone) if deadline else None


# Text typed on the public /new page (names, titles, addresses) is quoted in mail to other
# addresses as typed, so that nothing in it reads as a link (pbem.services.mail.kinds says
# what the subjects of those mails may name).

_LINKISH = re.compile(r"[.\u3002\uff0e\uff61](?=\w)|:(?=//)")


def inert(text) -> str:
    """Text someone typed, for quoting in a mail to another address: one line, and nothing in
    it reads as a link (a dot before a letter or digit, as in a domain, is written [.], and
    :// as [:]//)."""
    return _LINKISH.sub(lambda match: f"[{match.group()}]", one_line(str(text)))
