"""A game's record (docs/record.md): written for one reader, read back, replayed, imported;
and "play on from here", a practice game from any point of a finished game's history.

A record holds the game, its players, its settings and every move in the notation with its
time. It is written for a reader: a seat (`record_for(..., seat)`), a spectator (None) or
the organisers (FULL). Before the game's end a seat reads each move as `notation_for` shows
it to that seat and a spectator as a spectator; neither gets the seed, from which every hand
and the deck follow. Once the game is finished every record is the full one, seed included:
the end reveals everything. Only a record with the seed imports: the engine replays it move
by move from its set-up, and a move it refuses refuses the whole file, with its line and the
engine's reason, before anything is written.

Owns the format (text and JSON, one content), `import_record` and `play_on`; the pages and
the command line only call them. Does not own the games (pbem.games) nor creating a game
(pbem.services.creating.create_game, which a practice game goes through like any other).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from sqlalchemy import func
from sqlmodel import Session, col, select

from ..games import GameRules, MoveError, SetupProblem, game_kinds, rules_for
from ..ground.db import get_row, reading, utcnow, writing
from ..ground.i18n import _
from ..ground.models import (
    FINISHED,
    ORIGIN_IMPORTED,
    ORIGIN_PRACTICE,
    Game,
    MoveRecord,
    Seat,
)
from .creating import Opening, create_game
from .errors import GameNotRunning, Malformed, NotFound, Rejected, TooMany
from .moves import told_lines
from .players import PlayerSpec, bot_player, check_title, unsafe_character
from .seats import load_seat

FORMAT = "pbem-game-record"
VERSION = 1
HEADING = f"{FORMAT} {VERSION}"
FULL = "full"  # the organisers' reader: every move as played, and the seed
SPECTATOR = "spectator"
MAX_BYTES = 2_000_000  # a long game's record is some 50 kB
MAX_MOVES = 20_000
PRACTICE_PER_DAY = 20  # practice games one address may start in a day


class RecordError(ValueError):
    """A record that cannot be read or replayed: `line` (1 = the first; None: the whole file)
    and the reason."""

    def __init__(self, line: int | None, reason: str):
        super().__init__(f"line {line}: {reason}" if line else reason)
        self.line, self.reason = line, reason


@dataclass(frozen=True)
class RecordPlayer:
    seat: int
    colour: str
    name: str
    bot: str | None = None


@dataclass(frozen=True)
class RecordMove:
    number: int  # 1 = the first move
    colour: str  # the mover's
    at: datetime | None
    notation: str
    line: int | None = None  # where it was read (a JSON file: the move's place in the list)


@dataclass(frozen=True)
class GameRecord:
    """One game as one reader may see it (`reader`: FULL, SPECTATOR or "seat N")."""

    kind: str
    title: str
    reader: str
    status: str
    variant: str
    start_seat: int
    players: tuple[RecordPlayer, ...]
    moves: tuple[RecordMove, ...]
    seed: str | None = None  # only in the full record
    game_id: int | None = None
    started: datetime | None = None
    finished: datetime | None = None
    deadline_hours: int | None = None
    scores: dict[str, int] | None = None  # colour -> points, once the game is over
    # The start seat was drawn from the seed (True) or chosen (False); None in a record
    # without the seed, which does not replay.
    start_drawn: bool | None = None


# --- writing ------------------------------------------------------------------------------

def record_for(game_id: int, reader: int | str | None, session: Session | None = None
               ) -> GameRecord:
    """Game `game_id`'s record for `reader`: a seat number, None (a spectator) or FULL."""
    if session is None:
        with reading() as own:
            return record_for(game_id, reader, own)
    game = get_row(session, Game, game_id)
    if game is None:
        raise NotFound(_("There is no game %(id)d.", id=game_id))
    rules = rules_for(game.kind)
    state = rules.loads(game.state_json)
    seats = list(session.exec(select(Seat).where(col(Seat.game_id) == game.id)
                              .order_by(col(Seat.number))))
    full = reader == FULL or game.status == FINISHED  # the end reveals every card
    seat = reader if isinstance(reader, int) else None
    rows = session.exec(select(MoveRecord.seat, MoveRecord.notation, MoveRecord.created_at)
                        .where(MoveRecord.game_id == game.id)
                        .order_by(col(MoveRecord.number))).all()
    colours = [s.colour for s in seats]
    moves = tuple(RecordMove(n, colours[mover], at, notation if full else
                             rules.notation_for(state, notation, mover, seat))
                  for n, (mover, notation, at) in enumerate(rows, start=1))
    outcome = rules.outcome(state) if rules.to_move(state) is None else None
    # Whether the set-up drew its start seat from the seed (the engine deals differently when
    # an organiser chose it): the game's own set-up is one of the two. Only a record with the
    # seed replays, so only it needs to say.
    drawn = None if not full else rules.dumps(rules.new_state(
        colours, game.seed, None, rules.variant_of(state))) \
        == rules.dumps(rules.history_state(state, []))
    return GameRecord(
        kind=game.kind, title=game.title, status=game.status, variant=rules.variant_of(state),
        reader=FULL if full else SPECTATOR if seat is None else f"seat {seat}",
        start_seat=game.start_seat, seed=game.seed if full else None, game_id=game.id,
        players=tuple(RecordPlayer(s.number, s.colour, s.name, s.bot) for s in seats),
        moves=moves, started=game.created_at, finished=game.finished_at,
        deadline_hours=game.deadline_hours, start_drawn=drawn,
        scores=dict(outcome["scores"]) if outcome and "scores" in outcome else None)


