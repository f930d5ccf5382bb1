"""Mistakes are answered in the reader's language: a typo in a German reply or on a Spanish seat
page (the engine's notation errors), a bad player or seed when creating a game (command line and
admin form), the mailbox page, and the mails to the organisers (in the default language)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import make_msgid

import pytest
from server import Mailbox, field, make_app, text_of
from sqlmodel import select
from test_languages import new_game_form

from pbem.ground.db import reading
from pbem.ground.models import Game
from pbem.mailin.inbox import KEY_ADDRESS, handle_incoming
from pbem.scheduler.jobs import run_jobs
from pbem.services.creating import create_game
from pbem.services.players import PlayerSpec

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

DOMAIN = "games.example.org"
PLAYERS = [PlayerSpec("Bernd", "bernd@example.org", language="de"),
           PlayerSpec("Carmen", "carmen@example.org", language="es"),
           PlayerSpec("Anna", "anna@example.org", language="en")]


def _reply(box: Mailbox, player: PlayerSpec, body: str) -> bytes:
    newest = [m for m in box.to(player.email) if m["Reply-To"]][-1]
    message = EmailMessage()
    message["From"] = player.email
    message["To"] = f"play+{KEY_ADDRESS.search(str(newest['Reply-To'])).group(1)}@{DOMAIN}"
    message["Subject"] = "Re: dein Zug"
    message["Message-ID"] = make_msgid(domain="example.org")
    message.set_content(body)
    return bytes(message)


def test_a_typo_in_a_german_reply_is_answered_in_german(tmp_path):
    """'tausche xyz' in a German seat's reply: the engine's notation error, in German, with the
    German words of the notation as its example; nothing is played."""
    app = make_app(tmp_path / "i", MAIL_REPLY_DOMAIN=DOMAIN, MAIL_BOARD_PICTURE=False)
    box = Mailbox(app)
    with app.app_context():
        create_game(PLAYERS, "typo-1", start=0)
        handled = handle_incoming(_reply(box, PLAYERS[0], "tausche xyz\n"), None)
    assert handled.outcome != "applied"
    answer = text_of([m for m in box.to(PLAYERS[0].email)
                      if str(m["Subject"]).startswith("Re:")][-1])
    assert "'xyz' ist keine Karte; schreibe 'tausche R' (Karten: R (Rot: Franken/Aragon)" \
        in answer, answer
    assert "is not a card" not in answer and "(red:" not in answer
    with app.app_context(), reading() as session:
        assert session.exec(select(Game)).one().turn == 0


def test_a_typo_on_a_spanish_seat_page_is_answered_in_spanish(tmp_path):
    """A move typed on the page of a Spanish seat that is not a move: the error in Spanish
    (with the 'did you mean' hint), on the page, whatever the browser prefers."""
    app = make_app(tmp_path / "i", MAIL_BOARD_PICTURE=False)
    with app.app_context():
        created = create_game(PLAYERS, "typo-2", start=1)
    token = created.links[1][2].rsplit("/", 1)[1]
    client = app.test_client()
    page = client.get(f"/seat/{token}", headers={"Accept-Language": "en"}).get_data(as_text=True)
    answer = client.post(f"/seat/{token}/move", headers={"Accept-Language": "en"},
                         data={"csrf_token": field(page, "csrf_token"), "turn": "0",
                               "move": "pasr"})
    text = answer.get_data(as_text=True)
    assert answer.status_code == 422
    assert "&#39;pasr&#39; no es una jugada (¿querías decir pass?); escribe una colocación" \
        in text, text
    assert "&#39;robar mazo&#39;" in text and "is not a move" not in text


def test_a_bad_address_in_the_admin_form_is_refused_in_the_browsers_language(app, client):
    """The create-game form's setup errors (here a bad address and a bad seed) are in the
    language the organiser's browser prefers."""
    page = new_game_form(app, client)
    data = {"csrf_token": field(page, "csrf_token"), "game": "kardinal-koenig", "start": "0",
            "deadline_hours": "72", "reminders": "24", "timezone": "UTC"}
    for i, (name, colour) in enumerate((("Anna", "yellow"), ("Bernd", "red"),
                                        ("Carmen", "green"))):
        data.update({f"name{i}": name, f"email{i}": f"{name.lower()}@example.org",
                     f"colour{i}": colour, f"language{i}": "en"})
    german = client.post("/admin/games/new", data={**data, "email1": "bernd-at-example"},
                         headers={"Accept-Language": "de"})
    assert german.status_code == 422
    assert "&#39;bernd-at-example&#39; ist keine E-Mail-Adresse wie anna@example.org" \
        in german.get_data(as_text=True)
    spanish = client.post("/admin/games/new", data={**data, "timezone": "Mars/Olympus"},
                          headers={"Accept-Language": "es"})
    assert spanish.status_code == 422
    assert "zona horaria desconocida &#39;Mars/Olympus&#39;" in spanish.get_data(as_text=True)
    # Each error at its own field, whatever the language says: a deadline, a taken colour.
    german = client.post("/admin/games/new", data={**data, "deadline_hours": "5",
                                                   "colour2": "red"},
                         headers={"Accept-Language": "de"}).get_data(as_text=True)
    assert ('id="deadline_hours-error" role="alert">die Frist für einen Zug muss 12 Stunden bis '
            '14 Tage') in german, german
    assert 'id="colour2-error" role="alert">ein anderer Spieler hat diese Farbe schon' in german
    with app.app_context(), reading() as session:
        assert session.exec(select(Game)).first() is None


