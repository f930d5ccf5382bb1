"""The tables: hosted games, their seats and seat keys, the move log, and the mail outbox.

A Game row holds the current engine state as JSON (a cache: the seed plus the move log rebuild
it) and `turn`, the number of moves applied so far, which every move form and API call quotes
back so that a stale submission can be told apart from a fresh one. Seat keys are the secrets
in move links; only their SHA-256 is stored.
"""

from __future__ import annotations

import secrets
from datetime import datetime

from sqlalchemy import Column, Index, Integer, Text, UniqueConstraint, text
from sqlmodel import Field, SQLModel

from .db import UtcDateTime, utcnow
from .i18n import N_

RUNNING, PAUSED, FINISHED, ABORTED = "running", "paused", "finished", "aborted"
GAME_STATUSES = (RUNNING, PAUSED, FINISHED, ABORTED)

NOTIFY_EVERY, NOTIFY_TURN, NOTIFY_DIGEST = "every", "turn", "digest"
NOTIFY_CHOICES = {  # translated where shown
    NOTIFY_EVERY: N_("a mail after every turn"),
    NOTIFY_TURN: N_("only when it is my turn"),
    NOTIFY_DIGEST: N_("a daily digest of the other turns"),
}

# What a seat gets by mail for the messages of its game (table talk): each message as a mail,
# a daily digest of them, or none (they wait on its page).
TALK_EACH, TALK_DIGEST, TALK_NONE = "each", "digest", "none"


TALK_CHOICES = {
    TALK_EACH: N_("each message as a mail"),
    TALK_DIGEST: N_("a daily digest of the messages"),
    TALK_NONE: N_("no mail: I read them on my page"),
}
TO_ALL = -1  # a seat key's `talk_to` for a message to every seat

QUEUED, SENDING, SENT, FAILED = "queued", "sending", "sent", "failed"
UNKNOWN = "unknown"  # the server took the whole message but never answered: it may have arrived


def partial_index(name: str, *columns: str, status: str) -> Index:
    """An index of the rows in one status only (rows in flight: their number does not grow
    with history); queries reach it through `pbem.ground.db.is_status`."""
    condition = text(f"status = '{status}'")
    return Index(name, *columns, sqlite_where=condition, postgresql_where=condition)


class Game(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=40)
    title: str = Field(max_length=200)
    # The address of the game's public spectator page (/watch/<watch_id>): random, and no
    # seat's link, so anyone may be given it.
    watch_id: str = Field(default_factory=lambda: secrets.token_urlsafe(12), max_length=32,
                          unique=True, index=True)
    status: str = Field(default=RUNNING, max_length=20, index=True)
    seed: str = Field(max_length=100)
    start_seat: int
    turn: int = 0
    state_json: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    turn_started_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime,
                                      nullable=False)
    deadline_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    finished_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    # Time control, chosen at creation.
    deadline_hours: int = 72
    reminder_hours: str = Field(default="24,2", max_length=100)  # before the deadline
    weekend_pause: bool = False
    timezone: str = Field(default="UTC", max_length=64)
    # The clock of the current turn: extra hours an admin gave, intervals the clock stood
    # still (game pauses, scheduler outages) as JSON [[from, until], ...], and a version that
    # changes whenever the deadline is set anew, so that older timers know they are obsolete.
    extension_hours: int = 0
    clock_pauses: str = Field(default="[]", sa_column=Column(Text, nullable=False,
                                                            server_default="[]"))
    clock_version: int = Field(default=0, index=True)  # 0: not started (after an upgrade)
    paused_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    # Who plays the turns of an absent seat: None, the default move; else that computer player.
    absent_bot: str | None = Field(default=None, max_length=20)
    # The turn counter at which a request to take back a turn stands (pbem.services.undo), or
    # None: the move path, which reads this row anyway, ends a request only when there is one.
    undo_turn: int | None = Field(default=None, nullable=True)
    # Its result changes its players' ratings (pbem.services.ratings) when it ends.
    rated: bool = Field(default=False, sa_column_kwargs={"server_default": text("false")})
    # Where the game came from (pbem.services.record): ORIGIN_PRACTICE, played on from the
    # history of game `origin_game_id` (unrated, outside tournaments); ORIGIN_IMPORTED, read
    # from a record file; None, an ordinary game.
    origin: str | None = Field(default=None, max_length=20)
    origin_game_id: int | None = Field(default=None, nullable=True)


