"""Tournaments: a league of groups with promotion and relegation between seasons, or a Swiss
or round-robin event. The tables and standings themselves are pure (pbem.services.pairings);
this module keeps them in the database, starts the games, counts the results and moves the
tournament on.

- An organiser creates a tournament on the admin pages (`create_tournament`): its players
  are entered and its first round's games are started at once, each through `create_game`
  (the tournament's game, rules and time control; the usual invitations), with a short round
  mail to each player. A round's games are made TABLES_AT_ONCE to a transaction (the first in
  the one that begins the round, the rest by `finish_round` or, should that stop, a
  TOURNAMENT_TABLES chore), so that making a big round never holds players' moves for long;
  a round counts as over only once it is made whole.
- When a game ends, `game_ended` runs: the move path announces a finished game
  (pbem.services.events' GameFinished, listened to by `on_game_finished`), an organiser's
  abort calls it. The game's result is written beside its table, and when it was the
  round's last game a `Chore` (TOURNAMENT_ROUND) is queued, due at once. The scheduler claims it atomically
  (pbem.services.talk.run_due_chores), so one scheduler run acts on it: `round_over` starts the
  next Swiss round, ends the event, or closes a league's season. Acting twice is harmless:
  it acts only while the current round's games are all decided and the next is not made.
- A league's next season starts when an organiser starts it (`start_next_season`: players
  who leave, new players) or by itself `season_days` after the season ended (a
  TOURNAMENT_SEASON chore).
- An aborted game counts as played (its players have met) and gives nobody points or score.
  An organiser who takes back the last turn of a finished game reopens it while its round is
  the current one: its result no longer counts, and the round waits for it to end again.
  Once the round is over (the next round was made, the event or season ended, or the
  organiser closed it), the take-back is refused (`reopening`): a round's moving on and the
  event's end then always follow from the state of every one of its games.

Player keys are lower-case addresses; pages and mails to others show names and each
player's public id (Entrant.public_id), never an address; a player with a profile is named by
it (Profile.name) and linked to its public page (Profile.public_id).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from fractions import Fraction

from flask import current_app
from flask_babel import lazy_gettext as L_
from sqlalchemy import func, insert, update
from sqlalchemy import select as core_select
from sqlmodel import Session, col, select

from ..games import SetupProblem, rules_for
from ..ground import i18n
from ..ground.db import get_engine, get_row, is_status, reading, utcnow, writing
from ..ground.i18n import _
from ..ground.models import (
    ABORTED,
    FINISHED,
    PENDING,
    T_BETWEEN,
    T_CLOSED,
    T_FINISHED,
    T_RUNNING,
    TOURNAMENT_ROUND,
    TOURNAMENT_SEASON,
    TOURNAMENT_TABLES,
    AuditEntry,
    Chore,
    Entrant,
    Game,
    Profile,
    Tournament,
    TournamentTable,
)
from . import mail, pairings
from .creating import create_game
from .deadlines import TimeControl, parse_hours
from .errors import Malformed, NotFound, Rejected, check_reason
from .events import GameFinished
from .mail import kinds
from .mail.sending import send
from .pairings import LEAGUE, ROUND_ROBIN, SWISS, Played, TableProblem
from .players import PlayerSpec, check_title

MAX_PLAYERS = 200
MAX_ROUNDS = 20
MAX_NAME = 60


# --- results ------------------------------------------------------------------------------------

def game_result(kind: str, state_json: str) -> dict | None:
    """{"ranks": [...], "scores": [...]} in seat order for a finished game: ranked by score,
    then by the game's own tie-break (pieces left, where the game has one); None while it
    goes on."""
    rules = rules_for(kind)
    outcome = rules.outcome(rules.loads(state_json))
    if outcome is None:
        return None
    scores = outcome.get("scores") or outcome.get("gold") or {}
    colours = list(scores)
    tie = outcome.get("pieces_left") or {}
    key = [(scores[c], tie.get(c, 0)) for c in colours]
    return {"ranks": [1 + sum(1 for other in key if other > mine) for mine in key],
            "scores": [scores[c] for c in colours]}


def on_game_finished(event: GameFinished) -> None:
    """A game finished: a tournament's game counts (listens to GameFinished)."""
    game_ended(event.session, event.game, event.now)


