"""The admin pages (pbem/admin.py, pbem/stewardship.py) through the Flask test client: login,
CSRF and the rate limit, `create-admin`, the create-game form, the game page, every action on a
game with its audit entry and its mail, taking a move back exactly, and the outbox.

"Nothing changed" is checked against every row of every table and the mail folder.
"""

from __future__ import annotations

import html
import re
from datetime import timedelta
from pathlib import Path

import pytest
from server import (
    Mailbox,
    field,
    game_state,
    html_of,
    make_app,
    new_game,
    play_moves,
    text_of,
    token_in,
)
from sqlalchemy import select as sa_select
from sqlmodel import SQLModel, select

import engine
import pbem.ground.models  # noqa: F401  (every table, for the snapshot)
from pbem.games import rules_for
from pbem.ground.db import get_engine, reading, utcnow, writing
from pbem.ground.models import FAILED, Admin, AuditEntry, Game, MoveRecord, OutboxMessage, Seat
from pbem.scheduler.jobs import run_jobs
from pbem.services import stewardship

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

ADMIN, PASSWORD = "boss@example.org", "a long enough password"
REASON = "asked for it by mail"


# --- helpers ------------------------------------------------------------------------------------

@pytest.fixture
def app(tmp_path):
    """Jumping the clock to a deadline must not be taken for a scheduler outage."""
    return make_app(tmp_path / "instance", SCHEDULER_OUTAGE_MINUTES=10**6)


def add_admin(app, email: str = ADMIN, password: str = PASSWORD) -> int:
    with app.app_context():
        return stewardship.create_admin(email, password)


def csrf_of(client, path: str = "/admin/login") -> str:
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)
    return field(response.get_data(as_text=True), "csrf_token")


def login(client, email: str = ADMIN, password: str = PASSWORD, next_: str = ""):
    return client.post("/admin/login", data={"csrf_token": csrf_of(client), "email": email,
                                              "password": password, "next": next_})


@pytest.fixture
def admin(app, client):
    """The test client, logged in as the admin."""
    add_admin(app)
    assert login(client).status_code == 303
    return client


def everything(app) -> tuple[dict, list[str]]:
    """Every row of every table, and the mail written so far."""
    with get_engine(app).connect() as conn:
        rows = {t.name: [tuple(r) for r in conn.execute(sa_select(t).order_by(*t.primary_key))]
                for t in SQLModel.metadata.sorted_tables}
    folder = Path(app.config["MAIL_FOLDER"])
    return rows, sorted(p.name for p in folder.glob("*")) if folder.is_dir() else []


def audit(app) -> list[tuple]:
    with reading(app) as db:
        return [(a.admin_id, a.game_id, a.action, a.reason, a.detail)
                for a in db.exec(select(AuditEntry).order_by(AuditEntry.id))]


def admin_id(app, email: str = ADMIN) -> int:
    with reading(app) as db:
        return db.exec(select(Admin.id).where(Admin.email == email)).one()


def seat_row(app, number: int, game_id: int = 1) -> Seat:
    with reading(app) as db:
        return db.exec(select(Seat).where(Seat.game_id == game_id, Seat.number == number)).one()


def outbox_rows(app) -> list[OutboxMessage]:
    with reading(app) as db:
        return list(db.exec(select(OutboxMessage).order_by(OutboxMessage.id)))


def alert_of(response) -> str:
    """The message a refused form's page shows in its role="alert" element."""
    match = re.search(r'role="alert"[^>]*>([^<]+)<', response.get_data(as_text=True))
    assert match, "the page says why"
    return html.unescape(match.group(1))


def subjects(messages) -> list[tuple[str, str]]:
    """(address, subject after the game's tag) of each message."""
    return [(re.search(r"[\w.+-]+@[\w.-]+", str(m["To"])).group(0),
             str(m["Subject"]).split("] ", 1)[-1]) for m in messages]


def act(client, app, action: str, reason: str = REASON, game_id: int = 1, **fields):
    """An action as an admin does it: the game page's form, the confirmation page (which must
    change nothing), then the confirming POST with the reason. Returns the last response."""
    form = {"csrf_token": csrf_of(client, f"/admin/games/{game_id}"), "action": action,
            **{key: str(value) for key, value in fields.items()}}
    before = everything(app)
    page = client.post(f"/admin/games/{game_id}/confirm", data=form)
    assert page.status_code == 200, page.get_data(as_text=True)
    assert everything(app) == before, "the confirmation page changed something"
    shown = page.get_data(as_text=True)
    data = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', shown))
    assert data["action"] == action and set(data) <= {"csrf_token", "action", *fields}, \
        f"the confirmation page of {action} carries other fields: {sorted(data)}"
    return client.post(f"/admin/games/{game_id}/do", data={**data, "reason": reason})


def seat_status(client, token: str) -> tuple[int, int]:
    """The status of the seat page and of the API document for a link's token."""
    return client.get(f"/seat/{token}").status_code, \
        client.get(f"/api/v1/seat/{token}").status_code


def views(client, tokens: list[str]) -> list[dict]:
    return [client.get(f"/api/v1/seat/{t}").get_json()["view"] for t in tokens]


def new_mail(mailbox: Mailbox, since: int) -> list:
    return mailbox.messages()[since:]


# --- logged out, CSRF, login, logout ------------------------------------------------------------

ADMIN_PAGES = ["/admin/", "/admin/games/new", "/admin/games/1", "/admin/outbox", "/admin/audit"]


def test_every_admin_page_sends_a_stranger_to_the_login_page(app, client):
    new_game(app)
    for path in ADMIN_PAGES:
        response = client.get(path)
        assert response.status_code == 303, path
        assert response.headers["Location"].startswith("/admin/login?next="), path
        login_page = client.get(response.headers["Location"]).get_data(as_text=True)
        assert field(login_page, "next") == path