ORIGIN_PRACTICE, ORIGIN_IMPORTED = "practice", "imported"


class Seat(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("game_id", "number"),)

    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="game.id", index=True)
    number: int
    name: str = Field(max_length=100)
    email: str = Field(max_length=254)
    colour: str = Field(max_length=20)
    notify: str = Field(default=NOTIFY_EVERY, max_length=10)
    timezone: str | None = Field(default=None, max_length=64)  # for showing times to them
    language: str = Field(default="en", max_length=8)  # en, de or es: its pages and mails
    timeouts_in_row: int = 0
    absent: bool = False  # timed out too often: the default move is played at once
    # A computer player (its name, like "strong") plays this seat, in the scheduler; it gets
    # no mail and has no links. None: a person plays it.
    bot: str | None = Field(default=None, max_length=20)
    vacation_days_used: int = 0
    vacation_from: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    vacation_until: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    # Table talk: how its messages reach the seat by mail, the newest message it marked read
    # on its page, and the newest one mailed to it (a digest starts after the later of both).
    talk_notify: str = Field(default=TALK_EACH, max_length=10,
                             sa_column_kwargs={"server_default": TALK_EACH})
    talk_read_id: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    talk_mailed_id: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    # Mail to the seat's address failed for good (a bounce, or the mail server's 5xx refusal of
    # the recipient; pbem.services.bounces): when, why, and the address it was about. The mark counts
    # while that is still the seat's address; a mail queued after it that goes out clears it,
    # but the address stays, so that the organisers hear of it once.
    mail_dead_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    mail_dead_reason: str | None = Field(default=None, max_length=500)
    mail_dead_address: str | None = Field(default=None, max_length=254)

    @property
    def is_mail_dead(self) -> bool:
        """Mail to the seat's present address fails for good (shown to the organisers)."""
        return self.mail_dead_at is not None and (self.mail_dead_address or "").lower() \
            == (self.email or "").lower()


class SeatKey(SQLModel, table=True):
    """One secret link to a seat; each mail to a seat carries a fresh one."""

    # A seat's keys in the order they were made: a link's first newer key is one step away
    # (pbem.services.seats.superseded_at).
    __table_args__ = (Index("ix_seatkey_seat", "seat_id", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    seat_id: int = Field(foreign_key="seat.id")
    token_hash: str = Field(max_length=64, unique=True)
    # The reply address's key (play+<key>@), a secret of its own: a mail server's log holds
    # it, and it opens no page. NULL for keys made before reply keys were (their reply
    # address carries the link's own token, which still works there).
    reply_hash: str | None = Field(default=None, max_length=64, unique=True)
    turn: int | None = None  # the game's turn when the key was mailed: a reply answers that turn
    # A key mailed with a message (table talk): a reply's text goes to every seat (TO_ALL) or
    # privately to the seat of this number. None: a reply holds orders only.
    talk_to: int | None = None
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    revoked_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)


class PlayerKey(SQLModel, table=True):
    """One secret link to a player's "my games" page, which lists every game of an address.

    Each mail to a seat carries a fresh one beside the seat's key; only the SHA-256 is stored.
    It shows the games and opens a seat only by a POST (a fresh seat key), so a mail scanner
    that opens it changes nothing. It opens only seats its address holds now, stops when a
    seat of the address has its links revoked, and expires (pbem.web.players)."""

    # An address's keys in the order they were made: a key's first newer key is one step away
    # (pbem.web.players), and revoking an address's keys finds them by the same index.
    __table_args__ = (Index("ix_playerkey_address", "email", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    email: str = Field(max_length=254)  # lower case
    token_hash: str = Field(max_length=64, unique=True)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    revoked_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)


class MoveRecord(SQLModel, table=True):
    """One applied move: who, when, how, and the log in plain words for each reader."""

    # Also the index of the log by game (no other: every move writes each index's entry).
    __table_args__ = (UniqueConstraint("game_id", "number"),)

    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="game.id")
    number: int  # the game's turn counter before this move
    seat: int
    notation: str = Field(max_length=200)
    actor: str = Field(default="player", max_length=20)  # player, timeout, bot, admin
    via: str = Field(default="web", max_length=20)  # web, api, email, cli, scheduler
    # The network the move came from (a page or the API): the client's IPv4 /24 or IPv6 /64
    # (pbem.services.players.network_of), for telling whether two seats could be one person
    # (pbem.services.ratings). None: by mail, the scheduler or the command line.
    client: str | None = Field(default=None, max_length=64, nullable=True)
    lines_json: str = Field(sa_column=Column(Text, nullable=False))  # {"-1"|"<seat>": [line]}
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)


