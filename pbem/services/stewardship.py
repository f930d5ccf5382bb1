"""What an admin may do to a game: each action checked, written to the audit log with the admin
and a reason, and told to the players it touches, in one transaction.

Pausing, resuming and extending reuse the clock controls in `pbem.services.clock_controls`; everything else is
here: admin accounts, links, addresses, handing a seat over, taking back a move, aborting.
"""

from __future__ import annotations

import ipaddress
from datetime import datetime, timedelta
from typing import cast

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from flask import current_app
from flask_babel import lazy_gettext as L_
from limits import parse_many
from sqlalchemy import delete, func
from sqlmodel import Session, col, select

from ..games import SetupProblem, rules_for
from ..ground import i18n
from ..ground.db import get_row, one_at_a_time, reading, utcnow, writing
from ..ground.i18n import gettext as _
from ..ground.models import (
    ABORTED,
    FAILED,
    FINISHED,
    PAUSED,
    QUEUED,
    RUNNING,
    UNKNOWN,
    Admin,
    AuditEntry,
    Game,
    LoginFailure,
    OutboxMessage,
    Seat,
)
from . import mail, takeback
from .clock_controls import extend_deadline, pause_game, resume_game
from .deadlines import reset_clock, start_clock, stop_clock
from .errors import GameNotRunning, Malformed, NotFound, Rejected, check_reason
from .events import SeatHandedOver, publish
from .mail import kinds
from .mail.sending import send
from .my_games import revoke_player_links
from .players import check_bot, check_player
from .seats import revoke_seat_links
from .tournaments import game_ended

_hashers: dict[tuple[int, int], PasswordHasher] = {}


def password_hasher() -> PasswordHasher:
    """The argon2id hasher at the app's cost (ADMIN_PASSWORD_TIME_COST and _MEMORY_KIB)."""
    key = (current_app.config["ADMIN_PASSWORD_TIME_COST"],
           current_app.config["ADMIN_PASSWORD_MEMORY_KIB"])
    if key not in _hashers:
        _hashers[key] = PasswordHasher(time_cost=key[0], memory_cost=key[1])
    return _hashers[key]


# --- admin accounts -----------------------------------------------------------------------------

def check_password(password: str) -> str:
    if not isinstance(password, str) or not 12 <= len(password) <= 200:
        raise SetupProblem(_("the password must be 12 to 200 characters long"))
    return password


def create_admin(email: str, password: str) -> int:
    """A new admin account, or a new password for an existing one; returns its id."""
    spec = check_player("admin", email)
    check_password(password)
    with writing() as session:
        admin = session.exec(select(Admin).where(Admin.email == spec.email.lower())).first()
        if admin is None:
            admin = Admin(email=spec.email.lower(), password_hash="")
        admin.password_hash = password_hasher().hash(password)
        admin.session_version += 1  # a new password ends every open session
        session.add(admin)
        session.flush()
        return cast(int, admin.id)  # flushed: it has one


def _verify(password_hash: str | None, password: str) -> bool:
    """Whether `password` matches the hash; for no account (None), the same work for nothing,
    so that the time taken tells nobody which accounts exist."""
    if password_hash is None:
        password_hasher().hash(password or "x")
        return False
    try:
        return password_hasher().verify(password_hash, password or "")
    except (VerificationError, InvalidHashError):
        return False


def authenticate(email: str, password: str, now: datetime | None = None) -> int | None:
    """The admin's id when the password is right, else None (the same for unknown emails).
    The password is checked outside any transaction: a hash takes a tenth of a second of a
    core, and SQLite's write lock is held by nobody meanwhile."""
    email = (email or "").strip().lower()[:254]
    with reading() as session:
        found = session.exec(select(Admin.id, Admin.password_hash)
                             .where(Admin.email == email)).first()
    # (found is a Row, its columns named too; SQLModel types it a plain tuple)
    if not _verify(found.password_hash if found else None,  # type: ignore[union-attr]
                   password):
        return None
    admin_id, old_hash = cast("tuple[int, str]", found)  # verified: there is one
    hasher = password_hasher()
    new_hash = hasher.hash(password) if hasher.check_needs_rehash(old_hash) else None
    with writing() as session:
        admin = session.get(Admin, admin_id)
        if admin is None:
            return None
        if new_hash is not None and admin.password_hash == old_hash:
            admin.password_hash = new_hash
        admin.last_login_at = now or utcnow()
        session.add(admin)
    return admin_id