def _time(at: datetime | None) -> str:
    return "-" if at is None else at.astimezone(UTC).replace(microsecond=0).isoformat() \
        .replace("+00:00", "Z")


def to_text(record: GameRecord) -> str:
    """The record in the text format of docs/record.md."""
    out = [HEADING, f"game: {record.kind}", f"title: {record.title}"]
    if record.game_id is not None:
        out.append(f"server game: {record.game_id}")
    out += [f"reader: {record.reader}", f"status: {record.status}",
            f"variant: {record.variant}",
            f"start seat: {record.start_seat}" + ("" if record.start_drawn is None else
                                                  " drawn" if record.start_drawn else " chosen")]
    if record.seed is not None:
        out.append(f"seed: {record.seed}")
    if record.deadline_hours is not None:
        out.append(f"deadline hours: {record.deadline_hours}")
    if record.started is not None:
        out.append(f"started: {_time(record.started)}")
    if record.finished is not None:
        out.append(f"finished: {_time(record.finished)}")
    for p in record.players:
        out.append(f"player {p.seat}: {p.colour} {p.name}" + (f" [bot {p.bot}]" if p.bot else ""))
    if record.scores is not None:
        out.append("scores: " + ", ".join(f"{c} {n}" for c, n in record.scores.items()))
    out += ["", "moves:"]
    out += [f"{m.number}. {m.colour} {_time(m.at)} {m.notation}" for m in record.moves]
    return "\n".join(out) + "\n"


def to_json(record: GameRecord) -> str:
    """The record as JSON: the same content as the text, one move a line."""
    head = {"format": FORMAT, "version": VERSION, "game": record.kind, "title": record.title,
            "server_game": record.game_id, "reader": record.reader, "status": record.status,
            "variant": record.variant, "start_seat": record.start_seat,
            "start_drawn": record.start_drawn, "seed": record.seed,
            "deadline_hours": record.deadline_hours,
            "started": None if record.started is None else _time(record.started),
            "finished": None if record.finished is None else _time(record.finished),
            "players": [{"seat": p.seat, "colour": p.colour, "name": p.name, "bot": p.bot}
                        for p in record.players],
            "scores": record.scores}
    moves = [json.dumps({"number": m.number, "colour": m.colour, "time": _time(m.at),
                         "notation": m.notation}, ensure_ascii=False) for m in record.moves]
    text = json.dumps(head, ensure_ascii=False, indent=1)[:-2]  # without the closing brace
    return text + ',\n "moves": [\n  ' + ",\n  ".join(moves) + "\n ]\n}\n"