def game_ended(session, game, now: datetime | None = None) -> None:
    """A game ended (finished, or aborted by an organiser), in the caller's write transaction
    (an ORM session or the move path's Writer: only its connection is used). A tournament's
    game gets its result; the round's last one queues the round's end for the scheduler."""
    connection = session.connection()
    table = connection.execute(core_select(TournamentTable.id, TournamentTable.tournament_id,
                                           TournamentTable.season, TournamentTable.round)
                               .where(TournamentTable.game_id == game.id)).first()
    if table is None:
        return
    now = now or utcnow()
    result = {"ranks": None} if game.status == ABORTED else \
        game_result(game.kind, game.state_json)
    if result is None:
        return
    # The tournament locked first: two of its games ending at once count one after the other,
    # so the later one sees the earlier's result.
    connection.execute(core_select(Tournament.id).where(Tournament.id == table.tournament_id)
                       .with_for_update())
    connection.execute(update(TournamentTable).where(TournamentTable.id == table.id)
                       .values(result_json=json.dumps(result), decided_at=now))
    open_games = connection.execute(
        core_select(func.count()).select_from(TournamentTable)
        .where(TournamentTable.tournament_id == table.tournament_id,
               TournamentTable.season == table.season, TournamentTable.round == table.round,
               col(TournamentTable.result_json).is_(None))).scalar_one()
    if open_games == 0:
        _queue_chore(connection, TOURNAMENT_ROUND, table.tournament_id, now)


ROUND_MOVED_ON = ("this game is one of round {round} of the tournament {name}, and the "
                  "tournament has moved on from that round ({what}): its result is in the "
                  "standings and in what was made from them, so its last turn cannot be taken "
                  "back. A take-back is possible until the round's last game has ended and the "
                  "next round begins.")


def reopening(session: Session, game: Game) -> None:
    """A finished game is about to be reopened by a take-back (pbem.services.takeback), in the
    caller's transaction with the game locked. A tournament's game whose round is over (the
    next round was made from its result, the season or the event ended, or the organiser
    closed it) is refused (Rejected): reopening it would leave standings and pairings made
    from a result that no longer stands, and an event finished with a game running. Within
    its round it reopens, and its result no longer counts: the round waits for it to end
    again (its chore, if queued, finds the round undecided and changes nothing)."""
    table = session.exec(select(TournamentTable)
                         .where(TournamentTable.game_id == game.id)).first()
    if table is None:
        return
    t = get_row(session, Tournament, table.tournament_id, with_for_update=True)
    if t.status != T_RUNNING or (table.season, table.round) != (t.season, t.round):
        what = {T_FINISHED: "it is finished", T_CLOSED: "the organiser closed it",
                T_BETWEEN: "its season is over"}.get(t.status, "its next round has begun")
        label = f"{table.round}" if t.format != LEAGUE else f"{table.round} of season " \
            f"{table.season}"
        raise Rejected(ROUND_MOVED_ON.format(round=label, name=t.name, what=what))
    table.result_json, table.decided_at = None, None
    session.add(table)


def is_tournament_game(session: Session, game: Game) -> bool:
    """Whether the game is one of a tournament's."""
    return session.exec(select(TournamentTable.id)
                        .where(TournamentTable.game_id == game.id)).first() is not None


def _queue_chore(connection, kind: str, tournament_id: int, due: datetime) -> None:
    waiting = connection.execute(core_select(Chore.id).where(
        is_status(Chore.status, PENDING), Chore.kind == kind,
        Chore.ref_id == tournament_id)).first()
    if waiting is None:
        connection.execute(insert(Chore).values(kind=kind, ref_id=tournament_id, due_at=due,
                                                status=PENDING))


# --- reading a tournament -----------------------------------------------------------------------

def points_text(value: Fraction) -> str:
    """2, 2½, ½: points as players write them."""
    whole, part = divmod(value, 1)
    if part == 0:
        return str(int(whole))
    if part == Fraction(1, 2):
        return f"{int(whole)}½" if whole else "½"
    return f"{float(value):.2f}"