LIMITED_ACCOUNT, LIMITED_ADDRESS, LIMITED_SERVER = "account", "address", "server"


def address_key(address: str | None) -> str:
    """The address a login attempt is counted under: an IPv4 address as it is, an IPv6 one by
    its /64 network (one line, one household: an attacker holds the whole /64)."""
    text = (address or "unknown").strip()[:64]
    try:
        parsed = ipaddress.ip_address(text)
    except ValueError:
        return text
    if parsed.version == 4:
        return str(parsed)
    if parsed.ipv4_mapped is not None:
        return str(parsed.ipv4_mapped)
    return str(ipaddress.ip_network(f"{parsed}/64", strict=False))


def _windows(limit: str) -> list[tuple[int, timedelta]]:
    return [(item.amount, timedelta(seconds=item.get_expiry())) for item in parse_many(limit)]


def _refusal(session: Session, account: str, address: str, limit: str, server_limit: str,
             trusted: bool, now: datetime) -> str | None:
    """Why an attempt is refused unchecked, or None to check its password. Counts only, on
    the indexes of the failures by address, by account and by time."""
    def failures(*where):
        def count(span: timedelta) -> int:
            return session.exec(select(func.count()).select_from(LoginFailure)
                                .where(*where, LoginFailure.at > now - span)).one()
        return count

    def over(count, windows) -> bool:
        return any(count(span) >= amount for amount, span in windows)

    windows = _windows(limit)
    by_address = failures(LoginFailure.address == address)
    if over(by_address, windows):
        return LIMITED_ADDRESS
    if trusted:  # a browser this account logged in from before
        return None
    if over(failures(LoginFailure.account == account), windows) \
            and by_address(max(span for _, span in windows)) > 0:
        return LIMITED_ACCOUNT
    if over(failures(), _windows(server_limit)):
        return LIMITED_SERVER
    return None


def login(email: str, password: str, address: str, limit: str,
          now: datetime | None = None, *, server_limit: str = "30 per minute",
          trusted: bool = False) -> int | str | None:
    """Check a login against the rate `limit` (e.g. "10 per minute") of failures per address
    and per account, and `server_limit` of failures on the whole server, all counted in the
    database so that every server process shares them. Returns the admin's id, None for a
    wrong password, or why the attempt was refused without checking its password:

    - LIMITED_ADDRESS: the address (an IPv6 address's /64) had `limit` failures, on any
      accounts, in the window: every attempt from it is refused until the window has passed,
      the right password too (checking it would cost a hash per attempt of a flood).
    - LIMITED_ACCOUNT: the account had `limit` failures, from anywhere, and this address has
      failed too. An address that has not failed is checked: the admin gets in from their
      own address while others guess, and a guesser gets one try per address.
    - LIMITED_SERVER: the whole server had `server_limit` failures (a flood from many
      addresses): only `trusted` attempts are checked, from a browser the account logged in
      from before (the admin page's device cookie), until the flood abates.

    A refused attempt costs a few counts in a read transaction: no hash, no write. A checked
    one is written down as a failure first, in a short write transaction that counts again
    (racing attempts cannot slip past the limits); its password is checked after that
    transaction, and the failure taken back when it was right. No hash runs while a write
    lock is held.
    """
    now = now or utcnow()
    account = (email or "").strip().lower()[:254]
    address = address_key(address)
    with reading() as session:
        refused = _refusal(session, account, address, limit, server_limit, trusted, now)
    if refused:
        return refused
    with writing() as session:
        # Count, then write down: racing attempts for one account or address take turns.
        one_at_a_time(session, "login", f"login account {account}", f"login address {address}")
        refused = _refusal(session, account, address, limit, server_limit, trusted, now)
        if refused:
            return refused
        longest = max(span for _, span in _windows(limit) + _windows(server_limit))
        session.exec(delete(LoginFailure).where(col(LoginFailure.at) < now - longest))
        attempt = LoginFailure(account=account, address=address, at=now)
        session.add(attempt)
        session.flush()
        attempt_id = attempt.id
    admin_id = authenticate(account, password, now)
    if admin_id is not None:
        with writing() as session:
            session.exec(delete(LoginFailure).where(col(LoginFailure.id) == attempt_id))
    return admin_id


