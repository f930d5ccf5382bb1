"""Issue 33's profile without a password: the profile reached from the "my games" page, its
choices as the defaults of new games, asking for the link at /me (limited, revealing nothing),
and the public profile page, which never shows an address."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from server import field, finish_game, html_of, make_app, text_of
from sqlalchemy import select as sa_select
from sqlmodel import SQLModel, select

import pbem.ground.models  # every table, for the snapshot
from pbem.ground.db import get_engine, reading, utcnow
from pbem.ground.models import LinkRequest, Profile, Seat
from pbem.services.creating import create_game
from pbem.services.players import parse_player
from pbem.services.profiles import request_link

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

GAMES_LINK = re.compile(r"https?://[^\s<>\"']+/me/([A-Za-z0-9_-]{32})")
ANNA, BRUNO, CHIARA = "Anna <anna@example.org>", "Bruno <b@example.org>", "Chiara <c@example.org>"


def _game(app, names, seed="p", title="Cup"):
    with app.app_context():
        return create_game([parse_player(n) for n in names], seed, start=0, title=title).game_id


def _games_token(mailbox, address: str) -> str:
    text = GAMES_LINK.findall(text_of(mailbox.to(address)[-1]))
    assert text, "a my-games link in the mail"
    return text[-1]


def _everything(app):
    with get_engine(app).connect() as conn:
        return {t.name: [tuple(r) for r in conn.execute(sa_select(t).order_by(*t.primary_key))]
                for t in SQLModel.metadata.sorted_tables}


def _seat(app, game_id, number) -> Seat:
    with reading(app) as db:
        return db.exec(select(Seat).where(Seat.game_id == game_id, Seat.number == number)).one()


PROFILE = {"name": "Anna K.", "language": "de", "timezone": "Europe/Berlin", "notify": "turn",
           "talk_notify": "none"}


def _save(client, token, **changes):
    page = client.get(f"/me/{token}/profile").get_data(as_text=True)
    return client.post(f"/me/{token}/profile", data={
        "csrf_token": field(page, "csrf_token"), **PROFILE, **changes})


def test_the_saved_profile_gives_new_games_their_defaults(app, client, mailbox):
    """Anna saves her profile from her games page: her seats in games made afterwards start in
    her language, time zone and mail choices; a player without a saved profile gets the
    server's defaults, and Anna's running game keeps its own."""
    first = _game(app, [ANNA, BRUNO, CHIARA], "d-1")
    token = _games_token(mailbox, "anna@example.org")
    games_page = client.get(f"/me/{token}").get_data(as_text=True)
    assert f"/me/{token}/profile" in games_page
    page = client.get(f"/me/{token}/profile").get_data(as_text=True)
    assert 'value="Anna"' in page, "the name of her latest seat until she chooses one"
    response = _save(client, token)
    assert response.status_code == 303
    shown = client.get(response.headers["Location"]).get_data(as_text=True)
    assert 'value="Anna K."' in shown and "Europe/Berlin" in shown
    second = _game(app, [BRUNO, "anna <ANNA@example.org>", CHIARA], "d-2")
    anna, bruno = _seat(app, second, 1), _seat(app, second, 0)
    assert (anna.language, anna.timezone, anna.notify, anna.talk_notify) == (
        "de", "Europe/Berlin", "turn", "none")
    assert anna.name == "anna", "the name typed for the game stays the seat's"
    assert (bruno.language, bruno.timezone, bruno.notify, bruno.talk_notify) == (
        "en", None, "every", "each")
    old = _seat(app, first, 0)
    assert (old.language, old.timezone, old.notify) == ("en", None, "every")
    # Her first mail of the new game is in German.
    assert "Du bist zu einem Spiel eingeladen" in str(
        mailbox.to("anna@example.org")[-1]["Subject"])


@pytest.mark.parametrize("changes, field_name", [
    ({"timezone": "Mars/Olympus"}, "Mars/Olympus"),
    ({"name": "a" * 61}, "at most 60"),
    ({"name": "Eve <x>"}, "without &lt;"),
    ({"language": "fr"}, "unknown language"),
    ({"notify": "always"}, "choose one of the options"),
    ({"talk_notify": ""}, "choose one of the options"),
])
def test_a_bad_profile_form_is_refused_with_the_reason_and_saves_nothing(
        app, client, mailbox, changes, field_name):
    _game(app, [ANNA, BRUNO, CHIARA], "bad")
    token = _games_token(mailbox, "anna@example.org")
    before = _everything(app)
    response = _save(client, token, **changes)
    assert response.status_code == 422
    assert field_name in response.get_data(as_text=True)
    assert _everything(app) == before


def test_get_never_acts_and_every_form_needs_its_csrf_token(app, client, mailbox):
    """Opening /me, the profile and the public page changes nothing; a POST without the form's
    token (to /me or to the profile) is refused and changes nothing either."""
    _game(app, [ANNA, BRUNO, CHIARA], "g")
    token = _games_token(mailbox, "anna@example.org")
    assert _save(client, token).status_code == 303
    with reading(app) as db:
        public_id = db.exec(select(Profile)).one().public_id
    before = _everything(app)
    for path in ("/me", f"/me/{token}/profile", f"/players/{public_id}"):
        assert client.get(path).status_code == 200, path
    assert _everything(app) == before
    assert client.post("/me", data={"email": "anna@example.org"}).status_code == 400
    assert client.post(f"/me/{token}/profile", data=PROFILE).status_code == 400
    assert client.post("/me", data={"email": "anna@example.org",
                                    "csrf_token": "forged"}).status_code == 400
    assert _everything(app) == before
    assert client.get(f"/me/{token}/profile").headers["Cache-Control"] == "no-store"


def _ask(client, email: str):
    page = client.get("/me").get_data(as_text=True)
    return client.post("/me", data={"csrf_token": field(page, "csrf_token"), "email": email})


def test_asking_at_me_mails_a_fresh_link_to_a_known_address_and_tells_nobody_anything(
        app, client, mailbox):
    """A known address gets a mail with a working link; an unknown one gets no mail; both
    see the same answer, so the page tells nobody whether an address plays here."""
    _game(app, [ANNA, BRUNO, CHIARA], "ask")
    before = len(mailbox.to("anna@example.org"))
    known = _ask(client, "  ANNA@example.org ")
    unknown = _ask(client, "nobody@example.org")
    assert known.status_code == unknown.status_code == 200
    assert known.get_data(as_text=True).replace("anna@example.org", "X") == \
        unknown.get_data(as_text=True).replace("nobody@example.org", "X")
    mails = mailbox.to("anna@example.org")
    assert len(mails) == before + 1
    message = mails[-1]
    links = GAMES_LINK.findall(text_of(message))
    assert len(links) == 1 and links == GAMES_LINK.findall(html_of(message))
    page = client.get(f"/me/{links[0]}")
    assert page.status_code == 200 and "Cup" in page.get_data(as_text=True)
    assert mailbox.to("nobody@example.org") == []
    with reading(app) as db:
        assert sorted(r.email for r in db.exec(select(LinkRequest))) == [
            "anna@example.org", "nobody@example.org"]
    refused = _ask(client, "not an address")
    assert refused.status_code == 400 and "like anna@example.org" in refused.get_data(True)


def test_link_requests_are_limited_per_address_and_per_client_known_or_not(tmp_path):
    """The day's limit per address counts every request, known address or not, so the
    refusal tells nothing either; the limit per client address holds for every address."""
    app = make_app(tmp_path / "instance", GAMES_LINK_REQUESTS_PER_ADDRESS=2,
                   GAMES_LINK_REQUESTS_PER_IP=5)
    _game(app, [ANNA, BRUNO, CHIARA], "lim")
    client = app.test_client()
    for email in ("anna@example.org", "nobody@example.org"):
        assert [_ask(client, email).status_code for _ in range(3)] == [200, 200, 429]
    # 4 counted from this client: one more passes, then every address is refused.
    assert _ask(client, "b@example.org").status_code == 200
    refused = _ask(client, "c@example.org")
    assert refused.status_code == 429 and "your network" in refused.get_data(as_text=True)
    with app.app_context():
        later = utcnow() + timedelta(days=1, minutes=1)
        assert request_link("c@example.org", "127.0.0.1", now=later) == "c@example.org"


def test_the_public_profile_shows_name_and_finished_games_but_never_an_address(
        app, client, mailbox):
    """The public page lists the finished game with the place and a link to its spectator
    page; no seat's address appears anywhere on it."""
    app.config["MAIL_BOARD_PICTURE"] = False
    addresses = ["anna@example.org", "b@example.org", "c@example.org"]
    game_id = _game(app, [ANNA, BRUNO, CHIARA], "pub", "Autumn cup")
    finish_game(app, game_id, "pub")
    token = _games_token(mailbox, "anna@example.org")
    assert _save(client, token, name="Anna the Bold").status_code == 303
    with reading(app) as db:
        profile = db.exec(select(Profile)).one()
        game = db.get(pbem.ground.models.Game, game_id)
    page = client.get(f"/players/{profile.public_id}").get_data(as_text=True)
    assert "Anna the Bold" in page and f"Autumn cup #{game_id}" in page
    assert f"/watch/{game.watch_id}" in page
    assert re.search(r"\d of 3", page)
    for address in addresses:
        assert address not in page.lower()
        assert address.split("@")[0] + "@" not in page.lower()
    assert "@" not in re.sub(r"<[^>]+>", "", page)
    for bad in ("nobody", "x" * 40, "..%2f", "a b"):
        assert client.get(f"/players/{bad}").status_code == 404
