"""Every kind of mail the server sends, in one table: each kind is a named constant made by
`kind(...)`, which enters it in `KINDS`.

A kind says its name (the outbox row's `kind`, and for a mail written at delivery the name its
stored intent keeps: never renamed, or rows queued before an upgrade are lost), its template
(`templates/email/<template>.txt|.html`), its subject, whether it is written when it is queued
or when it is delivered (`later`), whether it is counted per day (`per_day`: at most so many a
day to one seat or address), and whether it carries the seat's links and the board picture.
Adding a kind is one `kind(...)` entry here and its two templates; every mail is queued the one
way, `pbem.services.mail.sending.send(session, KIND, ...)`.

A subject is a function of the mail's arguments (with `game` and `seat`); a context, of the
session and the same arguments (for a mail written later, also `rules` and `state`: the game as
it was when it was queued), gives what the template is written from beyond the arguments
themselves. Both are called in the recipient's language.

Imports the package's building blocks (pbem.services.mail), the games, turns and the ground.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ...games import GameRules, choices, rules_for
from ...ground import i18n
from ...ground.i18n import gettext as _
from .. import turnfile, turns
from . import deadline_text


@dataclass(frozen=True)
class Cap:
    """At most `most` mails of a kind a day (a number, or the name of the setting that holds
    it) to one seat, or with `by_address` to every seat of one address together."""

    most: int | str
    by_address: bool = False


@dataclass(frozen=True)
class MailKind:
    """One kind of mail: a row of the table (see the module's docstring)."""

    name: str
    template: str
    subject: Callable[..., str]
    context: Callable[..., dict] | None = None  # None: the arguments are the context
    later: bool = False  # written when delivered, from what was stored when it was queued
    per_day: Cap | None = None
    links: bool = False  # to a seat, with its fresh link, reply key and "my games" link
    picture: bool = False  # the board picture in the HTML part
    whole_game: bool = False  # the whole game's animated picture attached (a finished game)
    covers_digest: bool = False  # it says what the seat's waiting digest would have said
    to_admins: bool = False  # to every address in MAIL_ADMINS, in the games' language

    def __str__(self) -> str:
        return self.name


KINDS: dict[str, MailKind] = {}


def kind(name: str, template: str | None = None, **described) -> MailKind:
    """A new kind, entered in `KINDS` (its template is named as it is, unless told)."""
    return register(MailKind(name, template or name, **described))


def register(mail_kind: MailKind) -> MailKind:
    if mail_kind.name in KINDS:
        raise ValueError(f"mail kind {mail_kind.name!r} exists already")
    KINDS[mail_kind.name] = mail_kind
    return mail_kind


# --- what the kinds are written from ----------------------------------------------------------

def _invitation_subject(rules, state, seat, taking_over=False, **_args) -> str:
    # The starter sees in the subject that it moves first, without opening each mail.
    if rules.to_move(state) == seat.number:
        return (_("You take over a seat, and it is your move") if taking_over
                else _("You are invited to play, and you start"))
    return _("You take over a seat") if taking_over else _("You are invited to play")


def _invitation(session, game, seat, seats, rules: GameRules, state, taking_over=False,
                **_args) -> dict:
    """The first mail of a seat: the players, the position and how to play; `taking_over` when
    it joins a game under way (the seat was handed to it), which it does not start."""
    to_move = rules.to_move(state)
    turn_file = None
    if to_move == seat.number:  # the seat that starts gets its turn file, as a "your turn" mail
        turn_file = turnfile.render(
            game.title, game.id, seat.name, seat.colour, game.turn,
            rules.position_lines(state, seat.number), choices(rules, state),
            rules.order_examples, turn_number=turns.current(session, rules, game.id, state))
    return {"turn_file": turn_file, "is_my_turn": to_move == seat.number,
            "to_move": seats[to_move] if to_move is not None else None,
            "position": rules.position_lines(state, seat.number),
            "deadline": deadline_text(game.deadline_at, seat, game),
            "how_to_play": rules.how_to_play(state), "rules_note": rules.variant_note(state)}


def _notice(session, heading, links_revoked=False, **_args) -> dict:
    """A short message about the game (`heading`, `lines`); `links_revoked` when the link in it
    replaces every earlier one."""
    return {"heading": heading, "links_revoked": links_revoked}


def _heading(heading, **_args) -> str:
    return str(heading)


def _digest(session, seat, rules: GameRules, state, **_args) -> dict:
    return {"position": rules.position_lines(state, seat.number)}


def _talk_subject(message, sender, **_args) -> str:
    if message.to_seat is not None:
        return _("Private message from %(name)s", name=sender.name)
    return _("%(name)s to everyone", name=sender.name)


def _talk(session, message, **_args) -> dict:
    return {"private": message.to_seat is not None}


def _proposal_rules(session, proposal, **_args) -> dict:
    return {"rules": rules_for(proposal.kind)}


def _start_invitation(session, proposal, invitation, **_args) -> dict:
    return {"rules": rules_for(proposal.kind),
            "expires": i18n.format_local(invitation.expires_at, proposal.timezone)}


def _start_news_subject(proposal, invitation, **_args) -> str:
    """For the starter the title of their game; for a friend only the kind of game."""
    if invitation.number == 0:
        return _("News of %(title)s", title=proposal.title)
    return _("News of a game of %(game)s", game=rules_for(proposal.kind).title)


def _your_turn_subject(game, seat, reminder=False, **_args) -> str:
    if reminder:
        return _("Reminder: your move is due %(deadline)s",
                 deadline=deadline_text(game.deadline_at, seat, game))
    return _("Your turn")


def _your_turn(session, game, seat, rules: GameRules, state, news: list,
               reminder: bool = False, first_turn: bool = False) -> dict:
    """The seat's turn: `news` is what happened since it last moved (since the start, in its
    `first_turn`); a `reminder` before its deadline."""
    position = rules.position_lines(state, seat.number)
    # The legal moves are the seat to move's: listed for that seat only (they show its hand).
    legal = choices(rules, state) if rules.to_move(state) == seat.number else []
    # The turn in progress after the game's latest move (counted in the log up to it, which
    # later moves do not change), read on the session's connection (a reading session: nothing
    # of its own waits to be written).
    turn_number = turns.in_progress(
        rules, turns.of_move(session.connection(), rules, game.id, game.turn - 1), state)
    turn_file = turnfile.render(game.title, game.id, seat.name, seat.colour, game.turn, position,
                                legal, rules.order_examples, turn_number=turn_number)
    return {"rules": rules, "news": news, "reminder": reminder, "position": position,
            "turn_number": turn_number, "turn_words": rules.turn_short(state, turn_number),
            "first_turn": first_turn, "turn_file": turn_file,
            "deadline": deadline_text(game.deadline_at, seat, game)}


def _reminder_subject(game, seat, **args) -> str:
    return _your_turn_subject(game, seat, **{**args, "reminder": True})


def _reminder(session, game, seat, rules: GameRules, state, news: list, **args) -> dict:
    return _your_turn(session, game, seat, rules, state, news, **{**args, "reminder": True})


def _moved(session, game, seat, rules: GameRules, state, lines: list, next_seat) -> dict:
    """A move was made (`lines`, in the seat's words); `next_seat` is to move."""
    return {"rules": rules, "lines": lines, "next_seat": next_seat,
            "position": rules.position_lines(state, seat.number)}


def _final(session, game, seat, rules: GameRules, state, lines: list, seats: list) -> dict:
    """The game is over: its last moves (`lines`), the outcome and the result table."""
    result = rules.outcome_lines(state)
    told = set(result)
    return {"rules": rules, "seats": seats, "result": result, "outcome": rules.outcome(state),
            # told once, in `result` (which names the players by colour, as the engine)
            "lines": [line for line in lines if line not in told
                      and i18n.render(i18n.unnamed(getattr(line, "data", line))) not in told],
            "table": rules.result_table(state)}


def _played_for_you_subject(game, seat, bot=None, **_args) -> str:
    if bot:
        return _("You are absent: the computer player (%(bot)s) moved for you", bot=bot)
    return _("Your deadline passed: the server moved for you")


def _played_for_you(session, game, seat, rules: GameRules, state, lines: list,
                    absent: bool, bot: str | None = None) -> dict:
    """The server moved for the seat: its default move after a deadline, or, for an absent
    seat in a game that says so, the computer player `bot`."""
    return {"rules": rules, "lines": lines, "absent": absent, "bot": bot,
            "position": rules.position_lines(state, seat.number)}


# --- the table -------------------------------------------------------------------------------
# A mail about a game has "[title #id] " before its subject (but the admins' mail).

# To a seat, with its links: written when queued.
INVITATION = kind("invitation", subject=_invitation_subject, context=_invitation, links=True,
                  picture=True)
NOTICE = kind("notice", subject=_heading, context=_notice, links=True)
UNDO = kind("undo", "notice", subject=_heading, context=_notice, links=True)
# An answer to a player's mail that applied nothing (pbem.mailin.inbox).
ANSWER = kind("answer", "notice", subject=_heading, context=_notice, links=True,
              per_day=Cap("MAIL_ANSWERS_PER_DAY"))
DIGEST = kind("digest", subject=lambda **_args: _("What happened today"), context=_digest,
              links=True, picture=True)
TALK = kind("talk", subject=_talk_subject, context=_talk, links=True)
TALK_DIGEST = kind("talk_digest", subject=lambda **_args: _("Messages in the game"),
                   links=True)

# To a seat, with its links: written when delivered (the mails a move causes).
YOUR_TURN = kind("your_turn", subject=_your_turn_subject, context=_your_turn, later=True,
                 links=True, picture=True, covers_digest=True)
REMINDER = kind("reminder", "your_turn", subject=_reminder_subject, context=_reminder,
                later=True, links=True, picture=True, covers_digest=True)
MOVED = kind("moved", subject=lambda next_seat, **_args: _("%(name)s is next",
                                                          name=next_seat.name),
             context=_moved, later=True, links=True, picture=True)
FINAL = kind("final", subject=lambda **_args: _("The game is over"), context=_final,
             later=True, links=True, picture=True, whole_game=True)
PLAYED_FOR_YOU = kind("played_for_you", subject=_played_for_you_subject,
                      context=_played_for_you, later=True, links=True, picture=True)

# To a seat's address, without a link.
ADDRESS_CHANGED = kind("address_changed",  # to the old address
                       subject=lambda **_args: _("Your address for the game was changed"))
HANDED_OVER = kind("handed_over", subject=lambda **_args: _("Your seat was handed over"))
# Answers to mail that reached no live key (pbem.mailin.inbox): a forged From gets few.
MISDIRECTED = kind("misdirected", subject=lambda **_args: _("Your mail to the game server"),
                   per_day=Cap(1, by_address=True))
REVOKED = kind("revoked", subject=lambda **_args: _("Your mail to the game server"),
               per_day=Cap(3))

# To an address.
ADMIN = kind("admin", subject=lambda heading, **_args: f"[pbem] {heading}", to_admins=True)
MY_LINK = kind("my_link", subject=lambda site, **_args: _("Your games on %(site)s", site=site))
LOBBY_NEWS = kind("lobby_news", subject=lambda rules, **_args: _(
    "News of your open game of %(game)s", game=rules.title))
TOURNAMENT = kind("tournament",
                  subject=lambda tournament, heading, **_args: f"[{tournament}] {heading}")
# Games players start (pbem.services.starting): to addresses a stranger typed on the public
# /new page, so nothing typed there may reach another address's subject (a title such as
# "Your account is locked - call ..."): the subjects name the kind of game only (the
# starter's own title only in mail to the starter). In the body, the names, titles and
# addresses typed are quoted as typed (the `typed` filter, `mail.inert`).
START_CONFIRM = kind("start_confirm", subject=lambda proposal, **_args: _(
    "Confirm your address to start a game of %(game)s", game=rules_for(proposal.kind).title),
                     context=_proposal_rules)
START_INVITE = kind("start_invite", "start_invitation", subject=lambda proposal, **_args: _(
    "Invitation to a game of %(game)s", game=rules_for(proposal.kind).title),
                    context=_start_invitation)
START_NEWS = kind("start_news", subject=_start_news_subject, context=_proposal_rules)
