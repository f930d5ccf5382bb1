"""Table talk in a real browser (Debian's chromium through Playwright): a message written on
one seat's page reaches the others' threads under the board, marked new until read; a private
answer is seen by its two seats only; HTML in a message stays text."""

from __future__ import annotations

import pytest
from browser_support import SHOTS, require_browser, site_with_admin

sync_api = require_browser()

from server import new_game

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL


@pytest.fixture(scope="module")
def site(tmp_path_factory, database):
    with site_with_admin(tmp_path_factory, "talk") as served:
        yield served


def _write(page, text: str, to: str) -> None:
    page.get_by_label("To", exact=True).select_option(value=to)
    page.get_by_label("Your message").fill(text)
    page.get_by_role("button", name="Send").click()


def test_three_seats_talk_on_their_pages(site, page):
    app, base = site
    _, tokens = new_game(app, 3, "talk-browser", start=0)
    expect = sync_api.expect
    page.goto(f"{base}/seat/{tokens[0]}")
    expect(page.get_by_text("No messages yet.")).to_be_visible()
    _write(page, "Hello both <b>friends</b>", "all")
    thread = page.locator(".talk-thread")
    expect(thread.locator(".talk-item")).to_have_count(1)
    expect(thread.locator(".talk-body")).to_have_text("Hello both <b>friends</b>")
    expect(page.locator(".talk-item.unread")).to_have_count(0)  # one's own is not new

    page.goto(f"{base}/seat/{tokens[1]}")
    expect(page.locator(".talk-item.unread")).to_have_count(1)
    expect(page.get_by_role("heading", name="Messages 1 new")).to_be_visible()
    _write(page, "Only for you, Player 0", "0")
    expect(page.locator(".talk-item.private .talk-head")).to_contain_text("privately to Player 0")
    expect(page.locator(".talk-item.unread")).to_have_count(0)  # writing marks the thread read
    page.screenshot(path=str(SHOTS / "talk-thread.png"), full_page=True)

    page.goto(f"{base}/seat/{tokens[2]}")
    expect(page.locator(".talk-item")).to_have_count(1)
    expect(page.get_by_text("Only for you, Player 0")).to_have_count(0)

    page.goto(f"{base}/seat/{tokens[0]}")
    private = page.locator(".talk-item.private.unread")
    expect(private).to_contain_text("privately to you")
    expect(private.locator(".talk-body")).to_have_text("Only for you, Player 0")
    page.get_by_role("button", name="Mark as read").click()
    expect(page.locator(".talk-item.unread")).to_have_count(0)
    expect(page.locator(".talk-item")).to_have_count(2)