def session_version(admin_id: int) -> int:
    with writing() as session:
        return cast(Admin, session.get(Admin, admin_id)).session_version  # a logged-in admin


def end_sessions(admin_id: int) -> None:
    """Log the admin out everywhere: every session cookie issued so far stops working."""
    with writing() as session:
        admin = cast(Admin, session.get(Admin, admin_id))  # a logged-in admin
        admin.session_version += 1
        session.add(admin)


# --- actions ------------------------------------------------------------------------------------

def note(admin_id: int, game_id: int | None, action: str, reason: str, detail: str = "") -> None:
    """Write in the audit log, in a transaction of its own, what an admin looked at."""
    with writing() as session:
        record_audit(session, admin_id, game_id, action, reason, detail)


def record_audit(session: Session, admin_id: int, game_id: int | None, action: str,
                 reason: str, detail: str = "") -> None:
    session.add(AuditEntry(admin_id=admin_id, game_id=game_id, action=action, reason=reason,
                           detail=detail))


def _game(session: Session, game_id: int) -> Game:
    game = get_row(session, Game, game_id, with_for_update=True)  # no move meanwhile
    if game is None:
        raise NotFound(f"there is no game {game_id}")
    return game


def _game_and_seat(session: Session, game_id: int, seat_number: int) -> tuple[Game, Seat]:
    game = _game(session, game_id)
    seat = session.exec(select(Seat).where(Seat.game_id == game_id,
                                           Seat.number == seat_number)).first()
    if seat is None:
        raise NotFound(f"game {game_id} has no seat {seat_number + 1}")
    return game, seat


def _revoke_links(session: Session, seat: Seat, now: datetime) -> None:
    revoke_seat_links(session, seat, now)  # and the "my games" links that could mint new ones


def _send_link(session: Session, game: Game, seat: Seat, subject: str, lines: list[str],
               links_revoked: bool = False) -> None:
    if seat.bot is not None:
        raise Rejected(f"seat {seat.number + 1} is played by a computer player ({seat.bot}), "
                       "which has no link or address; hand the seat to a person first")
    send(session, kinds.NOTICE, game=game, seat=seat, heading=subject, lines=lines,
         links_revoked=links_revoked)


def resend_link(admin_id: int, game_id: int, seat_number: int, reason: str) -> None:
    """Mail the seat a link again (its earlier links keep working)."""
    reason = check_reason(reason)
    with writing() as session:
        game, seat = _game_and_seat(session, game_id, seat_number)
        _send_link(session, game, seat, L_("Your link to the game"), [
            L_("An organiser sent you your link to the game again: it is below.")])
        record_audit(session, admin_id, game.id, "resend link", reason, f"seat {seat_number + 1}")


def new_link(admin_id: int, game_id: int, seat_number: int, reason: str,
             now: datetime | None = None) -> None:
    """Revoke every link of the seat at once and mail a new one."""
    reason = check_reason(reason)
    now = now or utcnow()
    with writing() as session:
        game, seat = _game_and_seat(session, game_id, seat_number)
        _revoke_links(session, seat, now)
        _send_link(session, game, seat, L_("Your new link to the game"), [
            L_("An organiser replaced your link to the game: your earlier links no longer work. "
               "Use the one below from now on.")], links_revoked=True)
        record_audit(session, admin_id, game.id, "new link", reason, f"seat {seat_number + 1}")