class DigestItem(SQLModel, table=True):
    """News for a seat that chose the daily digest, waiting to be mailed in one message."""

    # Only news not mailed yet is ever looked up (by seat, or all of it for the daily run).
    __table_args__ = (Index("ix_digestitem_waiting", "seat_id", "id",
                            sqlite_where=text("sent = 0"), postgresql_where=text("sent = false")),)

    id: int | None = Field(default=None, primary_key=True)
    seat_id: int = Field(foreign_key="seat.id")  # indexed with `sent` above
    text: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    sent: bool = Field(default=False)


class OutboxMessage(SQLModel, table=True):
    """A mail to send, written in the same transaction as the change that caused it."""

    # The sender's queries touch only mail waiting or in flight, never the history of sent mail
    # (which only grows): partial indexes hold just those rows (see pbem.ground.db.is_status).
    __table_args__ = (Index("ix_outbox_due", "status", "next_attempt_at"),
                      partial_index("ix_outbox_waiting", "next_attempt_at", "id", status=QUEUED),
                      partial_index("ix_outbox_sending", "claimed_at", status=SENDING),
                      partial_index("ix_outbox_claim", "claim", status=SENDING))

    id: int | None = Field(default=None, primary_key=True)
    game_id: int | None = Field(default=None, foreign_key="game.id", index=True)
    seat_id: int | None = Field(default=None, foreign_key="seat.id", index=True)
    kind: str = Field(max_length=30)
    to_addr: str = Field(max_length=400)
    subject: str = Field(max_length=300)
    text_body: str = Field(sa_column=Column(Text, nullable=False))
    html_body: str = Field(sa_column=Column(Text, nullable=False))
    message_id: str = Field(max_length=200, unique=True)
    reply_to: str | None = Field(default=None, max_length=300)  # play+<key>@domain, or none
    # An answer to a player's mail threads under it: In-Reply-To and References.
    in_reply_to: str | None = Field(default=None, max_length=300)
    references: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    # The board picture of the HTML mail, rendered when the mail is built (outside the move's
    # transaction): {"kind", "state", "cid"}; cleared once the mail is sent.
    picture_json: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    secrets_json: str = Field(default="[]", sa_column=Column(Text, nullable=False))
    # A mail a move caused is queued as an intent: which mail, for which seat, and the game as
    # it was after that move (pbem.services.mail.later). Its text is written once, when it is first
    # delivered, into the bodies above, and this is cleared in the same transaction.
    intent_json: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    status: str = Field(default=QUEUED, max_length=10)
    attempts: int = 0
    last_error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    next_attempt_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime,
                                      nullable=False)
    claimed_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    claim: str | None = Field(default=None, max_length=40)
    sent_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    # When it failed for good or its fate became unknown (a retry gives up, the server refused
    # it with a 5xx, or a bounce came back for it after it was sent): `pbem mail-status`
    # reports failures of a recent window by it.
    failed_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    # The mark of the seat's address as dead when the mail was queued (Seat.mail_dead_at): the
    # mail going out clears that mark (pbem.services.bounces), with no look at the seat for other mail.
    seat_dead_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)


PENDING, CLAIMED, DONE = "pending", "claimed", "done"
REMINDER, TIMEOUT = "reminder", "timeout"


class Timer(SQLModel, table=True):
    """A reminder or a timeout due for the seat to move; claimed by one scheduler run."""

    __table_args__ = (Index("ix_timer_due", "status", "due_at"),
                      partial_index("ix_timer_waiting", "game_id", status=PENDING),
                      partial_index("ix_timer_claimed", "claimed_at", status=CLAIMED),
                      partial_index("ix_timer_claim", "claim", status=CLAIMED))

    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="game.id", index=True)
    seat_id: int = Field(foreign_key="seat.id")
    kind: str = Field(max_length=10)
    due_at: datetime = Field(sa_type=UtcDateTime, nullable=False)
    clock_version: int
    status: str = Field(default=PENDING, max_length=10)
    claim: str | None = Field(default=None, max_length=40)
    claimed_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    done_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    outcome: str | None = Field(default=None, max_length=40)