def admin_posts() -> list[tuple[str, dict]]:
    """Every admin POST with a form that would act if an admin sent it."""
    players = {"name0": "Anna", "email0": "anna@example.org", "colour0": "yellow",
               "name1": "Bert", "email1": "bert@example.org", "colour1": "red",
               "name2": "Cleo", "email2": "cleo@example.org", "colour2": "green",
               "start": "random", "deadline_hours": "72", "reminders": "24,2",
               "timezone": "UTC"}
    return [("/admin/logout", {}), ("/admin/games/new", players),
            ("/admin/games/1/confirm", {"action": "abort"}),
            ("/admin/games/1/do", {"action": "abort", "reason": REASON}),
            ("/admin/games/1/do", {"action": "new_link", "seat": "0", "reason": REASON}),
            ("/admin/games/1/do", {"action": "hand_over", "seat": "0", "name": "Eve",
                                   "email": "eve@example.org", "reason": REASON}),
            ("/admin/outbox/1/retry", {})]


def _fail_first_mail(app) -> None:
    with writing(app) as db:
        row = db.get(OutboxMessage, 1)
        row.status, row.attempts, row.last_error = FAILED, 8, "550 no such user"
        db.add(row)


def test_every_admin_post_is_refused_when_logged_out_and_changes_nothing(app, client):
    new_game(app)
    _fail_first_mail(app)
    add_admin(app)
    token = csrf_of(client)  # a valid token of the logged-out session: only the login lacks
    before = everything(app)
    for path, form in admin_posts():
        response = client.post(path, data={"csrf_token": token, **form})
        assert response.status_code == 401, path
        page = response.get_data(as_text=True)
        assert "Please log in first; nothing was done." in page, path
        assert 'name="password"' in page, path
    assert everything(app) == before


def test_a_post_without_a_csrf_token_is_refused_and_changes_nothing(app, admin):
    new_game(app)
    _fail_first_mail(app)
    before = everything(app)
    for path, form in admin_posts():
        for token in ({}, {"csrf_token": "forged"}):
            response = admin.post(path, data={**form, **token})
            assert response.status_code == 400, (path, token)
            assert "The form had expired or came from elsewhere" in \
                response.get_data(as_text=True)
    assert everything(app) == before
    assert admin.get("/admin/").status_code == 200  # the refused logout did not log out


def test_the_login_form_itself_needs_its_csrf_token(app, client):
    add_admin(app)
    response = client.post("/admin/login", data={"email": ADMIN, "password": PASSWORD})
    assert response.status_code == 400
    assert client.get("/admin/").status_code == 303


@pytest.mark.parametrize("email, password", [(ADMIN, "not the password"),
                                             ("nobody@example.org", PASSWORD)],
                         ids=["wrong password", "unknown email"])
def test_a_failed_login_says_so_and_logs_no_one_in(app, client, email, password):
    add_admin(app)
    response = login(client, email, password)
    assert response.status_code == 401
    page = response.get_data(as_text=True)
    assert "That email and password do not match an admin account." in page
    assert 'role="alert"' in page
    assert client.get("/admin/").status_code == 303
    with reading(app) as db:
        assert db.exec(select(Admin.last_login_at)).one() is None


def test_a_login_is_case_blind_in_the_email_and_records_the_time(app, client):
    add_admin(app)
    response = login(client, "  BOSS@Example.org ")
    assert (response.status_code, response.headers["Location"]) == (303, "/admin/")
    page = client.get("/admin/").get_data(as_text=True)
    assert f"Log out {ADMIN}" in page
    with reading(app) as db:
        assert db.exec(select(Admin.last_login_at)).one() is not None


def test_after_the_limit_of_login_attempts_the_next_one_is_refused_with_429(tmp_path):
    app = make_app(tmp_path / "limited", ADMIN_LOGIN_LIMIT="3 per minute")
    add_admin(app)
    client = app.test_client()
    for _ in range(3):
        assert login(client, password="a wrong password").status_code == 401
    response = login(client)  # even the right password: the limit is on attempts
    assert response.status_code == 429
    page = response.get_data(as_text=True)
    assert "<h1>That did not work</h1>" in page  # the app's own error page
    assert '<p class="error" role="alert">' in page
    assert client.get("/admin/").status_code == 303


def test_the_429_page_tells_the_admin_to_wait(tmp_path):
    app = make_app(tmp_path / "limited", ADMIN_LOGIN_LIMIT="1 per minute")
    client = app.test_client()
    login(client, password="a wrong password")
    page = login(client).get_data(as_text=True).lower()
    assert "too many" in page and "wait" in page


def test_logout_ends_the_session(app, admin):
    token = csrf_of(admin, "/admin/")
    response = admin.post("/admin/logout", data={"csrf_token": token})
    assert (response.status_code, response.headers["Location"]) == (303, "/admin/login")
    assert "You are logged out." in admin.get("/admin/login").get_data(as_text=True)
    for path in ADMIN_PAGES:
        assert admin.get(path).status_code == 303
    assert admin.post("/admin/logout", data={"csrf_token": csrf_of(admin)}).status_code == 401


def test_a_session_cookie_taken_before_logout_no_longer_works(app, admin):
    stolen = admin.get_cookie("session").value
    admin.post("/admin/logout", data={"csrf_token": csrf_of(admin, "/admin/")})
    other = app.test_client()
    other.set_cookie("session", stolen)
    assert other.get("/admin/").status_code == 303


NEXT_TARGETS = [
    ("/admin/audit", "/admin/audit"),
    ("/admin/games/new", "/admin/games/new"),
    ("", "/admin/"),
    ("//evil.example", "/admin/"),
    ("//evil.example/admin", "/admin/"),
    ("https://evil.example", "/admin/"),
    ("https://evil.example/admin/", "/admin/"),
    ("/admin//evil.example", "/admin/"),
    ("/\\evil.example", "/admin/"),
    ("/admin/\\\\evil.example", "/admin/"),
    ("javascript:alert(1)", "/admin/"),
    ("/mailbox/", "/admin/"),
]


def test_next_only_leads_within_admin(tmp_path):
    app = make_app(tmp_path / "many", ADMIN_LOGIN_LIMIT="100 per minute")
    add_admin(app)
    for target, landing in NEXT_TARGETS:
        response = login(app.test_client(), next_=target)
        assert (response.status_code, response.headers["Location"]) == (303, landing), target


def test_next_with_a_line_break_goes_to_the_dashboard(app, client):
    add_admin(app)
    response = login(client, next_="/admin/\r\nSet-Cookie: x=1")
    assert (response.status_code, response.headers["Location"]) == (303, "/admin/")


