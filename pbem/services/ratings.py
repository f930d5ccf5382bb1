"""Ratings: each player's (an address's, or a computer player's) strength in each game kind,
estimated by openskill's Plackett-Luce model, which rates free-for-all games of 2 to 6 players.

A rated game (`Game.rated`: an admin's or `create-game --rated` game marked so, a lobby game
posted as rated) is rated once, when it ends (`rate_game`, listening to pbem.services.events' GameFinished:
`on_game_finished`), from its outcome: each seat's place by the rules'
scores and tie-break, tied seats sharing a place. Who is counted for a seat:

- the address that holds the seat at the end: a seat handed over to another person counts for
  the new address only, and the person who left it gets no result;
- a seat that timed out, or whose absent player's turns a computer player made, stays its
  player's, with its place;
- a seat handed to a computer player counts for that computer player ("bot:<name>", shown as
  "Computer (<name>)"), and the person who left it counts as last, below every seat;
- a player (a computer player) in several seats of one game counts once, with its best place.

Sock puppets (issue 42). A result counts only between people who could not be one person by
what the server knows (`suspicions`): two seats whose addresses are one mailbox (`person_of`:
case, +tags, dots where the provider ignores them), whose moves or lobby posts and joins came
from one network (an IPv4 /24 or IPv6 /64), or an address whose first game here began less
than `[games] rating_new_hours` before this one (made for the game). Such a game is kept
(RatedGame, with its places in RatedResult) but changes no rating, and the organisers see why.
A seat whose every move with a choice was the first legal one, and a game over in less than
`[games] rating_fast_minutes`, are flagged for them too (counted). An admin can void a rated
result (`void_result`): every rating of that game kind is computed again from the results
that still count (`recompute`), in the order they were made.

The number shown is the conservative estimate mu - 3 sigma (openskill's ordinal), stored
with mu and sigma. A rating is provisional, and not listed on the ranking, until its player
has counted games against `[games] rating_opponents` (N) distinct established opponents; an
established player has N counted games against N distinct opponents; computer players are
both (`standings`). Each rated game's places and the numbers before and after are kept
(RatedResult): they mark the game as rated, so an organiser's take-back of the last move and
the game's second end change no rating again.
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from flask import current_app
from openskill.models import PlackettLuce
from sqlalchemy import and_, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlmodel import col

from ..games import MoveError, game_kinds, rules_for
from ..ground.db import insert_pending, reading, utcnow, writing
from ..ground.i18n import N_, bot_word, gettext
from ..ground.models import (
    BOT_PLAYER,
    AuditEntry,
    Game,
    LobbySeat,
    MoveRecord,
    OpenGame,
    Profile,
    RatedGame,
    RatedResult,
    Rating,
    Seat,
)
from .errors import NotFound, Rejected
from .events import GameFinished
from .players import name_key, network_of, person_of, reserved_name_keys

MODEL = PlackettLuce()
MAX_SHOWN = 500  # players a ranking page lists
FIRST_MOVES_AT_LEAST = 5  # moves with a choice, every one the first legal: flagged

# Why a rated game is flagged for the organisers; the first three also keep it from counting.
SAME_ADDRESS, SAME_NETWORK, NEW_ADDRESS = "same_address", "same_network", "new_address"
FIRST_MOVES, FAST, VOIDED = "first_moves", "fast", "voided"
NOT_COUNTED = (SAME_ADDRESS, SAME_NETWORK, NEW_ADDRESS)
FLAG_WORDS = {  # translated where shown
    SAME_ADDRESS: N_("two seats' addresses are one mailbox (case, +tags or dots aside)"),
    SAME_NETWORK: N_("two seats played or joined from one network"),
    NEW_ADDRESS: N_("an address new here played it (made for the game?)"),
    FIRST_MOVES: N_("a seat always played the first legal move"),
    FAST: N_("the game was over faster than people play"),
    VOIDED: N_("an admin voided the result"),
}


def ranks_of(rules, state) -> dict[str, int]:
    """Each colour's place in a finished game: by score, then by the rules' tie-break (pieces
    left, where the game has one); tied seats share a place."""
    result = rules.result_table(state)
    if result is not None:
        return dict(zip(result.colours, result.ranks))
    outcome = rules.outcome(state) or {}
    scores, pieces = outcome.get("scores") or {}, outcome.get("pieces_left") or {}
    if isinstance(pieces, (list, tuple)):
        pieces = dict(zip(scores, pieces))
    key = {c: (scores.get(c, 0), pieces.get(c, 0)) for c in scores}
    return {c: 1 + sum(1 for other in key.values() if other > key[c]) for c in key}


def player_key(seat) -> str:
    """Who a seat's result counts for: its computer player, else its address (lower case)."""
    return BOT_PLAYER + seat.bot if seat.bot else seat.email.lower()