class JobState(SQLModel, table=True):
    """When a scheduler job last ran (for the outage guard)."""

    name: str = Field(primary_key=True, max_length=40)
    last_run_at: datetime = Field(sa_type=UtcDateTime, nullable=False)


class Admin(SQLModel, table=True):
    """A person who may set up and look after games (created with `pbem create-admin`)."""

    id: int | None = Field(default=None, primary_key=True)
    email: str = Field(max_length=254, unique=True)
    password_hash: str = Field(max_length=400)
    session_version: int = 0  # bumped at logout and password change: older sessions end
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    last_login_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)


class AuditEntry(SQLModel, table=True):
    """One admin action: who, what, why, when."""

    id: int | None = Field(default=None, primary_key=True)
    admin_id: int | None = Field(default=None, foreign_key="admin.id")
    game_id: int | None = Field(default=None, foreign_key="game.id", index=True)
    action: str = Field(max_length=40)
    reason: str = Field(sa_column=Column(Text, nullable=False))
    detail: str = Field(default="", sa_column=Column(Text, nullable=False, server_default=""))
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)


class IncomingMail(SQLModel, table=True):
    """A mail that reached the server (a reply with orders), remembered by its Message-ID so
    that a second delivery of it changes nothing."""

    id: int | None = Field(default=None, primary_key=True)
    message_id: str = Field(max_length=300, unique=True)
    seat_id: int | None = Field(default=None, foreign_key="seat.id", index=True)
    received_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    outcome: str = Field(max_length=20)
    detail: str = Field(default="", sa_column=Column(Text, nullable=False, server_default=""))
    # How often the same mail came again (each time changing nothing; answered only the first)
    repeats: int = Field(default=0, sa_column=Column(Integer, nullable=False, server_default="0"))


class LoginFailure(SQLModel, table=True):
    """A failed admin login, kept for the longest window of ADMIN_LOGIN_LIMIT: the limit counts
    these per account and per address, in the database, so every server process sees them."""

    __table_args__ = (Index("ix_loginfailure_account", "account", "at"),
                      Index("ix_loginfailure_address", "address", "at"))

    id: int | None = Field(default=None, primary_key=True)
    account: str = Field(max_length=254)  # the email as typed, lower case (known or not)
    address: str = Field(max_length=64)  # the client's address (see SERVE_TRUSTED_PROXIES)
    at: datetime = Field(sa_type=UtcDateTime, nullable=False, index=True)


class TalkMessage(SQLModel, table=True):
    """A message between the seats of a game: to every seat, or privately to one.

    A private message is for its two seats only: no other seat, spectator, history page or
    API answer of another seat shows it, and an admin reads it only through an audit entry."""

    __table_args__ = (Index("ix_talkmessage_game", "game_id", "id"),
                      Index("ix_talkmessage_sender", "sender_seat_id", "created_at"))

    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="game.id")
    sender_seat_id: int = Field(foreign_key="seat.id")
    sender: int  # the sender's seat number
    to_seat: int | None = None  # the one seat number it is for; None: every seat
    body: str = Field(sa_column=Column(Text, nullable=False))
    via: str = Field(default="web", max_length=20)  # web, api, email
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)


TALK_DIGEST_CHORE, INVITATION_EXPIRY = "talk_digest", "invite_expiry"


class Chore(SQLModel, table=True):
    """Due work of the scheduler beside the turns' timers (which end with their game's clock):
    a seat's digest of messages, an invitation's expiry. Claimed by one scheduler run."""

    __table_args__ = (Index("ix_chore_due", "status", "due_at"),
                      partial_index("ix_chore_pending", "kind", "ref_id", status=PENDING))

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=20)
    ref_id: int  # the seat (a digest) or the invitation (an expiry)
    due_at: datetime = Field(sa_type=UtcDateTime, nullable=False)
    status: str = Field(default=PENDING, max_length=10)
    claim: str | None = Field(default=None, max_length=40)
    claimed_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    done_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)