def test_the_login_page_carries_next_through_to_the_page_asked_for(app, client):
    add_admin(app)
    to_login = client.get("/admin/outbox").headers["Location"]
    page = client.get(to_login).get_data(as_text=True)
    assert field(page, "next") == "/admin/outbox"
    response = client.post("/admin/login", data={"csrf_token": field(page, "csrf_token"),
                                                 "email": ADMIN, "password": PASSWORD,
                                                 "next": field(page, "next")})
    assert response.headers["Location"] == "/admin/outbox"
    assert client.get("/admin/outbox").status_code == 200


def test_every_admin_page_opens_for_an_admin(app, admin):
    new_game(app)
    for path in ADMIN_PAGES:
        response = admin.get(path)
        assert response.status_code == 200, path
        assert f"Log out {ADMIN}" in response.get_data(as_text=True)
    assert admin.get("/admin/games/99").status_code == 404


# --- create-admin -------------------------------------------------------------------------------

def test_create_admin_reads_the_password_from_stdin_and_sets_a_new_one_when_run_again(app,
                                                                                       runner):
    def create(password: str, email: str = "Chief@Example.org"):
        return runner.invoke(args=["create-admin", email, "--password-stdin"],
                             input=password + "\n")

    def can_log_in(password: str) -> bool:
        return login(app.test_client(), "chief@example.org", password).status_code == 303

    first = create("the first password")
    assert first.exit_code == 0, first.output
    assert first.output == "Admin chief@example.org can log in at http://localhost/admin/\n"
    assert can_log_in("the first password")

    for bad in ("short", "x" * 11, "x" * 201):
        refused = create(bad)
        assert refused.exit_code == 1
        assert refused.output == "Error: the password must be 12 to 200 characters long\n"
    refused = create("the first password", email="not an address")
    assert refused.exit_code == 1 and refused.output.count("\n") == 1
    assert refused.output.startswith("Error: ") and "not an email address" in refused.output
    assert can_log_in("the first password")  # the refusals changed nothing

    again = create("the second password")
    assert again.exit_code == 0, again.output
    assert not can_log_in("the first password")
    assert can_log_in("the second password")
    with reading(app) as db:
        assert db.exec(select(Admin.email)).all() == ["chief@example.org"]


def test_create_admin_asks_again_at_once_when_the_typed_password_is_too_short(app, runner):
    """A short password is refused as soon as it is typed, before it is asked a second time."""
    result = runner.invoke(args=["create-admin", "chief@example.org"],
                           input="short\nthe long password\nthe long password\n")
    assert result.exit_code == 0, result.output
    prompts = result.output.split("\n")
    error = "Error: the password must be 12 to 200 characters long"
    assert error in result.output
    assert result.output.index(error) < result.output.index("Repeat the password")
    assert result.output.count("Repeat the password") == 1, prompts
    assert login(app.test_client(), "chief@example.org", "the long password").status_code == 303
    differ = runner.invoke(args=["create-admin", "other@example.org"],
                           input="the long password\nanother long one\n")
    assert differ.exit_code == 1 and "the two passwords differ" in differ.output
    with reading(app) as db:
        assert db.exec(select(Admin.email)).all() == ["chief@example.org"]


def test_every_page_has_an_icon(app, client):
    """/favicon.ico answers (browsers ask for it), and pages name the icon they use."""
    response = client.get("/favicon.ico")
    assert response.status_code == 200 and response.mimetype == "image/svg+xml"
    assert response.get_data(as_text=True).startswith("<svg")
    page = client.get("/").get_data(as_text=True)
    icon = re.search(r'<link rel="icon" href="([^"]+)"', page).group(1)
    with client.get(icon) as linked:
        assert linked.status_code == 200 and linked.mimetype == "image/svg+xml"


# --- creating a game ----------------------------------------------------------------------------

PLAYERS = [("Anna", "anna@example.org"), ("Bert", "bert@example.org"), ("Cleo", "cleo@example.org")]


def game_form(csrf: str, **changes) -> dict:
    """The create-game form as a browser sends it: three players, two empty rows."""
    form = {"csrf_token": csrf, "start": "random", "deadline_hours": "72", "reminders": "24,2",
            "timezone": "UTC", "title": "Club night", "seed": "7"}
    colours = ("yellow", "red", "green", "purple", "blue")
    for i in range(5):
        name, email = PLAYERS[i] if i < len(PLAYERS) else ("", "")
        form.update({f"name{i}": name, f"email{i}": email, f"colour{i}": colours[i]})
    form.update(changes)
    return form


def test_creating_a_game_in_the_form_invites_the_players(app, admin, mailbox):
    form = game_form(csrf_of(admin, "/admin/games/new"), start="1", weekend_pause="on",
                     timezone="Europe/Berlin", deadline_hours="48", reminders="12, 1")
    response = admin.post("/admin/games/new", data=form)
    assert (response.status_code, response.headers["Location"]) == (303, "/admin/games/1")
    page = admin.get("/admin/games/1").get_data(as_text=True)
    assert "Game 1 is created; the players&#39; invitations are on their way." in page
    game, state = game_state(app)
    assert (game.title, game.seed, game.deadline_hours, game.reminder_hours,
            game.weekend_pause, game.timezone) == ("Club night", "7", 48, "12,1", True,
                                                   "Europe/Berlin")
    assert state.current == 1
    with reading(app) as db:
        seats = db.exec(select(Seat).order_by(Seat.number)).all()
    assert [(s.name, s.email, s.colour) for s in seats] == [
        (n, e, c) for (n, e), c in zip(PLAYERS, ("yellow", "red", "green"))]
    queued = outbox_rows(app)
    assert [(r.kind, r.status) for r in queued] == [("invitation", "queued")] * 3
    assert [r.to_addr.split("<")[-1].rstrip(">") for r in queued] == [e for _, e in PLAYERS]
    for _, email in PLAYERS:
        [invitation] = mailbox.to(email)
        assert admin.get(f"/seat/{token_in(invitation)}").status_code == 200