def bot_name(player: str) -> str | None:
    return player[len(BOT_PLAYER):] if player.startswith(BOT_PLAYER) else None


@dataclass(frozen=True)
class Place:
    player: str
    seat: int | None  # None: a person who left the seat to a computer player
    rank: int
    name: str
    language: str


def places(game, seats) -> list[Place]:
    """Who counts for each seat of a finished game and with which place (the module's rules);
    one place per player, its best."""
    rules = rules_for(game.kind)
    ranks = ranks_of(rules, rules.loads(game.state_json))
    found: dict[str, Place] = {}
    last = max(ranks.values(), default=0) + 1
    for seat in sorted(seats, key=lambda s: s.number):
        rank = ranks.get(seat.colour)
        if rank is None:
            continue
        candidates = [Place(player_key(seat), seat.number, rank, seat.name, seat.language)]
        if seat.bot and seat.email:  # handed to a computer player: its person counts as last
            candidates.append(Place(seat.email.lower(), None, last, seat.name, seat.language))
        for place in candidates:
            held = found.get(place.player)
            if held is None or place.rank < held.rank:
                found[place.player] = place
    return list(found.values())


def _insert_missing(connection: Connection, table, rows: list[dict], keys: list[str]) -> None:
    """Insert the rows whose `keys` are not there yet (another transaction's too: no error)."""
    if not rows:
        return
    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    connection.execute(dialect.insert(table).values(rows).on_conflict_do_nothing(
        index_elements=keys))


# --- could two seats be one person? -----------------------------------------------------------

@dataclass(frozen=True)
class Suspicion:
    """What the organisers should know of a rated game: flag codes (FLAG_WORDS) and the facts
    behind them (seat numbers as players count them, networks)."""

    flags: tuple[str, ...]
    details: tuple[str, ...]

    @property
    def counted(self) -> bool:
        return not any(f in NOT_COUNTED for f in self.flags)


def _tells_apart(network: str | None) -> bool:
    """Whether a kept network says something of who was there: an IP network that is not the
    loopback (which is all a server behind a proxy sees when `[serve] trusted_proxies` is not
    set), never an unknown or empty client."""
    try:
        return not ipaddress.ip_network(network or "").is_loopback
    except ValueError:
        return False


def _networks(connection: Connection, game, people: list) -> dict[str, set[str]]:
    """The networks each person's (lower-case address's) moves in this game came from, and
    its lobby post or join of the open game that made it."""
    numbers = {seat.number: seat.email.lower() for seat in people}
    found: dict[str, set[str]] = defaultdict(set)
    for number, client in connection.execute(
            select(MoveRecord.seat, MoveRecord.client).where(
                col(MoveRecord.game_id) == game.id, col(MoveRecord.client).is_not(None),
                MoveRecord.actor == "player").distinct()):
        if number in numbers and _tells_apart(client):
            found[numbers[number]].add(client)
    for email, client in connection.execute(
            select(LobbySeat.email, LobbySeat.client).join(
                OpenGame, OpenGame.id == LobbySeat.open_game_id).where(
                OpenGame.game_id == game.id)):
        network = network_of(client)
        if email.lower() in numbers.values() and _tells_apart(network):
            found[email.lower()].add(network)
    return found