# A game players start themselves (pbem.services.starting): its proposal goes through these states.
UNCONFIRMED, INVITING, STARTING, STARTED, CANCELLED = (
    "unconfirmed", "inviting", "starting", "started", "cancelled")
# An invitation's states: waiting (the starter has not confirmed their address yet), pending
# (mailed, unanswered), accepted, declined, expired.
WAITING, ACCEPTED, DECLINED, EXPIRED = "waiting", "accepted", "declined", "expired"


class Proposal(SQLModel, table=True):
    """A game a player starts from the public "new game" page (or a rematch), with the time
    control and the game chosen, until everyone invited has answered and it starts."""

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=40)
    title: str = Field(max_length=200)
    variant: str | None = Field(default=None, max_length=60)
    deadline_hours: int
    reminder_hours: str = Field(max_length=100)
    weekend_pause: bool = False
    timezone: str = Field(default="UTC", max_length=64)
    status: str = Field(default=UNCONFIRMED, max_length=20, index=True)
    starter_ip: str = Field(max_length=64, index=True)
    rematch_of: int | None = Field(default=None, foreign_key="game.id", index=True)
    game_id: int | None = Field(default=None, foreign_key="game.id")
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    started_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)


class Invitation(SQLModel, table=True):
    """One person asked to a proposed game: the starter (number 0, whose link confirms their
    address and then manages the game until it starts) or a friend (whose link accepts or
    declines). Only the SHA-256 of a link's key is stored."""

    __table_args__ = (UniqueConstraint("proposal_id", "number"),
                      Index("ix_invitation_email", "email", "created_at"))

    id: int | None = Field(default=None, primary_key=True)
    proposal_id: int = Field(foreign_key="proposal.id", index=True)
    number: int  # the seat it asks for, in order; 0: the starter
    name: str = Field(max_length=100)
    email: str = Field(max_length=254)  # lower case; "" for a computer player
    colour: str = Field(max_length=20)
    bot: str | None = Field(default=None, max_length=20)
    token_hash: str | None = Field(default=None, max_length=64, unique=True)
    status: str = Field(default=WAITING, max_length=20)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    expires_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    answered_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    # When the starter was last told that this one declined (pbem.services.starting.DECLINE_NEWS_HOURS)
    decline_told_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    # The language of the page it was answered (the starter's: proposed) on: the seat's.
    language: str | None = Field(default=None, max_length=8)


# A feed key's kinds: a seat's private Atom feed of its game's moves, an address's calendar.
FEED_SEAT, FEED_CALENDAR = "seat", "calendar"


class FeedKey(SQLModel, table=True):
    """The key of a private feed (pbem.services.feeds): a seat's Atom feed of its game's moves
    (`seat_id`, and the address that held the seat when it was made), or an address's
    iCalendar feed of its deadlines (`seat_id` None). A feed program polls the same address for
    years, so the key is stable: it is derived from the server's secret key and `nonce`
    (HMAC), so that the page can show it again, and only its SHA-256 is stored, to find it.
    A new key revokes the old; a seat's is revoked with the seat's links."""

    __table_args__ = (Index("ix_feedkey_owner", "kind", "email", "seat_id"),)

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=10)
    email: str = Field(max_length=254)  # lower case
    seat_id: int | None = Field(default=None, foreign_key="seat.id", index=True)
    nonce: str = Field(max_length=32)
    token_hash: str = Field(max_length=64, unique=True)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    revoked_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)


# An undo request's states (pbem.services.undo): asked and waiting for the others' answers,
# done (every other seat agreed and the turn was taken back), declined, ended by a move,
# expired.
UNDO_ASKED, UNDO_DONE, UNDO_DECLINED, UNDO_MOVED_ON, UNDO_EXPIRED = (
    "asked", "done", "declined", "moved_on", "expired")


class UndoRequest(SQLModel, table=True):
    """A seat's request to take back its last turn, until every other seat agrees (done), one
    declines, a move is made, or it expires (pbem.services.undo)."""

    __table_args__ = (UniqueConstraint("game_id", "first_move"),)

    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="game.id", index=True)
    seat_id: int = Field(foreign_key="seat.id")
    seat: int  # the asker's seat number
    turn: int  # the game's turn counter when asked: the request stands only while it is so
    first_move: int  # the number of the first move of the turn to take back
    answers_json: str = Field(default="{}", sa_column=Column(Text, nullable=False))
    status: str = Field(default=UNDO_ASKED, max_length=10)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    expires_at: datetime = Field(sa_type=UtcDateTime, nullable=False)
    ended_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
