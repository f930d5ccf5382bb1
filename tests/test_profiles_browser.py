"""Issue 33's profile and lobby in a real browser (Debian's chromium through Playwright) and
real mail: Anna opens her profile from her games page and saves it, asks for a fresh link at
/me, posts an open game in the lobby, and Bruno and Chiara join it from their own games pages
until it starts."""

from __future__ import annotations

import re

import pytest
from browser_support import SHOTS, require_browser, site_with_admin

sync_api = require_browser()

from server import Mailbox, text_of
from sqlmodel import select

from pbem.ground.db import reading, writing
from pbem.ground.models import OpenGame, Seat
from pbem.services import mail
from pbem.services.games import create_game
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
    page.screenshot(path=str(SHOTS / "profile.png"), full_page=True)

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
    with app.app_context(), writing() as session:  # as the mails of their game carry them
        keys = {n: mail.mint_player_key(session, f"{n}@example.org") for n in ("bruno", "chiara")}
    for name in ("bruno", "chiara"):
        page.goto(f"{base}/me/{keys[name]}/lobby")
        expect(page.get_by_text("Anna from the club")).to_be_visible()
        page.screenshot(path=str(SHOTS / f"lobby-{name}.png"), full_page=True)
        page.get_by_role("button", name="Join").click()
    expect(page.get_by_text("No open game just now.")).to_be_visible()
    with reading(app) as db:
        [posted] = db.exec(select(OpenGame)).all()
        seats = db.exec(select(Seat).where(Seat.game_id == posted.game_id)
                        .order_by(Seat.number)).all()
    assert posted.status == "started"
    assert [(s.name, s.language, s.timezone, s.notify) for s in seats][0] == (
        "Anna from the club", "de", "Europe/Berlin", "turn")
    assert any("Du bist zu einem Spiel eingeladen" in str(m["Subject"])
               for m in box.to("anna@example.org"))