def _first_moves(connection: Connection, game, people: list) -> list[int]:
    """The seats (numbers) of people whose every move with a choice, at least
    FIRST_MOVES_AT_LEAST of them, was the first legal move."""
    rules = rules_for(game.kind)
    moves = connection.execute(
        select(MoveRecord.seat, MoveRecord.notation, MoveRecord.actor)
        .where(MoveRecord.game_id == game.id).order_by(MoveRecord.number)).all()
    state = rules.history_state(rules.loads(game.state_json), [])
    chosen: dict[int, list[bool]] = defaultdict(list)
    wanted = {seat.number for seat in people}
    try:
        for seat, notation, actor in moves:
            if actor == "player" and seat in wanted:
                legal = rules.legal(state)
                if len(legal) > 1:
                    chosen[seat].append(notation == legal[0])
            state = rules.apply(state, rules.parse(state, notation))
    except MoveError:  # a log that does not replay (a game set up by hand): no verdict
        return []
    return sorted(seat for seat, firsts in chosen.items()
                  if len(firsts) >= FIRST_MOVES_AT_LEAST and all(firsts))


def suspicions(connection: Connection, game, seats, now: datetime) -> Suspicion:
    """Why the result of a finished rated game should not count, or should be looked at."""
    config = current_app.config
    people = [seat for seat in seats if seat.email and not seat.bot]
    flags: list[str] = []
    details: list[str] = []
    addresses = {seat.email.lower() for seat in seats if seat.email}
    by_person: dict[str, set[str]] = defaultdict(set)
    for address in addresses:
        by_person[person_of(address)].add(address)
    shared = sorted(person for person, held in by_person.items() if len(held) > 1)
    if shared:
        flags.append(SAME_ADDRESS)
        details.append(f"{SAME_ADDRESS}: " + ", ".join(shared))
    networks = _networks(connection, game, people)
    seen: dict[str, str] = {}
    both = set()
    for address in sorted(networks):
        for network in networks[address]:
            if network in seen and seen[network] != address:
                both.add(network)
            seen.setdefault(network, address)
    if both:
        flags.append(SAME_NETWORK)
        details.append(f"{SAME_NETWORK}: " + ", ".join(sorted(both)))
    hours = config["GAMES_RATING_NEW_HOURS"]
    persons = sorted({seat.email.lower() for seat in people})
    if hours and len(persons) > 1:
        firsts = dict(connection.execute(
            select(func.lower(Seat.email), func.min(Game.created_at))
            .join(Game, col(Game.id) == Seat.game_id)
            .where(func.lower(Seat.email).in_(persons)).group_by(func.lower(Seat.email))).all())
        new = [number + 1 for number, address in sorted((s.number, s.email.lower())
                                                        for s in people)
               if address in firsts and _aware(game.created_at) - _aware(firsts[address])
               < timedelta(hours=hours)]
        if new:
            flags.append(NEW_ADDRESS)
            details.append(f"{NEW_ADDRESS}: seats " + ", ".join(map(str, new)))
    firsts_played = _first_moves(connection, game, people)
    if firsts_played:
        flags.append(FIRST_MOVES)
        details.append(f"{FIRST_MOVES}: seats " + ", ".join(str(n + 1) for n in firsts_played))
    took = _aware(now) - _aware(game.created_at)
    if took < timedelta(minutes=config["GAMES_RATING_FAST_MINUTES"]):
        flags.append(FAST)
        details.append(f"{FAST}: {int(took.total_seconds())} s")
    return Suspicion(tuple(flags), tuple(details))


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


# --- names ----------------------------------------------------------------------------------------

def name_is_taken(session, name: str, email: str) -> bool:
    """Whether `name` is a computer player's, or another rated person's (than `email`), told
    apart by `name_key` (case, spaces and look-alike characters aside)."""
    key = name_key(name)
    if key in reserved_name_keys():
        return True
    rated = select(Rating.player).where(Rating.player == Profile.email).exists()
    return any(name_key(other) == key for (other,) in session.execute(
        select(Profile.name).where(Profile.email != email.lower(), rated)))


def _unique_names(connection: Connection, emails: list[str], now: datetime) -> None:
    """Profiles of people rated for the first time keep their name only if no other rated
    person or computer player has it; else they are named after their public id."""
    for email in emails:
        profile = connection.execute(select(Profile.id, Profile.name, Profile.public_id).where(
            Profile.email == email)).first()
        if profile is not None and name_is_taken(connection, profile.name, email):
            connection.execute(Profile.__table__.update().where(Profile.id == profile.id)
                               .values(name=f"Player {profile.public_id[:6]}",
                                       updated_at=now))


