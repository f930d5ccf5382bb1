"""Hypothesis fuzzing of the forms: every form of the seat page and of the admin pages, sent as
a browser sends it (the page's CSRF token, or a missing or wrong one) with any field values.

Each answer is below 500. A refusal (4xx) says why in the page's role="alert" and changes no
row of any table (a refused admin login only counts the failure, in its own table). An input
the form accepts may change what it is for; the forms that only show something (the move
preview, back to the form, an admin action's confirmation page) never change anything.
"""

from __future__ import annotations

import pytest
from fuzzing import alert, junk, profile, snapshot
from hypothesis import given
from hypothesis import strategies as st
from server import field, legal_in, module_app, new_game

from pbem.services import stewardship
from pbem.web.admin import ACTIONS

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

ADMIN, PASSWORD = "boss@example.org", "a long enough password"
COLOURS = ["yellow", "red", "green", "blue", "black", "white", ""]
SEAT_FORMS = {  # the seat page's forms and the fields they carry
    "move": ("turn", "move", "action", "source"),
    "preview": ("turn", "move", "action", "source", "country", "monastery", "advisor",
                "cards"),
    "edit": ("turn", "move", "country"),
    "settings": ("notify",),
    "language": ("language",),
    "timezone": ("timezone",),
    "vacation": ("days",),
    "vacation/end": (),
    "back": (),
    "talk": ("text", "to"),
    "talk/read": ("upto",),
    "talk/settings": ("talk_notify",),
}
SHOWS_ONLY = {"preview", "edit"}
GAME_FORM = ["game", "title", "seed", "start", "deadline_hours", "reminders", "weekend_pause",
             "timezone", "variant", "absent_bot"] + \
    [f"{name}{i}" for i in range(5) for name in ("name", "email", "colour", "bot", "language")]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A running 3-player game and a logged-in admin's browser."""
    app = module_app(tmp_path_factory, "form-fuzz")
    created, tokens = new_game(app, 3, "form-fuzz", start=0)
    with app.app_context():
        stewardship.create_admin(ADMIN, PASSWORD)
    admin = app.test_client()
    page = admin.get("/admin/login").get_data(as_text=True)
    answer = admin.post("/admin/login", data={"csrf_token": field(page, "csrf_token"),
                                              "email": ADMIN, "password": PASSWORD})
    assert answer.status_code == 303
    return app, created.game_id, tokens, admin


def csrf_of(client, path: str) -> str:
    return field(client.get(path).get_data(as_text=True), "csrf_token")


def with_csrf(draw, form: dict, token: str) -> dict:
    """The form with its CSRF token as the page gave it (mostly), none, or a wrong one."""
    how = draw(st.sampled_from(["page"] * 6 + ["none", "wrong", "junk"]))
    if how == "page":
        form["csrf_token"] = token
    elif how == "wrong":
        form["csrf_token"] = token[:-4] + "AAAA"
    elif how == "junk":
        form["csrf_token"] = draw(junk)
    return form


def check_refusal(response, before: dict, after: dict, what: str) -> None:
    assert response.status_code < 500, (what, response.status_code)
    if response.status_code >= 400:
        said = alert(response.get_data(as_text=True))
        assert len(said) > 10, (what, response.status_code, "the page says why")
        assert after == before, (what, response.status_code, "a refusal changed the database")


SEEN: dict[str, dict[int, int]] = {}  # answers per form, over the module's tests


@pytest.mark.parametrize("form_name", sorted(SEAT_FORMS))
def test_seat_forms_refuse_any_bad_input_clearly_and_change_nothing(site, form_name):
    app, _, tokens, _ = site
    player = app.test_client()
    seen = SEEN.setdefault(f"seat {form_name}", {})

    @profile(12)
    @given(data=st.data())
    def run(data):
        seat = data.draw(st.sampled_from([0, 0, 0, 1, 2, None]))
        token = tokens[seat] if seat is not None else data.draw(
            st.sampled_from(["x" * 32, tokens[0][:-1] + "A", "", "%00", "..%2f"]))
        page = player.get(f"/seat/{tokens[seat or 0]}").get_data(as_text=True)
        form = {}
        for name in SEAT_FORMS[form_name]:
            if data.draw(st.integers(0, 3)) == 0:
                continue  # the field left out
            if name == "turn" and data.draw(st.booleans()):
                form[name] = field(page, "turn") if 'name="turn"' in page else "0"
            elif name == "move" and data.draw(st.booleans()) and legal_in(page):
                form[name] = data.draw(st.sampled_from(legal_in(page)))
            else:
                form[name] = data.draw(junk)
        if data.draw(st.integers(0, 4)) == 0:
            form[data.draw(st.text(min_size=1, max_size=8))] = data.draw(junk)  # unknown field
        form = with_csrf(data.draw, form, field(page, "csrf_token"))
        before = snapshot(app)
        response = player.post(f"/seat/{token}/{form_name}", data=form)
        after = snapshot(app)
        seen[response.status_code] = seen.get(response.status_code, 0) + 1
        check_refusal(response, before, after, (form_name, form))
        if form_name in SHOWS_ONLY:
            assert after == before, (form_name, form, "a page that only shows changed data")

    run()
    assert any(400 <= status < 500 for status in seen), seen


