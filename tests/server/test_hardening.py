"""Defects found by attacking a running server (issue 19), one test or more each: admin session
lifetime, huge ids in addresses, caching of admin pages and HSTS, line separators in names and
titles, and the permissions of the files the server creates.

The multi-process ones (login limit across gunicorn workers, a sender killed mid-batch, the
scheduler stopped with SIGTERM, `pbem serve` killed) are in tests/processes/test_hardening_processes.py.
"""

from __future__ import annotations

import stat
from datetime import UTC, datetime, timedelta
from email.utils import getaddresses, parsedate_to_datetime
from pathlib import Path

import pytest
from server import game_state, make_app, new_game, play_moves
from sqlmodel import select
from test_admin import add_admin, csrf_of, login

from pbem.games import SetupProblem
from pbem.ground.db import reading, writing
from pbem.ground.models import FAILED, Game, OutboxMessage, Seat
from pbem.services import stewardship
from pbem.services.players import check_title, parse_player

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL


@pytest.fixture
def admin(app, client):
    add_admin(app)
    assert login(client).status_code == 303
    return client


def _cookie_expiry(response) -> datetime:
    cookie = next(v for v in response.headers.getlist("Set-Cookie") if v.startswith("session="))
    expires = next(part.split("=", 1)[1] for part in cookie.split("; ")
                   if part.lower().startswith("expires="))
    return parsedate_to_datetime(expires)


# --- 4: the admin session lasts 12 hours ----------------------------------------------------------

def test_an_admin_session_cookie_lasts_twelve_hours_not_a_month(app, client):
    add_admin(app)
    response = login(client)
    assert response.status_code == 303
    left = _cookie_expiry(response) - datetime.now(UTC)
    assert timedelta(hours=11, minutes=58) < left <= timedelta(hours=12, minutes=1)


def test_the_admin_session_length_is_a_setting(tmp_path):
    app = make_app(tmp_path / "instance", ADMIN_SESSION_HOURS=2)
    add_admin(app)
    left = _cookie_expiry(login(app.test_client())) - datetime.now(UTC)
    assert timedelta(hours=1, minutes=58) < left <= timedelta(hours=2, minutes=1)


# --- 7: huge ids in addresses ---------------------------------------------------------------------

HUGE = "9" * 30


@pytest.mark.parametrize("number", [HUGE, str(2**63), str(2**64 + 5)])
def test_a_huge_game_id_is_a_404_page_not_a_server_error(app, admin, number):
    response = admin.get(f"/admin/games/{number}")
    assert response.status_code == 404
    assert "There is nothing here" in response.get_data(as_text=True)
    token = csrf_of(admin, "/admin/outbox")
    for path in (f"/admin/outbox/{number}/retry", f"/admin/games/{number}/confirm",
                 f"/admin/games/{number}/do"):
        assert admin.post(path, data={"csrf_token": token}).status_code == 404, path


def test_the_largest_id_the_database_holds_is_still_looked_up(app, admin):
    response = admin.get(f"/admin/games/{2**63 - 1}")
    assert response.status_code == 404
    assert f"There is no game {2**63 - 1}" in response.get_data(as_text=True)


# --- 11: admin pages are never cached; HSTS with https --------------------------------------------

def test_every_admin_answer_forbids_caching(app, admin):
    new_game(app)
    for path in ("/admin/", "/admin/games/1", "/admin/outbox", "/admin/audit",
                 "/admin/games/new"):
        response = admin.get(path)
        assert response.status_code == 200, path
        assert response.headers["Cache-Control"] == "no-store", path
    logged_out = app.test_client()
    assert logged_out.get("/admin/login").headers["Cache-Control"] == "no-store"


def test_https_base_url_adds_hsts_and_http_does_not(tmp_path, app, client):
    assert "Strict-Transport-Security" not in client.get("/admin/login").headers
    secure = make_app(tmp_path / "secure", BASE_URL="https://pbem.example.org")
    for path in ("/admin/login", "/health"):
        value = secure.test_client().get(path).headers["Strict-Transport-Security"]
        assert value.startswith("max-age=31536000")