# --- rating a game --------------------------------------------------------------------------------

def on_game_finished(event: GameFinished) -> None:
    """A game finished: rate it, if it is rated (listens to GameFinished)."""
    rate_game(event.session, event.game, event.now)


def rate_game(session, game, now: datetime | None = None) -> bool:
    """Rate a finished rated game (in the transaction that finished it; `session` a Session or
    the move path's Writer, `game` its row); False when it is not rated, was rated already,
    or has fewer than two players to compare. A game whose players could be one person is
    kept with its places but changes no rating (RatedGame.counted)."""
    if not game.rated:
        return False
    connection = session.connection()
    if connection.execute(select(RatedResult.id).where(RatedResult.game_id == game.id)
                          .limit(1)).first() is not None:
        return False
    seats = connection.execute(select(Seat.__table__).where(Seat.game_id == game.id)).all()
    placed = places(game, seats)
    if len(placed) < 2:
        return False
    now = now or utcnow()
    insert_pending(session, MoveRecord)  # this game's last move too
    suspicion = suspicions(connection, game, seats, now)
    start = MODEL.rating()
    known = {p for (p,) in connection.execute(select(Rating.player).where(
        col(Rating.kind).in_(list(game_kinds())),
        col(Rating.player).in_([p.player for p in placed])))}
    _insert_missing(connection, Rating.__table__, [
        {"kind": game.kind, "player": p.player, "mu": start.mu, "sigma": start.sigma,
         "ordinal": start.ordinal(), "games": 0, "updated_at": now}
        for p in placed], ["kind", "player"])
    # People rated get a profile (a public page): their name and language from the seat.
    _insert_missing(connection, Profile.__table__, [
        {"email": p.player, "public_id": Profile().public_id, "name": p.name,
         "language": p.language, "notify": "every", "talk_notify": "each", "chosen": False,
         "created_at": now, "updated_at": now}
        for p in placed if not p.player.startswith(BOT_PLAYER)], ["email"])
    _unique_names(connection, sorted(p.player for p in placed if p.player not in known
                                     and not p.player.startswith(BOT_PLAYER)), now)
    connection.execute(RatedGame.__table__.insert().values(
        game_id=game.id, kind=game.kind, counted=suspicion.counted,
        flags=" ".join(suspicion.flags), detail="\n".join(suspicion.details), created_at=now))
    table = Rating.__table__
    held = {row.player: row for row in connection.execute(
        select(table).where(table.c.kind == game.kind,
                            table.c.player.in_(sorted(p.player for p in placed)))
        .order_by(table.c.player).with_for_update())}
    if suspicion.counted:
        teams = [[MODEL.create_rating([held[p.player].mu, held[p.player].sigma],
                                      name=p.player)] for p in placed]
        after_of = [after for [after] in MODEL.rate(teams, ranks=[p.rank for p in placed])]
    else:
        after_of = [None] * len(placed)
    for place, after in zip(placed, after_of):
        before = held[place.player]
        if after is not None:
            connection.execute(table.update().where(table.c.id == before.id).values(
                mu=after.mu, sigma=after.sigma, ordinal=after.ordinal(),
                games=before.games + 1, updated_at=now))
        connection.execute(RatedResult.__table__.insert().values(
            game_id=game.id, kind=game.kind, player=place.player, seat=place.seat,
            rank=place.rank, ordinal_before=before.ordinal,
            ordinal_after=after.ordinal() if after is not None else before.ordinal,
            created_at=now))
    return True


