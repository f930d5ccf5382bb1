"""Issue 45: turn notices in chat apps and push services, against real receivers on this
machine: a local HTTP server records what arrives in the shape each service documents (ntfy,
JSON webhooks, Discord, Slack, Matrix), with the test's allow-list of 127.0.0.1; the refusal
of private addresses checked on real resolutions (`localhost` is refused without the
allow-list); a dead target; the real `pbem scheduler` delivering "your move" in the player's
language, and killed in the middle of a delivery."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from server import field, make_app, token_in
from sqlmodel import select

from pbem.games import rules_for
from pbem.ground import chat, i18n
from pbem.ground.db import reading, utcnow, writing
from pbem.ground.models import (
    FAILED,
    QUEUED,
    SENT,
    Game,
    MoveRecord,
    Notice,
    NoticeTarget,
    Seat,
)
from pbem.scheduler.notices import deliver_notices
from pbem.services import notices
from pbem.services.creating import create_game
from pbem.services.errors import NotFound
from pbem.services.moves import submit_move
from pbem.services.players import parse_player

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parent.parent.parent
WAIT = 60  # seconds for an event the test waits for; a hang fails the test instead
ANNA, BRUNO, CHIARA = "Anna <anna@example.org>", "Bruno <b@example.org>", "Chiara <c@example.org>"


class Receiver:
    """A local HTTP server recording every request (path, headers, JSON or raw body) and
    answering as the services do: 200 with `{}`, or `status` for paths under /fail. A path
    under /hold is recorded and then held unanswered until `release`."""

    def __init__(self):
        self.requests: list[dict] = []
        self.arrived = threading.Condition()
        self.released = threading.Event()
        self.status = 200
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                with receiver.arrived:
                    receiver.requests.append({"path": self.path, "body": body,
                                              "headers": dict(self.headers)})
                    receiver.arrived.notify_all()
                if self.path.startswith("/hold"):
                    receiver.released.wait(WAIT)
                code = receiver.status if self.path.startswith("/fail") else 200
                self.send_response(code)
                if self.path.startswith("/big"):  # an answer no service gives: 4 MiB
                    self.send_response(200)
                    self.send_header("Content-Length", str(4 << 20))
                    self.end_headers()
                    try:
                        for _ in range(64):
                            self.wfile.write(b"x" * (64 << 10))
                    except ConnectionError:  # the client stopped reading, as it should
                        pass
                    return
                slack = self.path.startswith("/slack")  # Slack's webhook answers "ok"
                self.send_header("Content-Type", "text/plain" if slack else "application/json")
                self.end_headers()
                self.wfile.write(b"ok" if slack else b"{}")

            do_PUT = do_POST

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, count: int, path: str = "") -> list[dict]:
        """The requests to `path`... once there are `count` of them (fails after WAIT)."""
        with self.arrived:
            assert self.arrived.wait_for(lambda: len(self.to(path)) >= count, WAIT), \
                f"{count} request(s) to {path!r} never came: {self.requests}"
            return self.to(path)

    def to(self, path: str) -> list[dict]:
        return [r for r in self.requests if r["path"].startswith(path)]

    def close(self):
        self.released.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def receiver():
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def mailbox_of():
    from server import Mailbox

    return Mailbox


@pytest.fixture
def receiver_fresh(receiver):
    receiver.requests.clear()
    receiver.status = 200
    receiver.released.clear()
    return receiver


def _app(tmp_path, **config):
    return make_app(tmp_path / "instance", NOTIFY_ALLOW_HOSTS="127.0.0.1",
                    NOTIFY_TIMEOUT_SECONDS=2, NOTIFY_RETRY_SECONDS=1, MAIL_BOARD_PICTURE=False,
                    **config)


def _game(app, names, seed="n"):
    with app.app_context():
        created = create_game([parse_player(n) for n in names], seed, start=0, title="Cup")
    return created.game_id, [link.rsplit("/", 1)[1] for _, _, link in created.links]


def _games_token(app, email: str) -> str:
    with app.app_context():
        from pbem.services.mail import mint_player_key

        with writing() as session:
            return mint_player_key(session, email)


def _end_turn(app, game_id: int, tokens: list[str]) -> int:
    """Play the seat to move's default moves until another seat is to move; returns it."""
    with app.app_context():
        while True:
            with reading() as session:
                game = session.get(Game, game_id)
            rules = rules_for(game.kind)
            state = rules.loads(game.state_json)
            seat = rules.to_move(state)
            submit_move(tokens[seat], rules.default_move(state), game.turn)
            with reading() as session:
                game = session.get(Game, game_id)
            after = rules.to_move(rules.loads(game.state_json))
            if after != seat:
                return after