# --- 6: line separators and control characters in names and titles ------------------------------

SEPARATORS = ["\u2028", "\u2029", "\u0085", "\x1b", "\x7f", "\u202e", "\n", "\r"]


@pytest.mark.parametrize("bad", SEPARATORS)
def test_a_name_with_a_separator_or_control_is_refused(bad):
    with pytest.raises(SetupProblem, match="separator|control"):
        parse_player(f"Eve{bad}Bcc: x <eve@example.org>")
    with pytest.raises(SetupProblem, match="separator|control"):
        check_title(f"Club{bad}night")


def test_player_text_is_read_exactly_or_refused():
    assert parse_player('  "Anna B." <anna@example.org> ') == parse_player(
        "Anna B. <anna@example.org>")
    assert parse_player("Zoë \u200d <zoe@example.org>").name == "Zoë \u200d"
    for text in ("Eve\u2028Bcc: x <x@example.org>", "Eve <eve@example.org> Bcc: x",
                 "Eve, <a@example.org> <b@example.org>", "eve@example.org", "Eve"):
        with pytest.raises(SetupProblem):
            parse_player(text)


def test_the_cli_refuses_a_player_with_a_line_separator_and_creates_nothing(app, runner):
    players = ["--player", "Eve\u2028Bcc: x <x@example.org>", "--player",
               "Bruno <bruno@example.org>", "--player", "Chiara <chiara@example.org>"]
    result = runner.invoke(args=["create-game", *players])
    assert result.exit_code != 0
    assert "line or paragraph separator (U+2028)" in result.stderr
    with reading(app) as db:
        assert db.exec(select(Game)).all() == []


def test_the_admin_form_refuses_such_a_name_and_title(app, admin):
    form = {"csrf_token": csrf_of(admin, "/admin/games/new"), "name0": "Eve\u2029x",
            "email0": "eve@example.org", "colour0": "yellow", "name1": "Bruno",
            "email1": "bruno@example.org", "colour1": "red", "name2": "Chiara",
            "email2": "chiara@example.org", "colour2": "green", "start": "random",
            "deadline_hours": "72", "reminders": "24", "timezone": "UTC",
            "title": "Club\u0085night"}
    response = admin.post("/admin/games/new", data=form)
    assert response.status_code == 422
    page = response.get_data(as_text=True)
    assert "U+2029" in page and "U+0085" in page
    with reading(app) as db:
        assert db.exec(select(Game)).all() == []


def test_a_name_stored_before_the_check_does_not_make_mail_fail(app, mailbox):
    """A seat named with U+2028 (from before names were checked): every mail still goes."""
    _, tokens = new_game(app, 3, "sep")
    with app.app_context(), writing() as db:
        seat = db.exec(select(Seat).where(Seat.number == 1)).one()
        seat.name = "Eve\u2028Bcc: evil@example.org"
        db.add(seat)
    play_moves(app, tokens, 6)
    mailbox.deliver()
    with reading(app) as db:
        rows = db.exec(select(OutboxMessage)).all()
    assert rows and not [r for r in rows if r.status == FAILED]
    for message in mailbox.messages():  # the name is a quoted display name, not a header
        assert message["Bcc"] is None
        assert next(a for _, a in getaddresses([str(message["To"])])).endswith("@example.org")
        assert "evil" not in next(a for _, a in getaddresses([str(message["To"])]))


# --- 12: files the server creates are private -----------------------------------------------------

