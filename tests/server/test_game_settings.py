"""The one reader of a new game's settings (pbem.services.game_settings) behind the three forms
that make a game: the admin's create form, the public "new game" page and the lobby's "post an
open game". A refusal is shown beside the field its `field` names, whatever language its words
are in."""

from __future__ import annotations

import re

import pytest
from server import field, make_app
from test_admin import add_admin, csrf_of, game_form, login
from test_lobby import _keys

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

# The start of the translated "the move deadline must be 12 hours to 14 days ..." refusal.
DEADLINE_WORDS = {"de": "die Frist für einen Zug muss", "es": "el plazo para jugar debe ser"}


@pytest.fixture
def app(tmp_path):
    return make_app(tmp_path / "instance", GAMES_OPEN_CREATION=True, GAMES_LOBBY=True,
                    MAIL_BOARD_PICTURE=False)


def _paragraph(page: str, name: str) -> str:
    """The paragraph of the form that holds input `name`: where its error is shown."""
    for paragraph in re.findall(r"<p>.*?</p>", page, re.DOTALL):
        if f'name="{name}"' in paragraph:
            return paragraph
    raise AssertionError(f"no input {name} on the page")


def _admin_page(app, client, language: str) -> str:
    add_admin(app)
    assert login(client).status_code == 303
    form = game_form(csrf_of(client, "/admin/games/new"), deadline_hours="5")
    response = client.post("/admin/games/new", data=form,
                           headers={"Accept-Language": language})
    assert response.status_code == 422
    return response.get_data(as_text=True)


def _new_page(app, client, language: str) -> str:
    page = client.get("/new").get_data(as_text=True)
    response = client.post("/new", headers={"Accept-Language": language}, data={
        "csrf_token": field(page, "csrf_token"), "game": "kardinal-koenig", "name": "Anna",
        "email": "anna@example.org", "colour0": "blue", "deadline_hours": "5",
        "timezone": "Europe/Berlin", "email1": "bruno@example.org", "colour1": "red",
        "email2": "chiara@example.org", "colour2": "green"})
    assert response.status_code == 422
    return response.get_data(as_text=True)


def _lobby_page(app, client, language: str) -> str:
    token = _keys(app, ["anna"])["anna"]
    page = client.get(f"/me/{token}/lobby").get_data(as_text=True)
    response = client.post(f"/me/{token}/lobby", headers={"Accept-Language": language}, data={
        "csrf_token": field(page, "csrf_token"), "game": "kardinal-koenig", "players": "3",
        "deadline_hours": "5", "timezone": "UTC"})
    assert response.status_code == 422
    return response.get_data(as_text=True)


@pytest.mark.parametrize("language", ["de", "es"])
@pytest.mark.parametrize("form", [_admin_page, _new_page, _lobby_page],
                         ids=["admin", "new", "lobby"])
def test_a_bad_deadline_is_shown_beside_the_deadline_in_every_form_and_language(
        app, form, language):
    """Issue 44 point 6: the forms placed the error by searching its words for "deadline",
    so a German or Spanish deadline error stood beside the time zone."""
    page = form(app, app.test_client(), language)
    assert DEADLINE_WORDS[language] in _paragraph(page, "deadline_hours")
    assert "error-text" not in _paragraph(page, "timezone")


def test_every_time_control_refusal_names_its_field(app):
    from pbem.services.deadlines import time_control
    from pbem.services.errors import SettingsError

    with app.app_context():
        for args, name in (((5, "", False, "UTC"), "deadline_hours"),
                           ((48, "100", False, "UTC"), "reminders"),
                           ((48, "x", False, "UTC"), "reminders"),
                           ((48, "", False, "Nowhere/Land"), "timezone")):
            with pytest.raises(SettingsError) as refused:
                time_control(*args)
            assert refused.value.field == name, args