def _add(client, token: str, url: str, kinds=("turn", "reminder")):
    page = client.get(f"/me/{token}/profile").get_data(as_text=True)
    return client.post(f"/me/{token}/notices", data={
        "csrf_token": field(page, "csrf_token"), "url": url, "kinds": list(kinds)})


def _notices(app, *where) -> list[Notice]:
    with reading(app) as session:
        return list(session.exec(select(Notice).where(*where).order_by(Notice.id)))


# --- what is accepted ----------------------------------------------------------------------------

@pytest.mark.parametrize("url, says", [
    ("", "Paste the address"),
    ("file:///etc/passwd", "not one the server can send to"),
    ("https://example.org/a page", "not one the server can send to"),
    ("mailto://user:secret@example.org", "does not send to that kind of service"),
    ("not an address", "not one the server can send to"),
])
def test_an_address_the_server_will_not_send_to_is_refused_and_saves_nothing(
        tmp_path, url, says):
    app = _app(tmp_path)
    client = app.test_client()
    _game(app, [ANNA, BRUNO, CHIARA])
    token = _games_token(app, "anna@example.org")
    response = _add(client, token, url)
    assert response.status_code == 422
    assert says in response.get_data(as_text=True)
    with reading(app) as session:
        assert session.exec(select(NoticeTarget)).all() == []


def test_a_target_is_shown_by_scheme_and_host_only_never_whole(tmp_path, receiver_fresh):
    """The profile shows a Discord webhook as discord://discord.com and an ntfy topic's
    server by its host; the key and the topic never appear on the page."""
    app = _app(tmp_path)
    client = app.test_client()
    _game(app, [ANNA, BRUNO, CHIARA])
    token = _games_token(app, "anna@example.org")
    assert _add(client, token, "https://discord.com/api/webhooks/123456789/SeCrEtToKeN"
                ).status_code == 200
    assert _add(client, token, f"ntfy://127.0.0.1:{receiver_fresh.port}/anna-secret-topic"
                ).status_code == 200
    page = client.get(f"/me/{token}/profile").get_data(as_text=True)
    assert "discord://discord.com" in page and "ntfy://127.0.0.1" in page
    assert "SeCrEtToKeN" not in page and "anna-secret-topic" not in page
    assert "123456789" not in page


# --- where a request may go ----------------------------------------------------------------------

def test_a_name_resolving_to_this_machine_is_refused_unless_allow_listed(receiver_fresh):
    """`localhost` (resolved for real, to 127.0.0.1) is refused at connect time without the
    allow-list; 127.0.0.1 typed as an address too; on the list, the same request arrives."""
    schemes = ["ntfy", "json"]
    for url in (f"ntfy://localhost:{receiver_fresh.port}/t1",
                f"json://127.0.0.1:{receiver_fresh.port}/t2"):
        error = chat.send(url, "Your move", "Anna moved", allow_hosts=[], timeout=2,
                          schemes=schemes)
        assert error is not None and "refused" in error
        assert "127.0.0.1" in error
    assert receiver_fresh.requests == []
    assert chat.send(f"ntfy://localhost:{receiver_fresh.port}/t1", "Your move", "Anna moved",
                     allow_hosts=["localhost"], timeout=2, schemes=schemes) is None
    assert [r["path"] for r in receiver_fresh.requests] == ["/"]
    assert receiver_fresh.requests[0]["body"]["topic"] == "t1"


def test_an_answer_larger_than_the_limit_is_not_read_whole(receiver_fresh):
    error = chat.send(f"json://127.0.0.1:{receiver_fresh.port}/big", "Your move", "Anna moved",
                      allow_hosts=["127.0.0.1"], timeout=5, schemes=["json"])
    assert error == f"the service's answer was larger than {chat.MAX_ANSWER} bytes"