def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.only_sqlite  # the database file
def test_the_database_mail_and_secret_are_readable_by_the_owner_only(tmp_path):
    instance = tmp_path / "fresh" / "instance"
    # The app makes the folder and the file here (not the tests' copy of a migrated template).
    app = make_app(instance, SECRET_KEY="", DATABASE_URL=f"sqlite:///{instance / 'pbem.sqlite3'}")
    from server import Mailbox

    new_game(app, 3, "modes")
    Mailbox(app).messages()
    assert mode(instance) == 0o700
    for name in ("pbem.sqlite3", "pbem.sqlite3-wal", "pbem.sqlite3-shm", "secret_key"):
        assert mode(instance / name) == 0o600, name
    folder = instance / "mail"
    assert mode(folder) == 0o700
    emls = list(folder.glob("*.eml"))
    assert emls and {mode(p) for p in emls} == {0o600}


# --- 5: a mail server that answers after the timeout: "unknown", never sent twice by itself ----

class SlowAfterData:
    """An aiosmtpd handler that takes each message and then answers `delay` seconds late, for
    the next `slow` messages: the client gives up first, and its leaving ends the wait
    (aiosmtpd cancels the handler when the connection is lost)."""

    def __init__(self, delay: float, slow: int):
        self.delay, self.slow = delay, slow
        self.message_ids: list[str] = []

    async def handle_DATA(self, server, session, envelope):
        import asyncio
        from email import message_from_bytes

        self.message_ids.append(message_from_bytes(envelope.content)["Message-ID"])
        if self.slow > 0:
            self.slow -= 1
            await asyncio.sleep(self.delay)
        return "250 2.0.0 Accepted"


@pytest.fixture
def slow_smtp():
    from aiosmtpd.controller import Controller
    from test_mail_delivery import free_port

    handler = SlowAfterData(delay=600, slow=1)
    controller = Controller(handler, hostname="127.0.0.1", port=free_port(), ready_timeout=60)
    controller.start()
    yield handler, controller.port
    controller.stop()


def test_a_timeout_after_data_leaves_the_mail_unknown_and_it_is_not_sent_twice(
        tmp_path, slow_smtp):
    from pbem.scheduler.outbox import deliver_all_due

    handler, port = slow_smtp
    app = make_app(tmp_path / "instance", MAIL_BACKEND="smtp", SMTP_HOST="127.0.0.1",
                   SMTP_PORT=port, SMTP_SECURITY="none", SMTP_TIMEOUT_SECONDS=5)
    new_game(app, 3, "slow")
    now = datetime.now(UTC)
    first = deliver_all_due(app, now)
    assert first["unknown"] == 1 and first["sent"] == 0
    for hours in (1, 24, 24 * 7):  # the other two are retried; the unknown one is not
        deliver_all_due(app, now + timedelta(hours=hours))
    with reading(app) as db:
        rows = db.exec(select(OutboxMessage).order_by(OutboxMessage.id)).all()
    assert [r.status for r in rows] == ["unknown", "sent", "sent"]
    assert "may or may not have arrived" in rows[0].last_error
    assert sorted(handler.message_ids) == sorted(r.message_id for r in rows), "each once"

    # The admins see it, and may send it again: with the same Message-ID.
    result = app.test_cli_runner().invoke(args=["mail-status"])
    assert "unknown 1" in result.output and f"unknown #{rows[0].id}" in result.output
    with app.app_context():
        stewardship.retry_mail(None, rows[0].id, "the player did not get it")
    deliver_all_due(app, now + timedelta(days=8))
    assert handler.message_ids.count(rows[0].message_id) == 2


# --- 8: no backscatter: a replaced key is answered only to the seat, a few times a day --------