def test_the_form_creates_a_game_with_the_english_rule_book(app, admin):
    """The rule-book switch: English/Spanish joker stored in the game, named on its pages."""
    form = game_form(csrf_of(admin, "/admin/games/new"), variant="english")
    assert admin.post("/admin/games/new", data=form).status_code == 303
    game, state = game_state(app)
    assert state.joker == "any"
    assert "Rules: English (v1.3) and Spanish rule books" in admin.get(
        f"/admin/games/{game.id}").get_data(as_text=True)
    page = admin.get("/admin/games/new").get_data(as_text=True)
    assert 'name="variant" value="german" checked' in page, "the German book is the default"
    bad = game_form(csrf_of(admin, "/admin/games/new"), variant="klingon")
    assert admin.post("/admin/games/new", data=bad).status_code == 422


def _error_beside(page: str, name: str) -> str:
    """The error text shown for field `name`, checked to stand right after the field."""
    match = re.search(rf'<span class="error-text" id="{name}-error" role="alert">([^<]*)</span>',
                      page)
    assert match, f"no error shown for {name!r}"
    if name != "players":
        start = page.index(f'id="{name}"')
        assert start < match.start() and "<label" not in page[start:match.start()], \
            f"the error for {name!r} is not beside its field"
    return match.group(1)


def _control(page: str, name: str) -> str:
    """The whole <input> tag or <select> element with id `name`."""
    match = re.search(rf'<input id="{name}"[^>]*>|<select id="{name}".*?</select>', page, re.DOTALL)
    assert match, name
    return match.group(0)


FORM_ERRORS = {  # case: (changes, the field with the error, its message, [(control, kept)])
    "duplicate colour": ({"colour1": "yellow"}, "colour1",
                         "another player already has this colour",
                         [("colour1", '<option value="yellow" selected>')]),
    "bad email": ({"email1": "bert-at-example"}, "email1", "is not an email address",
                  [("email1", 'value="bert-at-example"'), ("name1", 'value="Bert"')]),
    "two players": ({"name2": "", "email2": ""}, "players",
                    "is for 3 to 5 players; you filled in 2",
                    [("name0", 'value="Anna"'), ("email1", 'value="bert@example.org"')]),
    "duplicate emails": ({"email1": "ANNA@example.org"}, "players",
                         "each player needs their own email address",
                         [("email1", 'value="ANNA@example.org"')]),
    "deadline 5 hours": ({"deadline_hours": "5"}, "deadline_hours",
                         "the move deadline must be 12 hours", [("deadline_hours", 'value="5"')]),
    "reminders x": ({"reminders": "x"}, "reminders", "reminders are whole numbers",
                    [("reminders", 'value="x"')]),
    "time zone on Mars": ({"timezone": "Mars/Olympus"}, "timezone", "unknown time zone",
                          [("timezone", 'value="Mars/Olympus"')]),
    "start player beyond the players": ({"start": "3"}, "start",
                                        "choose a player who is in the game",
                                        [("start", '<option value="3" selected>')]),
}


def test_a_bad_game_form_shows_the_error_beside_the_field_and_creates_nothing(app, admin):
    before = everything(app)
    for case, (changes, name, message, kept) in FORM_ERRORS.items():
        response = admin.post("/admin/games/new",
                              data=game_form(csrf_of(admin, "/admin/games/new"), **changes))
        assert response.status_code == 422, case
        page = response.get_data(as_text=True)
        assert "Please correct the fields marked below; nothing was created." in page, case
        assert message in _error_beside(page, name), case
        for control, text in kept:
            assert text in _control(page, control), (case, control, text)
        assert 'value="Club night"' in _control(page, "title"), case
        assert page.count('class="error-text"') == 1, case
        assert everything(app) == before, case


# --- the game page ------------------------------------------------------------------------------

def test_the_game_page_shows_every_hand_the_deck_the_log_and_the_mail(app, admin):
    _, tokens = new_game(app)
    play_moves(app, tokens, 2)  # the first seat places, then draws: its turn is over
    run_jobs(app, utcnow() + timedelta(hours=73))  # the second seat times out
    game, state = game_state(app)
    board = rules_for(game.kind).board
    page = admin.get("/admin/games/1").get_data(as_text=True)

    assert "The full state: for the admin's eyes only" in page
    assert "This shows every hand and the order of the deck. Do not share it" in page
    for number in range(3):
        hand = ", ".join(board.card(code).colour for code in state.hands[number])
        row = re.search(rf"<td>Player {number} \({seat_row(app, number).colour}\)</td>\s*"
                        r"<td>([^<]*)</td>", page)
        assert row and row.group(1) == (hand or "none"), number
    deck = ", ".join(board.card(code).colour for code in reversed(state.deck))
    assert f"Deck ({len(state.deck)} cards), top first: {deck}." in page

    with reading(app) as db:
        records = db.exec(select(MoveRecord).order_by(MoveRecord.number)).all()
    assert [r.actor for r in records][:2] == ["player", "player"]
    assert {r.actor for r in records[2:]} == {"timeout"} and len(records) > 2
    log = [tuple(map(html.unescape, row)) for row in re.findall(
        r"<tr><td>(\d+)</td><td>[^<]*</td><td>([^<]*)</td><td>([^<]*)</td>"
        r"<td><code>([^<]*)</code></td>", page)]
    assert sorted(log) == sorted(
        (str(r.number), f"Player {r.seat}", f"{r.actor} via {r.via}", r.notation)
        for r in records)
    assert ("2", "Player 1", "timeout via scheduler", records[2].notation) in log

    mails = page.split("<h2>Mail</h2>", 1)[1].split("<h2>", 1)[0]
    sections = re.split(r"<h3>[^<]*</h3>", mails)[1:]
    assert len(sections) == 3
    for number, section in enumerate(sections):
        seat = seat_row(app, number)
        rows = [r for r in outbox_rows(app) if r.seat_id == seat.id]
        assert rows and section.count("<li>") == len(rows)
        for row in rows:
            assert f"{row.subject} <span class=\"muted\">({row.status})" in section.replace(
                "&amp;", "&")



def test_the_game_page_counts_turns_as_the_players_do(app, admin):
    """A new game is in turn 1, not 0; a placement and its draw are one turn, not two."""
    _, tokens = new_game(app)
    page = admin.get("/admin/games/1").get_data(as_text=True)
    assert "Turn 1 (0 moves logged)." in page and "Turn 0" not in page
    play_moves(app, tokens, 2)  # the first seat places, then draws: its turn is over
    page = admin.get("/admin/games/1").get_data(as_text=True)
    assert "Turn 2 (2 moves logged)." in page and "Turn 3" not in page


