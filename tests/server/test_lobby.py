"""Issue 33's open lobby: a player posts an open game from their games page, others join it
with their own "my games" link, it starts when full through create_game with the usual first
mails; the poster withdraws it, one nobody fills expires (a chore) and its poster is told, a
player below the minimum rating is refused and told why; GET never acts, every form needs its
CSRF token, and the day's limits hold across several server processes."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import requests
from server import Mailbox, field, make_app, text_of
from sqlalchemy import select as sa_select
from sqlmodel import SQLModel, select

import pbem.ground.models  # every table, for the snapshot
from pbem.ground.db import get_engine, reading, writing
from pbem.ground.models import Game, LobbySeat, OpenGame, Profile, Rating, Seat
from pbem.scheduler.jobs import run_jobs
from pbem.services import mail

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

KIND = "kardinal-koenig"
PEOPLE = ("anna", "bruno", "chiara", "dora")


def _everything(app):
    with get_engine(app).connect() as conn:
        return {t.name: [tuple(r) for r in conn.execute(sa_select(t).order_by(*t.primary_key))]
                for t in SQLModel.metadata.sorted_tables}


def _keys(app, names=PEOPLE) -> dict[str, str]:
    """A fresh "my games" key for each person, as every mail of theirs carries one."""
    with app.app_context(), writing() as session:
        return {n: mail.mint_player_key(session, f"{n}@example.org") for n in names}


def _post(client, token, **values):
    page = client.get(f"/me/{token}/lobby").get_data(as_text=True)
    data = {"csrf_token": field(page, "csrf_token"), "game": KIND, "players": "3",
            "deadline_hours": "72", "timezone": "UTC", **values}
    return client.post(f"/me/{token}/lobby", data=data)


def _press(client, token, game_id, action):
    page = client.get(f"/me/{token}/lobby").get_data(as_text=True)
    return client.post(f"/me/{token}/lobby/{game_id}/{action}",
                       data={"csrf_token": field(page, "csrf_token")})


def _open_games(app) -> list[OpenGame]:
    with reading(app) as db:
        return list(db.exec(select(OpenGame).order_by(OpenGame.id)))


@pytest.fixture
def lobby_app(tmp_path):
    app = make_app(tmp_path / "instance", GAMES_LOBBY=True, MAIL_BOARD_PICTURE=False)
    return app


def test_the_lobby_is_there_only_when_a_club_turns_it_on(app, client):
    token = _keys(app, ["anna"])["anna"]
    assert client.get("/lobby").status_code == 404
    assert client.get(f"/me/{token}/lobby").status_code == 404
    assert "/lobby" not in client.get(f"/me/{token}").get_data(as_text=True)


def test_post_join_and_a_full_game_starts_with_its_first_mails(lobby_app):
    app, client, mailbox = lobby_app, lobby_app.test_client(), Mailbox(lobby_app)
    keys = _keys(app)
    assert f"/me/{keys['anna']}/lobby" in client.get(f"/me/{keys['anna']}").get_data(True)
    assert _post(client, keys["anna"], rated="on").status_code == 303
    [posted] = _open_games(app)
    assert (posted.status, posted.rated, posted.players, posted.poster) == (
        "open", True, 3, "anna@example.org")
    public = client.get("/lobby").get_data(as_text=True)
    with reading(app) as db:
        poster = db.exec(select(Profile).where(Profile.email == "anna@example.org")).one()
    assert poster.name.startswith("Player ") and "anna" not in poster.name
    assert "1 of 3" in public and poster.name in public
    # Issue 43, point 12: a post is not labelled like a game ("Kardinal & König #1"), and a
    # new player's cautious rating (below zero) is shown as provisional, without it.
    assert f"Kardinal &amp; König, posted by {poster.name}" in public
    assert f"#{posted.id}" not in public
    assert "(<span class=\"muted\">provisional</span>)" in public and "rating -" not in public
    assert f"/players/{poster.public_id}" in public and "anna" not in public
    assert "@example.org" not in public and "/join" not in public
    before = _everything(app)
    for path in ("/lobby", f"/me/{keys['bruno']}/lobby"):
        assert client.get(path).status_code == 200
    assert _everything(app) == before, "a GET changed something"
    assert client.post(f"/me/{keys['bruno']}/lobby/{posted.id}/join").status_code == 400
    assert client.post(f"/me/{keys['bruno']}/lobby", data={"game": KIND}).status_code == 400
    assert _everything(app) == before, "a POST without its CSRF token changed something"

    assert _press(client, keys["bruno"], posted.id, "join").status_code == 303
    again = _press(client, keys["bruno"], posted.id, "join")
    assert again.status_code == 422 and "already in" in again.get_data(as_text=True)
    assert _press(client, keys["chiara"], posted.id, "join").status_code == 303
    [started] = _open_games(app)
    assert started.status == "started" and started.game_id is not None
    with reading(app) as db:
        game = db.get(Game, started.game_id)
        seats = db.exec(select(Seat).where(Seat.game_id == game.id).order_by(Seat.number)).all()
    assert game.rated and game.kind == KIND
    assert [s.email for s in seats] == ["anna@example.org", "bruno@example.org",
                                        "chiara@example.org"], "seats in the order joined"
    for name in ("anna", "bruno", "chiara"):
        assert any("You are invited to play" in str(m["Subject"])
                   for m in mailbox.to(f"{name}@example.org")), name
    late = _press(client, keys["dora"], posted.id, "join")
    assert late.status_code == 409 and "no longer open" in late.get_data(as_text=True)
    assert f"#{posted.id}" not in client.get("/lobby").get_data(as_text=True)
    # Those whose post just started are told so, with the way to the game.
    for name in ("anna", "chiara"):
        own = client.get(f"/me/{keys[name]}/lobby").get_data(as_text=True)
        assert (f"Your open game has started: Kardinal &amp; König #{game.id}. Everyone got its "
                f'first mail; open it from <a href="/me/{keys[name]}">your games</a>.') in own
    assert "Your open game has started" not in \
        client.get(f"/me/{keys['dora']}/lobby").get_data(as_text=True)


def test_withdraw_expiry_and_the_minimum_rating(lobby_app):
    app, client, mailbox = lobby_app, lobby_app.test_client(), Mailbox(lobby_app)
    keys = _keys(app)
    # The poster withdraws: who joined is told, nobody can join any more.
    assert _post(client, keys["anna"]).status_code == 303
    first = _open_games(app)[-1].id
    assert _press(client, keys["bruno"], first, "withdraw").status_code == 404
    assert _press(client, keys["bruno"], first, "join").status_code == 303
    assert _press(client, keys["anna"], first, "withdraw").status_code == 303
    assert _open_games(app)[-1].status == "withdrawn"
    assert "was withdrawn by its poster" in text_of(mailbox.to("bruno@example.org")[-1])
    assert _press(client, keys["chiara"], first, "join").status_code == 409

    # Nobody fills it: the scheduler takes it down once, after lobby_hours, and tells anna.
    assert _post(client, keys["anna"], seating="drawn").status_code == 303
    second = _open_games(app)[-1]
    hours = app.config["GAMES_LOBBY_HOURS"]
    assert run_jobs(app, second.created_at + timedelta(hours=hours - 1))[
        "open_games_expired"] == 0
    assert run_jobs(app, second.created_at + timedelta(hours=hours, minutes=1))[
        "open_games_expired"] == 1
    assert run_jobs(app, second.created_at + timedelta(hours=hours + 2))[
        "open_games_expired"] == 0
    assert _open_games(app)[-1].status == "expired"
    assert "Nobody filled your open game" in text_of(mailbox.to("anna@example.org")[-1])

    # A minimum rating: dora (no rated game: 0.0) is refused and told why; bruno, rated
    # above it, joins.
    with app.app_context(), writing() as session:
        session.add(Rating(kind=KIND, player="bruno@example.org", mu=30.0, sigma=3.0,
                           ordinal=21.0, games=9))
    assert _post(client, keys["anna"], min_rating="5", rated="on").status_code == 303
    third = _open_games(app)[-1].id
    before = _everything(app)
    refused = _press(client, keys["dora"], third, "join")
    assert refused.status_code == 422
    assert "at least 5.0" in refused.get_data(as_text=True) and \
        "yours is 0.0" in refused.get_data(as_text=True)
    assert _everything(app) == before
    assert _press(client, keys["bruno"], third, "join").status_code == 303
    assert "21.0" in client.get("/lobby").get_data(as_text=True), "ratings shown in the lobby"


@pytest.mark.parametrize("values, words", [
    ({"players": "9"}, "3 to 5 players"),
    ({"players": "x"}, "3 to 5 players"),
    ({"deadline_hours": "1"}, "deadline"),
    ({"timezone": "Nowhere/Land"}, "time zone"),
    ({"min_rating": "lots"}, "minimum rating"),
    ({"seating": "best"}, "choose one"),
    ({"game": "chess"}, "choose one of the games"),
])
def test_a_bad_post_is_refused_with_the_reason_and_posts_nothing(lobby_app, values, words):
    app, client = lobby_app, lobby_app.test_client()
    token = _keys(app, ["anna"])["anna"]
    before = _everything(app)
    response = _post(client, token, **values)
    assert response.status_code == 422 and words in response.get_data(as_text=True)
    assert _everything(app) == before


# --- the limits across several server processes ----------------------------------------------

def _form_post(base: str, path: str, address: str, data: dict) -> int:
    with requests.Session() as browser:
        browser.headers["X-Forwarded-For"] = address
        page = browser.get(f"{base}{path.rsplit('/lobby', 1)[0]}/lobby"
                           if "/lobby" in path else f"{base}/me", timeout=60).text
        token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        return browser.post(f"{base}{path}", data={"csrf_token": token, **data}, timeout=120,
                            allow_redirects=False).status_code


def test_the_day_limits_hold_across_gunicorn_workers(tmp_path):
    """Posts per address and per client address, joins per address and link requests per
    address, each hit in parallel through a gunicorn of 3 workers: the count holds."""
    from test_hardening_processes import gunicorn

    instance = tmp_path / "instance"
    app = make_app(instance)
    keys = _keys(app, [f"p{i}" for i in range(12)] + ["anna"])
    with app.app_context(), writing() as session:  # anna's address is known at /me
        session.add(Game(kind=KIND, title="t", seed="s", start_seat=0, state_json="{}"))
        session.flush()
        game = session.exec(select(Game)).one()
        session.add(Seat(game_id=game.id, number=0, name="Anna", email="anna@example.org",
                         colour="yellow"))
    post = {"game": KIND, "players": "5", "deadline_hours": "72", "timezone": "UTC"}
    with gunicorn(instance, workers=3, SERVE_TRUSTED_PROXIES="1", GAMES_LOBBY="true",
                  GAMES_LOBBY_POSTS_PER_ADDRESS="3", GAMES_LOBBY_POSTS_PER_IP="5",
                  GAMES_LOBBY_JOINS_PER_ADDRESS="2", GAMES_LINK_REQUESTS_PER_ADDRESS="3",
                  GAMES_LINK_REQUESTS_PER_IP="1000", MAIL_BOARD_PICTURE="false") as base:
        # One address posts 8 at once, each from its own client address: 3 pass.
        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(lambda i: _form_post(
                base, f"/me/{keys['p0']}/lobby", f"203.0.113.{i}", post), range(8)))
        assert sorted(codes) == [303] * 3 + [429] * 5
        # Eight addresses post at once from one client address: 5 pass.
        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(lambda i: _form_post(
                base, f"/me/{keys[f'p{i + 1}']}/lobby", "198.51.100.9", post), range(8)))
        assert sorted(codes) == [303] * 5 + [429] * 3
        # One address joins six open games at once: 2 pass.
        games = [g.id for g in _open_games(app)][:6]
        assert len(games) == 6
        with ThreadPoolExecutor(6) as pool:
            codes = list(pool.map(lambda g: _form_post(
                base, f"/me/{keys['p11']}/lobby/{g}/join", "192.0.2.1", {}), games))
        assert sorted(codes) == [303] * 2 + [429] * 4
        # Eight requests for anna's link at once: 3 pass, and 3 mails are queued.
        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(lambda i: _form_post(
                base, "/me", f"192.0.2.{i + 10}", {"email": "anna@example.org"}), range(8)))
        assert sorted(codes) == [200] * 3 + [429] * 5
    with reading(app) as db:
        assert len(db.exec(select(OpenGame)).all()) == 8
        assert len(db.exec(select(LobbySeat).where(
            LobbySeat.email == "p11@example.org")).all()) == 2
        assert len(db.exec(select(pbem.ground.models.OutboxMessage).where(
            pbem.ground.models.OutboxMessage.kind == "my_link")).all()) == 3


def test_joins_racing_for_the_last_seats_while_others_post_fill_the_game_exactly_once(
        tmp_path):
    """Eight players join one open game of three at the same moment, through a gunicorn of 3
    workers, while four others post games: exactly two joins pass, the others are told it is
    no longer open, one Game of three seats starts, and every post stands."""
    from test_hardening_processes import gunicorn

    instance = tmp_path / "instance"
    app = make_app(instance)
    joiners = [f"j{i}" for i in range(8)]
    posters = [f"q{i}" for i in range(4)]
    keys = _keys(app, ["anna", *joiners, *posters])
    post = {"game": KIND, "players": "3", "deadline_hours": "72", "timezone": "UTC"}
    with gunicorn(instance, workers=3, SERVE_TRUSTED_PROXIES="1", GAMES_LOBBY="true",
                  MAIL_BOARD_PICTURE="false") as base:
        assert _form_post(base, f"/me/{keys['anna']}/lobby", "192.0.2.1", post) == 303
        [anna_game] = [g.id for g in _open_games(app)]
        # Every browser has its page and token first; then all press at once.
        actions = [(f"/me/{keys[n]}/lobby/{anna_game}/join", {}, f"198.51.100.{i}", keys[n])
                   for i, n in enumerate(joiners)]
        actions += [(f"/me/{keys[n]}/lobby", post, f"203.0.113.{i}", keys[n])
                    for i, n in enumerate(posters)]
        together = threading.Barrier(len(actions))

        def press(action):
            path, data, address, key = action
            with requests.Session() as browser:
                browser.headers["X-Forwarded-For"] = address
                page = browser.get(f"{base}/me/{key}/lobby", timeout=60).text
                token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
                together.wait(120)
                return browser.post(f"{base}{path}", data={"csrf_token": token, **data},
                                    timeout=120, allow_redirects=False).status_code

        with ThreadPoolExecutor(len(actions)) as pool:
            codes = list(pool.map(press, actions))
    joined, posted = codes[:len(joiners)], codes[len(joiners):]
    assert sorted(joined) == [303] * 2 + [409] * 6
    assert posted == [303] * 4
    with reading(app) as db:
        games = db.exec(select(Game)).all()
        assert len(games) == 1
        seats = db.exec(select(Seat).where(Seat.game_id == games[0].id)).all()
        first = db.get(OpenGame, anna_game)
        lobby_seats = db.exec(select(LobbySeat).where(
            LobbySeat.open_game_id == anna_game)).all()
        others = db.exec(select(OpenGame).where(OpenGame.id != anna_game)).all()
    assert first.status == "started" and first.game_id == games[0].id
    assert sorted(s.email for s in seats) == sorted(s.email for s in lobby_seats)
    assert len(seats) == 3 and "anna@example.org" in {s.email for s in seats}
    assert sorted(g.poster for g in others) == [f"{n}@example.org" for n in posters]
    assert all(g.status == "open" for g in others)


def test_a_start_that_fails_leaves_the_game_open_to_withdraw_and_never_overfills(
        lobby_app, monkeypatch):
    """create_game failing for the join that fills a game: nothing of the game is made, the
    open game is open again (its poster can withdraw it), and nobody joins past its size."""
    from pbem.services import game_settings, lobby

    app = lobby_app
    keys = _keys(app)
    with app.app_context():
        posting, errors = game_settings.read_lobby_form({"game": KIND, "players": "3",
                                                "deadline_hours": "72", "timezone": "UTC"})
        assert not errors
        game_id = lobby.post(keys["anna"], posting, "192.0.2.1")
        lobby.join(keys["bruno"], game_id, "192.0.2.2")

        def broken(*args, **kwargs):
            raise RuntimeError("the database went away")

        monkeypatch.setattr(lobby, "create_game", broken)
        with pytest.raises(RuntimeError):
            lobby.join(keys["chiara"], game_id, "192.0.2.3")
        monkeypatch.undo()
        [posted] = _open_games(app)
        assert posted.status == "open" and posted.game_id is None
        with reading(app) as db:
            assert db.exec(select(Game)).all() == []
        with pytest.raises(lobby.GameNotRunning):
            lobby.join(keys["dora"], game_id, "192.0.2.4")
        lobby.withdraw(keys["anna"], game_id)
    assert _open_games(app)[0].status == "withdrawn"
    with reading(app) as db:
        assert len(db.exec(select(LobbySeat)).all()) == 3


def test_the_lobbys_absolute_links_come_from_the_base_url_not_the_host_header(tmp_path):
    """A made-up Host header (or a forwarded one) never names the server in the page's links."""
    app = make_app(tmp_path / "instance", GAMES_LOBBY=True, BASE_URL="https://games.example.org")
    client = app.test_client()
    for headers in ({"Host": "evil.example"}, {"Host": "evil.example:8443"}, {}):
        page = client.get("/lobby", headers=headers).get_data(as_text=True)
        assert "https://games.example.org/me" in page
        assert "evil.example" not in page and "http://localhost" not in page