def test_answers_to_a_replaced_key_are_limited_per_day(tmp_path):
    from test_mail_replies import DOMAIN, fill, ingest, reply_key, start, text_of

    from pbem.mailin.inbox import REVOKED_ANSWERS_PER_DAY
    from pbem.services.stewardship import create_admin, new_link

    app = make_app(tmp_path / "instance", MAIL_REPLY_DOMAIN=DOMAIN)
    box, invitation, orders = start(app)
    with app.app_context():
        new_link(create_admin("admin@example.org", "a long enough password 42"), 1, 0, "lost")
    handled = [ingest(app, fill("thunderbird_plain.eml", reply_key(invitation), orders,
                                text_of(invitation))) for _ in range(REVOKED_ANSWERS_PER_DAY + 4)]
    assert {h.outcome for h in handled} == {"revoked"}
    assert [h.detail.endswith("not answered") for h in handled] == \
        [False] * REVOKED_ANSWERS_PER_DAY + [True] * 4
    box.deliver()
    with reading(app) as db:
        answers = db.exec(select(OutboxMessage).where(OutboxMessage.kind == "revoked")).all()
    assert len(answers) == REVOKED_ANSWERS_PER_DAY
    assert {a.status for a in answers} == {"sent"}
    assert {a.to_addr for a in answers} == {"Player 0 <p0@example.org>"}


# --- 9: a short seed cannot be found from a seat's cards --------------------------------------

def test_a_chosen_seed_is_mixed_with_the_secret_key_and_the_stored_seed_replays(tmp_path):
    import engine

    app = make_app(tmp_path / "instance", GAMES_SECRET_SEEDS=True)
    created, tokens = new_game(app, 3, "48213", start=0)
    game, state = game_state(app, created.game_id)
    # A player who tries seeds until one deals their hand does not find 48213.
    plain = engine.new_game(state.players, "48213", start=0)
    assert game.seed != "48213" and len(game.seed) == 32
    assert plain.hands[0] != state.hands[0] or plain.deck != state.deck
    # The stored seed alone rebuilds the game, before and after moves.
    assert engine.new_game(state.players, game.seed, start=0) == state
    play_moves(app, tokens, 5)
    game, now = game_state(app, created.game_id)
    with reading(app) as db:
        from pbem.ground.models import MoveRecord

        notations = [r.notation for r in db.exec(select(MoveRecord).order_by(MoveRecord.number))]
    assert engine.replay(now.players, game.seed, notations, now.board, now.start) == now

    # The same seed deals the same cards on this server, other cards under another key.
    again, _ = new_game(app, 3, "48213", start=0)
    assert game_state(app, again.game_id)[1].hands == state.hands
    other = make_app(tmp_path / "other", GAMES_SECRET_SEEDS=True, SECRET_KEY="another key")
    elsewhere, _ = new_game(other, 3, "48213", start=0)
    assert game_state(other, elsewhere.game_id)[1].hands != state.hands


def test_games_dealt_from_a_plain_seed_before_keep_replaying_identically(tmp_path):
    """A game from before the change (its stored seed the chosen one) still rebuilds from it,
    e.g. when a move is taken back after the server was upgraded."""
    import engine

    instance = tmp_path / "instance"
    before = make_app(instance, GAMES_SECRET_SEEDS=False)
    created, tokens = new_game(before, 3, "48213", start=0)
    play_moves(before, tokens, 4)
    game, state = game_state(before, created.game_id)
    assert game.seed == "48213"

    after = make_app(instance, GAMES_SECRET_SEEDS=True)  # the upgraded server, same database
    with after.app_context():
        admin = stewardship.create_admin("admin@example.org", "a long enough password 42")
        stewardship.take_back(admin, created.game_id, "a slip")
    game, taken_back = game_state(after, created.game_id)
    with reading(after) as db:
        from pbem.ground.models import MoveRecord

        notations = [r.notation for r in db.exec(select(MoveRecord).order_by(MoveRecord.number))]
    assert 0 < len(notations) < 4 and game.seed == "48213"  # the last turn was taken back
    assert taken_back == engine.replay(state.players, "48213", notations, state.board, 0)


