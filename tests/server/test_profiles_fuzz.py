"""Hypothesis fuzzing of issue 33's forms (the profile, asking for a link at /me, posting and
joining in the lobby), sent as a browser sends them (the page's CSRF token, or a missing or
wrong one) with any field values: every answer is below 500, and a refusal changes nothing."""

from __future__ import annotations

import pytest
from fuzzing import junk, profile, snapshot
from hypothesis import given
from hypothesis import strategies as st
from server import field, make_app

from pbem.ground.db import writing
from pbem.services import mail

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

FORMS = {  # path (after /me/<key>), its fields and a good value for each
    "/profile": {"name": "Anna", "language": "de", "timezone": "Europe/Berlin",
                 "notify": "turn", "talk_notify": "none"},
    "/lobby": {"game": "kardinal-koenig", "players": "3", "deadline_hours": "72",
               "timezone": "UTC", "weekend_pause": "on", "rated": "on", "min_rating": "1.5",
               "seating": "drawn", "variant": "german"},
    "/lobby/1/join": {},
    "/lobby/1/withdraw": {},
    "": {"email": "anna@example.org"},  # /me itself
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    app = make_app(tmp_path_factory.mktemp("profiles-fuzz") / "instance", GAMES_LOBBY=True)
    with app.app_context(), writing() as session:
        keys = [mail.mint_player_key(session, f"{n}@example.org") for n in ("anna", "bruno")]
    return app, keys


@pytest.mark.parametrize("path", list(FORMS))
def test_the_forms_answer_any_input_below_500_and_a_refusal_changes_nothing(site, path):
    app, keys = site
    client = app.test_client()

    @given(data=st.data())
    @profile(60)
    def attempt(data):
        key = data.draw(st.sampled_from(keys))
        url = f"/me/{key}{path}" if path else "/me"
        page = f"/me/{key}/lobby" if path.startswith("/lobby") else url
        token = field(client.get(page).get_data(as_text=True), "csrf_token")
        form = {name: data.draw(st.one_of(st.just(good), junk))
                for name, good in FORMS[path].items()}
        how = data.draw(st.sampled_from(["page"] * 6 + ["none", "wrong"]))
        if how != "none":
            form["csrf_token"] = token if how == "page" else token[:-4] + "AAAA"
        before = snapshot(app)
        response = client.post(url, data=form)
        assert response.status_code < 500, (url, form, response.status_code)
        if response.status_code >= 400:
            assert snapshot(app) == before, (url, form, response.status_code)

    attempt()