@dataclass
class Row:
    place: int
    name: str
    public_id: str
    points: str
    tie_break: str
    score: int
    games: int
    email: str = field(repr=False, default="")  # for the players' own mail; never shown
    profile_id: str = ""  # the player's Profile.public_id (their public page), "" if none
    twin: bool = False  # another player of the tournament has the same name: show public_id


@dataclass
class Section:
    """One standings table: a league group's (league, group from 1) or the whole event's."""

    league: int
    group: int
    rows: list[Row]
    games: list[dict]


def _played(t: TournamentTable) -> Played | None:
    if t.result_json is None:
        return None
    result = json.loads(t.result_json)
    ranks = result.get("ranks")
    return Played(tuple(json.loads(t.players_json)), None if ranks is None else tuple(ranks),
                  tuple(result.get("scores") or ()))


def _decided(rows: list[TournamentTable], games: dict[int, Game]) -> list[Played]:
    """The results that count: of games still over (a turn taken back reopens one)."""
    out = []
    for t in rows:
        played = _played(t)
        if played is not None and games[t.game_id].status in (FINISHED, ABORTED):
            out.append(played)
    return out


@dataclass
class Overview:
    tournament: Tournament
    sections: list[Section]
    entrants: dict[str, Entrant]


def _sections(session: Session, t: Tournament, season: int | None = None) -> list[Section]:
    season = season or t.season
    query = select(TournamentTable).where(TournamentTable.tournament_id == t.id)
    if t.format == LEAGUE:
        query = query.where(TournamentTable.season == season)
    rows = list(session.exec(query.order_by(col(TournamentTable.round), col(TournamentTable.league),
                                            col(TournamentTable.group_number),
                                            col(TournamentTable.number))))
    games = {g.id: g for g in session.exec(select(Game).where(
        col(Game.id).in_([r.game_id for r in rows])))} if rows else {}
    entrants = {e.email: e for e in session.exec(select(Entrant).where(
        Entrant.tournament_id == t.id))}
    # A player with a profile is named by it and linked to its public page; one without is
    # named as the organiser entered them.
    profiles = {p.email: p for p in session.exec(select(Profile).where(
        col(Profile.email).in_(list(entrants))))} if entrants else {}

    def named(email: str) -> tuple[str, str, str]:
        """(name, Entrant.public_id, Profile.public_id or "") of one player."""
        e, p = entrants.get(email), profiles.get(email)
        return (p.name if p else e.name if e else "?", e.public_id if e else "",
                p.public_id if p else "")

    # Names are shown alone; the public id beside one only where two players share it.
    name_count = Counter(named(email)[0].casefold() for email in entrants)

    def twin(name: str) -> bool:
        return name_count[name.casefold()] > 1

    groups: dict[tuple[int, int], list[TournamentTable]] = {}
    for r in rows:
        groups.setdefault((r.league, r.group_number), []).append(r)
    if t.format != LEAGUE:
        everyone = [e.email for e in entrants.values() if e.active or any(
            e.email in json.loads(r.players_json) for r in rows)]
        groups = {(0, 0): rows}
    sections = []
    for (league, group), members in sorted(groups.items()):
        if t.format == LEAGUE:
            players = list(dict.fromkeys(p for r in members for p in json.loads(r.players_json)))
        else:
            players = everyone
        standing = pairings.standings(players, _decided(members, games), t.seed,
                                    league=t.format == LEAGUE)
        shown = []
        for s in standing:
            name, public_id, profile_id = named(s.player)
            shown.append(Row(s.place, name, public_id, points_text(s.points),
                             points_text(s.tie_break), s.score, s.games, s.player, profile_id,
                             twin(name)))
        games_shown = []
        for r in members:
            game = games[r.game_id]
            played = _played(r) if game.status in (FINISHED, ABORTED) else None
            players = json.loads(r.players_json)
            games_shown.append({
                "round": r.round, "number": r.number, "watch_id": game.watch_id,
                "title": game.title, "status": game.status,
                "players": [(*named(p), None if played is None or played.ranks is None
                             else played.ranks[n], twin(named(p)[0]))
                            for n, p in enumerate(players)]})
        sections.append(Section(league, group, shown, games_shown))
    return sections