def revoke_games_links(admin_id: int, game_id: int, seat_number: int, reason: str,
                       now: datetime | None = None) -> int:
    """Revoke every "my games" link of the seat's address (its seat links keep working);
    returns how many were live. The player's next mail from any game brings a new one."""
    reason = check_reason(reason)
    with writing() as session:
        game, seat = _game_and_seat(session, game_id, seat_number)
        count = revoke_player_links(session, seat.email, now or utcnow())
        record_audit(session, admin_id, game.id, "revoke my games links", reason,
               f"seat {seat_number + 1}: {seat.email.lower()} ({count} links)")
        return count


def change_email(admin_id: int, game_id: int, seat_number: int, email: str, reason: str,
                 now: datetime | None = None) -> None:
    """Correct a seat's address: links mailed to the old address stop working."""
    reason = check_reason(reason)
    now = now or utcnow()
    with writing() as session:
        game, seat = _game_and_seat(session, game_id, seat_number)
        spec = check_player(seat.name, email)
        _check_unique_email(session, game, seat, spec.email)
        if seat.bot is not None:
            raise Rejected(f"seat {seat.number + 1} is played by a computer player ({seat.bot}); "
                           "to give it to a person, hand the seat over")
        old = seat.email
        _revoke_links(session, seat, now)  # the old address's "my games" links too
        # The old address hears of it too, without a link: a change nobody asked for is seen.
        send(session, kinds.ADDRESS_CHANGED, game=game, seat=seat,
             to=mail.formatted_address(seat.name, old), new=spec.email)
        seat.email = spec.email
        session.add(seat)
        _send_link(session, game, seat, L_("Your address for the game was changed"), [
            L_("An organiser changed your address for this game from %(old)s to %(new)s. "
               "Links sent to the old address no longer work; use the one below.", old=old,
               new=seat.email)],
            links_revoked=True)
        record_audit(session, admin_id, game.id, "change email", reason,
               f"seat {seat_number + 1}: {old} -> {seat.email}")


def _check_unique_email(session: Session, game: Game, seat: Seat, email: str) -> None:
    others = session.exec(select(Seat.email).where(Seat.game_id == game.id,
                                                   Seat.id != seat.id)).all()
    if email.lower() in {e.lower() for e in others}:
        raise Rejected(f"{email} already plays another seat of this game")


def hand_over(admin_id: int, game_id: int, seat_number: int, name: str, email: str,
              reason: str, now: datetime | None = None) -> None:
    """Give the seat to a new player: the old player's links stop working and both are told."""
    reason = check_reason(reason)
    now = now or utcnow()
    with writing() as session:
        game, seat = _game_and_seat(session, game_id, seat_number)
        spec = check_player(name, email)
        _check_unique_email(session, game, seat, spec.email)
        before = f"{seat.name} <{seat.email}>" if seat.bot is None else \
            f"computer player ({seat.bot})"
        publish(SeatHandedOver(session, game, seat, spec.name, now))
        _revoke_links(session, seat, now)
        was_bot = seat.bot is not None
        seat.name, seat.email, seat.bot = spec.name, spec.email, None
        # The seat's settings were the old player's: the new one starts afresh.
        seat.timeouts_in_row, seat.absent, seat.notify, seat.timezone = 0, False, "every", None
        seat.vacation_days_used, seat.vacation_from, seat.vacation_until = 0, None, None
        session.add(seat)
        rules = rules_for(game.kind)
        seats = list(session.exec(select(Seat).where(Seat.game_id == game.id)
                                  .order_by(col(Seat.number))))
        state = rules.loads(game.state_json)
        if was_bot and game.status == RUNNING and rules.to_move(state) == seat.number:
            start_clock(session, game, seat, now)  # a person's turn: a deadline of its own
        send(session, kinds.INVITATION, game=game, seat=seat, seats=seats, rules=rules,
             state=state, taking_over=game.turn > 0 or game.status != RUNNING)
        record_audit(session, admin_id, game.id, "hand over", reason,
               f"seat {seat_number + 1}: {before} -> {spec.name} <{spec.email}>")