class Profile(SQLModel, table=True):
    """What an address chose for itself (pbem.services.profiles): the name others see, its
    language, time zone and mail choices, the defaults of its seats in new games. Made with
    its defaults on first use; public pages name it by `public_id`, never by its address."""

    id: int | None = Field(default=None, primary_key=True)
    email: str = Field(max_length=254, unique=True)  # lower case
    public_id: str = Field(default_factory=lambda: secrets.token_urlsafe(9), max_length=32,
                           unique=True)
    name: str = Field(max_length=100)
    language: str = Field(default="en", max_length=8)
    timezone: str | None = Field(default=None, max_length=64)  # None: each game's own
    notify: str = Field(default=NOTIFY_EVERY, max_length=10)
    talk_notify: str = Field(default=TALK_EACH, max_length=10)
    # False until the player saved the profile: only then are its choices a new seat's.
    chosen: bool = Field(default=False, sa_column_kwargs={"server_default": text("false")})
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)


class LinkRequest(SQLModel, table=True):
    """Someone asked at /me for a mail with the "my games" link of `email`: counted per
    address and per client address for the day's limits, known address or not."""

    __table_args__ = (Index("ix_linkrequest_email", "email", "at"),
                      Index("ix_linkrequest_client", "client", "at"))

    id: int | None = Field(default=None, primary_key=True)
    email: str = Field(max_length=254)  # lower case, as typed
    client: str = Field(max_length=64)
    at: datetime = Field(sa_type=UtcDateTime, nullable=False)


BOT_PLAYER = "bot:"  # Rating.player of a computer player: "bot:strong"


class Rating(SQLModel, table=True):
    """One player's (an address's, or a computer player's) rating in one game kind: the
    openskill Plackett-Luce estimate (mu, sigma) after `games` rated games."""

    __table_args__ = (UniqueConstraint("kind", "player"),
                      Index("ix_rating_kind_ordinal", "kind", "ordinal"))

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=40)
    player: str = Field(max_length=260)  # an address (lower case) or BOT_PLAYER + bot name
    mu: float
    sigma: float
    ordinal: float  # mu - 3 sigma: the number shown, and the ranking's order
    games: int = 0
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)


class RatedResult(SQLModel, table=True):
    """One player's place in one rated game and its rating before and after it: a game is
    rated once (its rows are the mark), and profiles list them."""

    __table_args__ = (UniqueConstraint("game_id", "player"),
                      Index("ix_ratedresult_player", "player", "game_id"))

    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="game.id")
    kind: str = Field(max_length=40)
    player: str = Field(max_length=260)
    seat: int | None = None  # its seat number; None: a person who left it to a computer player
    rank: int  # 1 = first; a tie shares a rank
    ordinal_before: float
    ordinal_after: float
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)


class RatedGame(SQLModel, table=True):
    """A rated game once it ended (pbem.services.ratings): whether its result counts, and
    what the organisers should look at (`flags`, codes separated by spaces, with `detail` in
    words); `voided_at` when an admin took its result back. Its RatedResult rows keep the
    places either way."""

    game_id: int = Field(foreign_key="game.id", primary_key=True,
                         sa_column_kwargs={"autoincrement": False})
    kind: str = Field(max_length=40, index=True)
    counted: bool = True
    flags: str = Field(default="", max_length=200)
    detail: str = Field(default="", sa_column=Column(Text, nullable=False, server_default=""))
    created_at: datetime = Field(sa_type=UtcDateTime, nullable=False)
    voided_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)


LOBBY_EXPIRY = "lobby_expiry"
OPEN, FULL, WITHDRAWN = "open", "full", "withdrawn"  # besides STARTED and EXPIRED