def overview(tournament_id: int | None = None, public_id: str | None = None,
             season: int | None = None, public: bool = False) -> Overview | None:
    """A tournament with its standings and games, for the pages; None if there is none.
    `public`: for everyone's page, with no address in it at all (no entrants, no row's)."""
    with reading() as session:
        if public_id is not None:
            t = session.exec(select(Tournament).where(Tournament.public_id == public_id)).first()
        else:
            t = get_row(session, Tournament, tournament_id)
        if t is None:
            return None
        entrants = {e.email: e for e in session.exec(select(Entrant).where(
            col(Entrant.tournament_id) == t.id).order_by(col(Entrant.id)))}
        sections = _sections(session, t, season)
    if public:
        for section in sections:
            for row in section.rows:
                row.email = ""
        entrants = {}
    return Overview(t, sections, entrants)


def all_tournaments() -> list[Tournament]:
    with reading() as session:
        return list(session.exec(select(Tournament).order_by(col(Tournament.id).desc())))


# --- creating -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Setup:
    """A tournament as an organiser asks for it, checked by `check_setup`."""

    name: str
    kind: str
    variant: str | None
    format: str
    time: TimeControl
    players: list[PlayerSpec]
    table_size: int
    promotion: int = 1
    rounds: int = 1
    cycles: int = 1
    season_days: int | None = None
    rated: bool = False


def check_setup(setup: Setup) -> Setup:
    """The setup as given, or SetupProblem saying what to change."""
    rules = rules_for(setup.kind)
    name = check_title(setup.name)
    if len(name) > MAX_NAME:
        raise SetupProblem(_("the tournament's name must be at most %(most)d characters",
                             most=MAX_NAME))
    if setup.format not in pairings.FORMATS:
        raise SetupProblem(_("choose a league, a Swiss event or a round-robin"))
    if setup.variant is not None and setup.variant not in rules.variants:
        raise SetupProblem(_("choose one of the rules offered"))
    if not rules.min_players <= setup.table_size <= rules.max_players:
        raise SetupProblem(_("%(game)s is for %(least)d to %(most)d players at a table",
                             game=rules.title, least=rules.min_players,
                             most=rules.max_players))
    emails = [p.email.lower() for p in setup.players]
    if len(set(emails)) != len(emails):
        raise SetupProblem(_("each player needs their own email address"))
    if any(p.bot is not None for p in setup.players):
        raise SetupProblem(_("tournaments are for people: enter each as 'Name <email>'"))
    if not rules.min_players <= len(setup.players) <= MAX_PLAYERS:
        raise SetupProblem(_("a tournament of %(game)s needs %(least)d to %(most)d players",
                             game=rules.title, least=rules.min_players, most=MAX_PLAYERS))
    if not 0 <= setup.promotion <= 2 or not 1 <= setup.cycles <= 3:
        raise SetupProblem(_("promotion is 0 to 2 players a group, and a group plays its "
                             "games 1 to 3 times"))
    if not 1 <= setup.rounds <= MAX_ROUNDS:
        raise SetupProblem(_("a Swiss event has 1 to %(most)d rounds", most=MAX_ROUNDS))
    if setup.season_days is not None and not 1 <= setup.season_days <= 60:
        raise SetupProblem(_("the next season starts by itself 1 to 60 days after the last "
                             "one ended, or leave it empty"))
    try:
        pairings.table_sizes(len(setup.players), setup.table_size, rules.min_players,
                           rules.max_players)
        if setup.format == ROUND_ROBIN:
            pairings.round_robin([p.email for p in setup.players], setup.table_size, "check")
    except TableProblem as exc:
        raise SetupProblem(str(exc)) from None
    return Setup(name, setup.kind, setup.variant, setup.format, setup.time,
                 list(setup.players), setup.table_size, setup.promotion, setup.rounds,
                 setup.cycles, setup.season_days, bool(setup.rated))


