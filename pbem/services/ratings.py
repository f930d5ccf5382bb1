"""Ratings: each player's (an address's, or a computer player's) strength in each game kind,
estimated by openskill's Plackett-Luce model, which rates free-for-all games of 2 to 6 players.

A rated game (`Game.rated`: an admin's or `create-game --rated` game marked so, a lobby game
posted as rated) is rated once, when it ends (`rate_game`, from the one hook
`pbem.services.finished.on_game_finished`), from its outcome: each seat's place by the rules'
scores and tie-break, tied seats sharing a place. Who is counted for a seat:

- the address that holds the seat at the end: a seat handed over to another person counts for
  the new address only, and the person who left it gets no result;
- a seat that timed out, or whose absent player's turns a computer player made, stays its
  player's, with its place;
- a seat handed to a computer player counts for that computer player ("bot:<name>", shown as
  "Computer (<name>)"), and the person who left it counts as last, below every seat;
- a player (a computer player) in several seats of one game counts once, with its best place.

The number shown is the conservative estimate mu - 3 sigma (openskill's ordinal), stored
with mu and sigma; a player with fewer than PROVISIONAL_GAMES rated games is marked
provisional. Each rated game's places and the numbers before and after are kept
(RatedResult): they mark the game as rated, so an organiser's take-back of the last move and
the game's second end change no rating again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from openskill.models import PlackettLuce
from sqlalchemy import and_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from ..games import game_kinds, rules_for
from ..ground.db import reading, utcnow
from ..ground.i18n import bot_word, gettext
from ..ground.models import BOT_PLAYER, Profile, RatedResult, Rating, Seat
from .errors import NotFound
from .profiles import PROVISIONAL_GAMES, ranks_of

MODEL = PlackettLuce()
MAX_SHOWN = 500  # players a ranking page lists


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


def rate_game(session, game, now: datetime | None = None) -> bool:
    """Rate a finished rated game (in the transaction that finished it; `session` a Session or
    the move path's Writer, `game` its row); False when it is not rated, was rated already,
    or has fewer than two players to compare."""
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
    start = MODEL.rating()
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
    table = Rating.__table__
    held = {row.player: row for row in connection.execute(
        select(table).where(table.c.kind == game.kind,
                            table.c.player.in_(sorted(p.player for p in placed)))
        .order_by(table.c.player).with_for_update())}
    teams = [[MODEL.create_rating([held[p.player].mu, held[p.player].sigma], name=p.player)]
             for p in placed]
    rated = MODEL.rate(teams, ranks=[p.rank for p in placed])
    for place, [after] in zip(placed, rated):
        before = held[place.player]
        connection.execute(table.update().where(table.c.id == before.id).values(
            mu=after.mu, sigma=after.sigma, ordinal=after.ordinal(), games=before.games + 1,
            updated_at=now))
        connection.execute(RatedResult.__table__.insert().values(
            game_id=game.id, kind=game.kind, player=place.player, seat=place.seat,
            rank=place.rank, ordinal_before=before.ordinal, ordinal_after=after.ordinal(),
            created_at=now))
    return True


# --- the ranking page ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Ranked:
    """One line of a ranking: the place, the name (a profile's, or a computer player's), the
    public id of a person's page, the shown number, games and whether it is provisional."""

    place: int
    name: str
    public_id: str | None
    bot: str | None
    ordinal: float
    games: int
    provisional: bool


def ranking(kind: str) -> list[Ranked]:
    """Every rated player of game `kind`, the highest shown number first; NotFound for a kind
    this server does not have."""
    if kind not in game_kinds():
        raise NotFound(gettext("There is no such game here."))
    with reading() as session:
        rows = session.execute(
            select(Rating.player, Rating.ordinal, Rating.games, Profile.name, Profile.public_id)
            .select_from(Rating.__table__)
            .outerjoin(Profile, and_(Profile.email == Rating.player))
            .where(Rating.kind == kind).order_by(Rating.ordinal.desc(), Rating.player)
            .limit(MAX_SHOWN)).all()
    lines = []
    for n, (player, ordinal, games, name, public_id) in enumerate(rows, start=1):
        bot = bot_name(player)
        shown_name = gettext("Computer (%(bot)s)", bot=bot_word(bot)) if bot else (name or "?")
        lines.append(Ranked(n, shown_name, None if bot else public_id, bot, ordinal, games,
                            games < PROVISIONAL_GAMES))
    return lines


def rules_title(kind: str) -> str:
    return rules_for(kind).title
