"""Games players start themselves: the public "new game" page, invitations, and rematches.

A person enters their name and address, the game, its time control and their friends'
addresses (`propose`). Nothing is mailed to the friends until the starter's own address is
confirmed by the link mailed to it (`confirm`); then each friend gets an invitation with a link
to accept or decline (`answer`). The game starts when all have accepted, or when the starter
starts it with those who did, if they are enough (`start_now`); an invitation left unanswered
expires (a `Chore` of the scheduler) and the starter is told. A finished game's seat can ask
its players to play again (`rematch`): the same path, its address known from its seat link.

Every link is a GET that only shows a page (mail scanners open links); the buttons on it POST.
Abuse guards: at most GAMES_INVITATIONS_PER_ADDRESS mails of this kind to one address a day, and
at most GAMES_INVITATIONS_PER_IP invitations from one client address a day, both counted in the
database. The game itself is made by `pbem.services.creating.create_game`, as an admin's is.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from flask import current_app
from sqlalchemy import func, update
from sqlmodel import Session, col, select

from ..games import SetupProblem, rules_for
from ..ground import i18n
from ..ground.db import get_row, one_at_a_time, reading, utcnow, writing
from ..ground.i18n import gettext as _
from ..ground.models import (
    ACCEPTED,
    CANCELLED,
    DECLINED,
    EXPIRED,
    FINISHED,
    INVITATION_EXPIRY,
    INVITING,
    PENDING,
    STARTED,
    STARTING,
    UNCONFIRMED,
    WAITING,
    Chore,
    Game,
    Invitation,
    Proposal,
    Seat,
)
from ..ground.tokens import hash_token, is_well_formed
from . import mail
from .creating import create_game
from .deadlines import TimeControl
from .errors import GameNotRunning, Malformed, NotFound, Rejected, TooMany
from .game_settings import Draft
from .mail import kinds
from .mail.sending import send
from .players import PlayerSpec, check_player
from .seats import seat_game_seats

UNKNOWN = ("This invitation link is not valid: it may be mistyped or cut short by the mail "
           "program. Use the link in the mail exactly as it came.")


# --- proposing ------------------------------------------------------------------------------

def _check_limits(session: Session, emails: list[str], address: str | None, now: datetime,
                  invitations: int = 0) -> None:
    """Refuse (TooMany) when one of `emails` would get more invitation mails than a day
    allows, or when the client `address` would ask more people (`invitations`) than a day
    allows (None: not checked again)."""
    one_at_a_time(session, *(f"invite to {e}" for e in emails),
                  *([f"invite ip {address}"] if address else []))
    since = now - timedelta(days=1)
    per_address = current_app.config["GAMES_INVITATIONS_PER_ADDRESS"]
    for email in emails:
        had = session.exec(select(func.count()).select_from(Invitation).where(  # links sent
            Invitation.email == email, Invitation.created_at > since,
            col(Invitation.token_hash).is_not(None))).one()
        if had >= per_address:
            raise TooMany(_("%(email)s has been invited %(count)d times today, as often as this "
                            "server invites anyone in a day. Try again tomorrow; nothing was "
                            "sent.", email=email, count=had))
    if address is None:
        return
    sent = session.exec(select(func.count()).select_from(Invitation).join(
        Proposal, col(Proposal.id) == Invitation.proposal_id).where(
        Proposal.starter_ip == address, Invitation.created_at > since)).one()
    if sent + invitations > current_app.config["GAMES_INVITATIONS_PER_IP"]:
        raise TooMany(_("Too many invitations were sent from your network today. Try again "
                        "tomorrow; nothing was sent."))


def invitation_key(invitation_id: int) -> str:
    """The secret in an invitation's link: made from the server's secret key and the
    invitation, so any later mail can carry the same link again (only its hash is stored)."""
    secret = current_app.config["SECRET_KEY"].encode()
    digest = hmac.new(secret, f"pbem invitation {invitation_id}".encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(digest.digest()[:24]).decode("ascii")


def _give_key(session: Session, invitation: Invitation) -> str:
    """The invitation's link key, its hash stored from now on (a link that can be used)."""
    token = invitation_key(cast(int, invitation.id))  # a saved invitation's
    invitation.token_hash = hash_token(token)
    session.add(invitation)
    return token


def _invite(session: Session, proposal: Proposal, number: int, spec: PlayerSpec, colour: str,
            status: str, now: datetime) -> Invitation:
    invitation = Invitation(proposal_id=cast(int, proposal.id), number=number, name=spec.name,
                            email=spec.email.lower(), colour=colour, bot=spec.bot,
                            status=status, created_at=now)
    session.add(invitation)
    return invitation