@st.composite
def game_form(draw) -> dict:
    form = {}
    for name in GAME_FORM:
        kind = draw(st.integers(0, 5))
        if kind == 0:
            continue
        if kind == 1 and name.startswith("colour"):
            form[name] = draw(st.sampled_from(COLOURS))
        elif kind == 1 and name.startswith("email"):
            form[name] = f"fuzz{name[-1]}-{draw(st.integers(0, 9))}@example.org"
        elif kind == 1 and name.startswith("name"):
            form[name] = f"Fuzz {name[-1]}"
        else:
            form[name] = draw(junk)
    return form


@pytest.mark.parametrize("route", ["new", "confirm", "do", "retry"])
def test_admin_forms_refuse_any_bad_input_clearly_and_change_nothing(site, route):
    app, game_id, _, admin = site
    seen = SEEN.setdefault(f"admin {route}", {})

    @profile(15)
    @given(data=st.data())
    def run(data):
        target = data.draw(st.sampled_from([game_id] * 4 + [0, 99999, 2**31, 2**63 + 5]))
        if route == "new":
            path, form = "/admin/games/new", data.draw(game_form())
        elif route == "retry":
            path, form = f"/admin/outbox/{data.draw(st.integers(0, 2**40))}/retry", {}
        else:
            path = f"/admin/games/{target}/{route}"
            form = {"action": data.draw(st.sampled_from(sorted(ACTIONS)) | junk),
                    "seat": data.draw(st.sampled_from(["0", "1", "2", "3"]) | junk),
                    "email": data.draw(st.just("new@example.org") | junk),
                    "name": data.draw(junk), "hours": data.draw(junk),
                    "reason": data.draw(junk), "bot": data.draw(junk)}
        form = with_csrf(data.draw, form, csrf_of(admin, "/admin/games/new"))
        before = snapshot(app)
        response = admin.post(path, data=form)
        after = snapshot(app)
        seen[response.status_code] = seen.get(response.status_code, 0) + 1
        check_refusal(response, before, after, (route, form))
        if route == "confirm":
            assert after == before, (form, "the confirmation page changed data")
        if route == "retry" and response.status_code == 303:
            assert after != before, "a mail queued again"

    run()
    assert any(400 <= status < 500 for status in seen), seen


def test_the_fuzzing_reached_refusals_of_every_kind():
    """Over the tests above (run before this one, in this module): the refusals came."""
    if len(SEEN) < len(SEAT_FORMS) + 4:
        pytest.skip("run with the whole module")
    statuses = {status for answers in SEEN.values() for status in answers}
    assert {400, 404, 422} <= statuses, SEEN


def test_admin_login_refuses_any_input_clearly_and_only_counts_the_failure(site):
    app = site[0]

    @profile(15)  # each login checks a password hash: slow on purpose
    @given(email=junk, password=junk, next_=junk, csrf=st.sampled_from(["page", "none"]))
    def run(email, password, next_, csrf):
        browser = app.test_client()
        form = {"email": email, "password": password, "next": next_}
        if csrf == "page":
            form["csrf_token"] = csrf_of(browser, "/admin/login")
        before = snapshot(app, leave_out=("loginfailure",))
        response = browser.post("/admin/login", data=form)
        assert response.status_code in (400, 401, 429), response.status_code
        check_refusal(response, before, snapshot(app, leave_out=("loginfailure",)), form)
        assert browser.get("/admin/").status_code in (302, 303), "not logged in"

    run()
