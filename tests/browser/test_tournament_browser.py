"""The tournament pages in a real browser (Debian's chromium driven by Playwright, the app
served by werkzeug in a thread): an organiser logs in, creates a Swiss event through the form,
sees its tables, and the public standings page shows the players' names, never an address,
with each game linked to its spectator page, also at a phone's width.

Screenshots go to tests/artifacts/screenshots/ (git-ignored).
"""

from __future__ import annotations

import re

import pytest
from browser_support import ADMIN, PASSWORD, PHONE, SHOTS, require_browser, site_with_admin

sync_api = require_browser()

from sqlmodel import select

from pbem.ground.db import reading
from pbem.ground.models import Tournament, TournamentTable

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

ADDRESS = re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+")


@pytest.fixture(scope="module")
def site(tmp_path_factory, database):
    with site_with_admin(tmp_path_factory, "tournament-browser") as served:
        yield served


def test_an_organiser_creates_a_swiss_event_and_the_public_page_shows_it(site, browser, page):
    app, base = site
    page.goto(base + "/admin/tournaments/")
    page.get_by_label("Email").fill(ADMIN)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(base + "/admin/tournaments/")
    page.get_by_role("link", name="Create a tournament").click()
    page.get_by_label("Name", exact=True).fill("Spring Swiss")
    page.get_by_role("radio", name="Swiss event").check()
    page.get_by_label("Players at a table").fill("3")
    page.get_by_label("A Swiss event: rounds").fill("2")
    page.get_by_label("One player a line").fill(
        "\n".join(f"Player {i} <p{i}@example.org>" for i in range(6)))
    page.get_by_role("button", name="Create the tournament").click()
    page.wait_for_url(re.compile(r".*/admin/tournaments/\d+$"))
    assert "Round 1 of 2." in page.content()
    with reading(app) as session:
        t = session.exec(select(Tournament)).one()
        made = session.exec(select(TournamentTable)).all()
    assert (t.format, t.rounds, len(made)) == ("swiss", 2, 2)
    page.get_by_role("link", name="The public standings page").click()
    page.wait_for_url(base + f"/tournaments/{t.public_id}")
    text = page.inner_text("main")
    assert "Player 0" in text and not ADDRESS.search(page.content())
    page.screenshot(path=str(SHOTS / "tournament-standings.png"), full_page=True)
    page.get_by_role("link", name="Spring Swiss · R1.1").click()
    page.wait_for_url(re.compile(r".*/watch/.+"))
    phone = browser.new_context(viewport=PHONE)
    try:
        small = phone.new_page()
        small.goto(base + f"/tournaments/{t.public_id}")
        width = small.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], width
    finally:
        phone.close()