def recompute(connection: Connection, kind: str, now: datetime) -> None:
    """Every rating of game `kind` computed again from the results that count, game after game
    in the order they were rated (each result's before and after too)."""
    table = Rating.__table__
    held = {row.player: row for row in connection.execute(
        select(table).where(table.c.kind == kind).order_by(table.c.player).with_for_update())}
    games = connection.execute(select(RatedGame.game_id, RatedGame.counted).where(
        RatedGame.kind == kind).order_by(RatedGame.created_at, RatedGame.game_id)).all()
    results: dict[int, list] = defaultdict(list)
    for row in connection.execute(select(RatedResult.id, RatedResult.game_id,
                                         RatedResult.player, RatedResult.rank)
                                  .where(RatedResult.kind == kind).order_by(RatedResult.id)):
        results[row.game_id].append(row)
    current = {player: MODEL.rating() for player in held}
    played = dict.fromkeys(held, 0)
    for game_id, counted in games:
        rows = [r for r in results.get(game_id, []) if r.player in current]
        before = [current[r.player] for r in rows]
        if counted and len(rows) > 1:
            teams = [[MODEL.create_rating([b.mu, b.sigma], name=r.player)]
                     for r, b in zip(rows, before)]
            after = [a for [a] in MODEL.rate(teams, ranks=[r.rank for r in rows])]
            for r, a in zip(rows, after):
                current[r.player], played[r.player] = a, played[r.player] + 1
        else:
            after = before
        for r, b, a in zip(rows, before, after):
            connection.execute(RatedResult.__table__.update().where(
                RatedResult.id == r.id).values(ordinal_before=b.ordinal(),
                                               ordinal_after=a.ordinal()))
    for player, row in held.items():
        rating = current[player]
        if (row.mu, row.sigma, row.games) != (rating.mu, rating.sigma, played[player]):
            connection.execute(table.update().where(table.c.id == row.id).values(
                mu=rating.mu, sigma=rating.sigma, ordinal=rating.ordinal(),
                games=played[player], updated_at=now))


def void_result(admin_id: int, game_id: object, reason: str,
                now: datetime | None = None) -> None:
    """An admin takes a rated game's result back: it counts no more, every rating of its game
    kind is computed again without it, and the audit log says who, why and the numbers before
    and after. Rejected when it was voided already or the reason is missing; NotFound for a
    game that was not rated."""
    text = str(game_id)
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise NotFound(gettext("There is no such rated game."))
    reason = (reason or "").strip()
    if not reason:
        raise Rejected(gettext("Say why the result is voided; nothing was changed."))
    now = now or utcnow()
    with writing() as session:
        connection = session.connection()
        rated = connection.execute(select(RatedGame.__table__).where(
            col(RatedGame.game_id) == int(text)).with_for_update()).first()
        if rated is None:
            raise NotFound(gettext("There is no such rated game."))
        if rated.voided_at is not None:
            raise Rejected(gettext("This result was voided already; nothing was changed."))
        players = [p for (p,) in connection.execute(select(RatedResult.player).where(
            RatedResult.game_id == rated.game_id).order_by(RatedResult.player))]

        def numbers() -> dict[str, float]:
            return dict(connection.execute(select(Rating.player, Rating.ordinal).where(
                col(Rating.kind) == rated.kind, col(Rating.player).in_(players))).all())

        before = numbers()
        flags = [f for f in rated.flags.split() if f] + [VOIDED]
        connection.execute(RatedGame.__table__.update().where(
            RatedGame.game_id == rated.game_id).values(counted=False, voided_at=now,
                                                      flags=" ".join(flags)))
        recompute(connection, rated.kind, now)
        after = numbers()
        session.add(AuditEntry(admin_id=admin_id, game_id=rated.game_id, action="void_rating",
                               reason=reason[:2000], created_at=now, detail="; ".join(
                                   f"{p}: {before.get(p, 0):.2f} -> {after.get(p, 0):.2f}"
                                   for p in players)))


# --- who is established, who is listed ------------------------------------------------------------

@dataclass(frozen=True)
class Standing:
    """A player's counted games in one kind, against whom, and whether they are established
    (N counted games against N distinct opponents) and listed (counted games against N
    distinct established opponents); a computer player is both."""

    games: int
    opponents: frozenset[str]
    established: bool
    listed: bool