# --- actions on a game --------------------------------------------------------------------------

def test_resend_mails_a_working_link_and_keeps_the_old_ones(app, admin, mailbox):
    _, tokens = new_game(app)
    since = len(mailbox.messages())
    response = act(admin, app, "resend", seat=1)
    assert (response.status_code, response.headers["Location"]) == (303, "/admin/games/1")
    assert "Done: Resend the seat&#39;s link." in admin.get("/admin/games/1").get_data(
        as_text=True)
    [message] = new_mail(mailbox, since)
    assert subjects([message]) == [("p1@example.org", "Your link to the game")]
    token = token_in(message)
    assert token != tokens[1]
    assert seat_status(admin, token) == (200, 200)
    assert seat_status(admin, tokens[1]) == (200, 200)
    assert audit(app) == [(admin_id(app), 1, "resend link", REASON, "seat 2")]


def test_a_new_link_revokes_the_old_ones_in_the_page_and_the_api(app, admin, mailbox):
    _, tokens = new_game(app)
    since = len(mailbox.messages())
    assert act(admin, app, "new_link", seat=0).status_code == 303
    [message] = new_mail(mailbox, since)
    assert subjects([message]) == [("p0@example.org", "Your new link to the game")]
    assert seat_status(admin, tokens[0]) == (404, 404)
    assert seat_status(admin, token_in(message)) == (200, 200)
    assert seat_status(admin, tokens[1]) == (200, 200)  # other seats untouched
    assert audit(app) == [(admin_id(app), 1, "new link", REASON, "seat 1")]


def test_changing_an_address_mails_the_new_one_and_kills_the_old_links(app, admin, mailbox):
    """The new address gets a link; the old one is told too (issue 32), with no link."""
    _, tokens = new_game(app)
    since = len(mailbox.messages())
    assert act(admin, app, "email", seat=2, email="cleo.new@example.org").status_code == 303
    assert seat_row(app, 2).email == "cleo.new@example.org"
    message, old = sorted(new_mail(mailbox, since), key=lambda m: "p2@" in str(m["To"]))
    assert subjects([message, old]) == [
        ("cleo.new@example.org", "Your address for the game was changed"),
        ("p2@example.org", "Your address for the game was changed")]
    told = " ".join(text_of(old).split())
    assert "changed the address of your seat (green) in" in told and \
        "to cleo.new@example.org" in told
    assert "/seat/" not in text_of(old) + html_of(old), "the old address gets no link"
    assert seat_status(admin, tokens[2]) == (404, 404)
    assert seat_status(admin, token_in(message)) == (200, 200)
    assert audit(app) == [(admin_id(app), 1, "change email", REASON,
                           "seat 3: p2@example.org -> cleo.new@example.org")]


def test_handing_a_seat_over_tells_both_players(app, admin, mailbox):
    _, tokens = new_game(app)
    since = len(mailbox.messages())
    response = act(admin, app, "hand_over", seat=1, name="Dora", email="dora@example.org")
    assert response.status_code == 303
    seat = seat_row(app, 1)
    assert (seat.name, seat.email) == ("Dora", "dora@example.org")
    messages = new_mail(mailbox, since)
    # The other players are told who plays the seat now (issue 32).
    assert sorted(subjects(messages)) == [("dora@example.org", "You are invited to play"),
                                          ("p0@example.org", "A seat changed hands"),
                                          ("p1@example.org", "Your seat was handed over"),
                                          ("p2@example.org", "A seat changed hands")]
    told = " ".join(text_of(next(m for m in messages if "p2@" in str(m["To"]))).split())
    assert "handed the seat of Player 1 (red) to Dora, who plays it from now on." in told
    invitation = next(m for m in messages if "dora" in str(m["To"]))
    assert seat_status(admin, tokens[1]) == (404, 404)
    token = token_in(invitation)
    assert seat_status(admin, token) == (200, 200)
    assert admin.get(f"/api/v1/seat/{token}").get_json()["name"] == "Dora"
    assert audit(app) == [(admin_id(app), 1, "hand over", REASON,
                           "seat 2: Player 1 <p1@example.org> -> Dora <dora@example.org>")]


def test_a_seat_handed_over_mid_game_is_told_it_takes_over_not_that_it_starts(app, admin,
                                                                              mailbox):
    """Mid-game the new player's first mail says the game is under way and whose move it is;
    "You start" is only for a game's first turn."""
    _, tokens = new_game(app)
    play_moves(app, tokens, 10, until=lambda s: s.ply > 0 and s.phase == "play")
    _, state = game_state(app)
    since = len(mailbox.messages())
    assert act(admin, app, "hand_over", seat=state.current, name="Dora",
               email="dora@example.org").status_code == 303
    (invitation,) = [m for m in new_mail(mailbox, since) if "dora" in str(m["To"])]
    assert str(invitation["Subject"]).endswith("You take over a seat, and it is your move")
    for body in (text_of(invitation), html_of(invitation)):
        assert "You start" not in body and "invited" not in body
        assert "a game under way" in body and "It is your move now" in body



def test_a_computer_seat_is_not_overdue_nor_offered_link_and_mail_actions(app, admin, mailbox):
    """A computer player's seat waits for the scheduler, not for a deadline; it has no link or
    address to act on; and the other players hear who plays the seat now (issue 32)."""
    new_game(app)
    to_move = game_state(app)[1].current
    since = len(mailbox.messages())
    assert act(admin, app, "bot", seat=to_move, bot="random").status_code == 303
    others = {f"p{n}@example.org" for n in range(3) if n != to_move}
    told = [m for m in new_mail(mailbox, since) if subjects([m])[0][1] == "A seat changed hands"]
    assert {subjects([m])[0][0] for m in told} == others
    assert "to a computer player (random), who plays it" in " ".join(text_of(told[0]).split())
    with writing(app) as db:  # the scheduler has not run yet: the turn is due
        game = db.get(Game, 1)
        game.deadline_at = utcnow() - timedelta(minutes=5)
        db.add(game)
    for path in ("/admin/games/1", "/admin/"):
        page = admin.get(path).get_data(as_text=True)
        assert "overdue" not in page, path
    page = admin.get("/admin/games/1").get_data(as_text=True)
    assert "the computer player moves at the scheduler" in html.unescape(page), page[:3000]
    for key in ("resend", "new_link", "email", "revoke_games"):
        form = re.search(rf'name="action" value="{key}">(.*?)</form>', page, re.DOTALL).group(1)
        offered = re.findall(r'<option value="(\d+)">', form)
        assert offered == [str(n) for n in range(3) if n != to_move], key
    for key in ("hand_over", "bot"):
        form = re.search(rf'name="action" value="{key}">(.*?)</form>', page, re.DOTALL).group(1)
        assert str(to_move) in re.findall(r'<option value="(\d+)">', form), key