def create_tournament(admin_id: int, setup: Setup, now: datetime | None = None) -> int:
    """Create the tournament, enter its players and start its first round, in one
    transaction with its audit entry; returns its id."""
    setup = check_setup(setup)
    now = now or utcnow()
    with writing() as session:
        t = Tournament(name=setup.name, kind=setup.kind, variant=setup.variant,
                       format=setup.format, table_size=setup.table_size,
                       promotion=setup.promotion, rounds=setup.rounds if setup.format == SWISS
                       else 1, cycles=setup.cycles, season_days=setup.season_days,
                       rated=bool(setup.rated), deadline_hours=setup.time.deadline_hours,
                       reminder_hours=setup.time.reminders_text,
                       weekend_pause=setup.time.weekend_pause, timezone=setup.time.timezone,
                       created_at=now)
        session.add(t)
        session.flush()
        language = current_app.config["GAMES_LANGUAGE"]
        session.add_all([Entrant(tournament_id=t.id, email=p.email.lower(), name=p.name,
                                 language=p.language or language) for p in setup.players])
        session.flush()
        _start_round(session, t, now)
        _audit(session, admin_id, t, "tournament create",
               f"{setup.format}, {rules_for(setup.kind).title}, {len(setup.players)} players"
               + (", rated" if t.rated else ""))
        tournament_id = t.id
    finish_round(tournament_id, now)
    return tournament_id


def _audit(session: Session, admin_id: int | None, t: Tournament, action: str,
           detail: str, reason: str = "") -> None:
    session.add(AuditEntry(admin_id=admin_id, action=action, reason=reason or action,
                           detail=f"tournament {t.id} ({t.name}): {detail}"))


def _time(t: Tournament) -> TimeControl:
    return TimeControl(t.deadline_hours, parse_hours(t.reminder_hours), t.weekend_pause,
                       t.timezone)


def _entrants(session: Session, t: Tournament) -> list[Entrant]:
    return list(session.exec(select(Entrant).where(Entrant.tournament_id == t.id)
                             .order_by(col(Entrant.id))))


def _tables_of(session: Session, t: Tournament, **where) -> list[TournamentTable]:
    query = select(TournamentTable).where(TournamentTable.tournament_id == t.id)
    for name, value in where.items():
        query = query.where(getattr(TournamentTable, name) == value)
    return list(session.exec(query.order_by(col(TournamentTable.id))))


def _results(session: Session, rows: list[TournamentTable]) -> list[Played]:
    games = {g.id: g for g in session.exec(select(Game).where(
        col(Game.id).in_([r.game_id for r in rows])))} if rows else {}
    return _decided(rows, games)


# A round's games are made this many to a transaction: a round-robin of 21 (210 games) made in
# one held the write lock, and so every player's move, for 5.9 s on SQLite (issue 42).
TABLES_AT_ONCE = 10
# Between two such transactions on SQLite, a pause longer than the 100 ms SQLite's busy handler
# sleeps between its tries: the write lock is no queue, and a writer that waits for it (a move)
# would otherwise miss it batch after batch (measured: one move held 12.5 s while 210 games
# were made ten at a time without the pause).
BATCH_PAUSE = 0.15