@pytest.mark.parametrize("address", ["127.0.0.1", "10.1.2.3", "192.168.0.1", "169.254.169.254",
                                     "::1", "fe80::1", "fc00::1", "::ffff:127.0.0.1",
                                     "100.64.0.1", "0.0.0.0", "224.0.0.1"])
def test_private_loopback_and_link_local_addresses_are_not_public(address):
    assert not chat.is_public(address)


def test_public_addresses_are_public():
    assert chat.is_public("93.184.216.34") and chat.is_public("2606:4700::1111")


# --- the shapes each service documents -----------------------------------------------------------

def test_each_service_gets_the_payload_it_documents(receiver_fresh, monkeypatch):
    """ntfy: JSON with topic, title and message; a JSON webhook: version, title, message;
    Discord's webhook (its fixed host pointed at the receiver through Apprise's own
    `notify_url`): its `content`; Slack's incoming webhook (through
    `webhook_url`): an attachment with title and text; Matrix through a webhook bridge
    (`mode=matrix`): its text."""
    port = receiver_fresh.port
    base = f"http://127.0.0.1:{port}"
    from apprise.plugins.discord import NotifyDiscord
    from apprise.plugins.slack import NotifySlack

    monkeypatch.setattr(NotifyDiscord, "notify_url", f"{base}/discord/api/webhooks")
    monkeypatch.setattr(NotifySlack, "webhook_url", f"{base}/slack/services")
    sent = {
        "ntfy": f"ntfy://127.0.0.1:{port}/anna-topic",
        "json": f"json://127.0.0.1:{port}/hook",
        "discord": "https://discord.com/api/webhooks/123456789/TokenPart",
        "slack": "https://hooks.slack.com/services/T1ABCDEFG/B1ABCDEFG/abcdefghijklmnopqrstuvwx",
        "matrix": f"matrix://hooktoken@127.0.0.1:{port}/?mode=matrix",
    }
    for name, url in sent.items():
        assert chat.send(url, "Your move in Cup #1", "Bruno moved; it is your move now.",
                         allow_hosts=["127.0.0.1"], timeout=2,
                         schemes=list(sent) + ["matrixs"]) is None, name
    ntfy = receiver_fresh.to("/")[0]["body"]
    assert (ntfy["topic"], ntfy["title"], ntfy["message"]) == (
        "anna-topic", "Your move in Cup #1", "Bruno moved; it is your move now.")
    hook = receiver_fresh.to("/hook")[0]["body"]
    assert (hook["title"], hook["message"]) == ("Your move in Cup #1",
                                                "Bruno moved; it is your move now.")
    discord = receiver_fresh.to("/discord/api/webhooks/123456789/TokenPart")[0]["body"]
    assert discord["content"].splitlines() == ["Your move in Cup #1",
                                               "Bruno moved; it is your move now."]
    slack = receiver_fresh.to("/slack/services/T1ABCDEFG/B1ABCDEFG/")[0]["body"]
    assert (slack["attachments"][0]["title"], slack["attachments"][0]["text"]) == (
        "Your move in Cup #1", "Bruno moved; it is your move now.")
    matrix = receiver_fresh.to("/api/v1/matrix/hook/hooktoken")[0]["body"]
    assert matrix["text"].splitlines() == ["Your move in Cup #1",
                                           "Bruno moved; it is your move now."]


# --- from a move to the receiver, through the outbox ---------------------------------------------