# --- reading ------------------------------------------------------------------------------

MOVE_LINE = re.compile(r"(\d{1,6})\. (\S+) (\S+) (.+)")
PLAYER = re.compile(r"player (\d{1,2}): (\S+) (.+?)(?: \[bot ([a-z0-9-]{1,20})\])?")
KEYS = {"game", "title", "server game", "reader", "status", "variant", "start seat", "seed",
        "deadline hours", "started", "finished", "scores"}


def _parse_time(text: str, line: int | None) -> datetime | None:
    if text == "-":
        return None
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise RecordError(line, f"{text[:40]!r} is not a time: write it as "
                                "2026-12-01T10:00:00Z") from None
    if at.tzinfo is None:
        raise RecordError(line, f"the time {text[:40]!r} needs its zone: end it in Z (UTC)")
    return at.astimezone(UTC)


def _number(text: str, line: int | None, what: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise RecordError(line, f"{what} must be a whole number, not {text[:40]!r}")
    return int(text)


def parse_record(text: str) -> GameRecord:
    """A record read from its text or JSON form; RecordError says where and why not."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise RecordError(None, f"the file is larger than {MAX_BYTES:,} bytes: no record of "
                                "one game is that long")
    text = text.removeprefix("\ufeff")  # a byte order mark some editors write
    if text.lstrip().startswith("{"):
        return _parse_json(text)
    return _parse_text(text)


def _clean(value: str, line: int | None, what: str) -> str:
    bad = unsafe_character(value)
    if bad:
        raise RecordError(line, f"the {what} holds {bad}")
    return value


def _parse_text(text: str) -> GameRecord:
    lines = text.splitlines()
    if not lines or lines[0].strip() != HEADING:
        raise RecordError(1, f"a game record begins with the line {HEADING!r} "
                             "(docs/record.md); this file does not")
    fields: dict[str, tuple[str, int]] = {}
    players: list[RecordPlayer] = []
    moves: list[RecordMove] = []
    in_moves = False
    for n, raw in enumerate(lines[1:], start=2):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        _clean(line, n, "line")
        if in_moves:
            found = MOVE_LINE.fullmatch(line)
            if not found:
                raise RecordError(n, "a move is written '<number>. <colour> <time> "
                                     f"<notation>', not {line[:60]!r}")
            number, colour, at, notation = found.groups()
            moves.append(RecordMove(int(number), colour, _parse_time(at, n), notation.strip(), n))
            if len(moves) > MAX_MOVES:
                raise RecordError(n, f"more than {MAX_MOVES} moves: no game is that long")
            continue
        if line == "moves:":
            in_moves = True
            continue
        found = PLAYER.fullmatch(line)
        if found:
            seat, colour, name, bot = found.groups()
            players.append(RecordPlayer(int(seat), colour, name.strip(), bot))
            continue
        key, colon, value = line.partition(":")
        if not colon or key not in KEYS:
            raise RecordError(n, f"{line[:60]!r} is not a line of a record: expected one of "
                                 f"{', '.join(sorted(KEYS))}, a player or 'moves:'")
        if key in fields:
            raise RecordError(n, f"{key!r} is given twice (first on line {fields[key][1]})")
        fields[key] = (value.strip(), n)
    if not in_moves:
        raise RecordError(len(lines), "the record has no 'moves:' line (write it even when no "
                                      "move was made)")

    def field(key: str, need: bool = True) -> tuple[str | None, int | None]:
        if key not in fields:
            if need:
                raise RecordError(None, f"the record has no {key!r} line")
            return None, None
        return fields[key]

    scores = None
    value, n = field("scores", False)
    if value:
        scores = {}
        for part in value.split(","):
            colour, _space, points = part.strip().rpartition(" ")
            if colour in scores:
                raise RecordError(n, f"the scores name {colour!r} twice")
            scores[colour] = _number(points, n, "a score")
    start, n = field("start seat")
    start, _space, how = start.partition(" ")
    if how not in ("drawn", "chosen", ""):
        raise RecordError(n, "the start seat is its number, then 'drawn' (from the seed) or "
                             "'chosen' (by the organiser)")
    deadline, dn = field("deadline hours", False)
    server, sn = field("server game", False)
    started, tn = field("started", False)
    finished, fn = field("finished", False)
    return GameRecord(
        kind=field("game")[0], title=field("title")[0], reader=field("reader", False)[0] or "",
        status=field("status", False)[0] or "", variant=field("variant")[0],
        start_seat=_number(start, n, "the start seat"), start_drawn={"drawn": True, "chosen": False}.get(how),
        players=tuple(players),
        moves=tuple(moves), seed=field("seed", False)[0],
        game_id=None if server is None else _number(server, sn, "the server game"),
        started=None if started is None else _parse_time(started, tn),
        finished=None if finished is None else _parse_time(finished, fn),
        deadline_hours=None if deadline is None else _number(deadline, dn, "the deadline"),
        scores=scores)


def _parse_json(text: str) -> GameRecord:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RecordError(getattr(exc, "lineno", None), f"this is not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise RecordError(None, f"a JSON record has \"format\": \"{FORMAT}\" (docs/record.md)")
    if data.get("version") != VERSION:
        raise RecordError(None, f"this server reads version {VERSION} of the record format, "
                                f"not {data.get('version')!r}")
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines, start=1) if line.strip() == '"moves": ['),
                 None)

    def text_of(key: str, need: bool = True) -> str | None:
        value = data.get(key)
        if value is None and not need:
            return None
        if not isinstance(value, str) or len(value) > 200:
            raise RecordError(None, f"\"{key}\" must be a text of at most 200 characters")
        return _clean(value, None, key)

    def int_of(key: str, need: bool = True) -> int | None:
        value = data.get(key)
        if value is None and not need:
            return None
        if type(value) is not int or not 0 <= value < 10**9:
            raise RecordError(None, f"\"{key}\" must be a whole number")
        return value

    players = []
    raw_players = data.get("players")
    if not isinstance(raw_players, list) or len(raw_players) > 20:
        raise RecordError(None, "\"players\" must be a list of the players")
    for p in raw_players:
        if not isinstance(p, dict) or type(p.get("seat")) is not int \
                or not all(isinstance(p.get(k), str) for k in ("colour", "name")) \
                or not isinstance(p.get("bot"), str | None):
            raise RecordError(None, "each player is {\"seat\": 0, \"colour\": ..., \"name\": "
                                    "..., \"bot\": null}")
        players.append(RecordPlayer(p["seat"], _clean(p["colour"], None, "colour"),
                                    _clean(p["name"], None, "name"), p["bot"]))
    raw_moves = data.get("moves")
    if not isinstance(raw_moves, list) or len(raw_moves) > MAX_MOVES:
        raise RecordError(None, f"\"moves\" must be a list of at most {MAX_MOVES} moves")
    moves = []
    for i, m in enumerate(raw_moves):
        where = None if first is None else first + 1 + i
        if not isinstance(m, dict) or type(m.get("number")) is not int \
                or not all(isinstance(m.get(k), str) for k in ("colour", "time", "notation")):
            raise RecordError(where, "each move is {\"number\": 1, \"colour\": ..., \"time\": "
                                     "..., \"notation\": ...}")
        moves.append(RecordMove(m["number"], m["colour"], _parse_time(m["time"], where),
                                _clean(m["notation"], where, "notation"), where))
    scores = data.get("scores")
    if scores is not None and (not isinstance(scores, dict) or not all(
            isinstance(k, str) and type(v) is int for k, v in scores.items())):
        raise RecordError(None, "\"scores\" must map each colour to its points")
    return GameRecord(
        kind=text_of("game"), title=text_of("title"), reader=text_of("reader", False) or "",
        status=text_of("status", False) or "", variant=text_of("variant"),
        start_seat=int_of("start_seat"), start_drawn=data.get("start_drawn") if isinstance(data.get("start_drawn"), bool) else None,
        players=tuple(players), moves=tuple(moves),
        seed=text_of("seed", False), game_id=int_of("server_game", False),
        started=None if data.get("started") is None else _parse_time(text_of("started"), None),
        finished=None if data.get("finished") is None
        else _parse_time(text_of("finished"), None),
        deadline_hours=int_of("deadline_hours", False), scores=scores)


# --- replaying ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Replayed:
    """A record replayed through the engine: the set-up, each move's (seat, notation, time,
    stored lines) and the position after them."""

    record: GameRecord
    rules: GameRules
    first: object
    state: object
    played: tuple[tuple[int, str, datetime | None, str], ...]


def told(rules: GameRules, before, move, after, seats: list) -> str:
    """What a move did in each reader's words, as the move path stores it in the log."""
    return json.dumps(told_lines(rules, before, move, after, seats), ensure_ascii=False)


