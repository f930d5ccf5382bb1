"""Tournaments run by the server (pbem.services.tournaments): a round-robin, a Swiss event of
several rounds and a league season run to its end with promotion and relegation into the
next season. Every game is played to its end through `submit_move` (seeded random legal
moves), its end counted by the `on_game_finished` hook, and the next round made by the
scheduler's chore, claimed once however many schedulers race for it."""

from __future__ import annotations

import itertools
import json
import random
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from server import make_app, rows
from sqlmodel import select

from pbem.games import SetupProblem, rules_for
from pbem.ground.db import reading, writing
from pbem.ground.models import (
    ABORTED,
    DONE,
    FINISHED,
    PENDING,
    RUNNING,
    T_BETWEEN,
    T_CLOSED,
    T_FINISHED,
    T_RUNNING,
    TOURNAMENT_ROUND,
    AuditEntry,
    Chore,
    Entrant,
    Game,
    OutboxMessage,
    Seat,
    Tournament,
    TournamentTable,
)
from pbem.scheduler.jobs import run_jobs
from pbem.services import pairings, stewardship, tournaments
from pbem.services.deadlines import time_control
from pbem.services.errors import Malformed, Rejected
from pbem.services.moves import submit_move
from pbem.services.players import parse_player
from pbem.services.talk import run_due_chores
from pbem.services.tournaments import Setup

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

T0 = datetime(2026, 11, 24, 12, tzinfo=UTC)
KK = "kardinal-koenig"
ADMIN, PASSWORD = "boss@example.org", "a long enough password"


@pytest.fixture
def app(tmp_path):
    return make_app(tmp_path / "instance", SCHEDULER_OUTAGE_MINUTES=10**6,
                    MAIL_BOARD_PICTURE=False)


def players(n, start=0):
    return [parse_player(f"Player {i} <p{i}@example.org>") for i in range(start, start + n)]


def make(app, fmt, n, size=3, **options):
    with app.app_context():
        admin = stewardship.create_admin(ADMIN, PASSWORD)
        setup = Setup(name="Club cup", kind=KK, variant=None, format=fmt,
                      time=time_control(72, "24", False, "UTC"), players=players(n),
                      table_size=size, **options)
        return tournaments.create_tournament(admin, setup, now=T0), admin


def tournament(app, tid) -> Tournament:
    return rows(app, Tournament, Tournament.id == tid)[0]


def tables_of(app, tid, **where) -> list[TournamentTable]:
    found = rows(app, TournamentTable, TournamentTable.tournament_id == tid)
    return [t for t in found if all(getattr(t, k) == v for k, v in where.items())]


def play_out(app, game_id, seed):
    """Play the game to its end, every move through submit_move (seeded random legal
    moves, for whichever seat is to move)."""
    rng = random.Random(seed)
    while True:
        with app.app_context(), reading() as session:
            game = session.get(Game, game_id)
            if game.status != RUNNING:
                return
            rules = rules_for(game.kind)
            state = rules.loads(game.state_json)
            seat = session.exec(select(Seat).where(Seat.game_id == game_id,
                                                   Seat.number == rules.to_move(state))).one()
        with app.app_context():
            submit_move(None, rng.choice(rules.legal(state)), game.turn, seat_id=seat.id,
                        now=T0)


def play_round(app, tid, **where):
    for t in tables_of(app, tid, **where):
        play_out(app, t.game_id, f"{tid}:{t.id}")


def overview(app, tid):
    with app.app_context():
        return tournaments.overview(tid)


def mails(app, kind, to=None) -> list[OutboxMessage]:
    found = rows(app, OutboxMessage, OutboxMessage.kind == kind)
    return [m for m in found if to is None or to in m.to_addr]


def standings_now(app, tid, **where):
    """The standings computed directly by the pure functions from the stored results."""
    t = tournament(app, tid)
    played = [pairings.Played(tuple(json.loads(r.players_json)),
                            None if json.loads(r.result_json)["ranks"] is None
                            else tuple(json.loads(r.result_json)["ranks"]),
                            tuple(json.loads(r.result_json).get("scores") or ()))
              for r in tables_of(app, tid, **where) if r.result_json is not None]
    everyone = sorted({p for g in played for p in g.players})
    return pairings.standings(everyone, played, t.seed, league=t.format == pairings.LEAGUE)