def test_your_move_reaches_the_players_target_in_their_language_with_the_seat_link_once(
        tmp_path, receiver_fresh):
    """Anna (German) adds an ntfy target on her profile; Bruno's turn ends: one notice, in
    German, with her seat's link (which works), sent once by two deliveries; once sent the
    stored copy no longer holds the link."""
    app = _app(tmp_path)
    client = app.test_client()
    game_id, tokens = _game(app, [BRUNO, ANNA, CHIARA])
    with writing(app) as session:
        session.get(Seat, 2).language = "de"  # Anna's seat (ids follow the seats)
    token = _games_token(app, "anna@example.org")
    assert _add(client, token, f"ntfy://127.0.0.1:{receiver_fresh.port}/anna").status_code == 200
    assert _end_turn(app, game_id, tokens) == 1
    assert deliver_notices(app)["notices_sent"] == 1
    assert deliver_notices(app)["notices_sent"] == 0
    (arrived,) = receiver_fresh.wait_for(1)
    assert arrived["body"]["title"] == f"Du bist am Zug in Cup #{game_id}"
    message = arrived["body"]["message"]
    assert message.startswith("Bruno hat gezogen")
    link = message.split()[-1]
    assert "/seat/" in link
    assert client.get(link.split("localhost", 1)[1]).status_code == 200
    (stored,) = _notices(app)
    assert stored.status == SENT and link not in stored.body


def test_a_target_that_keeps_failing_is_given_up_marked_dead_shown_and_revived_by_a_test(
        tmp_path, receiver_fresh):
    app = _app(tmp_path, NOTIFY_MAX_ATTEMPTS=2)
    client = app.test_client()
    game_id, tokens = _game(app, [BRUNO, ANNA, CHIARA])
    token = _games_token(app, "anna@example.org")
    receiver_fresh.status = 500
    assert _add(client, token, f"json://127.0.0.1:{receiver_fresh.port}/fail").status_code == 200
    _end_turn(app, game_id, tokens)
    now = utcnow()
    assert deliver_notices(app, now)["notices_retry"] == 1
    assert deliver_notices(app, now)["notices_retry"] == 0, "not before its retry is due"
    assert deliver_notices(app, now + timedelta(seconds=2))["notices_failed"] == 1
    (notice,) = _notices(app)
    assert notice.status == FAILED and notice.attempts == 2
    with reading(app) as session:
        target = session.exec(select(NoticeTarget)).one()
    assert target.dead_at is not None and "500" in target.dead_reason
    page = client.get(f"/me/{token}/profile").get_data(as_text=True)
    assert "Not reached" in page
    _end_turn(app, game_id, tokens)
    assert len(_notices(app)) == 1, "no notice is queued for a dead target"
    # The service is fixed: a test says so and makes the target live again.
    receiver_fresh.status = 200
    page = client.get(f"/me/{token}/profile").get_data(as_text=True)
    answer = client.post(f"/me/{token}/notices/{target.id}/test",
                         data={"csrf_token": field(page, "csrf_token")})
    assert answer.status_code == 200
    assert "the service took it" in answer.get_data(as_text=True)
    with reading(app) as session:
        assert session.exec(select(NoticeTarget)).one().dead_at is None


def test_send_a_test_says_why_a_private_address_got_nothing(tmp_path, receiver_fresh):
    """Without the allow-list the test to a target on this machine is refused, and the page
    says so; nothing arrives."""
    app = make_app(tmp_path / "instance", NOTIFY_TIMEOUT_SECONDS=2)
    client = app.test_client()
    _game(app, [ANNA, BRUNO, CHIARA])
    token = _games_token(app, "anna@example.org")
    assert _add(client, token, f"ntfy://localhost:{receiver_fresh.port}/x").status_code == 200
    with reading(app) as session:
        target_id = session.exec(select(NoticeTarget)).one().id
    page = client.get(f"/me/{token}/profile").get_data(as_text=True)
    answer = client.post(f"/me/{token}/notices/{target_id}/test",
                         data={"csrf_token": field(page, "csrf_token")})
    assert answer.status_code == 422
    assert "refused" in answer.get_data(as_text=True)
    assert receiver_fresh.requests == []


def test_a_target_over_its_hourly_limit_gets_the_rest_later(tmp_path, receiver_fresh):
    app = _app(tmp_path, NOTIFY_PER_HOUR=1)
    client = app.test_client()
    game_id, tokens = _game(app, [ANNA, BRUNO, CHIARA])
    token = _games_token(app, "anna@example.org")
    assert _add(client, token, f"json://127.0.0.1:{receiver_fresh.port}/rate",
                kinds=("turn", "timeout", "end")).status_code == 200
    for _ in range(6):  # twice round the table: her move twice
        _end_turn(app, game_id, tokens)
    assert len(_notices(app)) == 2
    now = utcnow()
    counts = deliver_notices(app, now)
    assert (counts["notices_sent"], counts["notices_waiting"]) == (1, 1)
    later = _notices(app, Notice.status == QUEUED)
    assert len(later) == 1 and later[0].next_attempt_at >= now + timedelta(minutes=59)
    assert deliver_notices(app, now + timedelta(hours=1, seconds=1))["notices_sent"] == 1


