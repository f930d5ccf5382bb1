"""The web side of a real deployment (issue 29) and of the second outside attack (issue 34),
in-process: forms behind an HTTPS proxy, refused CSRF checks in the log, /health, the export's
file mode, the admin login under a lockout attempt and a flood, bounded numbers, private pages
never cached, the catalogs' file modes, and the admin session's absolute limit.

What needs real processes (nginx, gunicorn, chromium, `pbem serve`) is in
tests/processes/test_deploy_processes.py; the log set-up and its masking in tests/server/test_logs.py.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from contextlib import contextmanager
from datetime import timedelta

import pytest
from server import Mailbox, field, make_app, new_game
from sqlmodel import select
from test_admin import ADMIN, PASSWORD, add_admin, csrf_of, everything, login
from test_my_games import _games_token
from test_start import INVITE, link_in, proposed

from pbem.ground.db import utcnow, writing
from pbem.ground.models import FAILED, QUEUED, SENDING, OutboxMessage
from pbem.scheduler.jobs import run_jobs
from pbem.services import stewardship

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

HOST = "games.example.org"
# What nginx (deploy/nginx/pbem.conf) adds to every request it passes on.
PROXIED = {"X-Forwarded-For": "203.0.113.5", "X-Forwarded-Proto": "https",
           "X-Forwarded-Host": HOST}


@contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# --- issue 29, 1: forms behind the HTTPS proxy ----------------------------------------------------

@pytest.fixture
def proxied(tmp_path):
    """An app behind one proxy that speaks https to the browsers (as deploy/ sets it up)."""
    app = make_app(tmp_path / "proxied", BASE_URL=f"https://{HOST}", SERVE_TRUSTED_PROXIES=1)
    add_admin(app)
    return app


def test_pages_let_the_browser_send_a_referer_to_this_site_only(proxied):
    """`no-referrer` made browsers send no Referer at all, so Flask-WTF's https check refused
    every form; `same-origin` sends it to this site and to no other."""
    response = proxied.test_client().get("/admin/login", headers=PROXIED)
    assert response.headers["Referrer-Policy"] == "same-origin"
    page = response.get_data(as_text=True)
    assert '<meta name="referrer" content="same-origin">' in page
    assert "no-referrer" not in page


def _login_over_https(app, **headers):
    client = app.test_client()
    page = client.get("/admin/login", headers=PROXIED).get_data(as_text=True)
    return client.post("/admin/login", headers={**PROXIED, **headers}, data={
        "csrf_token": field(page, "csrf_token"), "email": ADMIN, "password": PASSWORD})


def test_a_form_posted_over_https_with_this_sites_referer_is_taken(proxied):
    response = _login_over_https(proxied, Referer=f"https://{HOST}/admin/login")
    assert response.status_code == 303
    assert "Secure" in response.headers["Set-Cookie"]


def test_without_a_referer_a_same_origin_origin_header_is_taken(proxied):
    """A browser or extension that sends no Referer still sends Origin with a POST."""
    assert _login_over_https(proxied, Origin=f"https://{HOST}").status_code == 303


@pytest.mark.parametrize("headers, reason", [
    ({}, "The referrer and origin headers are missing."),
    ({"Origin": "null"}, "The origin does not match the host (no referrer)."),
    ({"Origin": "https://evil.example"}, "The origin does not match the host (no referrer)."),
    ({"Referer": "https://evil.example/admin/login", "Origin": f"https://{HOST}"},
     "The referrer does not match the host."),
])
def test_a_form_from_elsewhere_is_refused_and_the_refusal_logged(proxied, caplog, headers,
                                                                reason):
    with caplog.at_level(logging.WARNING, logger="pbem.web.site"):
        response = _login_over_https(proxied, **headers)
    assert response.status_code == 400
    assert "came from elsewhere" in response.get_data(as_text=True)
    [record] = [r for r in caplog.records if r.name == "pbem.web.site"]
    assert record.levelname == "WARNING"
    assert record.getMessage() == (f"refused a form (CSRF check): POST /admin/login from "
                                   f"203.0.113.5: {reason}")


def test_a_refused_csrf_token_is_logged_with_the_reason_and_never_the_token_or_key(app, caplog):
    _, tokens = new_game(app)
    client = app.test_client()
    page = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    good = field(page, "csrf_token")
    with caplog.at_level(logging.WARNING, logger="pbem.web.site"):
        missing = client.post(f"/seat/{tokens[0]}/move", data={"move": "x", "turn": "0"})
        wrong = client.post(f"/seat/{tokens[0]}/move", data={"move": "x", "turn": "0",
                                                              "csrf_token": good[:-4] + "AAAA"})
    assert missing.status_code == wrong.status_code == 400
    lines = [r.getMessage() for r in caplog.records if r.name == "pbem.web.site"]
    assert lines == [
        ("refused a form (CSRF check): POST /seat/[hidden]/move from 127.0.0.1: "
         "The CSRF token is missing."),
        ("refused a form (CSRF check): POST /seat/[hidden]/move from 127.0.0.1: "
         "The CSRF token is invalid.")]
    assert not any(tokens[0] in line or good[:20] in line for line in lines)


# --- issue 29, 5: /health -------------------------------------------------------------------------

def _health(app):
    response = app.test_client().get("/health")
    return response.status_code, response.get_json()


def test_health_is_503_until_the_scheduler_has_run_then_200(app):
    status, answer = _health(app)
    assert (status, answer["status"], answer["problems"]) == (
        503, "failing", ["the scheduler has never run"])
    run_jobs(app)
    status, answer = _health(app)
    assert (status, answer["status"], answer["problems"], answer["database"]) == (
        200, "ok", [], "ok")
    assert answer["mail"] == {"queued": 0, "sending": 0, "failed": 0, "unknown": 0,
                              "due_for_seconds": 0}
    assert 0 <= answer["scheduler"]["seconds_ago"] < 60
    assert answer["scheduler"]["silent_after_seconds"] == 300


def test_health_says_when_the_scheduler_has_been_silent_for_a_few_ticks(app):
    run_jobs(app, utcnow() - timedelta(minutes=6))
    status, answer = _health(app)
    assert status == 503
    assert answer["problems"][0].startswith("the scheduler has not run for 36")


def test_health_counts_failed_unknown_and_stuck_mail_and_holds_no_address(app):
    new_game(app)  # three invitations queued
    run_jobs(app)  # ... and sent
    with writing(app) as session:
        rows = session.exec(select(OutboxMessage).order_by(OutboxMessage.id)).all()
        rows[0].status, rows[0].last_error = FAILED, "550 no such user p0@example.org"
        rows[1].status, rows[1].claimed_at = SENDING, utcnow() - timedelta(hours=1)
        rows[2].status, rows[2].next_attempt_at = QUEUED, utcnow() - timedelta(minutes=10)
        for row in rows:
            session.add(row)
    status, answer = _health(app)
    assert status == 503
    assert answer["mail"]["failed"] == answer["mail"]["sending"] == 1
    assert answer["mail"]["queued"] == 1 and 590 < answer["mail"]["due_for_seconds"] < 700
    assert answer["problems"][0] == "1 mail(s) failed"
    assert answer["problems"][1].startswith("mail due for ")
    assert answer["problems"][2].startswith("mail claimed by a sender has been stuck for ")
    text = app.test_client().get("/health").get_data(as_text=True)
    assert "example.org" not in text and "550" not in text


def test_health_is_503_when_the_database_is_unreachable_and_shows_no_url(tmp_path):
    from test_pbem_cli import free_port

    from pbem import create_app

    url = f"postgresql+psycopg://pbem:hunter2secret@127.0.0.1:{free_port()}/pbem"
    app = create_app({"INSTANCE_PATH": str(tmp_path / "nowhere"), "SECRET_KEY": "x",
                      "TESTING": True, "DATABASE_URL": url})
    response = app.test_client().get("/health")
    assert response.status_code == 503
    assert response.get_json() == {"status": "failing", "problems": ["database unreachable"],
                                   "database": "unreachable"}
    assert "hunter2" not in response.get_data(as_text=True)


# --- issue 29, 6 (11): export-db writes its file for the server's user only ---------------------

def test_export_db_writes_its_file_0600_whatever_the_umask(app, tmp_path):
    target = tmp_path / "club.jsonl"
    target.write_text("an older export\n")
    target.chmod(0o644)
    (tmp_path / "club.jsonl.partial").write_text("left over")  # from an export broken off
    with umask(0):
        result = app.test_cli_runner().invoke(args=["export-db", str(target)])
    assert result.exit_code == 0, result.output
    assert mode(target) == 0o600
    assert target.read_text().startswith('{"format":"pbem-export"')
    assert not (tmp_path / "club.jsonl.partial").exists()


# --- issue 34, 3: the admin lockout and the login flood -----------------------------------------

class CountingHasher:
    """The app's argon2 hasher (from `real()`, the app's), counting its hashes and checks."""

    def __init__(self, real):
        self.real, self.calls = real, 0

    def hash(self, *args, **kwargs):
        self.calls += 1
        return self.real().hash(*args, **kwargs)

    def verify(self, *args, **kwargs):
        self.calls += 1
        return self.real().verify(*args, **kwargs)

    def check_needs_rehash(self, *args):
        return self.real().check_needs_rehash(*args)


@pytest.fixture
def hasher(monkeypatch):
    counting = CountingHasher(stewardship.password_hasher)
    monkeypatch.setattr(stewardship, "password_hasher", lambda: counting)
    return counting


def attempt(app, password: str, address: str, email: str = ADMIN, client=None) -> int:
    client = client or app.test_client()
    page = client.get("/admin/login").get_data(as_text=True)
    return client.post("/admin/login", environ_base={"REMOTE_ADDR": address}, data={
        "csrf_token": field(page, "csrf_token"), "email": email,
        "password": password}).status_code


def test_ten_wrong_passwords_from_one_address_do_not_lock_the_admin_out_elsewhere(app):
    """The default limit, 10 a minute: the flooding address is refused, the right password
    from an address that has not failed gets in, the right one from the flooding address is
    refused too (it is not checked: checking is what a flood costs)."""
    add_admin(app)
    assert [attempt(app, f"wrong guess {i}", "198.51.100.1") for i in range(10)] == [401] * 10
    assert attempt(app, PASSWORD, "203.0.113.7") == 303
    assert attempt(app, PASSWORD, "198.51.100.1") == 429
    assert attempt(app, "wrong guess", "198.51.100.1", "other@example.org") == 429


def test_refused_attempts_are_never_hashed(app, hasher):
    add_admin(app)
    hasher.calls = 0
    for i in range(10):
        attempt(app, f"wrong guess {i}", "198.51.100.1")
    checked = hasher.calls
    assert checked == 10
    # Over the address's limit: every account, every password.
    for i in range(20):
        assert attempt(app, f"wrong guess {i}", "198.51.100.1", f"u{i}@example.org") == 429
    assert attempt(app, PASSWORD, "198.51.100.1") == 429
    assert hasher.calls == checked
    # Over the account's limit, from an address that has failed (on another account).
    assert attempt(app, "wrong guess", "192.0.2.9", "someone@example.org") == 401
    assert attempt(app, "wrong guess", "192.0.2.9") == 429
    assert hasher.calls == checked + 1


def test_an_account_under_attack_gives_each_address_one_guess(app):
    add_admin(app)
    for i in range(10):
        assert attempt(app, f"wrong {i}", f"198.51.100.{i}") == 401
    # The account is over its limit: an address that failed is refused, a fresh one checked.
    assert attempt(app, "wrong again", "198.51.100.3") == 429
    assert attempt(app, "wrong again", "198.51.100.77") == 401
    assert attempt(app, PASSWORD, "198.51.100.78") == 303


def test_ipv6_addresses_count_by_their_64(app, hasher):
    add_admin(app)
    for i in range(10):
        assert attempt(app, "wrong", f"2001:db8:1:2::{i + 1:x}") == 401
    checked = hasher.calls
    assert attempt(app, PASSWORD, "2001:db8:1:2:ffff::1") == 429  # the same /64
    assert hasher.calls == checked
    assert attempt(app, PASSWORD, "2001:db8:1:3::1") == 303  # another one


def test_a_flood_from_many_addresses_leaves_only_known_browsers_checked(tmp_path, hasher):
    app = make_app(tmp_path / "flood", ADMIN_LOGIN_LIMIT_ALL="5 per minute")
    add_admin(app)
    known = app.test_client()
    assert attempt(app, PASSWORD, "192.0.2.1", client=known) == 303  # the admin's browser
    for i in range(5):  # made-up accounts from rotating addresses
        assert attempt(app, "guess", f"198.51.100.{i}", f"bot{i}@example.org") == 401
    checked = hasher.calls
    for i in range(20):
        assert attempt(app, "guess", f"203.0.113.{i}", f"bot{i}@example.org") == 429
    assert attempt(app, PASSWORD, "192.0.2.50") == 429  # a browser never seen: not checked
    assert hasher.calls == checked
    assert attempt(app, PASSWORD, "192.0.2.51", client=known) == 303


def test_a_forged_device_cookie_is_worth_nothing(tmp_path):
    app = make_app(tmp_path / "flood", ADMIN_LOGIN_LIMIT_ALL="2 per minute")
    add_admin(app)
    other = make_app(tmp_path / "other", SECRET_KEY="another server's key")
    add_admin(other)
    elsewhere = other.test_client()
    assert attempt(other, PASSWORD, "192.0.2.1", client=elsewhere) == 303
    for i in range(2):
        attempt(app, "guess", f"198.51.100.{i}", f"bot{i}@example.org")
    forged = app.test_client()
    forged.set_cookie("pbem_admin_device", elsewhere.get_cookie(
        "pbem_admin_device", path="/admin/login").value, path="/admin/login")
    assert attempt(app, PASSWORD, "192.0.2.2", client=forged) == 429


@pytest.mark.only_sqlite
def test_no_password_is_hashed_while_the_write_lock_is_held(app, monkeypatch):
    """Each hash and check happens while another connection can begin a write at once."""
    add_admin(app)
    path = app.config["DATABASE_URL"].split("///", 1)[1]
    seen = []

    class Probe(CountingHasher):
        def _probe(self):
            other = sqlite3.connect(path, timeout=0, isolation_level=None)
            try:
                other.execute("BEGIN IMMEDIATE")
                other.execute("ROLLBACK")
                seen.append("free")
            except sqlite3.OperationalError as exc:
                seen.append(str(exc))
            finally:
                other.close()

        def hash(self, *args, **kwargs):
            self._probe()
            return super().hash(*args, **kwargs)

        def verify(self, *args, **kwargs):
            self._probe()
            return super().verify(*args, **kwargs)

    probe = Probe(stewardship.password_hasher)
    monkeypatch.setattr(stewardship, "password_hasher", lambda: probe)
    assert attempt(app, "wrong", "192.0.2.1") == 401
    assert attempt(app, "wrong", "192.0.2.1", "nobody@example.org") == 401
    assert attempt(app, PASSWORD, "192.0.2.2") == 303
    assert seen == ["free"] * 3


# --- issue 34, 5: huge numbers in forms and queries ---------------------------------------------

HUGE = [str(2**31), str(2**31 - 1), str(2**63), str(2**64 + 1), "9" * 30]


@pytest.fixture
def admin(app):
    add_admin(app)
    client = app.test_client()
    assert login(client).status_code == 303
    return client


@pytest.mark.parametrize("number", HUGE)
def test_a_huge_seat_number_in_the_admin_forms_is_a_clear_4xx(app, admin, number):
    new_game(app)
    before = everything(app)
    token = csrf_of(admin, "/admin/games/1")
    for action in ("resend", "new_link", "email", "hand_over", "revoke_games", "bot"):
        form = {"csrf_token": token, "action": action, "seat": number, "reason": "test",
                "email": "x@example.org", "name": "X", "bot": "random"}
        done = admin.post("/admin/games/1/do", data=form)
        assert done.status_code == 400, (action, done.status_code)
        assert "choose a seat from the list" in done.get_data(as_text=True).lower(), action
        confirmed = admin.post("/admin/games/1/confirm", data=form)
        assert confirmed.status_code == 422, action
        assert "Choose an action (and a seat)" in confirmed.get_data(as_text=True)
    assert everything(app) == before


@pytest.mark.parametrize("number", HUGE + [str(2**31 + 7)])
def test_a_huge_before_on_the_mailbox_page_shows_the_newest_mail(app, number):
    new_game(app)
    Mailbox(app).deliver()
    client = app.test_client()
    newest = client.get("/mailbox/").get_data(as_text=True)
    response = client.get(f"/mailbox/?before={number}")
    assert response.status_code == 200
    assert response.get_data(as_text=True).count("<tr") == newest.count("<tr") > 1


@pytest.mark.parametrize("number", HUGE)
def test_a_huge_game_number_on_the_my_games_page_is_a_clear_4xx(app, number):
    new_game(app)
    key = _games_token(Mailbox(app), "p0@example.org")
    client = app.test_client()
    page = client.get(f"/me/{key}").get_data(as_text=True)
    response = client.post(f"/me/{key}/open", data={"csrf_token": field(page, "csrf_token"),
                                                     "game": number})
    assert 400 <= response.status_code < 500
    assert "Choose a game from the list" in response.get_data(as_text=True)


# --- issue 34, 7: pages reached by a secret link are never cached -------------------------------

def test_every_page_reached_by_a_secret_link_forbids_caching(tmp_path):
    app = make_app(tmp_path / "open", GAMES_OPEN_CREATION=True)
    client = app.test_client()
    box, manage = proposed(app, client)
    invite = link_in(box, "bruno@example.org", INVITE)
    _, tokens = new_game(app, seed="2")
    key = _games_token(box, "p0@example.org")
    for path in (f"/me/{key}", f"/invite/{invite}", f"/new/game/{manage}",
                 f"/seat/{tokens[0]}", f"/seat/{tokens[0]}/history",
                 f"/invite/{'x' * 32}", f"/new/game/{'y' * 32}", f"/me/{'z' * 32}"):
        response = client.get(path)
        assert response.headers["Cache-Control"] == "no-store", path
    assert client.get(f"/invite/{invite}").status_code == 200
    assert client.get(f"/me/{key}").status_code == 200


# --- issue 34, 8: the compiled catalogs are the server's user's only ----------------------------

def test_the_instance_translations_are_0700_and_0600_whatever_the_umask(tmp_path):
    from pbem import create_app

    instance = tmp_path / "fresh"
    with umask(0):
        create_app({"INSTANCE_PATH": str(instance), "SECRET_KEY": "x", "TESTING": True,
                    "DATABASE_URL": f"sqlite:///{tmp_path / 'x.sqlite3'}"})
    folders = [instance / "translations", *sorted((instance / "translations").glob("*")),
               *sorted((instance / "translations").glob("*/LC_MESSAGES"))]
    files = sorted((instance / "translations").rglob("*.mo"))
    assert len(folders) == 1 + 2 * 2 and len(files) == 2  # de, es
    assert {mode(f) for f in folders} == {0o700}
    assert {mode(f) for f in files} == {0o600}


def test_an_older_servers_open_translations_are_closed(tmp_path):
    from pbem.ground.i18n import compile_catalogs

    target = tmp_path / "translations"
    compile_catalogs(target)
    for path in [target, *target.rglob("*")]:
        path.chmod(0o777 if path.is_dir() else 0o666)
    compile_catalogs(target)
    assert {mode(p) for p in [target, *target.rglob("*")] if p.is_dir()} == {0o700}
    assert {mode(p) for p in target.rglob("*.mo")} == {0o600}


# --- issue 34, 14: the admin session ends 12 hours after the login ------------------------------

def _aged(client, hours: float) -> None:
    with client.session_transaction() as session:
        session["admin_login_at"] -= int(hours * 3600)


def test_an_eleven_hour_old_session_used_once_still_ends_twelve_hours_after_the_login(app,
                                                                                     admin):
    _aged(admin, 11)
    assert admin.get("/admin/").status_code == 200  # used at 11 hours: still in
    _aged(admin, 1 + 1 / 60)  # 12 hours and a minute after the login
    response = admin.get("/admin/")
    assert response.status_code == 303 and "/admin/login" in response.headers["Location"]
    with admin.session_transaction() as session:
        assert "admin_id" not in session


def test_a_session_without_its_login_time_is_logged_out(app, admin):
    with admin.session_transaction() as session:
        del session["admin_login_at"]
    assert admin.get("/admin/").status_code == 303


def test_the_cookie_of_a_used_session_expires_with_the_login_not_later(app, admin):
    _aged(admin, 11)
    with admin.session_transaction() as session:
        logged_in = session["admin_login_at"]
    response = admin.get("/admin/")
    cookie = next(v for v in response.headers.getlist("Set-Cookie") if v.startswith("session="))
    from email.utils import parsedate_to_datetime

    expires = parsedate_to_datetime(next(part.split("=", 1)[1] for part in cookie.split("; ")
                                         if part.lower().startswith("expires=")))
    assert abs(expires.timestamp() - (logged_in + 12 * 3600)) < 5