def test_a_round_robin_every_table_once_to_its_final_standings(app):
    """4 players at tables of 3: all 4 tables at once, each player in 3, the invitations and a
    round mail each; when the last game ends, the scheduler ends the event with a final mail
    of the standings, counted as the pure functions count them."""
    tid, _admin = make(app, pairings.ROUND_ROBIN, 4)
    made = tables_of(app, tid)
    assert sorted(tuple(sorted(json.loads(t.players_json))) for t in made) == \
        sorted(itertools.combinations([f"p{i}@example.org" for i in range(4)], 3))
    assert Counter(json.loads(t.players_json)[0] for t in made) == Counter(
        {f"p{i}@example.org": 1 for i in range(4)})  # everyone starts once
    assert len(mails(app, "invitation")) == 12
    assert sorted(m.to_addr for m in mails(app, "tournament")) == sorted(
        f"Player {i} <p{i}@example.org>" for i in range(4))
    with app.app_context(), reading() as session:
        for t in made:
            game = session.get(Game, t.game_id)
            assert game.title.startswith("Club cup · #")
            assert (game.deadline_hours, game.reminder_hours) == (72, "24")
    play_round(app, tid)
    assert all(t.result_json for t in tables_of(app, tid))
    assert tournament(app, tid).status == T_RUNNING  # the scheduler moves it on
    counts = run_jobs(app, T0 + timedelta(minutes=1))
    assert counts["tournament_rounds"] == 1
    assert tournament(app, tid).status == T_FINISHED
    final = standings_now(app, tid)
    assert sum(s.points for s in final) == 4 * 3  # each game of 3 gives 2 + 1 + 0
    view = overview(app, tid)
    assert [(r.place, r.name) for r in view.sections[0].rows] == [
        (s.place, f"Player {s.player[1]}") for s in final]
    last = [m for m in mails(app, "tournament") if "is over" in m.subject]
    assert len(last) == 4 and "Final standings" in last[0].text_body
    assert run_jobs(app, T0 + timedelta(minutes=2)).get("tournament_rounds") == 0


def test_a_swiss_event_of_three_rounds(app):
    """9 players at tables of 3 for 3 rounds: each round is made by the scheduler from the
    standings once the last one's games are over, no pair meets twice (it can be avoided),
    a round mail goes out each round, and the final standings break ties by Buchholz."""
    tid, _admin = make(app, pairings.SWISS, 9, rounds=3)
    for rnd in (1, 2, 3):
        assert tournament(app, tid).round == rnd
        assert len(tables_of(app, tid, round=rnd)) == 3
        assert len(mails(app, "tournament")) == 9 * rnd
        if rnd > 1:  # the round's tables follow the standings after the rounds before
            leader = standings_now(app, tid)[0].player
            assert leader in json.loads(tables_of(app, tid, round=rnd)[0].players_json)
            every = [pairings.Played(tuple(json.loads(t.players_json)), None)
                     for t in tables_of(app, tid)]
            assert max(pairings.met(every).values()) == 1  # nobody met twice so far
            news = [m for m in mails(app, "tournament") if f"Round {rnd} " in m.subject]
            assert len(news) == 9 and "Place, player, points:" in news[0].text_body
            assert "1. " in news[0].text_body and "@" not in news[0].text_body.split(
                "Place, player, points:")[1]
        play_round(app, tid, round=rnd)
        if rnd < 3:
            run_jobs(app, T0 + timedelta(minutes=rnd))
    run_jobs(app, T0 + timedelta(minutes=5))
    t = tournament(app, tid)
    assert t.status == T_FINISHED and t.round == 3
    final = standings_now(app, tid)
    assert [s.games for s in final] == [3] * 9
    points = {s.player: s.points for s in final}
    for s in final:  # Buchholz: the points of every opponent met
        opponents = [q for r in tables_of(app, tid) for q in json.loads(r.players_json)
                     if s.player in json.loads(r.players_json) and q != s.player]
        assert s.tie_break == sum(points[q] for q in opponents)
    keys = [(-s.points, -s.tie_break, -s.score, s.lot) for s in final]
    assert keys == sorted(keys)
    shown = overview(app, tid).sections[0].rows
    assert [r.place for r in shown] == list(range(1, 10))
    assert [r.points for r in shown] == [tournaments.points_text(s.points) for s in final]