def test_notices_off_queue_nothing_and_the_profile_offers_none(tmp_path, receiver_fresh):
    app = _app(tmp_path, NOTIFY_ENABLED=False)
    client = app.test_client()
    game_id, tokens = _game(app, [BRUNO, ANNA, CHIARA])
    with writing(app) as session:
        session.add(NoticeTarget(email="anna@example.org", shown="ntfy://127.0.0.1",
                                 url=f"ntfy://127.0.0.1:{receiver_fresh.port}/x", kinds="turn"))
    token = _games_token(app, "anna@example.org")
    assert "Turn notices in chat apps" not in client.get(
        f"/me/{token}/profile").get_data(as_text=True)
    _end_turn(app, game_id, tokens)
    assert _notices(app) == []
    with pytest.raises(NotFound), app.app_context():
        notices.add(notices.PLAYER, token, "ntfys://topic", ["turn"])


def test_a_target_may_stand_in_for_the_reminder_mail(tmp_path, receiver_fresh, mailbox_of):
    """Anna's seat target takes the reminders instead of the reminder mail: at the reminder's
    time the chat gets it (with her seat's link) and no reminder mail goes; in a game where
    she chose nothing of the kind, the reminder mail goes as before. Choosing to drop the mail
    without taking the reminders is refused."""
    from pbem.ground.models import REMINDER, Timer
    from pbem.scheduler.jobs import run_jobs

    app = _app(tmp_path, SCHEDULER_OUTAGE_MINUTES=100000)
    client = app.test_client()
    quiet_id, quiet_tokens = _game(app, [ANNA, BRUNO, CHIARA], "quiet")
    loud_id, _ = _game(app, [ANNA, BRUNO, CHIARA], "loud")
    page = client.get(f"/seat/{quiet_tokens[0]}").get_data(as_text=True)
    url = f"json://127.0.0.1:{receiver_fresh.port}/quiet"
    refused = client.post(f"/seat/{quiet_tokens[0]}/notices", data={
        "csrf_token": field(page, "csrf_token"), "url": url, "kinds": ["turn", "quiet"]})
    assert refused.status_code == 400 and "stand in for the reminder mail" in \
        refused.get_data(as_text=True)
    assert client.post(f"/seat/{quiet_tokens[0]}/notices", data={
        "csrf_token": field(page, "csrf_token"), "url": url,
        "kinds": ["turn", "reminder", "quiet"]}).status_code == 303
    mailbox = mailbox_of(app)
    before = len(mailbox.to("anna@example.org"))
    with reading(app) as session:
        due = max(min(t.due_at for t in session.exec(select(Timer).where(
            Timer.kind == REMINDER, Timer.game_id == game_id))) for game_id in (quiet_id, loud_id))
    assert run_jobs(app, due)["reminders"] == 2
    reminded = [m for m in mailbox.to("anna@example.org")[before:]
                if "Reminder" in str(m["Subject"])]
    assert [f"#{loud_id}]" in str(m["Subject"]) for m in reminded] == [True]
    (arrived,) = receiver_fresh.wait_for(1, "/quiet")
    assert arrived["body"]["title"] == f"Reminder: your move in Cup #{quiet_id}"
    assert "/seat/" in arrived["body"]["message"]