class OpenGame(SQLModel, table=True):
    """A game posted in the lobby (pbem.services.lobby), waiting for players to join it."""

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=40)
    variant: str = Field(max_length=60)
    players: int
    deadline_hours: int
    reminder_hours: str = Field(max_length=100)
    weekend_pause: bool = False
    timezone: str = Field(default="UTC", max_length=64)
    rated: bool = False
    min_rating: float | None = None  # the shown number (ordinal) a joiner needs
    seating: str = Field(default="joined", max_length=10)  # "joined" or "drawn"
    poster: str = Field(max_length=254, index=True)  # lower case
    client: str = Field(max_length=64, index=True)
    status: str = Field(default=OPEN, max_length=20, index=True)
    created_at: datetime = Field(sa_type=UtcDateTime, nullable=False)
    expires_at: datetime = Field(sa_type=UtcDateTime, nullable=False)
    game_id: int | None = Field(default=None, foreign_key="game.id")


class LobbySeat(SQLModel, table=True):
    """A player in an open game: the poster first, then each who joined, in order."""

    __table_args__ = (UniqueConstraint("open_game_id", "email"),
                      Index("ix_lobbyseat_email", "email", "joined_at"))

    id: int | None = Field(default=None, primary_key=True)
    open_game_id: int = Field(foreign_key="opengame.id", index=True)
    email: str = Field(max_length=254)
    client: str = Field(max_length=64, index=True)
    joined_at: datetime = Field(sa_type=UtcDateTime, nullable=False)
# Tournaments (pbem.services.tournaments): a tournament's states. Between seasons a league
# waits for its next season (started by an organiser, or by itself after `season_days`).
T_RUNNING, T_BETWEEN, T_FINISHED, T_CLOSED = "running", "between", "finished", "closed"
TOURNAMENT_ROUND, TOURNAMENT_SEASON = "tournament_round", "tournament_season"  # Chore kinds
TOURNAMENT_TABLES = "tournament_tables"  # Chore kind: the rest of a big round's tables


class Tournament(SQLModel, table=True):
    """A league of groups, or a Swiss or round-robin event, set up by an organiser: its
    games are started by the server, round after round (pbem.services.tournaments)."""

    id: int | None = Field(default=None, primary_key=True)
    # The address of its public standings page (/tournaments/<public_id>).
    public_id: str = Field(default_factory=lambda: secrets.token_urlsafe(9), max_length=32,
                           unique=True)
    name: str = Field(max_length=60)
    kind: str = Field(max_length=40)
    variant: str | None = Field(default=None, max_length=60)
    format: str = Field(max_length=20)  # league, swiss, round-robin (pbem.services.pairings)
    table_size: int  # a league's group size, or an event's players at a table
    promotion: int = 1  # a league: the best and worst this many of a group go up and down
    rounds: int = 1  # a Swiss event's rounds
    cycles: int = 1  # a league group's games: this many times as many as it has players
    season_days: int | None = None  # a league: the next season starts itself this many days on
    # Its games change their players' ratings (pbem.services.ratings), as a rated game does.
    rated: bool = Field(default=False, sa_column_kwargs={"server_default": text("false")})
    deadline_hours: int = 72
    reminder_hours: str = Field(default="24,2", max_length=100)
    weekend_pause: bool = False
    timezone: str = Field(default="UTC", max_length=64)
    # The drawn lot's input, and each game's chosen seed's: never shown.
    seed: str = Field(default_factory=lambda: secrets.token_hex(16), max_length=100)
    status: str = Field(default=T_RUNNING, max_length=20)
    season: int = 1
    round: int = 1
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    finished_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)


class Entrant(SQLModel, table=True):
    """A player of a tournament: an address (lower case) and the name shown to others."""

    __table_args__ = (UniqueConstraint("tournament_id", "email"),)

    id: int | None = Field(default=None, primary_key=True)
    tournament_id: int = Field(foreign_key="tournament.id")
    email: str = Field(max_length=254)
    name: str = Field(max_length=100)
    language: str = Field(default="en", max_length=8)
    # What the standings page shows beside the name (never the address).
    public_id: str = Field(default_factory=lambda: secrets.token_urlsafe(6), max_length=16)
    active: bool = True  # False: left (a league removes them at the next season)
    joined_season: int = 1


class TournamentTable(SQLModel, table=True):
    """One game of a tournament: its round (a league: its season, league and group), its
    players in seat order, and its result once the game is over."""

    __table_args__ = (Index("ix_tournamenttable_round", "tournament_id", "season", "round"),)

    id: int | None = Field(default=None, primary_key=True)
    tournament_id: int = Field(foreign_key="tournament.id")
    season: int = 1
    round: int = 1
    league: int = 0  # 0: an event (no leagues)
    group_number: int = 0
    number: int  # the table's number in its round (a league: in its group)
    game_id: int = Field(foreign_key="game.id", unique=True)
    players_json: str = Field(sa_column=Column(Text, nullable=False))  # addresses, seat order
    # {"ranks": [...], "scores": [...]} in seat order; {"ranks": null} for an aborted game.
    result_json: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    decided_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)