def test_a_league_season_to_its_end_with_promotion_and_relegation(app):
    """6 players in groups of 3: league 1 and league 2, each group playing 3 games (each
    starts once). When the last one ends the season closes (standings mailed); the organiser
    starts the next season with one player leaving and one joining: league 2's winner goes
    up, league 1's last goes down, the newcomer enters league 2; the new season runs to its
    end as well."""
    tid, admin = make(app, pairings.LEAGUE, 6, promotion=1)
    first = tables_of(app, tid, season=1)
    groups = {(t.league, t.group_number): set(json.loads(t.players_json)) for t in first}
    assert groups == {(1, 1): {f"p{i}@example.org" for i in (0, 1, 2)},
                      (2, 1): {f"p{i}@example.org" for i in (3, 4, 5)}}
    assert len(first) == 6
    for (league, _), members in groups.items():
        mine = [t for t in first if t.league == league]
        assert sorted(json.loads(t.players_json)[0] for t in mine) == sorted(members)
    mail = mails(app, "tournament", "p4@example.org")[0]
    assert "league 2, group 1" in mail.text_body and "p3@" not in mail.text_body
    play_round(app, tid, season=1)
    run_jobs(app, T0 + timedelta(minutes=1))
    assert tournament(app, tid).status == T_BETWEEN
    over = [m for m in mails(app, "tournament") if "Season 1" in m.subject and "over" in
            m.subject]
    assert len(over) == 6
    league1 = [s.player for s in standings_now(app, tid, season=1, league=1)]
    league2 = [s.player for s in standings_now(app, tid, season=1, league=2)]
    leaving = league2[1]  # the middle of league 2 leaves
    with app.app_context():
        with pytest.raises(Malformed):  # not without a reason
            tournaments.start_next_season(admin, tid, [], [], "")
        tournaments.start_next_season(admin, tid, [leaving],
                                      [parse_player("Newcomer <new@example.org>")],
                                      "season 2 as planned", now=T0 + timedelta(days=1))
    t = tournament(app, tid)
    assert (t.season, t.status) == (2, T_RUNNING)
    second = {}
    for r in tables_of(app, tid, season=2):
        second.setdefault(r.league, set()).update(json.loads(r.players_json))
    assert second[1] == {league1[0], league1[1], league2[0]}
    assert second[2] == {league1[2], league2[2], "new@example.org"}
    assert leaving not in second[1] | second[2]
    with app.app_context(), reading() as session:
        assert session.exec(select(Entrant).where(Entrant.email == leaving)).one().active \
            is False
        entry = session.exec(select(AuditEntry).where(
            AuditEntry.action == "tournament season")).one()
        assert entry.reason == "season 2 as planned" and entry.admin_id == admin
    play_round(app, tid, season=2)
    run_jobs(app, T0 + timedelta(days=1, minutes=1))
    assert tournament(app, tid).status == T_BETWEEN
    assert len(standings_now(app, tid, season=2, league=1)) == 3


def test_a_league_starts_its_next_season_by_itself_after_its_days(app):
    tid, _admin = make(app, pairings.LEAGUE, 3, season_days=2)
    play_round(app, tid, season=1)
    run_jobs(app, T0 + timedelta(minutes=1))
    assert tournament(app, tid).status == T_BETWEEN
    run_jobs(app, T0 + timedelta(days=1))
    assert tournament(app, tid).season == 1
    counts = run_jobs(app, T0 + timedelta(days=2, minutes=1))
    assert counts["tournament_seasons"] == 1
    t = tournament(app, tid)
    assert (t.season, t.status) == (2, T_RUNNING)
    assert len(tables_of(app, tid, season=2)) == 3


def test_an_aborted_game_counts_as_decided_without_points(app):
    tid, admin = make(app, pairings.ROUND_ROBIN, 3)
    (only,) = tables_of(app, tid)
    with app.app_context():
        stewardship.abort_game(admin, only.game_id, "a player fell ill", now=T0)
    (only,) = tables_of(app, tid)
    assert json.loads(only.result_json) == {"ranks": None}
    assert all(s.points == 0 and s.games == 1 for s in standings_now(app, tid))
    run_jobs(app, T0 + timedelta(minutes=1))
    assert tournament(app, tid).status == T_FINISHED