def propose(draft: Draft, address: str, now: datetime | None = None,
            language: str | None = None) -> int:
    """Store a proposed game and mail its starter the link that confirms their address;
    returns the proposal's id. Nothing goes to the friends before that. `language`: the
    starter's (of the page they proposed it on), their seat's when the game starts."""
    now = now or utcnow()
    with writing() as session:
        _check_limits(session, [draft.starter.email.lower()], address, now,
                      1 + len(draft.friends))
        proposal = _proposal(draft.kind, draft.title, draft.variant, draft.time, address,
                             UNCONFIRMED, now)
        session.add(proposal)
        session.flush()
        starter = _invite(session, proposal, 0, draft.starter, draft.colours[0], PENDING, now)
        starter.language = language
        for n, friend in enumerate(draft.friends, start=1):
            _invite(session, proposal, n, friend, draft.colours[n], WAITING, now)
        session.flush()
        send(session, kinds.START_CONFIRM, to=starter.email, proposal=proposal,
             invitation=starter, link=manage_link(session, starter), friends=draft.friends)
        return proposal.id


def _proposal(kind, title, variant, time: TimeControl, address, status, now, rematch_of=None):
    return Proposal(kind=kind, title=title, variant=variant,
                    deadline_hours=time.deadline_hours, reminder_hours=time.reminders_text,
                    weekend_pause=time.weekend_pause, timezone=time.timezone, status=status,
                    starter_ip=address, rematch_of=rematch_of, created_at=now)


def manage_link(session: Session, starter: Invitation) -> str:
    """The starter's page: it confirms their address, then shows who has answered."""
    return f"{current_app.config['BASE_URL'].rstrip('/')}/new/game/{_give_key(session, starter)}"


def invite_link(session: Session, invitation: Invitation) -> str:
    return f"{current_app.config['BASE_URL'].rstrip('/')}/invite/{_give_key(session, invitation)}"


# --- the links --------------------------------------------------------------------------------

def _by_token(session: Session, token: str, lock: bool = False):
    """The invitation a link's key opens, and its proposal; NotFound reveals nothing."""
    if not is_well_formed(token):
        raise NotFound(UNKNOWN)
    query = select(Invitation).where(Invitation.token_hash == hash_token(token))
    invitation = session.exec(query.with_for_update() if lock else query).first()
    if invitation is None:
        raise NotFound(UNKNOWN)
    proposal = session.get(Proposal, invitation.proposal_id, with_for_update=lock)
    return invitation, proposal


def _everyone(session: Session, proposal: Proposal) -> list[Invitation]:
    return list(session.exec(select(Invitation).where(Invitation.proposal_id == proposal.id)
                             .order_by(col(Invitation.number))))


def _send_invitations(session: Session, proposal: Proposal, starter: Invitation,
                      invitations: list[Invitation], now: datetime) -> None:
    """Mail each waiting friend an invitation with a fresh link, and set its expiry."""
    hours = current_app.config["GAMES_INVITATION_HOURS"]
    for invitation in invitations:
        if invitation.status != WAITING:
            continue
        invitation.status, invitation.expires_at = PENDING, now + timedelta(hours=hours)
        session.add(Chore(kind=INVITATION_EXPIRY, ref_id=cast(int, invitation.id),
                          due_at=invitation.expires_at))
        send(session, kinds.START_INVITE, to=invitation.email, proposal=proposal,
             invitation=invitation, starter=starter, everyone=invitations,
             link=invite_link(session, invitation))


def confirm(token: str, now: datetime | None = None) -> None:
    """The starter's address is theirs: the invitations go out."""
    now = now or utcnow()
    with writing() as session:
        starter, proposal = _by_token(session, token, lock=True)
        if starter.number != 0:
            raise NotFound(UNKNOWN)
        if proposal.status != UNCONFIRMED:
            return  # a second click: already done
        everyone = _everyone(session, proposal)
        _check_limits(session, [i.email for i in everyone if i.number and not i.bot], None,
                      now)
        starter.status, starter.answered_at = ACCEPTED, now
        session.add(starter)
        proposal.status = INVITING
        session.add(proposal)
        _send_invitations(session, proposal, starter, everyone, now)


DECLINE_NEWS_HOURS = 6


