"""Games players start themselves: the public "new game" page (only with [games]
open_creation), the starter's address confirmed by a link first, invitations accepted or
declined (each link a GET that only shows; the buttons POST), the game started when all have
accepted or by the starter with those who did, unanswered invitations expiring through the
scheduler with the starter told, the daily limits per address and per client address, and the
rematch a finished game offers its players."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from server import Mailbox, field, finish_game, html_of, make_app, new_game, text_of
from sqlmodel import func, select

from pbem.ground.db import reading, utcnow
from pbem.ground.models import Game, Invitation, OutboxMessage, Proposal, Seat
from pbem.scheduler.jobs import run_jobs

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

MANAGE = re.compile(r"https?://[^\s<>\"']+/new/game/([A-Za-z0-9_-]{32})")
INVITE = re.compile(r"https?://[^\s<>\"']+/invite/([A-Za-z0-9_-]{32})")


@pytest.fixture
def app(tmp_path):
    return make_app(tmp_path / "instance", GAMES_OPEN_CREATION=True,
                    GAMES_INVITATIONS_PER_ADDRESS=3, GAMES_INVITATIONS_PER_IP=9)


def form(client, **values) -> dict:
    page = client.get("/new").get_data(as_text=True)
    data = {"csrf_token": field(page, "csrf_token"), "game": "kardinal-koenig",
            "name": "Anna", "email": "anna@example.org", "colour0": "blue",
            "deadline_hours": "48", "timezone": "Europe/Berlin",
            "email1": "bruno@example.org", "name1": "Bruno", "colour1": "red",
            "email2": "chiara@example.org", "name2": "", "colour2": "green"}
    data.update(values)
    return data


def counts(app) -> dict[str, int]:
    with app.app_context(), reading() as session:
        return {m.__name__: session.exec(select(func.count()).select_from(m)).one()
                for m in (Proposal, Invitation, Game, OutboxMessage)}


def link_in(box: Mailbox, email: str, pattern: re.Pattern) -> str:
    mails = [m for m in box.to(email) if pattern.search(text_of(m))]
    assert mails, f"no such link in the mail of {email}"
    return pattern.search(text_of(mails[-1])).group(1)


def post_page(client, url: str, action: str, **data):
    page = client.get(url)
    assert page.status_code == 200, page.get_data(as_text=True)
    return client.post(action, data={"csrf_token": field(page.get_data(as_text=True),
                                                         "csrf_token"), **data})


def proposed(app, client) -> tuple[Mailbox, str]:
    """Anna proposes a game with Bruno and Chiara and confirms her address."""
    box = Mailbox(app)
    response = client.post("/new", data=form(client))
    assert response.status_code == 200 and "Check your mail" in response.get_data(as_text=True)
    assert [str(m["To"]) for m in box.messages()] == ["anna@example.org"]  # not by a typed name
    manage = link_in(box, "anna@example.org", MANAGE)
    before = counts(app)
    assert client.get(f"/new/game/{manage}").status_code == 200
    assert counts(app) == before  # opening the link (a mail scanner, too) changes nothing
    assert post_page(client, f"/new/game/{manage}", f"/new/game/{manage}/confirm"
                     ).status_code == 303
    return box, manage


def test_the_page_is_there_only_with_open_creation(tmp_path):
    closed = make_app(tmp_path / "closed")
    assert closed.test_client().get("/new").status_code == 404
    assert closed.test_client().post("/new", data={}).status_code in (400, 404)
    assert "Start a game" not in closed.test_client().get("/").get_data(as_text=True)


def test_three_people_start_a_game_without_an_admin(app, client):
    box, manage = proposed(app, client)
    bruno, chiara = (link_in(box, f"{n}@example.org", INVITE) for n in ("bruno", "chiara"))
    mail = [m for m in box.to("chiara@example.org")][-1]
    assert 'anna@example.org invites you' in text_of(mail)
    assert 'gave their name as "Anna"' in text_of(mail)
    assert "bruno@example.org" not in text_of(mail)  # the others' addresses are not shown
    before = counts(app)
    page = client.get(f"/invite/{bruno}").get_data(as_text=True)
    assert "Accept" in page and "Decline" in page and counts(app) == before
    assert post_page(client, f"/invite/{bruno}", f"/invite/{bruno}/accept",
                     name="Bruno B.").status_code == 303
    assert counts(app)["Game"] == 0  # Chiara has not answered
    assert post_page(client, f"/invite/{chiara}", f"/invite/{chiara}/accept",
                     name="Chiara").status_code == 303
    with app.app_context(), reading() as session:
        (game,) = session.exec(select(Game)).all()
        seats = session.exec(select(Seat).order_by(Seat.number)).all()
        proposal = session.exec(select(Proposal)).one()
    assert [(s.name, s.email, s.colour) for s in seats] == [
        ("Anna", "anna@example.org", "blue"), ("Bruno B.", "bruno@example.org", "red"),
        ("Chiara", "chiara@example.org", "green")]
    assert (game.deadline_hours, game.timezone) == (48, "Europe/Berlin")
    assert proposal.status == "started" and proposal.game_id == game.id
    for email in ("anna", "bruno", "chiara"):
        assert "You are invited to play" in str(box.to(f"{email}@example.org")[-1]["Subject"])
    assert "has started" in client.get(f"/new/game/{manage}").get_data(as_text=True)
    again = post_page(client, "/new", f"/invite/{bruno}/decline")
    assert again.status_code == 409 and counts(app)["Game"] == 1


def test_a_decline_is_told_and_the_starter_starts_with_those_who_accepted(app, client):
    box = Mailbox(app)
    client.post("/new", data=form(client, email3="dora@example.org", name3="Dora",
                                  colour3="yellow"))
    manage = link_in(box, "anna@example.org", MANAGE)
    post_page(client, f"/new/game/{manage}", f"/new/game/{manage}/confirm")
    for name in ("bruno", "chiara"):
        token = link_in(box, f"{name}@example.org", INVITE)
        post_page(client, f"/invite/{token}", f"/invite/{token}/accept", name=name.title())
    dora = link_in(box, "dora@example.org", INVITE)
    post_page(client, f"/invite/{dora}", f"/invite/{dora}/decline")
    news = box.to("anna@example.org")[-1]
    assert '"Dora" <dora@example.org> declined' in text_of(news)
    # The title is the game's name: said once (issue 32).
    assert "News of the game of Kardinal & König:" in text_of(news)
    assert "called" not in text_of(news) and "called" not in html_of(news)
    page = client.get(f"/new/game/{manage}").get_data(as_text=True)
    assert "Start now with the 3 who accepted" in page
    assert post_page(client, f"/new/game/{manage}", f"/new/game/{manage}/start"
                     ).status_code == 303
    with app.app_context(), reading() as session:
        assert [s.name for s in session.exec(select(Seat).order_by(Seat.number))] == [
            "Anna", "Bruno", "Chiara"]


def test_too_few_accepted_cannot_start(app, client):
    _box, manage = proposed(app, client)
    page = client.get(f"/new/game/{manage}").get_data(as_text=True)
    assert "Start now" not in page
    refused = client.post(f"/new/game/{manage}/start",
                          data={"csrf_token": field(page, "csrf_token")})
    assert refused.status_code == 422 and "at least 3 players" in refused.get_data(as_text=True)
    assert counts(app)["Game"] == 0


def test_an_unanswered_invitation_expires_and_the_starter_is_told(app, client):
    box, manage = proposed(app, client)
    bruno = link_in(box, "bruno@example.org", INVITE)
    post_page(client, f"/invite/{bruno}", f"/invite/{bruno}/accept", name="Bruno")
    now = utcnow()
    assert run_jobs(app, now + timedelta(hours=71))["invitations_expired"] == 0
    assert run_jobs(app, now + timedelta(hours=73))["invitations_expired"] == 1
    assert run_jobs(app, now + timedelta(hours=74))["invitations_expired"] == 0  # once
    news = box.to("anna@example.org")[-1]
    assert "did not answer the invitation in time" in text_of(news)
    chiara = link_in(box, "chiara@example.org", INVITE)
    assert "This invitation has expired" in client.get(f"/invite/{chiara}").get_data(as_text=True)
    late = post_page(client, "/new", f"/invite/{chiara}/accept", name="Chiara")
    assert late.status_code == 409 and "expired" in late.get_data(as_text=True)
    # Two have accepted: not enough for Kardinal & König (3 to 5).
    assert "Start now" not in client.get(f"/new/game/{manage}").get_data(as_text=True)


@pytest.mark.parametrize("values,words", [
    ({"email": "not an address"}, "not an email address"),
    ({"email1": "", "name1": "", "email2": ""}, "is for 3 to 5 players"),
    ({"email2": "bruno@example.org"}, "their own email address"),
    ({"colour2": "red"}, "their own colour"),
    ({"deadline_hours": "2"}, "deadline"),
    ({"name": "<b>Anna</b>"}, "without &lt;"),
])
def test_bad_forms_are_refused_with_the_reason_and_nothing_is_sent(app, client, values, words):
    response = client.post("/new", data=form(client, **values))
    assert response.status_code == 422
    assert words in response.get_data(as_text=True)
    assert counts(app) == {"Proposal": 0, "Invitation": 0, "Game": 0, "OutboxMessage": 0}


def test_invitations_per_address_and_per_client_address_are_limited(app, client):
    for _ in range(3):
        assert client.post("/new", data=form(client)).status_code == 200
    refused = client.post("/new", data=form(client))
    assert refused.status_code == 429 and "anna@example.org has been invited 3 times" in \
        refused.get_data(as_text=True)
    # Three proposals of three players each came from this client address: 9 of 9 a day.
    refused = client.post("/new", data=form(client, email="late@example.org"))
    assert refused.status_code == 429 and "from your network" in refused.get_data(as_text=True)
    assert len(Mailbox(app).messages()) == counts(app)["Proposal"]  # confirmations only


def test_links_that_are_not_invitations_are_refused(app, client):
    assert client.get("/invite/" + "a" * 32).status_code == 404
    assert client.get("/invite/short").status_code == 404
    assert client.get("/new/game/" + "b" * 32).status_code == 404


def test_the_final_mail_and_page_offer_a_rematch_with_the_same_players(app, client):
    created, tokens = new_game(app, 3, "rematch", start=0)
    finish_game(app, created.game_id, "rematch")
    with app.app_context():  # the final mails, as the last move would write them
        from pbem.ground.db import writing
        from pbem.services.mail import kinds
        from pbem.services.mail.sending import send

        with writing() as session:
            game = session.get(Game, created.game_id)
            seats = list(session.exec(select(Seat).order_by(Seat.number)))
            send(session, kinds.FINAL, game=game, seat=seats[1], seats=seats, lines=[])
    box = Mailbox(app)
    final = box.to("p1@example.org")[-1]
    assert "/rematch" in text_of(final) and "Play again with the same players" in text_of(final)
    page = client.get(f"/seat/{tokens[1]}").get_data(as_text=True)
    assert "Play again with the same players" in page
    before = counts(app)
    assert client.get(f"/seat/{tokens[1]}/rematch").status_code == 200
    assert counts(app) == before
    response = post_page(client, f"/seat/{tokens[1]}/rematch", f"/seat/{tokens[1]}/rematch")
    assert response.status_code == 303 and "/new/game/" in response.headers["Location"]
    for n in (0, 2):
        token = link_in(box, f"p{n}@example.org", INVITE)
        assert 'p1@example.org invites you to a game of Kardinal & König by mail on ' \
            'http://localhost, and gave their name as "Player 1"' in text_of(
                box.to(f"p{n}@example.org")[-1])
        post_page(client, f"/invite/{token}", f"/invite/{token}/accept", name=f"Player {n}")
    with app.app_context(), reading() as session:
        rematch = session.get(Game, 2)
        seats = session.exec(select(Seat).where(Seat.game_id == 2).order_by(Seat.number)).all()
    assert rematch.status == "running" and rematch.kind == "kardinal-koenig"
    assert [(s.name, s.email) for s in seats] == [
        ("Player 1", "p1@example.org"), ("Player 0", "p0@example.org"),
        ("Player 2", "p2@example.org")]
    again = post_page(client, f"/seat/{tokens[0]}/rematch", f"/seat/{tokens[0]}/rematch")
    assert again.status_code == 422 and "already asked for" in again.get_data(as_text=True)


def test_a_running_game_offers_no_rematch(app, client):
    _, tokens = new_game(app, 3, "no-rematch")
    assert "Play again" not in client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    response = post_page(client, "/new", f"/seat/{tokens[0]}/rematch")
    assert response.status_code == 409 and counts(app)["Proposal"] == 0


def test_knights_and_castles_can_be_started_too(app, client):
    """The page offers every game the server hosts: here the second, for two players, with a
    variant of its rules."""
    page = client.get("/new?game=knights-castles").get_data(as_text=True)
    assert 'value="knights-castles"' in page and "catch-up" in page
    box = Mailbox(app)
    response = client.post("/new", data=form(
        client, game="knights-castles", colour0="purple", colour1="orange", email2="",
        name2="", variant="catch-up"))
    assert response.status_code == 200, response.get_data(as_text=True)
    manage = link_in(box, "anna@example.org", MANAGE)
    post_page(client, f"/new/game/{manage}", f"/new/game/{manage}/confirm")
    bruno = link_in(box, "bruno@example.org", INVITE)
    post_page(client, f"/invite/{bruno}", f"/invite/{bruno}/accept", name="Bruno")
    with app.app_context(), reading() as session:
        (game,) = session.exec(select(Game)).all()
        seats = session.exec(select(Seat).order_by(Seat.number)).all()
    from pbem.games import rules_for

    rules = rules_for(game.kind)
    assert game.kind == "knights-castles"
    assert rules.variant_of(rules.loads(game.state_json)) == "catch-up"
    assert [(s.name, s.colour) for s in seats] == [("Anna", "purple"), ("Bruno", "orange")]


def test_an_invitee_answering_from_a_german_browser_gets_german_mail(app, client):
    """Issue 32, point 15: the seat of a friend who accepts on a German page is German, and so
    are the game's mails to them; a Spanish one's Spanish; the starter's is the language of the
    page the game was proposed on."""
    box = Mailbox(app)
    page = client.get("/new", headers={"Accept-Language": "es"}).get_data(as_text=True)
    response = client.post("/new", headers={"Accept-Language": "es"},
                           data={**form(client), "csrf_token": field(page, "csrf_token")})
    assert response.status_code == 200
    manage = link_in(box, "anna@example.org", MANAGE)
    assert post_page(client, f"/new/game/{manage}", f"/new/game/{manage}/confirm"
                     ).status_code == 303
    bruno, chiara = (link_in(box, f"{n}@example.org", INVITE) for n in ("bruno", "chiara"))
    for token, language, name in ((bruno, "de", "Bruno"), (chiara, "en", "Chiara")):
        page = client.get(f"/invite/{token}", headers={"Accept-Language": language})
        answer = client.post(f"/invite/{token}/accept", headers={"Accept-Language": language},
                             data={"csrf_token": field(page.get_data(as_text=True),
                                                       "csrf_token"), "name": name})
        assert answer.status_code == 303, answer.get_data(as_text=True)
    with app.app_context(), reading() as session:
        seats = session.exec(select(Seat).order_by(Seat.number)).all()
    assert [s.language for s in seats] == ["es", "de", "en"]
    started = box.to("bruno@example.org")[-1]
    assert "Hallo Bruno" in text_of(started), text_of(started)[:500]
    assert "Hola, Anna" in text_of(box.to("anna@example.org")[-1])