def replay(record: GameRecord, upto: int | None = None) -> Replayed:
    """Replay `record` (its first `upto` moves) through the engine from its set-up; RecordError
    for a record that does not carry its seed, a set-up the game refuses or a move that is
    not legal where it stands."""
    if record.seed is None:
        raise RecordError(None, f"this record is a {record.reader or 'partial'} one: it does "
                                "not carry the seed the cards were dealt from, so the game "
                                "cannot be replayed. Import the full record: an organiser's "
                                "export (admin page, or pbem export-game without --seat), or "
                                "any record of a finished game")
    if record.kind not in game_kinds():
        raise RecordError(None, f"unknown game {record.kind!r}: this server hosts "
                                f"{', '.join(game_kinds())}")
    rules = rules_for(record.kind)
    if record.start_drawn is None:
        raise RecordError(None, "the start seat must say whether it was 'drawn' (from the "
                                "seed) or 'chosen' (by the organiser): the cards are dealt "
                                "differently")
    if not record.seed or len(record.seed) > 100 or not record.seed.isprintable():
        raise RecordError(None, "the seed must be 1 to 100 printable characters")
    if [p.seat for p in record.players] != list(range(len(record.players))):
        raise RecordError(None, "the players must be listed seat 0, 1, 2, ... in order")
    colours = [p.colour for p in record.players]
    if len(set(colours)) != len(colours) or not set(colours) <= set(rules.colours):
        raise RecordError(None, f"each player needs their own colour of "
                                f"{', '.join(rules.colours)}")
    for p in record.players:
        if not p.name or len(p.name) > 100:
            raise RecordError(None, "each player's name is 1 to 100 characters")
        if p.bot is not None and p.bot not in rules.bots:
            raise RecordError(None, f"{rules.title} has no computer player {p.bot!r}: it has "
                                    f"{', '.join(rules.bots)}")
    if not rules.min_players <= len(colours) <= rules.max_players:
        raise RecordError(None, f"{rules.title} is for {rules.min_players} to "
                                f"{rules.max_players} players, not {len(colours)}")
    if not 0 <= record.start_seat < len(colours):
        raise RecordError(None, f"the start seat must be 0 to {len(colours) - 1}")
    try:
        first = state = rules.new_state(colours, record.seed, None if record.start_drawn
                                        else record.start_seat, record.variant)
    except SetupProblem as exc:
        raise RecordError(None, f"the game cannot be set up so: {exc}") from None
    if rules.start_seat(state) != record.start_seat or rules.variant_of(state) != record.variant:
        raise RecordError(None, "the set-up does not match the record's start seat and variant")
    seats = [Seat(number=p.seat, colour=p.colour, name=p.name, email="", game_id=0)
             for p in record.players]
    played = []
    for i, m in enumerate(record.moves[:upto]):
        where = m.line
        if m.number != i + 1:
            raise RecordError(where, f"move {i + 1} is numbered {m.number}: the moves must be "
                                     "numbered 1, 2, 3, ... in order")
        mover = rules.to_move(state)
        if mover is None:
            raise RecordError(where, f"move {m.number} ({m.notation}) comes after the game's "
                                     "end")
        if m.colour != colours[mover]:
            raise RecordError(where, f"move {m.number} ({m.notation}) is {colours[mover]}'s to "
                                     f"make, not {m.colour}'s")
        try:
            move = rules.parse(state, m.notation)
            after = rules.apply(state, move)
        except MoveError as exc:
            raise RecordError(where, f"move {m.number} ({m.notation}) is not legal here: "
                                     f"{exc}") from None
        played.append((mover, rules.notation(move), m.at, told(rules, state, move, after, seats)))
        state = after
    return Replayed(record, rules, first, state, tuple(played))


