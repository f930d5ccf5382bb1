"""Creating a game (`create_game`): its seats, its clock and the invitation mails, the seed
it is dealt from (`game_seed`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from flask import current_app
from sqlmodel import Session, select

from ..games import DEFAULT_KIND, GameRules, SetupProblem, rules_for
from ..ground import i18n
from ..ground.db import (
    reading,
    utcnow,
    writing,
)
from ..ground.i18n import _
from ..ground.models import (
    RUNNING,
    Game,
    MoveRecord,
    Seat,
)
from . import mail
from .deadlines import TimeControl, start_clock, time_control
from .mail import kinds
from .mail.sending import send
from .players import PlayerSpec, check_bot, check_title
from .profiles import defaults_for


def game_seed(chosen: str) -> str:
    """The seed a new game is dealt from, and stored with it, for `chosen` (an admin's seed).

    With GAMES_SECRET_SEEDS (the default) it is an HMAC of the chosen seed under the server's
    secret key: a short seed such as "48213" could otherwise be found by a player, who tries
    seeds until one deals the cards they see, and then knows every hand and the deck. The same
    chosen seed still deals the same cards on this server. The stored seed is what the engine
    replays from, so games created before (whose stored seed is the chosen one) replay as
    they always did, and a new secret key changes no running game."""
    if not current_app.config["GAMES_SECRET_SEEDS"]:
        return chosen
    key = current_app.config["SECRET_KEY"].encode()
    return hmac.new(key, b"pbem game seed\0" + chosen.encode(), hashlib.sha256).hexdigest()[:32]


@dataclass(frozen=True)
class Opening:
    """Moves a new game starts after (pbem.services.record: a practice game played on from a
    record or another game's history): the seed they were dealt from (stored as it is), the
    position after them, each move's (seat, notation, time, stored log lines), and where the
    game came from (Game.origin, Game.origin_game_id)."""

    seed: str
    state: object
    moves: tuple[tuple[int, str, datetime, str], ...]
    origin: str
    origin_game_id: int | None = None


@dataclass(frozen=True)
class CreatedGame:
    game_id: int
    links: list[tuple[str, str, str | None]]  # (name, colour, link) per seat, in seat order;
    # a computer player's seat has no link (None)


def create_game(players: list[PlayerSpec], seed: str | None = None, *,
                kind: str = DEFAULT_KIND, colours: list[str] | None = None,
                start: int | None = None, title: str | None = None,
                time: TimeControl | None = None, now: datetime | None = None,
                variant: str | None = None, absent_bot: str | None = None,
                rated: bool = False, session: Session | None = None,
                opening: Opening | None = None) -> CreatedGame:
    """Set up a game, its seats, its clock and the invitation mails; returns each seat's
    first link. `time` defaults to the time control in the settings; `variant` is one of
    the game's `variants` (None: its default). A player made by `bot_player` is a computer
    player's seat. `absent_bot` names the computer player that plays an absent seat's turns
    (None: the default move). A `rated` game changes its players' ratings when it ends.
    A player's saved profile (pbem.services.profiles) gives their seat its language (unless
    `language` is given), time zone and mail choices. With `session` (a tournament's round,
    say), the game is made in that write transaction, which the caller commits. With
    `opening`, the game starts after its moves, from its seed (`seed`, `start` and `variant`
    are then the opening's)."""
    rules = rules_for(kind)
    if not rules.min_players <= len(players) <= rules.max_players:
        raise SetupProblem(_("%(game)s is for %(least)d to %(most)d players, not %(count)d",
                             game=rules.title, least=rules.min_players,
                             most=rules.max_players, count=len(players)))
    for p in players:
        if p.bot is not None:
            check_bot(p.bot, kind)
    if absent_bot is not None:
        check_bot(absent_bot, kind)
    emails = [p.email.lower() for p in players if p.bot is None]
    if len(set(emails)) != len(emails):
        raise SetupProblem(_("each player needs their own email address"))
    for p in players:
        if p.language is not None:
            try:
                i18n.check_language(p.language)
            except ValueError as exc:
                raise SetupProblem(str(exc)) from None
    colours = list(colours or rules.colours[:len(players)])
    seed = seed if seed is not None else secrets.token_hex(16)
    if not isinstance(seed, str) or not 0 < len(seed) <= 100 or not seed.isprintable():
        raise SetupProblem(_("the seed must be 1 to 100 printable characters"))
    seed = game_seed(seed) if opening is None else opening.seed
    title = check_title(title) if title is not None else rules.title
    time = time or time_control()
    state = rules.new_state(colours, seed, start, variant) if opening is None else opening.state
    now = now or utcnow()
    made = _Checked(players, emails, kind, rules, seed, title, state, colours, time, now,
                    absent_bot, bool(rated), opening)
    if session is None:
        with writing() as own:
            return _create(own, made)
    return _create(session, made)


@dataclass(frozen=True)
class _Checked:
    """What `create_game` checked, for `_create` to write."""

    players: list[PlayerSpec]
    emails: list[str]  # the people's addresses, lower case
    kind: str
    rules: GameRules
    seed: str
    title: str
    state: object
    colours: list[str]
    time: TimeControl
    now: datetime
    absent_bot: str | None
    rated: bool
    opening: Opening | None = None


def _create(session: Session, made: _Checked) -> CreatedGame:
    """`create_game` in the write transaction of `session`."""
    rules, state, time, now = made.rules, made.state, made.time, made.now
    game = Game(kind=made.kind, title=made.title, seed=made.seed,
                start_seat=rules.start_seat(state), turn=0, state_json=rules.dumps(state),
                created_at=now, updated_at=now, turn_started_at=now,
                deadline_hours=time.deadline_hours, reminder_hours=time.reminders_text,
                weekend_pause=time.weekend_pause, timezone=time.timezone,
                absent_bot=made.absent_bot, rated=made.rated)
    if made.opening is not None:
        game.turn = len(made.opening.moves)
        game.origin, game.origin_game_id = made.opening.origin, made.opening.origin_game_id
    session.add(game)
    session.flush()
    game_id = cast(int, game.id)  # flushed: it has one
    if made.opening is not None:
        session.add_all(MoveRecord(game_id=game_id, number=n, seat=mover, notation=notation,
                                   actor="player", via="web", lines_json=lines, created_at=at)
                        for n, (mover, notation, at, lines) in enumerate(made.opening.moves))
    chosen = defaults_for(session, made.emails)
    seats = []
    for n, p in enumerate(made.players):
        mine = chosen.get(p.email.lower()) if p.bot is None else None
        seat = Seat(game_id=game_id, number=n, name=p.name, email=p.email,
                    colour=made.colours[n], bot=p.bot, language=p.language or (
                        mine.language if mine else current_app.config["GAMES_LANGUAGE"]))
        if mine is not None:
            seat.timezone, seat.notify, seat.talk_notify = \
                mine.timezone, mine.notify, mine.talk_notify
        seats.append(seat)
    session.add_all(seats)
    session.flush()
    start_clock(session, game, seats[cast(int, rules.to_move(state))], now)  # a new game's
    links = []
    for seat in seats:
        message = send(session, kinds.INVITATION, game=game, seat=seat, seats=seats, rules=rules,
                       state=state)
        links.append((seat.name, seat.colour, None if message is None else mail.seat_link(
            json.loads(message.secrets_json)[0])))
    return CreatedGame(game_id, links)


def running_game(title: str, kind: str) -> tuple[Game | None, list[Seat]]:
    """The latest running game of `kind` titled `title` (the demo's) and its seats, or
    (None, [])."""
    with reading() as session:
        game = session.exec(select(Game).where(Game.title == title, Game.kind == kind,
                                               Game.status == RUNNING)).first()
        if game is None:
            return None, []
        return game, list(session.exec(select(Seat).where(Seat.game_id == game.id)).all())