class NoticeTarget(SQLModel, table=True):
    """Where turn notices go besides the mail (pbem.services.notices): an Apprise URL, a
    secret never shown back whole, owned by one of: a player's address (their profile), one
    seat (that game only), or a game (its channel, read by everyone there: nothing secret goes
    to it)."""

    id: int | None = Field(default=None, primary_key=True)
    email: str | None = Field(default=None, max_length=254, index=True)  # lower case
    seat_id: int | None = Field(default=None, foreign_key="seat.id", index=True)
    game_id: int | None = Field(default=None, foreign_key="game.id", index=True)
    url: str = Field(sa_column=Column(Text, nullable=False))
    shown: str = Field(max_length=200)  # scheme and host only: what pages and logs show
    kinds: str = Field(max_length=100)  # the notices it gets, comma-separated
    language: str = Field(default="en", max_length=8)  # a game channel's
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    # A notice to it gave up (every retry failed): no more are queued for it until a test
    # succeeds; its owner sees why.
    dead_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    dead_reason: str | None = Field(default=None, max_length=500)


class Notice(SQLModel, table=True):
    """A notice to send to a target, written in the same transaction as the change that caused
    it and delivered by the scheduler (pbem.scheduler.notices) as mail is by the outbox."""

    __table_args__ = (partial_index("ix_notice_waiting", "next_attempt_at", "id",
                                    status=QUEUED),
                      partial_index("ix_notice_sending", "claimed_at", status=SENDING),
                      Index("ix_notice_target_sent", "target_id", "sent_at"))

    id: int | None = Field(default=None, primary_key=True)
    target_id: int = Field(foreign_key="noticetarget.id")
    game_id: int | None = Field(default=None, foreign_key="game.id", index=True)
    kind: str = Field(max_length=20)
    title: str = Field(max_length=250)
    body: str = Field(sa_column=Column(Text, nullable=False))
    secrets_json: str = Field(default="[]", sa_column=Column(Text, nullable=False))
    status: str = Field(default=QUEUED, max_length=10)
    attempts: int = 0
    last_error: str | None = Field(default=None, sa_column=Column(Text, nullable=True))
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    next_attempt_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime,
                                      nullable=False)
    claimed_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    claim: str | None = Field(default=None, max_length=40)
    sent_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    failed_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)


class GameReview(SQLModel, table=True):
    """A finished game's review by the strong computer player (pbem.services.reviews), made
    by the scheduler a few turns a run: pending until a run claims it, done once every turn
    to review has its TurnReview row. A claim older than `[scheduler] claim_seconds` belongs
    to a scheduler that died and is taken again; the turns it saved stay done."""

    __table_args__ = (Index("ix_gamereview_status", "status", "created_at"),)

    game_id: int = Field(foreign_key="game.id", primary_key=True,
                         sa_column_kwargs={"autoincrement": False})
    status: str = Field(default=PENDING, max_length=10)
    claim: str | None = Field(default=None, max_length=40)
    claimed_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)
    turns: int | None = None  # the turns to review, once counted
    playouts: int = 0  # deals each chance was estimated on
    cpu_seconds: float = 0.0  # spent on it so far
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
    done_at: datetime | None = Field(default=None, sa_type=UtcDateTime, nullable=True)


class TurnReview(SQLModel, table=True):
    """One reviewed turn: the mover's chances (0..1) before and after the move it made, and
    the strong bot's choice with its chances where that is another move."""

    __table_args__ = (UniqueConstraint("game_id", "number"),)

    id: int | None = Field(default=None, primary_key=True)
    game_id: int = Field(foreign_key="game.id")
    number: int  # the reviewed move's number in the game's log (MoveRecord.number)
    seat: int
    played: str = Field(max_length=200)
    before: float
    after: float
    bot_move: str | None = Field(default=None, max_length=200)
    bot_after: float | None = None
    created_at: datetime = Field(default_factory=utcnow, sa_type=UtcDateTime, nullable=False)