def _plan(session: Session, t: Tournament, entrants: list[Entrant]
          ) -> tuple[list[tuple[int, int, int, tuple[str, ...]]], str]:
    """The tables of the tournament's current round (a league: season), as (league, group,
    number, seats), and their titles' pattern. The same however often it is asked: it reads
    only the entrants and the earlier rounds' results, which no longer change."""
    rules = rules_for(t.kind)
    least, most = rules.min_players, rules.max_players
    active = [e.email for e in entrants if e.active]
    made: list[tuple[int, int, int, tuple[str, ...]]] = []
    if t.format == LEAGUE:
        leagues = pairings.first_leagues(active, t.table_size, least, most) if t.season == 1 \
            else _next_leagues(session, t, entrants, least, most)
        for league, group_list in enumerate(leagues.leagues, 1):
            for group, members in enumerate(group_list, 1):
                for number, seats in enumerate(pairings.group_rotation(members, t.cycles), 1):
                    made.append((league, group, number, seats))
        return made, "S{season} L{league}.{group} #{number}"
    if t.format == ROUND_ROBIN:
        return [(0, 0, n, seats) for n, seats in
                enumerate(pairings.round_robin(active, t.table_size, t.seed), 1)], "#{number}"
    earlier = [r for r in _tables_of(session, t) if (r.season, r.round) != (t.season, t.round)]
    played = _results(session, earlier)
    order = [s.player for s in pairings.standings(active, played, t.seed)]
    starts = Counter(json.loads(r.players_json)[0] for r in earlier)
    sizes = pairings.table_sizes(len(order), t.table_size, least, most)
    seated = pairings.swiss_round(order, sizes, pairings.met(
        Played(tuple(json.loads(r.players_json)), None) for r in earlier), starts, t.seed)
    return [(0, 0, n, seats) for n, seats in enumerate(seated, 1)], "R{round}.{number}"


def _start_round(session: Session, t: Tournament, now: datetime) -> None:
    """Begin the tournament's current round (a league: season): its first tables now, in the
    caller's transaction; the rest in transactions of their own (`make_tables`), by the
    caller's `finish_round` or else by a chore queued here."""
    if not _make_some(session, t, now):
        _queue_chore(session.connection(), TOURNAMENT_TABLES, t.id, now)


def _make_some(session: Session, t: Tournament, now: datetime) -> bool:
    """Make the next TABLES_AT_ONCE tables of the current round, each game through
    `create_game`; with the last of them, mail every player of the round. Returns whether the
    round is now made whole."""
    entrants = _entrants(session, t)
    made, label = _plan(session, t, entrants)
    done = len(_tables_of(session, t, season=t.season, round=t.round))
    by_email = {e.email: e for e in entrants}
    for league, group, number, seats in made[done:done + TABLES_AT_ONCE]:
        title = f"{t.name} · " + label.format(season=t.season, league=league, group=group,
                                              number=number, round=t.round)
        players = [PlayerSpec(by_email[p].name, p, language=by_email[p].language)
                   for p in seats]
        created = create_game(players, f"{t.seed}:{t.season}:{t.round}:{league}:{group}:"
                              f"{number}", kind=t.kind, start=0, title=title, time=_time(t),
                              now=now, variant=t.variant, rated=t.rated, session=session)
        session.add(TournamentTable(tournament_id=t.id, season=t.season, round=t.round,
                                    league=league, group_number=group, number=number,
                                    game_id=created.game_id, players_json=json.dumps(seats)))
    session.flush()
    if done + TABLES_AT_ONCE < len(made):
        return False
    if done < len(made):  # this call made the last tables: the round's mail goes now
        games_of = Counter(p for *_, seats in made for p in seats)
        _round_mail(session, t, [e for e in entrants if games_of[e.email]], games_of, now)
    return True


def _is_round_made(session: Session, t: Tournament) -> bool:
    return len(_tables_of(session, t, season=t.season, round=t.round)) \
        >= len(_plan(session, t, _entrants(session, t))[0])


def make_tables(session: Session, tournament_id: int, now: datetime) -> bool:
    """The next tables of a round being made, in the caller's transaction (the scheduler's
    chore, or `finish_round`); another chore is queued while some remain. Changes nothing
    (returns False) once the round is made, or the tournament is over."""
    t = get_row(session, Tournament, tournament_id, with_for_update=True)
    if t is None or t.status != T_RUNNING or _is_round_made(session, t):
        return False
    if not _make_some(session, t, now):
        _queue_chore(session.connection(), TOURNAMENT_TABLES, t.id, now)
    return True


def finish_round(tournament_id: int, now: datetime | None = None) -> None:
    """Make the rest of the current round's tables, TABLES_AT_ONCE to a transaction, each one
    short: players' moves go on in between. The caller holds no transaction. Should this
    stop halfway, the chore queued with the round's first tables makes the rest."""
    now = now or utcnow()
    sqlite = get_engine().dialect.name == "sqlite"
    while True:
        with writing() as session:
            if not make_tables(session, tournament_id, now):
                return
        if sqlite:  # let a waiting writer in (SQLite's lock is not queued: see BATCH_PAUSE)
            time.sleep(BATCH_PAUSE)