# --- importing ----------------------------------------------------------------------------

AS_FINISHED, AS_PRACTICE = "finished", "practice"


@dataclass(frozen=True)
class Imported:
    game_id: int
    watch_id: str
    link: str | None  # a practice game: the player's seat link


def import_record(text: str, as_: str = AS_FINISHED, *, player: PlayerSpec | None = None,
                  seat: int | None = None, bots: dict[int, str] | None = None,
                  now: datetime | None = None) -> Imported:
    """Read, check and replay a record, then store it as a finished game to browse (`as_`
    AS_FINISHED: the record must reach the game's end, and its scores, if given, must be the
    replay's) or as a practice game from its last move (AS_PRACTICE: `player` takes `seat`,
    computer players of `bots` the other seats, by default the game's first). Nothing is
    written unless all of it is right; RecordError says where and why."""
    record = parse_record(text)
    done = replay(record)
    rules, state = done.rules, done.state
    over = rules.to_move(state) is None
    try:
        title = check_title(record.title)
    except SetupProblem as exc:
        raise RecordError(None, f"the title: {exc}") from None
    if as_ == AS_FINISHED:
        if not over:
            raise RecordError(None, f"the record stops after move {len(record.moves)}, before "
                                    "the game's end: import it as a practice game to play it "
                                    "on (--as practice)")
        scores = rules.scores(state)
        if record.scores is not None and record.scores != scores:
            raise RecordError(None, f"the record says the scores were {record.scores}, but the "
                                    f"replay ends with {scores}")
        return _store_finished(done, title, now or utcnow())
    if as_ != AS_PRACTICE:
        raise RecordError(None, f"import a record as {AS_FINISHED} or {AS_PRACTICE}, "
                                f"not {as_!r}")
    if over:
        raise RecordError(None, "the game in this record is over: there is nothing to play on. "
                                "Import it as a finished game to browse it")
    if player is None or seat is None or not 0 <= seat < len(record.players):
        raise RecordError(None, "a practice game needs its player and the seat they take "
                                f"(0 to {len(record.players) - 1})")
    try:
        game_id, link = _practice(rules, done, title, player, seat, bots or {}, None, now)
    except (SetupProblem, Rejected) as exc:
        raise RecordError(None, str(exc)) from None
    with reading() as session:
        return Imported(game_id, session.get(Game, game_id).watch_id, link)


