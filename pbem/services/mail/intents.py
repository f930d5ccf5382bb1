"""The mails a move causes (your turn and its reminder, a move was made, the game is over, the
server moved for you), each described once and written when it is delivered.

A kind is one `Intent`: its template, its subject, and what its text is written from. Queuing
one (`your_turn`, `moved`, `final`, `played_for_you`) gives the outbox row its address,
subject, links and Message-ID at once, and in `intent_json` what the text is written from: the
mail, its seat, its arguments (sentences as sentence data, seats by number), and the game and
seats as they were when it was queued. The outbox writes the text once, with `render`, before
it first sends the mail, and stores it in the row with the outcome of that first try (one
transaction: a sender that dies in between writes the same text again from the same intent);
so the move's transaction does not render mail, and a mail delivered after later moves still
shows the position after its own move. The intent format is the one the server has written
since intents began (`{"mail", "seat", "game", "seats", "args"}`): rows queued before an
upgrade are delivered after it.

Imports the package's building blocks (pbem.services.mail), the games, turns and the ground.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import orjson
from sqlalchemy import bindparam, false, update
from sqlmodel import Session, select

from ...games import GameRules, choices, rules_for
from ...ground import i18n
from ...ground.db import Cached, insert_later, insert_pending, utcnow
from ...ground.i18n import gettext as _
from ...ground.models import DigestItem, Game, OutboxMessage, Seat
from ...ground.rows import GameRow, SeatRow
from .. import turnfile, turns
from . import (
    QueuedMail,
    _deadline_text,
    _picture,
    _subject,
    formatted_address,
    games_link,
    mint_keys,
    mint_player_key,
    new_message_id,
    one_line,
    reply_address,
    seat_link,
    written,
)


@dataclass(frozen=True)
class Intent:
    """One kind of mail a move causes: its template (`templates/email/<template>.*`), its
    subject and what its text is written from, each a function of the game and seat as they
    were when it was queued and of the intent's arguments. Both are called in the seat's
    language."""

    template: str
    subject: Callable[..., str]  # (game, seat, **args)
    context: Callable[..., dict]  # (session, game, seat, rules, state, **args): the template's
    kind: Callable[..., str] | None = None  # (**args): the outbox row's kind, if not the name's


def _your_turn_subject(game, seat, reminder=False, **_args) -> str:
    if reminder:
        return _("Reminder: your move is due %(deadline)s",
                 deadline=_deadline_text(game.deadline_at, seat, game))
    return _("Your turn")


def _your_turn(session: Session, game, seat, rules: GameRules, state, news: list,
               reminder: bool = False, first_turn: bool = False) -> dict:
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
                "deadline": _deadline_text(game.deadline_at, seat, game)}


def _moved(session: Session, game, seat, rules: GameRules, state, lines: list,
           next_seat) -> dict:
    return {"rules": rules, "lines": lines, "next_seat": next_seat,
                "position": rules.position_lines(state, seat.number)}


def _final(session: Session, game, seat, rules: GameRules, state, lines: list,
           seats: list) -> dict:
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


def _played_for_you(session: Session, game, seat, rules: GameRules, state, lines: list,
                    absent: bool, bot: str | None = None) -> dict:
    return {"rules": rules, "lines": lines, "absent": absent, "bot": bot,
                "position": rules.position_lines(state, seat.number)}


# The kinds, by the name an intent stores ("mail"): never renamed, or queued rows are lost.
INTENTS: dict[str, Intent] = {
    "your_turn": Intent("your_turn", _your_turn_subject, _your_turn,
                        kind=lambda reminder=False, **_args: "reminder" if reminder
                        else "your_turn"),
    "moved": Intent("moved", lambda game, seat, next_seat, **_args:
                    _("%(name)s is next", name=next_seat.name), _moved),
    "final": Intent("final", lambda game, seat, **_args: _("The game is over"), _final),
    "played_for_you": Intent("played_for_you", _played_for_you_subject, _played_for_you),
}


_DIGEST_COVERED = Cached(update(DigestItem)
                         .where(DigestItem.seat_id == bindparam("of_seat"),
                                DigestItem.sent == false())
                         .values(sent=True))


def your_turn(session: Session, game: Game, seat: Seat, news: list, reminder: bool = False,
              first_turn: bool = False) -> QueuedMail | None:
    """The seat's turn: `news` is what happened since it last moved (since the start, in its
    `first_turn`); a `reminder` before its deadline. It covers what the seat's digest would
    have said."""
    if seat.bot is None:
        insert_pending(session, DigestItem)
        _DIGEST_COVERED.execute(session.connection(), [{"of_seat": seat.id}])
    return _queued(session, "your_turn", game, seat, news=news, reminder=reminder,
                   first_turn=first_turn)


def moved(session: Session, game: Game, seat: Seat, lines: list,
          next_seat: Seat) -> QueuedMail | None:
    """A move was made (`lines`, in the seat's words); `next_seat` is to move."""
    return _queued(session, "moved", game, seat, lines=lines, next_seat=next_seat)


def final(session: Session, game: Game, seat: Seat, seats: list[Seat],
          lines: list) -> QueuedMail | None:
    """The game is over: its last moves (`lines`), the outcome and the result table."""
    return _queued(session, "final", game, seat, lines=lines, seats=seats)


def played_for_you(session: Session, game: Game, seat: Seat, lines: list, absent: bool,
                   bot: str | None = None) -> QueuedMail | None:
    """The server moved for the seat: its default move after a deadline, or, for an absent
    seat in a game that says so, the computer player `bot`."""
    return _queued(session, "played_for_you", game, seat, lines=lines, absent=absent, bot=bot)


# What of the game and its seats a mail is written from, as it was when it was queued.
_GAME_AT = ("state_json", "turn", "status", "title", "timezone")
_SEAT_AT = ("name", "colour", "timezone", "language")
# A seat named in an intent: an ORM object, or the plain row the move path reads (pbem.ground.rows).
SEATS = (Seat, SeatRow)


def _queued(session: Session, name: str, game: Game, seat: Seat, **args) -> QueuedMail | None:
    """Queue mail `name` to `seat` as an intent: its address, subject, links and Message-ID
    now, its text when it is delivered (`render`). `args` are sentences, seats (a list of all
    of them, or one), and plain values. None for a computer player's seat."""
    if seat.bot is not None:
        return None
    intent = INTENTS[name]
    rules = rules_for(game.kind)
    for told in ("news", "lines"):  # what happened, without the steps that say nothing
        if isinstance(args.get(told), list):
            args[told] = rules.news(args[told])
    with i18n.in_language(seat.language):
        subject = _subject(game, str(intent.subject(game, seat, **args)))
    named = {seat.number: seat}  # the seats the mail names, as they are now
    for value in args.values():
        for other in value if isinstance(value, list) else [value]:
            if isinstance(other, SEATS):
                named[other.number] = other
    token, reply = mint_keys(session, seat, game.turn)
    mine = mint_player_key(session, seat.email)
    now = utcnow()
    stored = {"mail": name, "seat": seat.number,
              "game": {**{field: getattr(game, field) for field in _GAME_AT},
                       "deadline_at": game.deadline_at.isoformat() if game.deadline_at else None},
              "seats": {str(n): [getattr(s, field) for field in _SEAT_AT]
                        for n, s in named.items()},
              "args": {key: _encoded(value) for key, value in args.items()}}
    message = QueuedMail(
        game_id=game.id, seat_id=seat.id, kind=intent.kind(**args) if intent.kind else name,
        to_addr=formatted_address(seat.name, seat.email), subject=one_line(subject),
        text_body="", html_body="", message_id=new_message_id(),
        secrets_json=json.dumps([token, mine, reply]), reply_to=reply_address(reply),
        created_at=now, next_attempt_at=now, picture_json=_picture(game, name == "final"),
        intent_json=orjson.dumps(stored).decode(),  # read back by orjson.loads
        seat_dead_at=seat.mail_dead_at)
    insert_later(session, OutboxMessage, dict(vars(message)))
    return message


def _encoded(value):
    if isinstance(value, i18n.Sentence):
        return {"sentence": value.data}
    if isinstance(value, SEATS):
        return {"seat": value.number}
    if isinstance(value, list):
        if value and all(isinstance(v, SEATS) for v in value):
            return {"seats": True}
        return [_encoded(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"a mail written later cannot keep {type(value).__name__}")


def _decoded(value, seats: list):
    if isinstance(value, list):
        return [_decoded(v, seats) for v in value]
    if isinstance(value, dict):
        if "sentence" in value:
            return i18n.lazy(value["sentence"])
        if "seat" in value:
            return seats[value["seat"]]
        if "seats" in value:
            return seats
    return value


class _As:
    """A game or seat as it was when a mail was queued: the stored values, the rest read
    from the row as it is (its id, kind and the like, which do not change)."""

    def __init__(self, row, values: dict):
        self._row = row
        self.__dict__.update(values)

    def __getattr__(self, name):
        return getattr(self._row, name)


_READ = "pbem_mail_read"  # session.info: the games and seats `render` read, by game id
# Games with their seats (in seat order) as plain rows (pbem.ground.rows), in one statement.
_GAMES_AND_SEATS = (select(*Game.__table__.c, *Seat.__table__.c)
                    .join(Seat, Seat.game_id == Game.id)
                    .where(Game.id.in_(bindparam("game_ids", expanding=True)))
                    .order_by(Game.id, Seat.number))
_GAME_COLUMNS = len(Game.__table__.c)


def read_games(session: Session, game_ids) -> None:
    """Read the games `game_ids` and their seats for the mails `render` writes in `session`,
    in one statement: a sender reads those of a whole claim at once."""
    read = session.info.setdefault(_READ, {})
    wanted = sorted(set(game_ids) - set(read))
    if not wanted:
        return
    rows = session.connection().execute(_GAMES_AND_SEATS, {"game_ids": wanted}).all()
    for row in rows:
        if row[0] not in read:
            read[row[0]] = GameRow(row[:_GAME_COLUMNS]), []
        read[row[0]][1].append(SeatRow(row[_GAME_COLUMNS:]))


def _game_and_seats(session: Session, game_id: int) -> tuple[GameRow, list[SeatRow]]:
    """A game and its seats as `session` reads them, read once per session: the mails of one
    move (and of one game in a sender's claim) are written from the same rows."""
    read_games(session, [game_id])
    found = session.info[_READ].get(game_id)
    if found is None:
        raise LookupError(f"game {game_id} does not exist any more")
    return found


def render(session: Session, row: OutboxMessage | QueuedMail) -> tuple[str, str]:
    """The text and HTML of an outbox row queued as an intent, written as they would have been
    when it was queued: from the game and seats as they were then, in the seat's language of
    then, with the row's own links and picture. Needs the app's context; reads only (the game
    and its seats once per session: one session may write many mails)."""
    stored = orjson.loads(row.intent_json)  # written by orjson (`_queued`)
    game_row, seat_rows = _game_and_seats(session, row.game_id)
    at = dict(stored["game"])
    deadline = at.pop("deadline_at")
    game = _As(game_row, {**at, "deadline_at": datetime.fromisoformat(deadline)
                          if deadline else None})
    named = stored["seats"]
    seats = [_As(s, dict(zip(_SEAT_AT, named[str(s.number)]))) if str(s.number) in named else s
             for s in seat_rows]
    seat = seats[stored["seat"]]
    if seat.id != row.seat_id:
        raise LookupError(f"seat {stored['seat']} of game {row.game_id} is not the mail's")
    rules = rules_for(game_row.kind)
    args = {name: _decoded(value, seats) for name, value in stored["args"].items()}
    intent = INTENTS[stored["mail"]]
    token, mine, *__ = orjson.loads(row.secrets_json)
    with i18n.in_language(seat.language):
        context = intent.context(session, game, seat, rules, rules.loads(game.state_json),
                                 **args)
        context.update(link=seat_link(token), games_link=games_link(mine))
        return written(intent.template, context, game, seat, row.picture_json)