def answer(token: str, accept: bool, name: str | None = None,
           now: datetime | None = None, language: str | None = None) -> bool:
    """A friend accepts or declines; returns True when the game can start now (everyone has
    accepted), which the caller then does with `start_game`. `language`: the one the friend
    answered in (their browser's), their seat's when the game starts."""
    now = now or utcnow()
    with writing() as session:
        invitation, proposal = _by_token(session, token, lock=True)
        if invitation.number == 0:
            raise NotFound(UNKNOWN)
        if proposal.status != INVITING:
            raise GameNotRunning(_("This game has already started or was called off: nothing "
                                   "was changed."))
        if invitation.status not in (PENDING, ACCEPTED, DECLINED):
            raise GameNotRunning(_("This invitation has expired: ask %(name)s to invite you "
                                   "again.", name=_starter(session, proposal).name))
        if accept and name is not None:
            name = name.strip()
            try:
                check_player(name, invitation.email)
            except SetupProblem as exc:
                raise Malformed(str(exc)) from None
            invitation.name = name
        if accept and language is not None:
            invitation.language = i18n.check_language(language)
        was = invitation.status
        invitation.status, invitation.answered_at = (ACCEPTED if accept else DECLINED), now
        # The starter hears of a decline once per DECLINE_NEWS_HOURS and invitation: a friend
        # flipping between accept and decline does not flood them (their page shows it all).
        told = invitation.decline_told_at
        tell = not accept and was != DECLINED and (
            told is None or told <= now - timedelta(hours=DECLINE_NEWS_HOURS))
        if tell:
            invitation.decline_told_at = now
        session.add(invitation)
        everyone = _everyone(session, proposal)
        starter = everyone[0]
        if tell:
            send(session, kinds.START_NEWS, to=starter.email, proposal=proposal,
                 invitation=starter, link=manage_link(session, starter), lines=[
                _('"%(name)s" <%(email)s> declined the invitation.',
                  name=mail.inert(invitation.name), email=invitation.email)],
                 status=_status_lines(everyone))
        return all(i.status == ACCEPTED for i in everyone)


def _starter(session: Session, proposal: Proposal) -> Invitation:
    return session.exec(select(Invitation).where(Invitation.proposal_id == proposal.id,
                                                 Invitation.number == 0)).one()


def _status_lines(everyone: list[Invitation]) -> list[str]:
    words = {PENDING: _("not answered yet"), ACCEPTED: _("accepted"), DECLINED: _("declined"),
             EXPIRED: _("did not answer in time"), WAITING: _("not invited yet")}
    # A friend's name as typed by the starter, or by the friend on accepting: quoted.
    return [f'"{mail.inert(i.name)}" ({i.colour}): {words[i.status]}'
            for i in everyone if i.number]


def start_game(proposal_id: int, now: datetime | None = None,
               by_starter: bool = False) -> int:
    """Start the proposed game with those who accepted; returns the game's id. The proposal
    is taken (INVITING -> STARTING) in one transaction first, so a second call starts
    nothing; the game is made by `create_game` as an admin's is."""
    now = now or utcnow()
    with writing() as session:
        proposal = get_row(session, Proposal, proposal_id, with_for_update=True)
        if proposal is None or proposal.status != INVITING:
            raise GameNotRunning(_("This game has already started or was called off."))
        everyone = _everyone(session, proposal)
        players = [i for i in everyone if i.status == ACCEPTED]
        rules = rules_for(proposal.kind)
        if len(players) < rules.min_players:
            raise Rejected(_("%(game)s needs at least %(low)d players; %(count)d have accepted.",
                             game=rules.title, low=rules.min_players, count=len(players)))
        if not by_starter and len(players) != len(everyone):
            raise Rejected(_("Not everyone has accepted yet."))
        proposal.status = STARTING
        session.add(proposal)
    try:
        created = create_game(
            [PlayerSpec(i.name, i.email, i.bot, language=i.language) for i in players], None,
            kind=proposal.kind,
            colours=[i.colour for i in players], title=proposal.title, now=now,
            time=TimeControl(proposal.deadline_hours,
                             tuple(int(h) for h in proposal.reminder_hours.split(",") if h),
                             proposal.weekend_pause, proposal.timezone),
            variant=proposal.variant)
    except Exception:
        with writing() as session:  # not started: it can be tried again
            session.exec(update(Proposal).where(col(Proposal.id) == proposal_id)
                         .values(status=INVITING))
        raise
    with writing() as session:
        session.exec(update(Proposal).where(col(Proposal.id) == proposal_id)
                     .values(status=STARTED, game_id=created.game_id, started_at=now))
        for invitation in everyone:  # the unanswered ones are over too
            if invitation.status == PENDING:
                session.exec(update(Invitation).where(col(Invitation.id) == invitation.id)
                             .values(status=EXPIRED, answered_at=now))
    return created.game_id


def cancel(token: str, now: datetime | None = None) -> None:
    with writing() as session:
        starter, proposal = _by_token(session, token, lock=True)
        if starter.number != 0:
            raise NotFound(UNKNOWN)
        if proposal.status not in (UNCONFIRMED, INVITING):
            raise GameNotRunning(_("This game has already started or was called off."))
        proposal.status = CANCELLED
        session.add(proposal)
        for invitation in _everyone(session, proposal)[1:]:
            if invitation.status == PENDING:
                send(session, kinds.START_NEWS, to=invitation.email, proposal=proposal,
                     invitation=invitation, link=None, lines=[
                    _('%(email)s, who gave the name "%(name)s", called the game off; the '
                      'invitation is withdrawn.', email=starter.email,
                      name=mail.inert(starter.name))], status=[])