def test_a_new_link_mail_does_not_promise_that_earlier_links_work(app, admin, mailbox):
    """After a new link or a new address the old links are dead, and the footer says so too."""
    new_game(app)
    since = len(mailbox.messages())
    assert act(admin, app, "new_link", seat=0).status_code == 303
    (message,) = new_mail(mailbox, since)
    text = text_of(message)
    assert "earlier links no longer work" in text
    assert "work too" not in text and "it replaces the links in your earlier mails" in text
    since = len(mailbox.messages())
    assert act(admin, app, "resend", seat=0).status_code == 303
    (again,) = new_mail(mailbox, since)
    assert "the links in your earlier mails work too" in text_of(again)


def test_a_handed_over_seat_does_not_keep_the_old_players_settings(app, admin):
    from pbem.services.seat_settings import set_notify, set_timezone, take_vacation

    _, tokens = new_game(app)
    with app.app_context():
        set_notify(tokens[1], "turn")
        set_timezone(tokens[1], "Asia/Tokyo")
        take_vacation(tokens[1], 3)
    assert act(admin, app, "hand_over", seat=1, name="Dora",
               email="dora@example.org").status_code == 303
    seat = seat_row(app, 1)
    assert (seat.notify, seat.timezone) == ("every", None)
    assert (seat.vacation_days_used, seat.vacation_until) == (0, None)


def test_an_address_already_in_the_game_is_refused_and_nothing_changes(app, admin):
    new_game(app)
    before = everything(app)
    response = act(admin, app, "email", seat=0, email="P1@example.org")
    assert response.status_code == 422
    assert "already plays another seat of this game" in response.get_data(as_text=True)
    assert everything(app) == before


def test_extend_pause_and_resume_move_the_deadline_and_the_status(app, admin, mailbox):
    _, tokens = new_game(app)
    first, _ = game_state(app)
    since = len(mailbox.messages())
    me = admin_id(app)

    assert act(admin, app, "extend", hours=24).status_code == 303
    extended, _ = game_state(app)
    assert extended.status == "running"
    assert extended.deadline_at == first.deadline_at + timedelta(hours=24)

    assert act(admin, app, "pause").status_code == 303
    paused, state = game_state(app)
    assert (paused.status, paused.deadline_at) == ("paused", None)
    refused = admin.post(f"/api/v1/seat/{tokens[0]}/move",
                         json={"move": str(engine.legal_moves(state)[0]), "turn": 0})
    assert refused.status_code == 409

    assert act(admin, app, "resume").status_code == 303
    resumed, _ = game_state(app)
    assert resumed.status == "running"
    assert extended.deadline_at <= resumed.deadline_at <= extended.deadline_at + timedelta(
        minutes=1)

    assert audit(app) == [(me, 1, "extend", REASON, "24 hours"), (me, 1, "pause", REASON, ""),
                          (me, 1, "resume", REASON, "")]
    got = subjects(new_mail(mailbox, since))
    for subject in ("The deadline was extended", "The game is paused", "The game goes on"):
        assert sorted(a for a, s in got if s == subject) == [f"p{i}@example.org"
                                                            for i in range(3)]
    assert len(got) == 9


def test_abort_ends_the_game_tells_everyone_and_refuses_moves(app, admin, mailbox):
    _, tokens = new_game(app)
    since = len(mailbox.messages())
    assert act(admin, app, "abort", reason="the club closed").status_code == 303
    game, state = game_state(app)
    assert (game.status, game.deadline_at) == ("aborted", None)
    assert game.finished_at is not None
    messages = new_mail(mailbox, since)
    assert sorted(subjects(messages)) == [(f"p{i}@example.org", "The game was called off")
                                          for i in range(3)]
    assert all("Reason: the club closed" in m.get_body(("plain",)).get_content()
               for m in messages)
    move = str(engine.legal_moves(state)[0])
    refused = admin.post(f"/api/v1/seat/{tokens[state.current]}/move",
                         json={"move": move, "turn": game.turn})
    assert refused.status_code == 409
    assert "aborted" in refused.get_json()["error"]
    assert game_state(app)[0].turn == game.turn
    # The seat page says the game is over for good, not that it will run again (issue 32).
    seat_page = admin.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    assert "This game is aborted: nobody moves in it any more." in seat_page
    assert "until the game runs again" not in seat_page
    assert audit(app) == [(admin_id(app), 1, "abort", "the club closed", "")]
    # and it cannot be aborted twice: not offered, its confirmation refused, its POST too
    before = everything(app)
    assert "abort" not in _offered(admin)
    token = csrf_of(admin, "/admin/games/1")
    confirm = admin.post("/admin/games/1/confirm", data={"csrf_token": token, "action": "abort"})
    assert confirm.status_code == 409
    assert "is not possible while the game is aborted" in alert_of(confirm)
    forced = admin.post("/admin/games/1/do", data={"csrf_token": token, "action": "abort",
                                                   "reason": REASON})
    assert forced.status_code == 409
    assert everything(app) == before


ACTIONS = [("resend", {"seat": 0}), ("new_link", {"seat": 0}),
           ("email", {"seat": 0, "email": "x@example.org"}),
           ("hand_over", {"seat": 0, "name": "X", "email": "x@example.org"}),
           ("revoke_games", {"seat": 0}),
           ("pause", {}), ("extend", {"hours": 24}), ("take_back", {}), ("abort", {})]