def _next_leagues(session: Session, t: Tournament, entrants: list[Entrant], least: int,
                  most: int) -> pairings.Leagues:
    """The season's groups from the last season's final standings."""
    rows = _tables_of(session, t, season=t.season - 1)
    groups: dict[tuple[int, int], list[TournamentTable]] = {}
    for r in rows:
        groups.setdefault((r.league, r.group_number), []).append(r)
    final: list[list[list[str]]] = []
    for (league, _group), members in sorted(groups.items()):
        while len(final) < league:
            final.append([])
        players = list(dict.fromkeys(p for r in members for p in json.loads(r.players_json)))
        final[league - 1].append([s.player for s in pairings.standings(
            players, _results(session, members), t.seed, league=True)])
    leaving = {e.email for e in entrants if not e.active}
    joining = [e.email for e in entrants if e.active and e.joined_season == t.season]
    return pairings.next_leagues(final, t.promotion, leaving, joining, t.table_size, least, most)


def _public_link(t: Tournament) -> str:
    return f"{current_app.config['BASE_URL'].rstrip('/')}/tournaments/{t.public_id}"


def _round_mail(session: Session, t: Tournament, players: list[Entrant], games_of: Counter,
                now: datetime) -> None:
    """The short mail of a new round (a league: season) to each of its players: their games'
    count (the invitations come on their own) and the standings so far."""
    sections = _sections(session, t)
    for e in players:
        with i18n.in_language(e.language):
            if t.format == LEAGUE:
                section = next(s for s in sections if any(r.email == e.email for r in s.rows))
                heading = _("Season %(season)d of %(name)s begins", season=t.season,
                            name=t.name)
                lines = [_("You play in league %(league)d, group %(group)d, with %(others)s.",
                           league=section.league, group=section.group,
                           others=", ".join(r.name for r in section.rows
                                            if r.email != e.email))]
                shown = section.rows
            else:
                heading = _("Round %(round)d of %(name)s begins", round=t.round, name=t.name)
                lines = []
                shown = sections[0].rows if t.round > 1 else []
            lines.append(i18n.ngettext(
                "You play %(num)d game in it: its invitation comes in its own mail.",
                "You play %(num)d games in it: their invitations come in their own mails.",
                games_of[e.email]))
            _queue(session, t, e, heading, lines, shown)


def _queue(session: Session, t: Tournament, e: Entrant, heading: str, lines: list[str],
           rows: list[Row]) -> None:
    send(session, kinds.TOURNAMENT, to=mail.formatted_address(e.name, e.email),
         tournament=t.name, heading=heading, lines=lines, rows=rows, name=e.name,
         link=_public_link(t), me=e.email)


# --- moving on ----------------------------------------------------------------------------------

def round_over(session: Session, tournament_id: int, now: datetime) -> bool:
    """The scheduler's chore when a round's last game ended: start the next Swiss round, end
    the event, or close the league's season. Changes nothing (returns False) unless the
    current round's games are all decided."""
    t = get_row(session, Tournament, tournament_id, with_for_update=True)
    if t is None or t.status != T_RUNNING:
        return False
    rows = _tables_of(session, t, season=t.season, round=t.round)
    if not rows or len(_results(session, rows)) < len(rows) or not _is_round_made(session, t):
        return False
    if t.format == SWISS and t.round < t.rounds:
        t.round += 1
        session.add(t)
        _start_round(session, t, now)
        return True
    entrants = [e for e in _entrants(session, t)]
    sections = _sections(session, t)
    if t.format == LEAGUE:
        t.status = T_BETWEEN
        if t.season_days:
            session.add(Chore(kind=TOURNAMENT_SEASON, ref_id=t.id,
                              due_at=now + timedelta(days=t.season_days)))
    else:
        t.status, t.finished_at = T_FINISHED, now
    session.add(t)
    for e in entrants:
        section = next((s for s in sections if any(r.email == e.email for r in s.rows)), None)
        if section is None:
            continue
        with i18n.in_language(e.language):
            if t.format == LEAGUE:
                heading = _("Season %(season)d of %(name)s is over", season=t.season,
                            name=t.name)
                lines = [_("Final standings of league %(league)d, group %(group)d:",
                           league=section.league, group=section.group)]
                lines.append(_("The next season starts in %(days)d days.",
                               days=t.season_days) if t.season_days else
                             _("The next season starts when the organiser starts it."))
            else:
                heading = _("%(name)s is over", name=t.name)
                lines = [_("Final standings:")]
            _queue(session, t, e, heading, lines, section.rows)
    return True