def test_a_timeout_and_the_end_of_the_game_are_told_to_the_targets_that_take_them(
        tmp_path, receiver_fresh):
    """Anna's target takes timeouts and the game's end, not her moves: her deadline passes
    (the scheduler plays her turn), then the game is played to its end: two notices, in
    that order, neither with a link to her seat."""
    from pbem.ground.models import TIMEOUT, Timer
    from pbem.scheduler.jobs import run_jobs

    app = _app(tmp_path, SCHEDULER_OUTAGE_MINUTES=100000)
    game_id, tokens = _game(app, [ANNA, BRUNO, CHIARA], "end")
    with writing(app) as session:
        session.add(NoticeTarget(email="anna@example.org", shown="json://127.0.0.1",
                                 kinds="timeout,end",
                                 url=f"json://127.0.0.1:{receiver_fresh.port}/te"))
    with reading(app) as session:
        due = session.exec(select(Timer.due_at).where(Timer.kind == TIMEOUT,
                                                      Timer.game_id == game_id)).one()
    counts = run_jobs(app, due)
    assert (counts["timeouts"], counts["notices_sent"]) == (1, 1), "sent in the same run"
    with app.app_context():
        while True:
            with reading() as session:
                game = session.get(Game, game_id)
            rules = rules_for(game.kind)
            state = rules.loads(game.state_json)
            if rules.to_move(state) is None:
                break
            submit_move(tokens[rules.to_move(state)], rules.default_move(state), game.turn)
    assert deliver_notices(app)["notices_sent"] == 1
    titles = [r["body"]["title"] for r in receiver_fresh.wait_for(2, "/te")]
    assert titles == [f"Deadline passed in Cup #{game_id}", f"Cup #{game_id} is over"]
    assert not [r for r in receiver_fresh.to("/te") if "/seat/" in r["body"]["message"]]


def _admin(app):
    """A test client logged in as an organiser (an admin)."""
    from pbem.services import stewardship

    with app.app_context():
        stewardship.create_admin("boss@example.org", "a long enough password")
    client = app.test_client()
    page = client.get("/admin/login").get_data(as_text=True)
    assert client.post("/admin/login", data={
        "csrf_token": field(page, "csrf_token"), "email": "boss@example.org",
        "password": "a long enough password", "next": ""}).status_code == 303
    return client


def test_a_game_channel_gets_public_words_and_never_a_seat_link(tmp_path, receiver_fresh):
    """The organiser adds a channel on the game's admin page (in Spanish); a stranger cannot.
    The channel (read by every seat) gets "Bruno ha jugado; le toca a Anna" with the
    spectator link; Anna's own target gets her seat's link; neither gets the other's."""
    app = _app(tmp_path)
    game_id, tokens = _game(app, [BRUNO, ANNA, CHIARA])
    channel_url = f"json://127.0.0.1:{receiver_fresh.port}/channel"
    stranger = app.test_client()
    page = stranger.get("/admin/login").get_data(as_text=True)
    assert stranger.post(f"/admin/games/{game_id}/notices", data={
        "csrf_token": field(page, "csrf_token"), "url": channel_url,
        "kinds": ["public", "end"], "language": "es"}).status_code == 401
    admin = _admin(app)
    page = admin.get(f"/admin/games/{game_id}").get_data(as_text=True)
    refused = admin.post(f"/admin/games/{game_id}/notices", data={
        "csrf_token": field(page, "csrf_token"), "url": channel_url, "kinds": ["turn"],
        "language": "es"})
    assert refused.status_code == 400 and "Choose at least one kind" in refused.get_data(
        as_text=True), "a channel never gets a seat's notices"
    added = admin.post(f"/admin/games/{game_id}/notices", data={
        "csrf_token": field(page, "csrf_token"), "url": channel_url,
        "kinds": ["public", "end"], "language": "es"})
    assert added.status_code == 303
    assert "json://127.0.0.1" in admin.get(added.headers["Location"]).get_data(as_text=True)
    with writing(app) as session:
        session.add(NoticeTarget(email="anna@example.org", shown="json://127.0.0.1",
                                 kinds="turn", url=f"json://127.0.0.1:{receiver_fresh.port}/anna"))
    _end_turn(app, game_id, tokens)
    assert deliver_notices(app)["notices_sent"] == 2
    (channel,) = receiver_fresh.wait_for(1, "/channel")
    (own,) = receiver_fresh.wait_for(1, "/anna")
    print("receiver's record:", json.dumps([channel["body"], own["body"]], ensure_ascii=False))
    assert "Bruno ha jugado; le toca a Anna" in channel["body"]["message"]
    # The turn as the spectator page's log tells it, in the channel's language, before that.
    with reading(app) as session:
        records = session.exec(select(MoveRecord).where(MoveRecord.game_id == game_id)
                               .order_by(MoveRecord.number)).all()
    with app.test_request_context(), i18n.in_language("es"):
        spectator = [str(i18n.lazy(line)) for r in records
                     for line in json.loads(r.lines_json)["-1"]]
    assert spectator and channel["body"]["message"].splitlines()[:-1] == spectator
    assert "/watch/" in channel["body"]["message"] and "/seat/" not in channel["body"]["message"]
    assert "/seat/" in own["body"]["message"] and "/watch/" not in own["body"]["message"]