def expire_invitation(session: Session, invitation_id: int, now: datetime) -> bool:
    """The scheduler's chore: an invitation still unanswered at its expiry is over, and the
    starter is told; False when it had been answered meanwhile."""
    invitation = session.get(Invitation, invitation_id, with_for_update=True)
    if invitation is None or invitation.status != PENDING:
        return False
    # (an invitation's proposal is there)
    proposal = cast(Proposal, session.get(Proposal, invitation.proposal_id, with_for_update=True))
    if proposal.status != INVITING:
        return False
    invitation.status, invitation.answered_at = EXPIRED, now
    session.add(invitation)
    everyone = _everyone(session, proposal)
    starter = everyone[0]
    send(session, kinds.START_NEWS, to=starter.email, proposal=proposal, invitation=starter,
         link=manage_link(session, starter), lines=[
        _('"%(name)s" <%(email)s> did not answer the invitation in time.',
          name=mail.inert(invitation.name), email=invitation.email)],
         status=_status_lines(everyone))
    return True


# --- rematch ----------------------------------------------------------------------------------

def rematch(token: str, address: str, now: datetime | None = None) -> str:
    """A finished game's seat asks its players to play again: the same game, time control,
    colours and computer players; every other person gets an invitation. Returns the link to
    the starter's page (the seat link proves the address: no confirmation)."""
    now = now or utcnow()
    with writing() as session:
        seat, game, seats = seat_game_seats(session, token)
        if game.status != FINISHED:
            raise GameNotRunning(_("A rematch can be asked for once the game is over."))
        open_one = session.exec(select(Proposal).where(
            Proposal.rematch_of == game.id,
            col(Proposal.status).in_([INVITING, STARTING, STARTED]))).first()
        if open_one is not None:
            raise Rejected(_("A rematch of this game was already asked for: the invitations "
                             "are in your mail."))
        people = [s for s in seats if s.bot is None]
        _check_limits(session, [s.email.lower() for s in people if s.id != seat.id], address,
                      now, len(people))
        rules = rules_for(game.kind)
        variant = rules.variant_of(rules.loads(game.state_json))
        time = TimeControl(game.deadline_hours,
                           tuple(int(h) for h in game.reminder_hours.split(",") if h),
                           game.weekend_pause, game.timezone)
        proposal = _proposal(game.kind, game.title, variant, time, address, INVITING, now,
                             rematch_of=game.id)
        session.add(proposal)
        session.flush()
        ordered = [seat] + [s for s in seats if s.id != seat.id]
        invitations = [_invite(session, proposal, n, PlayerSpec(s.name, s.email, s.bot),
                               s.colour, ACCEPTED if s.id == seat.id or s.bot else WAITING, now)
                       for n, s in enumerate(ordered)]
        session.flush()
        link = manage_link(session, invitations[0])
        _send_invitations(session, proposal, invitations[0], invitations, now)
    return link


# --- what the pages show ------------------------------------------------------------------

@dataclass
class StarterView:
    """What the starter's page shows: the proposal, everyone invited (in order) and, once it
    started, the game and whether the starter has a seat in it."""

    proposal: Proposal
    everyone: list[Invitation]
    game: Game | None
    has_seat: bool | None


def starter_view(token: str) -> StarterView:
    """The starter's page of the proposal a starter's link opens; NotFound reveals nothing."""
    with reading() as session:
        starter, proposal = _by_token(session, token)
        if starter.number != 0:
            raise NotFound(UNKNOWN)
        everyone = _everyone(session, proposal)
        game = session.get(Game, proposal.game_id) if proposal.game_id else None
        has_seat = None
        if game is not None:
            seat = session.exec(select(Seat).where(Seat.game_id == game.id,
                                                   func.lower(Seat.email) == starter.email)
                                ).first()
            has_seat = seat is not None
    return StarterView(proposal, everyone, game, has_seat)


def invitation_view(token: str) -> tuple[Invitation, Proposal, list[Invitation]]:
    """The invitation a link opens, its proposal and everyone invited (in order); NotFound
    reveals nothing."""
    with reading() as session:
        invitation, proposal = _by_token(session, token)
        return invitation, proposal, _everyone(session, proposal)


def proposal_of(token: str) -> int:
    """The id of the proposal an invitation's (or the starter's) link opens."""
    with reading() as session:
        return _by_token(session, token)[1].id


def seat_view(token: str) -> tuple[Seat, Game, list[Seat]]:
    """The seat a link opens, its game and seats, for the rematch page."""
    with reading() as session:
        return seat_game_seats(session, token)