def hand_to_bot(admin_id: int, game_id: int, seat_number: int, bot: str, reason: str,
                now: datetime | None = None) -> None:
    """Let computer player `bot` play the seat from now on (an absent player's, say): the
    person's links stop working and they are told; if it is the seat's turn, the scheduler
    plays it at its next run. Handing the seat over to a person gives it back."""
    reason = check_reason(reason)
    now = now or utcnow()
    with writing() as session:
        game, seat = _game_and_seat(session, game_id, seat_number)
        bot = _check_bot(bot, game)
        if game.status not in (RUNNING, PAUSED):
            raise GameNotRunning(f"game {game.id} is {game.status}; its seats are not played "
                                 "any more")
        if seat.bot == bot:
            raise Rejected(f"the computer player ({bot}) already plays seat {seat_number + 1}")
        before = f"{seat.name} <{seat.email}>" if seat.bot is None else \
            f"computer player ({seat.bot})"
        publish(SeatHandedOver(session, game, seat, L_("a computer player (%(bot)s)", bot=bot),
                               now))
        if seat.bot is None:
            _revoke_links(session, seat, now)
        seat.bot, seat.absent, seat.timeouts_in_row = bot, False, 0
        seat.vacation_from = seat.vacation_until = None
        session.add(seat)
        rules = rules_for(game.kind)
        if game.status == RUNNING and rules.to_move(rules.loads(game.state_json)) == seat.number:
            reset_clock(session, game, seat, now)  # due at once: the scheduler plays it
        record_audit(session, admin_id, game.id, "hand to bot", reason,
               f"seat {seat_number + 1}: {before} -> computer player ({bot})")


def set_absent_bot(admin_id: int, game_id: int, bot: str | None, reason: str,
                   now: datetime | None = None) -> None:
    """Choose who plays an absent seat's turns in this game: computer player `bot`, or (None)
    the default move. The players are told."""
    reason = check_reason(reason)
    now = now or utcnow()
    with writing() as session:
        game = _game(session, game_id)
        bot = None if bot in (None, "", "default") else _check_bot(bot, game)
        if game.status not in (RUNNING, PAUSED):
            raise GameNotRunning(f"game {game.id} is {game.status}")
        if game.absent_bot == bot:
            raise Rejected("the game already does this for absent players")
        before = game.absent_bot or "default move"
        game.absent_bot = bot
        session.add(game)
        said = (L_("a computer player (%(bot)s) plays their turns", bot=bot) if bot else
                L_("the server plays the default move for them (it exchanges a card)"))
        for seat in session.exec(select(Seat).where(Seat.game_id == game.id)):
            send(session, kinds.NOTICE, game=game, seat=seat,
                 heading=L_("Absent players' turns"), lines=[
                L_("An organiser changed what happens when a player is absent: from now on "
                   "%(said)s.", said=said)])
        record_audit(session, admin_id, game.id, "absent bot", reason,
               f"{before} -> {bot or 'default move'}")


def _check_bot(bot: object, game: Game) -> str:
    try:
        return check_bot(bot, game.kind)
    except SetupProblem as exc:
        raise Malformed(str(exc)) from None