def test_a_seat_target_is_for_that_game_only(tmp_path, receiver_fresh):
    """Anna adds a target on her seat page in one game: her move there is told to it, her
    move in another game is not."""
    app = _app(tmp_path)
    client = app.test_client()
    game_id, tokens = _game(app, [BRUNO, ANNA, CHIARA], "one")
    other_id, other_tokens = _game(app, [BRUNO, ANNA, CHIARA], "two")
    page = client.get(f"/seat/{tokens[1]}").get_data(as_text=True)
    assert "Turn notices in chat apps" in page
    added = client.post(f"/seat/{tokens[1]}/notices", data={
        "csrf_token": field(page, "csrf_token"),
        "url": f"json://127.0.0.1:{receiver_fresh.port}/seat", "kinds": ["turn"]})
    assert added.status_code == 303
    assert "json://127.0.0.1" in client.get(f"/seat/{tokens[1]}").get_data(as_text=True)
    assert "json://127.0.0.1" not in client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    _end_turn(app, other_id, other_tokens)
    _end_turn(app, game_id, tokens)
    assert deliver_notices(app)["notices_sent"] == 1
    (arrived,) = receiver_fresh.wait_for(1, "/seat")
    assert f"Cup #{game_id}" in arrived["body"]["title"]


def test_a_seat_handed_over_is_told_no_more_to_the_old_holders_seat_target(
        tmp_path, receiver_fresh, mailbox_of):
    """Anna's seat target, then an organiser hands her seat to Dora: Dora's turns (with her
    seat links) never reach Anna's target, and Dora's seat page does not list it."""
    from pbem.services import stewardship

    app = _app(tmp_path)
    client = app.test_client()
    game_id, tokens = _game(app, [BRUNO, ANNA, CHIARA], "hand")
    page = client.get(f"/seat/{tokens[1]}").get_data(as_text=True)
    assert client.post(f"/seat/{tokens[1]}/notices", data={
        "csrf_token": field(page, "csrf_token"),
        "url": f"json://127.0.0.1:{receiver_fresh.port}/anna-seat",
        "kinds": ["turn"]}).status_code == 303
    with app.app_context():
        admin_id = stewardship.create_admin("boss@example.org", "a long enough password")
        stewardship.hand_over(admin_id, game_id, 1, "Dora", "dora@example.org",
                              "Anna left the club")
    dora = token_in(mailbox_of(app).to("dora@example.org")[-1])
    assert "json://127.0.0.1" not in app.test_client().get(f"/seat/{dora}").get_data(
        as_text=True)
    _end_turn(app, game_id, [tokens[0], dora, tokens[2]])
    assert deliver_notices(app)["notices_sent"] == 0
    assert receiver_fresh.to("/anna-seat") == []


# --- the real scheduler --------------------------------------------------------------------------

def _environment(app, **settings) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PBEM_", "FLASK_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    values = {"SECRET_KEY": app.config["SECRET_KEY"], "BASE_URL": app.config["BASE_URL"],
              "DATABASE_URL": app.config["DATABASE_URL"],
              "INSTANCE_PATH": app.config["INSTANCE_PATH"], "MAIL_BOARD_PICTURE": False,
              "NOTIFY_ALLOW_HOSTS": "127.0.0.1", "GAMES_SECRET_SEEDS": False,
              "SCHEDULER_OUTAGE_MINUTES": 100000, **settings}
    env.update({f"PBEM_{k}": str(v) for k, v in values.items()})
    return env


def _scheduler(app, logs: Path, **settings) -> subprocess.Popen:
    log = logs.open("ab")
    try:
        return subprocess.Popen([sys.executable, "-m", "pbem", "scheduler"], cwd=ROOT,
                                env=_environment(app, **settings), stdout=log,
                                stderr=subprocess.STDOUT)
    finally:
        log.close()


