"""The tournament pages (pbem.web.tournaments): the public standings page never shows an
address and links each game to its spectator page; the organisers create a tournament, watch
it, start a league's next season and close it through forms that need the admin login and
their CSRF token, each action audited; a GET never changes anything."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from server import make_app
from sqlmodel import select
from test_admin import add_admin, csrf_of, everything, login
from test_tournaments import T0, make, play_out, play_round, tables_of, tournament

from pbem.ground.db import reading, writing
from pbem.ground.models import (
    T_BETWEEN,
    T_CLOSED,
    AuditEntry,
    Entrant,
    Game,
    OutboxMessage,
    Profile,
    Tournament,
)
from pbem.scheduler.jobs import run_jobs
from pbem.services import pairings, tournaments
from pbem.services.profiles import profile_for

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

ADDRESS = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")


@pytest.fixture
def app(tmp_path):
    return make_app(tmp_path / "instance", SCHEDULER_OUTAGE_MINUTES=10**6,
                    MAIL_BOARD_PICTURE=False)


def form(csrf, **changes):
    data = {"csrf_token": csrf, "name": "Winter league", "game": "kardinal-koenig",
            "format": "league", "table_size": "3", "promotion": "1", "cycles": "1",
            "rounds": "3", "season_days": "", "deadline_hours": "72", "reminders": "24",
            "timezone": "UTC", "variant": "",
            "players": "\n".join(f"Player {i} <p{i}@example.org>" for i in range(6))}
    data.update(changes)
    return data


def logged_in(app):
    client = app.test_client()
    assert login(client).status_code == 303
    return client


def test_the_standings_page_shows_names_and_games_never_an_address(app):
    tid, _admin = make(app, pairings.LEAGUE, 6)
    first = tables_of(app, tid)[0]
    play_out(app, first.game_id, "page")
    t = tournament(app, tid)
    page = app.test_client().get(f"/tournaments/{t.public_id}")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert not ADDRESS.search(text), ADDRESS.search(text)
    with reading(app) as session:
        entrants = session.exec(select(Entrant)).all()
        games = session.exec(select(Game)).all()
    for e in entrants:
        # Names alone, no codes beside them (issue 43, point 12): no two are the same here.
        assert e.name in text and e.public_id not in text
    for game in games:
        assert f'href="/watch/{game.watch_id}"' in text
    assert "League 2, group 1" in text
    assert app.test_client().get("/tournaments/nothing-here").status_code == 404
    assert app.test_client().get("/tournaments/" + "x" * 200).status_code == 404


def test_the_standings_name_players_by_their_profile_and_link_its_page(app):
    """A player with a profile is shown by the profile's name, linked to its public page, in
    the standings and the games; one without is still shown by the name entered."""
    tid, _admin = make(app, pairings.SWISS, 6)
    with app.app_context(), writing() as session:
        profile = profile_for(session, "p1@example.org")
        profile.name = "Bea of the chess club"
        session.add(profile)
        session.flush()
        profile_id = profile.public_id
    with reading(app) as session:
        assert session.exec(select(Profile).where(Profile.email == "p2@example.org")).first() \
            is None
        entrant = session.exec(select(Entrant).where(Entrant.email == "p2@example.org")).one()
        entrant_name, entrant_id = entrant.name, entrant.public_id
    text = app.test_client().get(f"/tournaments/{tournament(app, tid).public_id}") \
        .get_data(as_text=True)
    link = f'<a href="/players/{profile_id}">Bea of the chess club</a>'
    assert text.count(link) == 2, "in the standings and in the list of games"
    assert f"{entrant_name}</td>" in text and entrant_id not in text
    assert app.test_client().get(f"/players/{profile_id}").status_code == 200
    assert not ADDRESS.search(text)
    # Two players of the same name are told apart by their public ids, and only they.
    with app.app_context(), writing() as session:
        twin = profile_for(session, "p3@example.org")
        twin.name = entrant_name.upper()
        session.add(twin)
        session.flush()
        twin_id = session.exec(select(Entrant).where(Entrant.email == "p3@example.org")) \
            .one().public_id
    text = app.test_client().get(f"/tournaments/{tournament(app, tid).public_id}") \
        .get_data(as_text=True)
    assert f"{entrant_name} <span class=\"muted\">({entrant_id})</span>" in text
    assert f"({twin_id})</span>" in text
    assert text.count('<span class="muted">(') == 2 * 2, "two players, standings and games"


def test_an_organiser_creates_a_league_through_the_form(app):
    add_admin(app)
    client = logged_in(app)
    csrf = csrf_of(client, "/admin/tournaments/new")
    before = everything(app)
    bad = client.post("/admin/tournaments/new", data=form(csrf, players="Anna anna@x"))
    assert bad.status_code == 422 and "Name &lt;email&gt;" in bad.get_data(as_text=True)
    bad = client.post("/admin/tournaments/new", data=form(csrf, table_size="9"))
    assert bad.status_code == 422
    assert everything(app) == before  # refused input changes nothing
    made = client.post("/admin/tournaments/new", data=form(csrf))
    assert made.status_code == 303
    with reading(app) as session:
        t = session.exec(select(Tournament)).one()
        entry = session.exec(select(AuditEntry).where(
            AuditEntry.action == "tournament create")).one()
    assert (t.name, t.format, t.table_size) == ("Winter league", "league", 3)
    assert entry.admin_id is not None and "6 players" in entry.detail
    assert made.headers["Location"].endswith(f"/admin/tournaments/{t.id}")
    page = client.get(f"/admin/tournaments/{t.id}").get_data(as_text=True)
    assert "p0@example.org" in page  # the organiser sees the addresses
    assert f"/tournaments/{t.public_id}" in page
    assert "Winter league" in client.get("/admin/tournaments/").get_data(as_text=True)


def test_a_rated_tournament_rates_its_games(app):
    """Issue 43, point 10: the form's *Rated* choice makes every game of the tournament rated
    (its results count in the ratings); without it, none is."""
    from pbem.ground.models import RatedResult

    add_admin(app)
    client = logged_in(app)
    csrf = csrf_of(client, "/admin/tournaments/new")
    page = client.get("/admin/tournaments/new").get_data(as_text=True)
    assert 'name="rated"' in page
    assert client.post("/admin/tournaments/new", data=form(csrf, rated="on")).status_code == 303
    assert client.post("/admin/tournaments/new",
                       data=form(csrf, name="Friendly league")).status_code == 303
    with reading(app) as session:
        rated, friendly = session.exec(select(Tournament).order_by(Tournament.id)).all()
        entry = session.exec(select(AuditEntry).where(
            AuditEntry.action == "tournament create").order_by(AuditEntry.id)).first()
    assert (rated.rated, friendly.rated) == (True, False)
    assert "rated" in entry.detail
    rated_games = [t.game_id for t in tables_of(app, rated.id)]
    with reading(app) as session:
        games = {g.id: g for g in session.exec(select(Game))}
    assert rated_games and all(games[g].rated for g in rated_games)
    assert not any(games[t.game_id].rated for t in tables_of(app, friendly.id))
    play_out(app, rated_games[0], "rated")
    play_out(app, tables_of(app, friendly.id)[0].game_id, "friendly")
    with reading(app) as session:
        counted = {r.game_id for r in session.exec(select(RatedResult))}
    assert counted == {rated_games[0]}
    shown = app.test_client().get(f"/tournaments/{rated.public_id}").get_data(as_text=True)
    assert "Its games are rated." in shown
    shown = app.test_client().get(f"/tournaments/{friendly.public_id}").get_data(as_text=True)
    assert "rated" not in shown


def test_next_season_and_close_through_the_forms_audited(app):
    tid, _admin = make(app, pairings.LEAGUE, 6)
    play_round(app, tid, season=1)
    run_jobs(app, T0 + timedelta(minutes=1))
    assert tournament(app, tid).status == T_BETWEEN
    client = logged_in(app)
    csrf = csrf_of(client, f"/admin/tournaments/{tid}")
    page = client.get(f"/admin/tournaments/{tid}").get_data(as_text=True)
    assert "Start the next season" in page
    before = everything(app)
    refused = client.post(f"/admin/tournaments/{tid}/next-season",
                          data={"csrf_token": csrf, "leaving": "nobody@example.org",
                                "joining": "", "reason": "as planned"})
    assert refused.status_code == 422 and "does not play" in refused.get_data(as_text=True)
    assert everything(app) == before
    started = client.post(f"/admin/tournaments/{tid}/next-season",
                          data={"csrf_token": csrf, "leaving": "p4@example.org",
                                "joining": "Nina <nina@example.org>", "reason": "as planned"})
    assert started.status_code == 303
    assert tournament(app, tid).season == 2
    closed = client.post(f"/admin/tournaments/{tid}/close",
                         data={"csrf_token": csrf, "reason": "the club stops"})
    assert closed.status_code == 303 and tournament(app, tid).status == T_CLOSED
    with reading(app) as session:
        actions = [(a.action, a.reason) for a in session.exec(select(AuditEntry).order_by(
            AuditEntry.id)) if a.action.startswith("tournament")]
    assert actions == [("tournament create", "tournament create"),
                       ("tournament season", "as planned"),
                       ("tournament close", "the club stops")]


def test_posts_need_the_login_and_the_csrf_token_and_gets_change_nothing(app):
    tid, _admin = make(app, pairings.SWISS, 6, rounds=2)
    public = tournament(app, tid).public_id
    anonymous = app.test_client()
    token = csrf_of(anonymous)
    client = logged_in(app)
    before = everything(app)
    posts = [("/admin/tournaments/new", form(token)),
             (f"/admin/tournaments/{tid}/close", {"csrf_token": token, "reason": "x"}),
             (f"/admin/tournaments/{tid}/next-season", {"csrf_token": token, "reason": "x"})]
    for path, data in posts:
        assert anonymous.post(path, data=data).status_code == 401, path
    for path, data in posts:
        for bad in ({}, {"csrf_token": "forged"}):
            response = client.post(path, data={**{k: v for k, v in data.items()
                                                   if k != "csrf_token"}, **bad})
            assert response.status_code == 400, (path, bad)
    for path in ("/admin/tournaments/", "/admin/tournaments/new", f"/admin/tournaments/{tid}",
                 f"/admin/tournaments/{tid}/close", f"/admin/tournaments/{tid}/next-season",
                 f"/tournaments/{public}"):
        assert client.get(path).status_code in (200, 405), path
        assert anonymous.get(path).status_code in (200, 303, 405), path
    assert anonymous.get(f"/admin/tournaments/{tid}").status_code == 303  # to the login
    assert everything(app) == before


def test_the_admin_pages_answer_in_the_browsers_language(app):
    tid, _admin = make(app, pairings.ROUND_ROBIN, 3)
    client = logged_in(app)
    page = client.get(f"/admin/tournaments/{tid}", headers={"Accept-Language": "de"})
    assert "Tabelle" in page.get_data(as_text=True) or "Punkte" in page.get_data(as_text=True)
    public = tournament(app, tid).public_id
    page = app.test_client().get(f"/tournaments/{public}", headers={"Accept-Language": "es"})
    assert "Puntos" in page.get_data(as_text=True)


@pytest.mark.parametrize("language, example", [("en", "Name <email>"),
                                               ("de", "Name <email>"),
                                               ("es", "Nombre <email>")])
def test_the_player_forms_show_their_format_in_every_language(app, language, example):
    """The players' labels of the create form and the next-season form say how to write a
    player: 'Name <email>' reached the browser as a tag and the label read "as Name ,"."""
    tid, _admin = make(app, pairings.LEAGUE, 6)
    with writing(app) as session:
        session.get(Tournament, tid).status = T_BETWEEN
    client = logged_in(app)
    head = {"Accept-Language": language}
    for path, label in (("/admin/tournaments/new", "players"), (f"/admin/tournaments/{tid}",
                                                                 "joining")):
        page = client.get(path, headers=head).get_data(as_text=True)
        text = re.search(rf'<label for="{label}">(.*?)</label>', page, re.DOTALL)[1]
        assert "<" not in text, text  # no markup inside the label: the example is text
        assert example in html.unescape(text), text


def test_a_players_language_after_the_address_sets_their_mails_language(app):
    """'Name <email> de': that player's round mail is in German; an unknown language is
    refused with the languages to use, and nothing is created."""
    add_admin(app)
    client = logged_in(app)
    csrf = csrf_of(client, "/admin/tournaments/new")
    lines = [f"Player {i} <p{i}@example.org>" for i in range(6)]
    before = everything(app)
    bad = client.post("/admin/tournaments/new",
                      data=form(csrf, players="\n".join([lines[0] + " xx", *lines[1:]])))
    assert bad.status_code == 422 and "en, de, es" in bad.get_data(as_text=True)
    assert everything(app) == before
    made = client.post("/admin/tournaments/new", data=form(
        csrf, players="\n".join([lines[0] + " de", lines[1] + "  es ", *lines[2:]])))
    assert made.status_code == 303
    with reading(app) as session:
        languages = {e.email: e.language for e in session.exec(select(Entrant))}
        round_mails = {m.to_addr: m for m in session.exec(select(OutboxMessage).where(
            OutboxMessage.kind == "tournament"))}
    assert languages["p0@example.org"] == "de" and languages["p1@example.org"] == "es"
    assert languages["p2@example.org"] == "en"
    assert round_mails["Player 0 <p0@example.org>"].subject == \
        "[Winter league] Saison 1 von Winter league beginnt"
    assert "Empieza la temporada 1" in round_mails["Player 1 <p1@example.org>"].subject
    assert "Season 1 of Winter league begins" in round_mails["Player 2 <p2@example.org>"].subject


def test_the_public_overview_holds_no_address_at_all(app):
    """The data the public page is rendered from has no address in it (not only the page)."""
    tid, _admin = make(app, pairings.ROUND_ROBIN, 4)
    public = tournament(app, tid).public_id
    with app.app_context():
        view = tournaments.overview(public_id=public, public=True)
        private = tournaments.overview(tid)
    shown = [vars(row) for section in view.sections for row in section.rows]
    games = [game for section in view.sections for game in section.games]
    assert not ADDRESS.search(repr(shown) + repr(games)) and view.entrants == {}
    assert all(ADDRESS.fullmatch(row.email) for row in private.sections[0].rows)