def _offered(admin) -> list[str]:
    """The actions the game page offers, each with its own form."""
    return re.findall(r'<input type="hidden" name="action" value="(\w+)">',
                      admin.get("/admin/games/1").get_data(as_text=True))


def test_only_the_actions_possible_in_the_games_state_are_offered(app, admin):
    """Running, paused, finished and aborted games each offer their own actions; an action
    not offered is refused at its confirmation page and changes nothing."""
    _, tokens = new_game(app)
    assert _offered(admin) == ["resend", "new_link", "email", "hand_over", "revoke_games",
                               "bot", "pause", "extend", "absent_bot", "abort"]
    play_moves(app, tokens, 1)
    assert "take_back" in _offered(admin)
    assert act(admin, app, "pause").status_code == 303
    assert _offered(admin) == ["resend", "new_link", "email", "hand_over", "revoke_games",
                               "bot", "resume", "absent_bot", "abort"]
    assert act(admin, app, "abort").status_code == 303
    assert _offered(admin) == ["resend", "new_link", "revoke_games"]
    before = everything(app)
    token = csrf_of(admin, "/admin/games/1")
    for action in ("resume", "pause", "take_back", "abort", "extend"):
        response = admin.post("/admin/games/1/confirm",
                              data={"csrf_token": token, "action": action, "hours": "5"})
        assert response.status_code == 409, action
        assert "is not possible while the game is aborted" in alert_of(response)
    assert everything(app) == before


def test_each_actions_form_and_confirmation_carry_only_its_own_fields(app, admin):
    """The game page has one form per action with only its fields; so has the confirmation."""
    new_game(app)
    page = admin.get("/admin/games/1").get_data(as_text=True)
    forms = dict(re.findall(r'name="action" value="(\w+)">(.*?)</form>', page, re.DOTALL))
    names = {action: set(re.findall(r'name="(\w+)"', body)) for action, body in forms.items()}
    assert names["resend"] == {"seat"} and names["pause"] == set()
    assert names["email"] == {"seat", "email"} and names["hand_over"] == {"seat", "name", "email"}
    assert names["extend"] == {"hours"}
    token = csrf_of(admin, "/admin/games/1")
    shown = admin.post("/admin/games/1/confirm", data={
        "csrf_token": token, "action": "pause", "seat": "1", "email": "x@example.org",
        "name": "X", "hours": "5"}).get_data(as_text=True)
    hidden = set(re.findall(r'<input type="hidden" name="(\w+)"', shown))
    assert hidden == {"csrf_token", "action"}


def test_an_action_without_a_reason_is_refused_and_changes_nothing(app, admin):
    _, tokens = new_game(app)
    play_moves(app, tokens, 1)
    before = everything(app)
    for action, fields in ACTIONS:
        for reason in ("", "   "):
            response = act(admin, app, action, reason=reason, **fields)
            assert response.status_code == 400, action
            page = response.get_data(as_text=True)
            assert "say why, in a few words" in page and "Nothing was done." in page, action
    assert everything(app) == before


def test_the_confirmation_page_says_what_will_happen_and_changes_nothing(app, admin):
    _, tokens = new_game(app)
    play_moves(app, tokens, 1)
    before = everything(app)
    token = csrf_of(admin, "/admin/games/1")
    for action, fields in ACTIONS:
        page = admin.post("/admin/games/1/confirm",
                          data={"csrf_token": token, "action": action,
                                **{k: str(v) for k, v in fields.items()}})
        assert page.status_code == 200, action
        assert "Yes, do it" in page.get_data(as_text=True)
    unknown = admin.post("/admin/games/1/confirm", data={"csrf_token": token, "action": "nuke"})
    assert unknown.status_code == 422
    assert alert_of(unknown) == "Choose an action (and a seat) from the lists; nothing was done."
    no_seat = admin.post("/admin/games/1/confirm",
                         data={"csrf_token": token, "action": "resend", "seat": "7"})
    assert no_seat.status_code == 422 and "Choose an action" in alert_of(no_seat)
    assert everything(app) == before
    assert game_state(app)[0].status == "running"


def _draw_from_deck(legal):
    return next(move for move in legal if str(move) == "draw deck")


def _place_first(legal):
    return next(move for move in legal if isinstance(move, engine.Place))


@pytest.mark.parametrize("draws", [0, 1, 3], ids=["only the placement", "one draw of three",
                                                  "the whole turn"])
def test_take_back_undoes_the_last_turn_and_restores_the_state_exactly(app, admin, mailbox,
                                                                       draws):
    """Taking back removes the placement and the draws after it (the whole turn so far) and
    rebuilds the state the turn began in; the mover is told a deck card stays seen."""
    _, tokens = new_game(app)
    play_moves(app, tokens, 1, pick=lambda legal: next(m for m in legal
                                                        if isinstance(m, engine.Exchange)))
    play_moves(app, tokens, 1, pick=_draw_from_deck)  # seat 0's turn ends
    game, state = game_state(app)
    saved, turn, seen = game.state_json, game.turn, views(admin, tokens)
    mover = state.current
    results = play_moves(app, tokens, 1, pick=_place_first)
    results += play_moves(app, tokens, draws, pick=_draw_from_deck,
                          until=lambda s: s.current != mover)
    moved, _after = game_state(app)
    assert moved.turn == turn + len(results) and moved.state_json != saved

    since = len(mailbox.messages())
    page = admin.get("/admin/games/1").get_data(as_text=True)
    assert "Take back the last turn" in page
    assert act(admin, app, "take_back", reason="misclick").status_code == 303
    back, _ = game_state(app)
    assert back.state_json == saved and back.turn == turn
    assert back.status == "running" and back.deadline_at is not None
    with reading(app) as db:
        assert db.exec(select(MoveRecord.number).order_by(MoveRecord.number)).all() == \
            list(range(turn))
    assert views(admin, tokens) == seen
    notations = "; ".join(r.notation for r in results)
    numbers = f"move {turn}" if len(results) == 1 else f"moves {turn}-{turn + len(results) - 1}"
    assert audit(app) == [(admin_id(app), 1, "take back", "misclick",
                           f"{numbers} by seat {mover + 1}: {notations} (player)")]
    messages = new_mail(mailbox, since)
    assert sorted(subjects(messages)) == [(f"p{i}@example.org", "A turn was taken back")
                                          for i in range(3)]
    mine = next(m for m in messages if f"p{mover}@example.org" in str(m["To"]))
    assert "you have seen it" in mine.get_body(("plain",)).get_content()
    others = [m for m in messages if f"p{mover}@example.org" not in str(m["To"])]
    assert not any("you have seen it" in m.get_body(("plain",)).get_content() for m in others)
    # the turn can be played again, from its first move
    assert play_moves(app, tokens, 1, pick=_place_first)[0].notation == results[0].notation