def _store_finished(done: Replayed, title: str, now: datetime) -> Imported:
    record, rules = done.record, done.rules
    first_at = next((at for _s, _n, at, _l in done.played if at), None)
    started = record.started or first_at or now
    ended = record.finished or next((at for _s, _n, at, _l in reversed(done.played) if at),
                                    None) or now
    with writing() as session:
        game = Game(kind=record.kind, title=title, seed=record.seed,
                    start_seat=record.start_seat, turn=len(done.played), status=FINISHED,
                    state_json=rules.dumps(done.state), created_at=started, updated_at=now,
                    turn_started_at=ended, finished_at=ended, deadline_at=None,
                    deadline_hours=record.deadline_hours or 72, origin=ORIGIN_IMPORTED)
        session.add(game)
        session.flush()
        session.add_all(Seat(game_id=game.id, number=p.seat, name=p.name, email="",
                             colour=p.colour, bot=p.bot) for p in record.players)
        session.add_all(MoveRecord(game_id=game.id, number=n, seat=mover, notation=notation,
                                   actor="player", via="cli", lines_json=lines,
                                   created_at=at or ended)
                        for n, (mover, notation, at, lines) in enumerate(done.played))
        return Imported(game.id, game.watch_id, None)


def _practice(rules: GameRules, done: Replayed, title: str, player: PlayerSpec, seat: int,
              bots: dict[int, str], origin_game_id: int | None,
              now: datetime | None) -> tuple[int, str]:
    """A practice game at the end of `done`: `player` in `seat`, computer players elsewhere
    (unrated, in no tournament); returns its id and the player's seat link."""
    default = rules.bots[0] if rules.bots else None
    players = []
    for p in done.record.players:
        if p.seat == seat:
            players.append(player)
            continue
        bot = bots.get(p.seat, default)
        if bot not in rules.bots:
            raise Rejected(_("Choose one of the computer players %(bots)s for each other seat.",
                             bots=", ".join(rules.bots)))
        players.append(bot_player(bot, rules.kind, p.name if p.bot else None))
    opening = Opening(done.record.seed, done.state,
                      tuple((mover, notation, at or utcnow(), lines)
                            for mover, notation, at, lines in done.played),
                      ORIGIN_PRACTICE, origin_game_id)
    created = create_game(players, kind=rules.kind,
                          colours=[p.colour for p in done.record.players],
                          title=title, rated=False, now=now, opening=opening)
    return created.game_id, created.links[seat][2]