def standings(session, kind: str) -> dict[str, Standing]:
    """The standing of every player with a counted result in game `kind`."""
    needed = current_app.config["GAMES_RATING_OPPONENTS"]
    rows = session.execute(select(RatedResult.game_id, RatedResult.player).join(
        RatedGame, RatedGame.game_id == RatedResult.game_id).where(
        col(RatedResult.kind) == kind, col(RatedGame.counted).is_(True))).all()
    in_game: dict[int, list[str]] = defaultdict(list)
    for game_id, player in rows:
        in_game[game_id].append(player)
    games: dict[str, int] = defaultdict(int)
    opponents: dict[str, set[str]] = defaultdict(set)
    for players in in_game.values():
        if len(players) < 2:
            continue
        for player in players:
            games[player] += 1
            opponents[player].update(p for p in players if p != player)
    established = {p for p in games if p.startswith(BOT_PLAYER)
                   or games[p] >= needed and len(opponents[p]) >= needed}
    return {p: Standing(games[p], frozenset(opponents[p]), p in established,
                        p.startswith(BOT_PLAYER)
                        or len(opponents[p] & established) >= needed) for p in games}


def is_listed(session, kind: str, player: str) -> bool:
    held = standings(session, kind).get(player)
    return held is not None and held.listed


# --- the ranking page ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Ranked:
    """One line of a ranking: the place, the name (a profile's, or a computer player's), the
    public id of a person's page, the shown number and counted games."""

    place: int
    name: str
    public_id: str | None
    bot: str | None
    ordinal: float
    games: int


@dataclass(frozen=True)
class Ranking:
    """The listed players, and how many more have a provisional rating (not listed)."""

    lines: list[Ranked]
    provisional: int


def ranking(kind: str) -> Ranking:
    """Every listed player of game `kind`, the highest shown number first; NotFound for a kind
    this server does not have."""
    if kind not in game_kinds():
        raise NotFound(gettext("There is no such game here."))
    with reading() as session:
        standing = standings(session, kind)
        listed = sorted(p for p, held in standing.items() if held.listed)
        rows = session.execute(
            select(Rating.player, Rating.ordinal, Rating.games, Profile.name, Profile.public_id)
            .select_from(Rating.__table__)
            .outerjoin(Profile, and_(col(Profile.email) == Rating.player))
            .where(col(Rating.kind) == kind, col(Rating.player).in_(listed))
            .order_by(col(Rating.ordinal).desc(), col(Rating.player)).limit(MAX_SHOWN)).all()
        provisional = sum(1 for held in standing.values() if not held.listed)
    lines = []
    for n, (player, ordinal, games, name, public_id) in enumerate(rows, start=1):
        bot = bot_name(player)
        shown_name = gettext("Computer (%(bot)s)", bot=bot_word(bot)) if bot else (name or "?")
        lines.append(Ranked(n, shown_name, None if bot else public_id, bot, ordinal, games))
    return Ranking(lines, provisional)


def rules_title(kind: str) -> str:
    return rules_for(kind).title


# --- the organisers' view -------------------------------------------------------------------------

@dataclass(frozen=True)
class RatedEntry:
    """A rated game as the admin's ratings page shows it."""

    game_id: int
    title: str
    kind_title: str
    counted: bool
    flags: tuple[str, ...]
    detail: str
    created_at: datetime
    voided_at: datetime | None
    players: list[tuple[str, int, float, float]]  # address or computer player, place, before, after


MAX_ADMIN_SHOWN = 200


def rated_games(flagged_only: bool = False) -> list[RatedEntry]:
    """The rated games, the newest first (only the flagged ones, when asked)."""
    with reading() as session:
        query = select(RatedGame, Game.title).join(Game, Game.id == RatedGame.game_id)
        if flagged_only:
            query = query.where(RatedGame.flags != "")
        found = session.execute(query.order_by(col(RatedGame.created_at).desc(),
                                               col(RatedGame.game_id).desc())
                                .limit(MAX_ADMIN_SHOWN)).all()
        results: dict[int, list] = defaultdict(list)
        for r in session.execute(select(RatedResult).where(col(RatedResult.game_id).in_(
                [g.game_id for g, _ in found]))
                .order_by(col(RatedResult.rank), col(RatedResult.player))).scalars():
            results[r.game_id].append((r.player, r.rank, r.ordinal_before, r.ordinal_after))
    kinds = game_kinds()
    return [RatedEntry(g.game_id, title, rules_for(g.kind).title if g.kind in kinds else g.kind,
                       g.counted, tuple(g.flags.split()), g.detail, g.created_at, g.voided_at,
                       results.get(g.game_id, [])) for g, title in found]
