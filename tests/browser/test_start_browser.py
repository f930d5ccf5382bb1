"""The whole of issue 17 in a real browser (Debian's chromium through Playwright) and real mail:
three people start a game among themselves from the public "new game" page without an admin
(the starter's address confirmed by its link, each friend accepting on the page their
invitation links to), talk in it on their pages and by replying to the messages' mails, to
everyone and privately (the third player never sees the private ones), finish it, and start
a rematch from the final page, which the others accept."""

from __future__ import annotations

import re

import pytest
from browser_support import SHOTS, require_browser, site_with_admin

sync_api = require_browser()

from server import Mailbox, finish_game, text_of, token_in
from sqlmodel import select
from test_mail_replies import fill, ingest, reply_key
from test_talk_browser import _write as _talk

from pbem.ground.db import reading
from pbem.ground.models import Game, Seat

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

MANAGE = re.compile(r"https?://[^\s<>\"']+/new/game/[A-Za-z0-9_-]{32}")
INVITE = re.compile(r"https?://[^\s<>\"']+/invite/[A-Za-z0-9_-]{32}")


@pytest.fixture(scope="module")
def site(tmp_path_factory, database):
    with site_with_admin(tmp_path_factory, "start") as (app, base):
        app.config.update(GAMES_OPEN_CREATION=True, MAIL_REPLY_DOMAIN="games.example.org")
        yield app, base


def _link(box: Mailbox, email: str, pattern: re.Pattern) -> str:
    found = [pattern.search(text_of(m)) for m in box.to(email)]
    found = [m.group(0) for m in found if m]
    assert found, f"no such link in the mail of {email}"
    return found[-1]


def _seat_link(box: Mailbox, base: str, email: str, subject: str) -> str:
    mail = [m for m in box.to(email) if subject in str(m["Subject"])][-1]
    return f"{base}/seat/{token_in(mail)}"


def _accept(page, link: str, name: str) -> None:
    page.goto(link)
    page.get_by_label("Your name in the game").fill(name)
    page.get_by_role("button", name="Accept").click()


def test_three_friends_start_talk_finish_and_play_again(site, page):
    app, base = site
    expect = sync_api.expect
    box = Mailbox(app)

    # 1. Anna starts a game on the public page.
    page.goto(f"{base}/")
    page.get_by_role("link", name="Start a game with your friends").click()
    page.get_by_label("Your name").fill("Anna")
    page.get_by_label("Your email address").fill("anna@example.org")
    page.get_by_label("Friend 1: email address").fill("bruno@example.org")
    page.get_by_label("Friend 2: email address").fill("chiara@example.org")
    page.get_by_label("Hours for a turn").fill("48")
    page.get_by_role("button", name="Send me the confirmation link").click()
    expect(page.get_by_role("heading", name="Check your mail")).to_be_visible()
    assert box.to("bruno@example.org") == []  # nothing to the friends before she confirms

    # 2. Her address confirmed by the link in her mail; the invitations go out.
    page.goto(_link(box, "anna@example.org", MANAGE))
    page.get_by_role("button", name="Confirm and send the invitations").click()
    expect(page.locator("tr.invitation-pending")).to_have_count(2)

    # 3. Bruno and Chiara accept on their invitations' pages.
    _accept(page, _link(box, "bruno@example.org", INVITE), "Bruno")
    expect(page.get_by_text("You accepted.")).to_be_visible()
    _accept(page, _link(box, "chiara@example.org", INVITE), "Chiara")
    expect(page.get_by_text("The game has started")).to_be_visible()
    with app.app_context(), reading() as session:
        (game,) = session.exec(select(Game)).all()
        names = [s.name for s in session.exec(select(Seat).order_by(Seat.number))]
    assert names == ["Anna", "Bruno", "Chiara"] and game.deadline_hours == 48
    anna, _bruno, chiara = (_seat_link(box, base, f"{n}@example.org", "You are invited to play")
                           for n in ("anna", "bruno", "chiara"))

    # 4. They talk: on the page to everyone, privately, and by replying to the mails.
    page.goto(anna)
    _talk(page, "Hello both! Good luck.", "all")
    _talk(page, "Bruno, shall we leave Franken to each other?", "1")
    to_all, private = [m for m in box.to("bruno@example.org") if "wrote to" in text_of(m)]
    assert ingest(app, fill("gmail_top.eml", reply_key(private), ["Deal, Anna."],
                            text_of(private))).outcome == "message"
    assert ingest(app, fill("thunderbird_plain.eml", reply_key(to_all),
                            ["Good luck to you too!"], text_of(to_all))).outcome == "message"
    page.goto(anna)
    expect(page.locator(".talk-item.unread")).to_have_count(2)
    expect(page.locator(".talk-item.private.unread .talk-body")).to_have_text("Deal, Anna.")
    page.goto(chiara)
    bodies = page.locator(".talk-body")
    expect(bodies).to_have_text(["Hello both! Good luck.", "Good luck to you too!"])
    assert "Franken to each other" not in page.content() and "Deal, Anna." not in page.content()
    page.screenshot(path=str(SHOTS / "start-talk-chiara.png"), full_page=True)

    # 5. The game ends (played out quickly by the test helper); Anna asks for a rematch.
    finish_game(app, game.id, "start-browser")
    page.goto(anna)
    page.get_by_role("link", name="Play again with the same players").click()
    page.get_by_role("button", name="Invite the same players").click()
    expect(page.locator("tr.invitation-pending")).to_have_count(2)
    _accept(page, _link(box, "bruno@example.org", INVITE), "Bruno")
    _accept(page, _link(box, "chiara@example.org", INVITE), "Chiara")
    expect(page.get_by_text("The game has started")).to_be_visible()
    with app.app_context(), reading() as session:
        rematch = session.exec(select(Game).where(Game.id != game.id)).one()
        seats = session.exec(select(Seat).where(Seat.game_id == rematch.id)
                             .order_by(Seat.number)).all()
    assert rematch.status == "running" and rematch.deadline_hours == 48
    assert [s.email for s in seats] == ["anna@example.org", "bruno@example.org",
                                        "chiara@example.org"]