def take_back(admin_id: int, game_id: int, reason: str, now: datetime | None = None) -> str:
    """Undo the last turn: the moves the seat that moved last made since another seat moved
    (a placement or exchange and the draws after it, or as much of it as was played). The
    state is rebuilt from the seed and the log without them, so every seat's view is again
    exactly what it was; a deck card the seat drew goes back on top of the deck, where it
    will be drawn again, and that seat has seen it.

    Returns the notations taken back, joined by '; '."""
    reason = check_reason(reason)
    now = now or utcnow()
    with writing() as session:
        game = _game(session, game_id)
        if game.status not in (RUNNING, FINISHED):
            raise GameNotRunning(f"game {game.id} is {game.status}; resume it first")
        records = takeback.records_of(session, game)
        if not records:
            raise Rejected("no move has been made yet")
        done = takeback.take_back(session, game, records, takeback.last_run(records), now)
        undone, mover, who, to_move = done.undone, done.mover.number, done.mover, done.to_move
        for seat in done.seats:
            moves = done.told_to(seat)
            lines = [L_("An organiser took back the last turn of %(name)s (%(colour)s): "
                        "%(moves)s.", name=who.name, colour=i18n.lazy_colour(who.colour),
                        moves=moves), L_("Reason: %(reason)s", reason=reason),
                     L_("%(name)s (%(colour)s) is to move.", name=to_move.name,
                        colour=i18n.lazy_colour(to_move.colour))]
            if seat.id == who.id:
                lines.append(L_("If you drew a card from the deck in that turn, it is back on "
                                "top of the deck: you have seen it, and you will draw it again "
                                "if you draw from the deck."))
            send(session, kinds.NOTICE, game=game, seat=seat,
                 heading=L_("A turn was taken back"), lines=lines)
        taken = "; ".join(r.notation for r in undone)
        numbers = f"move {undone[0].number}" if len(undone) == 1 else \
            f"moves {undone[0].number}-{undone[-1].number}"
        record_audit(session, admin_id, game.id, "take back", reason,
               f"{numbers} by seat {mover + 1}: {taken} "
               f"({', '.join(sorted({r.actor for r in undone}))})")
        return taken


def abort_game(admin_id: int, game_id: int, reason: str, now: datetime | None = None) -> None:
    """End a game without a result; everyone is told why."""
    reason = check_reason(reason)
    now = now or utcnow()
    with writing() as session:
        game = _game(session, game_id)
        if game.status in (FINISHED, ABORTED):
            raise GameNotRunning(f"game {game.id} is already {game.status}")
        game.status, game.finished_at = ABORTED, now
        stop_clock(session, game, now)
        game_ended(session, game, now)  # a tournament's game: decided, no points
        for seat in session.exec(select(Seat).where(Seat.game_id == game.id)):
            send(session, kinds.NOTICE, game=game, seat=seat,
                 heading=L_("The game was called off"), lines=[
                L_("An organiser called off this game; it ends here without a result."),
                L_("Reason: %(reason)s", reason=reason)])
        record_audit(session, admin_id, game.id, "abort", reason)


def clock_action(admin_id: int, game_id: int, action: str, reason: str,
                 hours: int | None = None) -> None:
    """Pause, resume or extend through the clock controls, with its audit entry in the same
    transaction."""
    reason = check_reason(reason)

    def audit(session: Session) -> None:
        record_audit(session, admin_id, game_id, action, reason,
               f"{hours} hours" if action == "extend" else "")

    if action == "pause":
        pause_game(game_id, also=audit)
    elif action == "resume":
        resume_game(game_id, also=audit)
    elif action == "extend":
        extend_deadline(game_id, hours, also=audit)
    else:
        raise Malformed(f"unknown action {action!r}")


def retry_mail(admin_id: int, message_id: int, reason: str = "retry",
               now: datetime | None = None) -> None:
    """Put a failed mail, or one whose delivery is unknown, back in the queue, due now (with
    the same Message-ID)."""
    now = now or utcnow()
    with writing() as session:
        row = get_row(session, OutboxMessage, message_id)
        if row is None:
            raise NotFound(f"there is no mail {message_id}")
        if row.status not in (FAILED, UNKNOWN):
            raise Rejected(f"mail {message_id} is {row.status}, not failed")
        row.status, row.attempts, row.next_attempt_at = QUEUED, 0, now
        session.add(row)
        record_audit(session, admin_id, row.game_id, "retry mail", reason,
               f"mail {message_id} to {row.to_addr}: {row.subject}")