def test_the_next_round_is_made_once_when_schedulers_race(app):
    """Two schedulers run the chores at the same moment (a barrier), twice over, with the
    round's chore queued twice: the next Swiss round is made once."""
    tid, _admin = make(app, pairings.SWISS, 6, rounds=2)
    play_round(app, tid, round=1)
    with app.app_context(), writing() as session:  # a second chore for the same round
        session.add(Chore(kind=TOURNAMENT_ROUND, ref_id=tid, due_at=T0))
    barrier = threading.Barrier(2)
    done, errors = [], []

    def scheduler():
        try:
            with app.app_context():
                barrier.wait(timeout=60)
                done.append(run_due_chores(T0 + timedelta(minutes=1)))
                barrier.wait(timeout=60)
                done.append(run_due_chores(T0 + timedelta(minutes=1)))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=scheduler) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    assert sum(d["tournament_rounds"] for d in done) == 1
    assert tournament(app, tid).round == 2
    assert len(tables_of(app, tid, round=2)) == 2
    assert len(mails(app, "tournament")) == 6 * 2
    assert {c.status for c in rows(app, Chore, Chore.kind == TOURNAMENT_ROUND)} == {DONE}
    assert not rows(app, Chore, Chore.status == PENDING)


def test_bad_setups_are_refused_and_change_nothing(app):
    with app.app_context():
        admin = stewardship.create_admin(ADMIN, PASSWORD)
        time = time_control(72, "24", False, "UTC")
        for setup, said in [
            (Setup("Cup", KK, None, pairings.SWISS, time, players(2), 3), "3 to"),
            (Setup("Cup", KK, None, pairings.SWISS, time, players(6), 6), "3 to 5"),
            (Setup("Cup", KK, None, "ladder", time, players(6), 3), "league"),
            (Setup("Cup", KK, None, pairings.SWISS, time, players(6), 3, rounds=0), "rounds"),
            (Setup("Cup", KK, None, pairings.SWISS, time, players(3) + players(1), 3),
             "own email"),
            (Setup("x" * 61, KK, None, pairings.SWISS, time, players(6), 3), "60"),
        ]:
            with pytest.raises(SetupProblem, match=said):
                tournaments.create_tournament(admin, setup, now=T0)
    assert rows(app, Tournament) == [] and rows(app, Game) == []


def test_closing_stops_further_rounds(app):
    tid, admin = make(app, pairings.SWISS, 6, rounds=3)
    with app.app_context():
        tournaments.close_tournament(admin, tid, "the club disbanded", now=T0)
        with pytest.raises(Rejected):
            tournaments.close_tournament(admin, tid, "again", now=T0)
    play_round(app, tid, round=1)
    run_jobs(app, T0 + timedelta(minutes=1))
    t = tournament(app, tid)
    assert (t.status, t.round) == (T_CLOSED, 1)
    assert len(tables_of(app, tid)) == 2
    assert rows(app, Game, Game.status == ABORTED) == []


def _finished_game_of_round(app, tid, round_):
    return next(t.game_id for t in tables_of(app, tid, round=round_)
                if rows(app, Game, Game.id == t.game_id)[0].status == FINISHED)


def test_a_game_of_a_round_that_moved_on_is_not_taken_back_and_the_event_ends_with_its_games(
        app, client):
    """Swiss of 6 at tables of 3: once round 2 is made, a round-1 game's last turn is not
    taken back (the admin's page says why); aborting round 2 ends the event with every game
    over, the 6 "is over" mails sent once, and the standings stay as they were."""
    from test_admin import act, alert_of, login

    tid, admin = make(app, pairings.SWISS, 6, rounds=2)
    play_round(app, tid, round=1)
    run_jobs(app, T0 + timedelta(minutes=1))
    assert tournament(app, tid).round == 2
    first = _finished_game_of_round(app, tid, 1)
    before = standings_now(app, tid, round=1)
    with app.app_context(), pytest.raises(Rejected, match="has moved on from that round"):
        stewardship.take_back(admin, first, "a misclick", now=T0)
    assert login(client).status_code == 303
    refused = act(client, app, "take_back", reason="a misclick", game_id=first)
    assert refused.status_code == 422
    assert "cannot be taken back" in alert_of(refused)
    assert rows(app, Game, Game.id == first)[0].status == FINISHED
    for t in tables_of(app, tid, round=2):
        with app.app_context():
            stewardship.abort_game(admin, t.game_id, "the club closed early", now=T0)
    run_jobs(app, T0 + timedelta(minutes=2))
    assert tournament(app, tid).status == T_FINISHED
    assert rows(app, Game, Game.status == RUNNING) == []
    assert len([m for m in mails(app, "tournament") if "is over" in m.subject]) == 6
    assert standings_now(app, tid, round=1) == before
    with app.app_context(), pytest.raises(Rejected, match="it is finished"):
        stewardship.take_back(admin, first, "a misclick", now=T0)