def test_the_take_back_confirmation_names_the_turn_and_the_seen_card(app, admin):
    _, tokens = new_game(app)
    play_moves(app, tokens, 1, pick=_place_first)
    play_moves(app, tokens, 1, pick=_draw_from_deck)
    token = csrf_of(admin, "/admin/games/1")
    page = admin.post("/admin/games/1/confirm", data={"csrf_token": token,
                                                      "action": "take_back"})
    text = html.unescape(page.get_data(as_text=True))
    with reading(app) as db:
        notations = db.exec(select(MoveRecord.notation).order_by(MoveRecord.number)).all()
    assert f"Take back the last turn of Player 0 (yellow): {'; '.join(notations)}." in text
    assert "they have seen it" in text


def test_take_back_with_no_move_made_is_refused(app, admin):
    """Not offered before the first move; its confirmation and its POST are refused."""
    new_game(app)
    before = everything(app)
    assert "take_back" not in _offered(admin)
    token = csrf_of(admin, "/admin/games/1")
    confirm = admin.post("/admin/games/1/confirm", data={"csrf_token": token,
                                                         "action": "take_back"})
    assert confirm.status_code == 409
    assert "no move has been made; nothing was done" in alert_of(confirm)
    response = admin.post("/admin/games/1/do", data={"csrf_token": token, "action": "take_back",
                                                     "reason": REASON})
    assert response.status_code == 422
    assert "no move has been made yet" in response.get_data(as_text=True)
    assert everything(app) == before


# --- outbox and audit ---------------------------------------------------------------------------

def _statuses(page: str) -> list[tuple[str, str]]:
    return re.findall(r"<tr><td>(\d+)</td>.*?<td>(queued|sending|sent|failed)</td>", page, re.DOTALL)


def test_the_outbox_lists_mail_by_status_and_a_failed_mail_can_be_retried(app, admin, mailbox):
    _, tokens = new_game(app)
    invited = "You are invited to play" + (", and you start" if game_state(app)[1].current == 0
                                           else "")
    _fail_first_mail(app)  # the invitation to seat 1 could not be delivered
    assert mailbox.deliver()["sent"] == 2
    assert act(admin, app, "resend", seat=1).status_code == 303  # mail 4, queued

    page = admin.get("/admin/outbox").get_data(as_text=True)
    assert sorted(_statuses(page)) == [("1", "failed"), ("2", "sent"), ("3", "sent"),
                                       ("4", "queued")]
    assert "550 no such user" in page
    assert page.count(">Retry</button>") == 1
    failed_only = admin.get("/admin/outbox?status=failed").get_data(as_text=True)
    assert _statuses(failed_only) == [("1", "failed")]
    assert _statuses(admin.get("/admin/outbox?status=sent").get_data(as_text=True)) == \
        [("3", "sent"), ("2", "sent")]
    assert "Failed mail (1)" in admin.get("/admin/").get_data(as_text=True)

    token = field(page, "csrf_token")
    response = admin.post("/admin/outbox/1/retry", data={"csrf_token": token})
    assert (response.status_code, response.headers["Location"]) == (303, "/admin/outbox")
    assert "Mail 1 is queued again." in admin.get("/admin/outbox").get_data(as_text=True)
    row = outbox_rows(app)[0]
    assert (row.status, row.attempts) == ("queued", 0)
    assert audit(app)[-1] == (admin_id(app), 1, "retry mail", "retry",
                              ("mail 1 to Player 0 <p0@example.org>: "
                               f"[Kardinal & König #1] {invited}"))

    before = everything(app)
    for message_id, refusal in ((1, "mail 1 is queued, not failed"),
                                (2, "mail 2 is sent, not failed"),
                                (99, "there is no mail 99")):
        response = admin.post(f"/admin/outbox/{message_id}/retry", data={"csrf_token": token})
        assert response.status_code == (404 if message_id == 99 else 422)
        assert refusal[1:] + "; nothing was done." in alert_of(response)
    assert everything(app) == before

    assert mailbox.deliver()["sent"] == 2  # the retried mail goes out with the queued one
    [invitation] = mailbox.to("p0@example.org")  # its first delivery, with a working link
    assert str(invitation["Subject"]).endswith(invited)
    assert token_in(invitation) == tokens[0]
    assert seat_status(admin, tokens[0]) == (200, 200)


def test_the_audit_page_lists_each_action_with_admin_and_reason(app, admin):
    new_game(app)
    act(admin, app, "pause", reason="holiday <b>week</b>")
    page = admin.get("/admin/audit").get_data(as_text=True)
    assert f"<td>{ADMIN}</td>" in page
    assert "<td>pause</td>" in page
    assert "holiday &lt;b&gt;week&lt;/b&gt;" in page
    with reading(app) as db:
        assert db.exec(select(Game.status)).one() == "paused"


def test_the_dashboard_names_the_players_and_each_finished_games_winner(app, admin):
    """Players by name and colour (not a move count); a finished game shows its winner."""
    _, tokens = new_game(app, 3, "dashboard-1")
    play_moves(app, tokens, 5000)
    _, state = game_state(app)
    assert state.is_over
    new_game(app, 3, "dashboard-2")
    page = html.unescape(admin.get("/admin/").get_data(as_text=True))
    players = "Player 0 (yellow), Player 1 (red), Player 2 (green)"
    assert page.count(players) == 2 and " moves</td>" not in page
    finished = page.split("<h2>Finished (1)</h2>", 1)[1].split("</table>", 1)[0]
    assert "<th scope=\"col\">Winner</th>" in finished
    winners = " and ".join(f"<strong>Player {s} ({state.players[s]})</strong>"
                           for s in engine.kardinal_koenig.outcome(state).winners)
    assert winners in finished