def test_the_form_and_the_cli_say_how_the_seed_is_used(tmp_path):
    app = make_app(tmp_path / "instance", GAMES_SECRET_SEEDS=True)
    add_admin(app)
    client = app.test_client()
    login(client)
    page = " ".join(client.get("/admin/games/new").get_data(as_text=True).split())
    assert "mixed with this server's secret key" in page
    help_text = " ".join(app.test_cli_runner().invoke(args=["create-game", "--help"])
                         .output.split())
    assert "mixed with this server's secret key" in help_text


# --- synchronous: FULL on request -----------------------------------------------------------------

@pytest.mark.only_sqlite  # a setting of SQLite's
@pytest.mark.parametrize(("setting", "pragma"), [(None, 1), ("normal", 1), ("full", 2)])
def test_sqlite_synchronous_is_a_setting(tmp_path, setting, pragma):
    from sqlalchemy import text

    from pbem.ground.db import get_engine

    config = {} if setting is None else {"SQLITE_SYNCHRONOUS": setting}
    app = make_app(tmp_path / "instance", **config)
    with get_engine(app).connect() as connection:
        assert connection.execute(text("PRAGMA synchronous")).scalar() == pragma
        assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"


def test_a_wrong_synchronous_value_is_refused_by_name(tmp_path):
    from pbem import ConfigError

    with pytest.raises(ConfigError, match="SQLITE_SYNCHRONOUS .* must be one of normal, full"):
        make_app(tmp_path / "instance", SQLITE_SYNCHRONOUS="off")


# --- 12: superseded seat links expire after a documented time ---------------------------------

def _keys_of(app, seat_number: int = 0):
    from pbem.ground.models import SeatKey

    with reading(app) as db:
        return db.exec(select(SeatKey).join(Seat, Seat.id == SeatKey.seat_id)
                       .where(Seat.number == seat_number).order_by(SeatKey.id)).all()


def _age_keys(app, days: float, seat_number: int = 0, skip_first: bool = True) -> None:
    """Make the seat's keys (but its first) look `days` older."""
    from pbem.ground.models import SeatKey

    with writing(app) as db:
        for key in _keys_of(app, seat_number)[1 if skip_first else 0:]:
            row = db.get(SeatKey, key.id)
            row.created_at = row.created_at - timedelta(days=days)
            db.add(row)


def test_a_superseded_link_expires_after_the_set_days_and_the_newest_always_works(app, client,
                                                                                   mailbox):
    from server import token_in

    _, tokens = new_game(app, 3, "expiry", start=0)
    play_moves(app, tokens, 8)  # every player gets mail: newer keys
    newest = token_in(mailbox.to("p0@example.org")[-1])
    assert len(_keys_of(app)) > 2 and newest != tokens[0]
    assert client.get(f"/seat/{tokens[0]}").status_code == 200  # superseded just now: works

    _age_keys(app, 8)  # the newer links were mailed eight days ago
    response = client.get(f"/seat/{tokens[0]}")
    assert response.status_code == 410
    page = " ".join(response.get_data(as_text=True).split())
    assert "This link has expired" in page and "more than 7 days ago" in page
    assert "newest mail" in page and "My games" in page and "organiser" in page
    assert client.get(f"/api/v1/seat/{tokens[0]}").status_code == 410
    assert client.get(f"/seat/{newest}").status_code == 200
    _age_keys(app, 365, skip_first=False)  # the newest link never expires, however old
    assert client.get(f"/seat/{newest}").status_code == 200
    assert client.get("/seat/" + "A" * 32).status_code == 404  # unknown stays unknown


def test_the_expiry_is_a_setting(tmp_path):
    app = make_app(tmp_path / "instance", GAMES_OLD_LINK_DAYS=30)
    _, tokens = new_game(app, 3, "expiry", start=0)
    play_moves(app, tokens, 4)
    _age_keys(app, 8)
    client = app.test_client()
    assert client.get(f"/seat/{tokens[0]}").status_code == 200
    _age_keys(app, 23)
    assert client.get(f"/seat/{tokens[0]}").status_code == 410