def _stopped(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(WAIT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_done_when_the_real_scheduler_brings_your_move_in_one_run_in_the_players_language(
        tmp_path, receiver_fresh):
    """Issue 45's "Done when": Anna pastes an ntfy URL on her profile page (its real form),
    her German seat is next after Bruno's move, and one run of the real `pbem scheduler`
    (its tick an hour: only the run at its start) delivers "Du bist am Zug" to the receiver."""
    app = _app(tmp_path)
    client = app.test_client()
    token = _games_token(app, "anna@example.org")
    page = client.get(f"/me/{token}/profile").get_data(as_text=True)
    assert client.post(f"/me/{token}/profile", data={
        "csrf_token": field(page, "csrf_token"), "name": "Anna", "language": "de",
        "timezone": "Europe/Berlin", "notify": "every", "talk_notify": "each"}
        ).status_code == 303
    assert _add(client, token, f"ntfy://127.0.0.1:{receiver_fresh.port}/anna-zug"
                ).status_code == 200
    game_id, tokens = _game(app, [BRUNO, ANNA, CHIARA])
    assert _end_turn(app, game_id, tokens) == 1
    process = _scheduler(app, tmp_path / "scheduler.log", SCHEDULER_TICK_SECONDS=3600)
    try:
        (arrived,) = receiver_fresh.wait_for(1)
    finally:
        _stopped(process)
    print("receiver's record:", json.dumps(arrived["body"], ensure_ascii=False))
    assert arrived["body"]["topic"] == "anna-zug"
    assert arrived["body"]["title"] == f"Du bist am Zug in Cup #{game_id}"
    assert "Bruno hat gezogen" in arrived["body"]["message"]
    assert "(Europe/Berlin)" in arrived["body"]["message"]
    assert [n.status for n in _notices(app)] == [SENT]


def test_a_scheduler_killed_mid_delivery_loses_no_notice_and_repeats_only_the_one_in_hand(
        tmp_path, receiver_fresh):
    """Three targets of Anna's, claimed together: the first two are sent and recorded, the
    third holds its request, and the scheduler is killed (SIGKILL) while it waits for the
    answer. A scheduler started again sends what the claim still held once it is older than
    six times the timeout: every notice arrives, only the one in hand twice."""
    app = _app(tmp_path)
    port = receiver_fresh.port
    game_id, tokens = _game(app, [BRUNO, ANNA, CHIARA])
    with writing(app) as session:
        for path in ("/first", "/second", "/hold"):
            session.add(NoticeTarget(email="anna@example.org", shown="json://127.0.0.1",
                                     kinds="turn", url=f"json://127.0.0.1:{port}{path}"))
    _end_turn(app, game_id, tokens)
    assert len(_notices(app)) == 3
    logs = tmp_path / "scheduler.log"
    first = _scheduler(app, logs, SCHEDULER_TICK_SECONDS=1, NOTIFY_TIMEOUT_SECONDS=1)
    try:
        receiver_fresh.wait_for(1, "/hold")
        first.send_signal(signal.SIGKILL)
        first.wait(WAIT)
    finally:
        _stopped(first)
    receiver_fresh.released.set()
    assert [n.status for n in _notices(app)] == [SENT, SENT, "sending"], \
        "each recorded before the next is sent"
    second = _scheduler(app, logs, SCHEDULER_TICK_SECONDS=1, NOTIFY_TIMEOUT_SECONDS=1)
    try:
        receiver_fresh.wait_for(2, "/hold")
        deadline = time.monotonic() + WAIT
        while {n.status for n in _notices(app)} != {SENT}:
            assert time.monotonic() < deadline, [n.status for n in _notices(app)]
            time.sleep(0.1)
    finally:
        _stopped(second)
    assert [len(receiver_fresh.to(p)) for p in ("/first", "/second", "/hold")] == [1, 1, 2]
    assert "SeCrEt" not in logs.read_text()
    log = logs.read_text()
    assert f"json://127.0.0.1:{port}" not in log, "never the whole URL in the log"
