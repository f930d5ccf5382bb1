"""Who reads which language: a seat's language chosen at creation (command line, admin form) and
changed on its page; its pages and mails in it; other pages in the browser's language."""

from __future__ import annotations

import html
import re

import pytest
from server import field
from sqlmodel import select

from pbem.ground.db import reading
from pbem.ground.models import Seat
from pbem.services.creating import create_game
from pbem.services.players import parse_player
from pbem.services.stewardship import create_admin

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

PLAYERS = ["Anna <anna@example.org>", "Bernd <bernd@example.org>", "Carmen <carmen@example.org>"]


def _languages(app, game_id: int) -> list[str]:
    with app.app_context(), reading() as session:
        return [s.language for s in session.exec(select(Seat).where(Seat.game_id == game_id)
                                                 .order_by(Seat.number))]


def test_lang_after_each_player_on_the_command_line(app, runner):
    """`--lang` names the language of the --player before it; the others get the default."""
    result = runner.invoke(args=["create-game", "--player", PLAYERS[0], "--player", PLAYERS[1],
                                 "--lang", "de", "--player", PLAYERS[2], "--lang", "ES",
                                 "--seed", "l1"])
    assert result.exit_code == 0, result.output
    assert _languages(app, 1) == ["en", "de", "es"]


@pytest.mark.parametrize("args, says", [
    (["--lang", "de", "--player", PLAYERS[0]], "put it right after the --player it is for"),
    (["--player", PLAYERS[0], "--lang", "de", "--lang", "es"], "give each --player one --lang"),
    (["--player", PLAYERS[0], "--lang", "fr"], "unknown language 'fr'; use one of en, de, es"),
])
def test_a_misplaced_or_unknown_lang_is_refused(app, runner, args, says):
    """A --lang before any --player, a second one for a player or an unknown code is refused
    with what to do, and no game is made."""
    rest = [a for p in PLAYERS[1:] for a in ("--player", p)]
    result = runner.invoke(args=["create-game", *args, *rest])
    assert result.exit_code != 0
    assert says in result.output
    with app.app_context(), reading() as session:
        assert session.exec(select(Seat)).first() is None


def test_default_language_from_the_settings(tmp_path):
    """A seat whose creator chose no language gets `[games] language`."""
    from server import make_app

    app = make_app(tmp_path / "instance", GAMES_LANGUAGE="de")
    with app.app_context():
        create_game([parse_player(p) for p in PLAYERS], "l2")
    assert _languages(app, 1) == ["de", "de", "de"]


def new_game_form(app, client) -> str:
    """The admin's create-game form, logged in as a new organiser."""
    with app.app_context():
        create_admin("boss@example.org", "a long enough password")
    page = client.get("/admin/login").get_data(as_text=True)
    client.post("/admin/login", data={"email": "boss@example.org",
                                      "password": "a long enough password",
                                      "csrf_token": field(page, "csrf_token")})
    return client.get("/admin/games/new").get_data(as_text=True)


def test_admin_form_takes_each_players_language(app, client):
    """The create-game form has a language for each player, which the seats get."""
    page = new_game_form(app, client)
    assert 'name="language2"' in page and ">Español</option>" in page
    data = {"csrf_token": field(page, "csrf_token"), "game": "kardinal-koenig", "start": "0",
            "deadline_hours": "72", "reminders": "24", "timezone": "UTC"}
    for i, (player, colour, code) in enumerate(zip(PLAYERS, ("yellow", "red", "green"),
                                                   ("es", "en", "de"))):
        name, email = re.fullmatch(r"(.*) <(.*)>", player).groups()
        data.update({f"name{i}": name, f"email{i}": email, f"colour{i}": colour,
                     f"language{i}": code})
    answer = client.post("/admin/games/new", data={**data, "language1": "xx"})
    assert answer.status_code == 422 and "unknown language" in answer.get_data(as_text=True)
    answer = client.post("/admin/games/new", data=data)
    assert answer.status_code == 303, answer.get_data(as_text=True)
    assert _languages(app, 1) == ["es", "en", "de"]


def test_admin_pages_follow_the_browser(app, client):
    """Pages without a seat are in the browser's preferred language."""
    german = client.get("/admin/login", headers={"Accept-Language": "de-DE,de;q=0.9,en;q=0.5"})
    assert '<html lang="de">' in german.get_data(as_text=True)
    spanish = client.get("/admin/login", headers={"Accept-Language": "es"})
    assert '<html lang="es">' in spanish.get_data(as_text=True)
    other = client.get("/admin/login", headers={"Accept-Language": "fr"})
    assert '<html lang="en">' in other.get_data(as_text=True)


def test_the_switch_on_the_seat_page(app, client, mailbox):
    """A seat reads its page in its language, whatever the browser says; the switch (a POST)
    changes it; opening the page changes nothing."""
    with app.app_context():
        created = create_game([parse_player(p) for p in PLAYERS], "l3", start=0)
    token = created.links[0][2].rsplit("/", 1)[1]
    page = client.get(f"/seat/{token}", headers={"Accept-Language": "es"})
    text = page.get_data(as_text=True)
    assert '<html lang="en">' in text and "Language:" in text
    answer = client.post(f"/seat/{token}/language",
                         data={"csrf_token": field(text, "csrf_token"), "language": "de"})
    assert answer.status_code == 303
    german = client.get(f"/seat/{token}").get_data(as_text=True)
    assert '<html lang="de">' in german
    assert "Diese Seite und deine Mails sind jetzt auf Deutsch." in german
    assert "Sprache:" in german
    assert _languages(app, 1) == ["de", "en", "en"]
    bad = client.post(f"/seat/{token}/language",
                      data={"csrf_token": field(german, "csrf_token"), "language": "fr"})
    assert bad.status_code == 422 and _languages(app, 1) == ["de", "en", "en"]
    client.get(f"/seat/{token}/language")  # a GET (a mail scanner) changes nothing
    assert _languages(app, 1) == ["de", "en", "en"]


def test_the_map_says_what_its_letters_are_in_the_readers_words(app, client):
    """The map marks pieces with the English colour's letter (Y, P, C beside "Gelb", "Lila",
    "Creme", issue 32): the caption names each letter with the colour in the reader's words,
    and the card legend says its letter is the notation's."""
    from pbem.services.players import PlayerSpec

    with app.app_context():
        created = create_game([PlayerSpec(f"P{i}", f"p{i}@example.org", language="de")
                               for i in range(3)], "letters", colours=["yellow", "purple", "red"])
    token = created.links[0][2].rsplit("/", 1)[1]
    page = html.unescape(client.get(f"/seat/{token}").get_data(as_text=True))
    assert "jeweils mit einem Buchstaben: Y gelb, P lila, R rot." in page.replace("Gelb", "gelb") \
        .replace("Lila", "lila").replace("Rot", "rot"), page[page.find("Karte Europas"):][:300]
    assert "Anfangsbuchstaben" not in page
    assert "Karten creme (C in der Notation): Lothringen, Italien" in page.replace("Creme", "creme")