def test_create_game_on_the_command_line_speaks_the_default_language(tmp_path):
    """`pbem create-game` answers in `[games] language`: a bad player and an unknown --lang."""
    app = make_app(tmp_path / "i", GAMES_LANGUAGE="es")
    runner = app.test_cli_runner()
    players = ["--player", "Anna <anna@example.org>", "--player", "Bernd <bernd@example.org>"]
    result = runner.invoke(args=["create-game", *players, "--player", "Carmen carmen@x.org"])
    assert result.exit_code != 0
    assert "escribe cada jugador como 'Nombre <correo>', no 'Carmen carmen@x.org'" \
        in result.output, result.output
    result = runner.invoke(args=["create-game", *players, "--player", "C <c@example.org>",
                                 "--lang", "fr"])
    assert "idioma desconocido 'fr'; usa uno de en, de, es" in result.output, result.output
    result = runner.invoke(args=["create-game", *players, "--player", "C <c@example.org>",
                                 "--seed", "x" * 101])
    assert "la semilla debe tener de 1 a 100 caracteres imprimibles" in result.output


def test_the_mailbox_page_in_german(app, client, mailbox):
    """The demo mailbox page follows the browser's language."""
    page = client.get("/mailbox/", headers={"Accept-Language": "de"}).get_data(as_text=True)
    assert "<h1>Postfach</h1>" in page and "Noch keine Mails." in page
    with app.app_context():
        create_game(PLAYERS, "box-1")
    mailbox.deliver()
    page = client.get("/mailbox/", headers={"Accept-Language": "es"}).get_data(as_text=True)
    assert "Entregados" in page and "Todos los mensajes que ha enviado el servidor" in page


def test_the_organisers_mail_is_in_the_default_language(tmp_path):
    """The scheduler's outage mail to the organisers is written in `[games] language`."""
    start = datetime(2026, 11, 24, 12, tzinfo=UTC)
    app = make_app(tmp_path / "i", MAIL_ADMINS="admin@example.org", GAMES_LANGUAGE="de")
    box = Mailbox(app)
    with app.app_context():
        create_game(PLAYERS, "admin-1", now=start)
    run_jobs(app, start)
    assert run_jobs(app, start + timedelta(hours=80))["outage_games"] == 1
    told = box.to("admin@example.org")
    assert [str(m["Subject"]) for m in told] == ["[pbem] der Zeitplaner lief nicht"]
    body = text_of(told[0])
    assert "Der Zeitplaner lief von 2026-11-24 12:00 bis 2026-11-27 20:00 UTC nicht " \
        "(80.0 Stunden)." in body, body
    assert "Kardinal & König #1: die Frist von " in body
    assert " endet jetzt am 2026-11-30 20:00 UTC" in body