def test_a_game_taken_back_before_its_round_moved_on_holds_the_round_until_it_ends_again(app):
    """The round's last game ended (the chore is queued) and one of its games is reopened
    before the scheduler runs: the round waits for it, then moves on once."""
    tid, admin = make(app, pairings.SWISS, 6, rounds=2)
    play_round(app, tid, round=1)
    first = _finished_game_of_round(app, tid, 1)
    with app.app_context():
        stewardship.take_back(admin, first, "a misclick", now=T0)
    assert rows(app, Game, Game.id == first)[0].status == RUNNING
    run_jobs(app, T0 + timedelta(minutes=1))
    assert tournament(app, tid).round == 1 and tables_of(app, tid, round=2) == []
    assert [t.result_json for t in tables_of(app, tid, round=1) if t.game_id == first] == [None]
    play_out(app, first, "again")
    run_jobs(app, T0 + timedelta(minutes=2))
    assert tournament(app, tid).round == 2 and len(tables_of(app, tid, round=2)) == 2


def test_a_big_round_is_made_in_short_transactions_and_a_move_goes_through_meanwhile(
        app, monkeypatch):
    """A round-robin's games are made TABLES_AT_ONCE to a transaction (here 5 of 12): held
    after its first transaction, the organiser's request leaves a player free to move in
    another game; then the rest are made, and each player's round mail goes once."""
    from server import new_game

    monkeypatch.setattr(tournaments, "TABLES_AT_ONCE", 5, raising=False)
    beside, tokens = new_game(app, 3, "beside the cup", start=0)
    first_made, moved = threading.Event(), threading.Event()
    finish = getattr(tournaments, "finish_round", None)

    def held(tid, now=None):
        first_made.set()
        assert moved.wait(120)
        finish(tid, now)

    monkeypatch.setattr(tournaments, "finish_round", held, raising=False)
    made, errors = [], []

    def organiser():
        try:
            made.append(make(app, pairings.ROUND_ROBIN, 9)[0])
        except Exception as exc:  # shown by the asserts below
            errors.append(exc)
        finally:
            first_made.set()

    thread = threading.Thread(target=organiser)
    thread.start()
    try:
        assert first_made.wait(120)
        assert not errors, errors
        made_so_far = len(rows(app, TournamentTable))
        with app.app_context(), reading() as session:
            game = session.get(Game, beside.game_id)
            state = rules_for(game.kind).loads(game.state_json)
        with app.app_context():
            submit_move(tokens[0], rules_for(game.kind).legal(state)[0], game.turn)
        assert made_so_far == 5 and len(rows(app, TournamentTable)) == 5
    finally:
        moved.set()
        thread.join(120)
    assert not errors, errors
    (tid,) = made
    assert len(tables_of(app, tid)) == 12
    assert len({t.game_id for t in tables_of(app, tid)}) == 12
    assert Counter(m.to_addr for m in mails(app, "tournament")) == Counter(
        {f"Player {i} <p{i}@example.org>": 1 for i in range(9)})
    assert run_jobs(app, T0 + timedelta(minutes=1)).get("tournament_tables") == 0


def test_a_big_round_left_halfway_is_made_whole_by_the_scheduler(app, monkeypatch):
    """The organiser's request stops after its first transaction: the scheduler's chore makes
    the rest, a few to a run, and the round's mails go once."""
    monkeypatch.setattr(tournaments, "TABLES_AT_ONCE", 5, raising=False)
    monkeypatch.setattr(tournaments, "finish_round", lambda tid, now=None: None, raising=False)
    tid, __ = make(app, pairings.ROUND_ROBIN, 9)
    assert len(tables_of(app, tid)) == 5 and mails(app, "tournament") == []
    for minute in (1, 2):
        assert run_jobs(app, T0 + timedelta(minutes=minute))["tournament_tables"] == 1
    assert len(tables_of(app, tid)) == 12
    assert len(mails(app, "tournament")) == 9
    assert run_jobs(app, T0 + timedelta(minutes=3))["tournament_tables"] == 0
    play_round(app, tid)
    run_jobs(app, T0 + timedelta(minutes=4))
    assert tournament(app, tid).status == T_FINISHED
