"""Issue 33's profile and lobby in a real browser (Debian's chromium through Playwright) and
real mail: Anna opens her profile from her games page and saves it, asks for a fresh link at
/me, posts an open game in the lobby, and Bruno and Chiara, following the games link of their
game's mails, join it from the lobby until it starts. Screenshots at 1280 and 390 px."""

from __future__ import annotations

import re

import pytest
from browser_support import PHONE, SHOTS, require_browser, site_with_admin

sync_api = require_browser()

from server import Mailbox, text_of
from sqlmodel import select

from pbem.ground.db import reading
from pbem.ground.models import OpenGame, Seat
from pbem.services.creating import create_game
from pbem.services.players import parse_player

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

GAMES_LINK = re.compile(r"https?://[^\s<>\"']+/me/[A-Za-z0-9_-]{32}")


@pytest.fixture(scope="module")
def site(tmp_path_factory, database):
    with site_with_admin(tmp_path_factory, "profiles") as (app, base):
        app.config.update(GAMES_LOBBY=True, MAIL_BOARD_PICTURE=False)
        yield app, base


def _games_link(box: Mailbox, base: str, email: str) -> str:
    found = [m.group(0) for m in (GAMES_LINK.search(text_of(x)) for x in box.to(email)) if m]
    assert found, f"no games link in the mail of {email}"
    return base + "/me/" + found[-1].rsplit("/", 1)[1]


def _both_sizes(page, name: str) -> None:
    """Screenshots at 1280 and 390 px; at 390 px nothing widens the page past the screen."""
    page.screenshot(path=str(SHOTS / f"{name}-1280.png"), full_page=True)
    page.set_viewport_size(PHONE)
    try:
        page.screenshot(path=str(SHOTS / f"{name}-390.png"), full_page=True)
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= PHONE["width"], f"{name}: {wide} px wide on a 390 px screen"
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})


def test_profile_link_by_mail_and_a_lobby_game_that_fills(site, page):
    app, base = site
    expect = sync_api.expect
    box = Mailbox(app)
    with app.app_context():
        create_game([parse_player(p) for p in ("Anna <anna@example.org>",
                                                "Bruno <bruno@example.org>",
                                                "Chiara <chiara@example.org>")], "b-1")

    # Anna's profile, from her games page.
    page.goto(_games_link(box, base, "anna@example.org"))
    page.get_by_role("link", name=re.compile("Your profile")).click()
    page.get_by_label("Name shown to others").fill("Anna from the club")
    page.get_by_label("Language").select_option("de")
    page.get_by_label("Time zone").fill("Europe/Berlin")
    page.get_by_label("only when it is my turn").check()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Gespeichert.")).to_be_visible()  # in the language she chose
    _both_sizes(page, "profile")

    # A fresh link by mail at /me.
    before = len(box.to("anna@example.org"))
    page.goto(f"{base}/me")
    page.get_by_label("Your email address").fill("anna@example.org")
    page.get_by_role("button", name="Mail me the link").click()
    expect(page.get_by_role("heading", name="Check your mail")).to_be_visible()
    assert len(box.to("anna@example.org")) == before + 1
    assert "Deine Partien" in str(box.to("anna@example.org")[-1]["Subject"])

    # Anna posts an open game; Bruno and Chiara join from their games pages.
    page.goto(_games_link(box, base, "anna@example.org"))
    page.get_by_role("link", name=re.compile("The lobby")).click()
    page.get_by_label("Spieler", exact=True).fill("3")  # her lobby in German too
    page.get_by_role("button", name="Partie einstellen").click()
    expect(page.locator("#lobby tbody tr")).to_have_count(1)
    expect(page.get_by_role("button", name="Zurückziehen")).to_be_visible()
    _both_sizes(page, "lobby-posted")
    for name in ("bruno", "chiara"):  # from the games link their game's mails carry
        page.goto(_games_link(box, base, f"{name}@example.org"))
        page.get_by_role("link", name=re.compile("The lobby")).click()
        poster = page.locator("#lobby").get_by_role("link", name="Anna from the club")
        expect(poster).to_be_visible()  # named by her profile, linked to its public page
        assert re.fullmatch(r"/players/[A-Za-z0-9_-]+", poster.get_attribute("href"))
        _both_sizes(page, f"lobby-{name}")
        page.get_by_role("button", name="Join").click()
    expect(page.get_by_text("No open game just now.")).to_be_visible()
    with reading(app) as db:
        [posted] = db.exec(select(OpenGame)).all()
        seats = db.exec(select(Seat).where(Seat.game_id == posted.game_id)
                        .order_by(Seat.number)).all()
    assert posted.status == "started"
    assert (seats[0].name, seats[0].language, seats[0].timezone, seats[0].notify) == (
        "Anna from the club", "de", "Europe/Berlin", "turn")
    assert any("Du bist zu einem Spiel eingeladen" in str(m["Subject"])
               for m in box.to("anna@example.org"))