# --- play on from here --------------------------------------------------------------------

def practice_title(title: str, at: int) -> str:
    """A practice game's title: the game it comes from and the move it starts after."""
    made = _("%(title)s, practice from move %(n)d", title=title, n=at)
    return made if len(made) <= 200 else made[-200:]


def play_on(token: str, at: object, bots: dict[int, str], now: datetime | None = None) -> str:
    """The seat of `token`, in a finished game, starts a practice game from the position after
    move `at` of its history: itself in its seat, the computer players `bots` (seat number:
    bot name) in the others, unrated and in no tournament. Returns the new seat's link (the
    invitation mail brings it too)."""
    ctx = load_seat(token, log_limit=1)
    game, seat, rules = ctx.game, ctx.seat, ctx.rules
    if game.status != FINISHED:
        raise GameNotRunning(_("You can play on from a game's history once the game is over."))
    raw = str(at or "")
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 9 or int(raw) > game.turn:
        raise Malformed(_("Choose a move of the history to play on from: a number from 0 to "
                          "%(n)d.", n=game.turn))
    at = int(raw)
    now = now or utcnow()
    with reading() as session:
        record = record_for(game.id, FULL, session)
        started = session.exec(
            select(func.count()).select_from(Game).join(Seat, col(Seat.game_id) == Game.id)
            .where(Game.origin == ORIGIN_PRACTICE, Game.created_at > now - timedelta(days=1),
                   func.lower(Seat.email) == seat.email.lower())).one()
    if started >= PRACTICE_PER_DAY:
        raise TooMany(_("You started %(n)d practice games today, the most a day allows: try "
                        "again tomorrow.", n=started))
    done = replay(replace(record, moves=record.moves[:at]))
    if rules.to_move(done.state) is None:
        raise Rejected(_("The game is over after this move: choose an earlier one to play on "
                         "from."))
    others = {s.number: bots.get(s.number) for s in ctx.seats if s.number != seat.number}
    for bot in others.values():
        if bot not in rules.bots:
            raise Malformed(_("Choose one of the computer players %(bots)s for each other "
                              "seat.", bots=", ".join(rules.bots)))
    me = PlayerSpec(seat.name, seat.email, None, seat.language)
    _id, link = _practice(rules, done, practice_title(game.title, at), me, seat.number,
                          others, game.id, now)
    return link