def season_due(session: Session, tournament_id: int, now: datetime) -> bool:
    """The scheduler's chore `season_days` after a league's season ended: the next season."""
    t = get_row(session, Tournament, tournament_id, with_for_update=True)
    if t is None or t.status != T_BETWEEN:
        return False
    _next_season(session, t, now)
    return True


def _next_season(session: Session, t: Tournament, now: datetime) -> None:
    t.season, t.round, t.status = t.season + 1, 1, T_RUNNING
    session.add(t)
    session.flush()
    _start_round(session, t, now)


def _locked(session: Session, tournament_id: int) -> Tournament:
    t = get_row(session, Tournament, tournament_id, with_for_update=True)
    if t is None:
        raise NotFound(f"there is no tournament {tournament_id}")
    return t


def start_next_season(admin_id: int, tournament_id: int, leaving: list[str],
                      joining: list[PlayerSpec], reason: str,
                      now: datetime | None = None) -> None:
    """An organiser starts a league's next season: players who leave (addresses) are removed,
    new players join the lowest league; promotion and relegation as the tables say."""
    reason = check_reason(reason)
    now = now or utcnow()
    with writing() as session:
        t = _locked(session, tournament_id)
        if t.format != LEAGUE or t.status != T_BETWEEN:
            raise Rejected(_("only a league whose season is over starts a next season"))
        entrants = {e.email: e for e in _entrants(session, t)}
        leaving = [a.strip().lower() for a in leaving if a.strip()]
        unknown = [a for a in leaving if a not in entrants]
        if unknown:
            raise Malformed(_("%(who)s does not play in this league", who=", ".join(unknown)))
        for address in leaving:
            entrants[address].active = False
            session.add(entrants[address])
        language = current_app.config["GAMES_LANGUAGE"]
        for p in joining:
            e = entrants.get(p.email.lower())
            if e is not None and e.active:
                raise Malformed(_("%(who)s already plays in this league", who=p.email))
            e = e or Entrant(tournament_id=t.id, email=p.email.lower(), name=p.name,
                             language=p.language or language)
            e.active, e.joined_season, e.name = True, t.season + 1, p.name
            session.add(e)
        session.flush()
        try:
            _next_season(session, t, now)
        except TableProblem as exc:
            raise Rejected(str(exc)) from None
        _audit(session, admin_id, t, "tournament season",
               f"season {t.season}: {len(leaving)} leave, {len(joining)} join", reason)
    finish_round(tournament_id, now)


def close_tournament(admin_id: int, tournament_id: int, reason: str,
                     now: datetime | None = None) -> None:
    """An organiser ends the tournament: no further round or season; its games that still
    run go on as games of their own."""
    reason = check_reason(reason)
    now = now or utcnow()
    with writing() as session:
        t = _locked(session, tournament_id)
        if t.status in (T_FINISHED, T_CLOSED):
            raise Rejected(_("this tournament is already over"))
        t.status, t.finished_at = T_CLOSED, now
        session.add(t)
        _audit(session, admin_id, t, "tournament close", f"closed in season {t.season}, "
               f"round {t.round}", reason)


STATUS_WORDS = {T_RUNNING: L_("running"), T_BETWEEN: L_("between seasons"),
                T_FINISHED: L_("finished"), T_CLOSED: L_("closed by the organiser")}
FORMAT_WORDS = {LEAGUE: L_("league of groups"), SWISS: L_("Swiss event"),
                ROUND_ROBIN: L_("round-robin")}
