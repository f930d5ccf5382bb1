"""The admin pages in a real browser: Debian's chromium driven by Playwright against the app
served by werkzeug in a thread. An admin logs in, creates a game through the form, opens it and
resends a link through the confirmation page; the pages also fit a phone's width.

Screenshots go to tests/artifacts/screenshots/ (git-ignored).
"""

from __future__ import annotations

import pytest
from browser_support import (
    ADMIN,
    PASSWORD,
    PHONE,
    SHOTS,
    WAIT_MS,
    require_browser,
    site_with_admin,
)

sync_api = require_browser()

from server import Mailbox, new_game, token_in
from sqlmodel import select

from pbem.ground.db import reading
from pbem.ground.models import AuditEntry, OutboxMessage

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

PLAYERS = [("Anna", "anna@example.org"), ("Bert", "bert@example.org"),
           ("Cleo", "cleo@example.org")]


@pytest.fixture(scope="module")
def site(tmp_path_factory, database):
    """(app, base URL): the app served on a free port, with an admin account; the links in
    the mail lead to this server."""
    with site_with_admin(tmp_path_factory, "browser") as served:
        yield served


def log_in(page, base: str, start: str = "/admin/") -> None:
    page.goto(base + start)
    assert "/admin/login?next=" in page.url
    page.get_by_label("Email").fill(ADMIN)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(base + start)


def overflow(page) -> tuple[int, int]:
    """The page's width and the window's (checked to be the phone's: not widened to fit)."""
    width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert inner == PHONE["width"]
    return width, inner


MISPLACED_LABELS = """() => {
  // Labels that share a line with some other field but not with their own one.
  const controls = [...document.querySelectorAll("main input:not([type=hidden]), main select")];
  const sameLine = (a, b) => a.top < b.bottom && b.top < a.bottom;
  const misplaced = [];
  for (const label of document.querySelectorAll("main label[for]")) {
    const own = document.getElementById(label.htmlFor);
    if (!own) continue;
    const box = label.getBoundingClientRect();
    const others = controls.filter(c => c !== own && sameLine(box, c.getBoundingClientRect()));
    if (others.length && !sameLine(box, own.getBoundingClientRect())) misplaced.push(label.htmlFor);
  }
  return misplaced;
}"""


def phone_page(browser):
    context = browser.new_context(viewport=PHONE, device_scale_factor=2)
    context.set_default_timeout(WAIT_MS)
    return context, context.new_page()


def test_an_admin_creates_a_game_and_resends_a_link(site, page):
    app, base = site
    expect = sync_api.expect
    log_in(page, base)
    expect(page.get_by_role("heading", name="Games", exact=True)).to_be_visible()
    page.screenshot(path=SHOTS / "admin-dashboard.png", full_page=True)

    page.get_by_role("link", name="Create a game").click()
    expect(page.get_by_role("heading", name="Create a game")).to_be_visible()
    for i, (name, email) in enumerate(PLAYERS):
        page.get_by_label(f"Player {i + 1} name").fill(name)
        page.get_by_label(f"Player {i + 1} email").fill(email)
    page.get_by_label("Start player").select_option(label="player 2")
    page.get_by_label("Hours for each turn").fill("48")
    page.get_by_label("Reminders, hours before the deadline").fill("12")
    page.get_by_label("Title").fill("Browser night")
    page.get_by_label("Seed").fill("42")
    page.screenshot(path=SHOTS / "admin-new-game.png", full_page=True)
    assert page.evaluate(MISPLACED_LABELS) == []  # on a wide screen each label is by its field
    page.get_by_role("button", name="Create the game and invite the players").click()

    page.wait_for_url(base + "/admin/games/1")
    expect(page.get_by_role("status")).to_contain_text("Game 1 is created")
    expect(page.get_by_role("heading", name="#1 Browser night")).to_be_visible()
    expect(page.get_by_role("heading", name="for the admin's eyes only")).to_be_visible()
    expect(page.get_by_text("Waiting for Bert (red)")).to_be_visible()
    page.screenshot(path=SHOTS / "admin-game.png", full_page=True)

    seat_form = page.get_by_role("group", name="Resend the seat's link")
    seat_form.get_by_label("Seat", exact=True).select_option(label="2: Bert (red)")
    seat_form.get_by_role("button", name="Continue").click()
    expect(page.get_by_text("Mail Bert (red, bert@example.org) their link again.")).to_be_visible()
    with reading(app) as db:  # the confirmation page changed nothing yet
        assert db.exec(select(AuditEntry)).all() == []
    page.get_by_label("Reason").fill("the first mail went to spam")
    page.get_by_role("button", name="Yes, do it").click()

    page.wait_for_url(base + "/admin/games/1")
    expect(page.get_by_role("status")).to_contain_text("Done: Resend the seat's link.")
    expect(page.get_by_text("resend link seat 2 — the first mail went to spam")).to_be_visible()
    page.get_by_role("navigation", name="Admin").get_by_role("link", name="Audit log").click()
    row = page.get_by_role("row").filter(has_text="resend link")
    expect(row).to_contain_text(ADMIN)
    expect(row).to_contain_text("seat 2")
    expect(row).to_contain_text("the first mail went to spam")

    with reading(app) as db:
        [entry] = db.exec(select(AuditEntry)).all()
        mails = db.exec(select(OutboxMessage).order_by(OutboxMessage.id)).all()
    assert (entry.action, entry.reason, entry.detail) == (
        "resend link", "the first mail went to spam", "seat 2")
    assert [(m.kind, m.status) for m in mails] == [("invitation", "queued")] * 3 + [
        ("notice", "queued")]
    assert "bert@example.org" in mails[-1].to_addr
    assert mails[-1].subject == "[Browser night #1] Your link to the game"
    page.get_by_role("link", name="Outbox").click()
    expect(page.get_by_role("row").filter(has_text="Your link to the game")).to_contain_text(
        "queued")

    [resent] = [m for m in Mailbox(app).to("bert@example.org")
                if str(m["Subject"]).endswith("Your link to the game")]
    page.goto(f"{base}/seat/{token_in(resent)}")  # the link in the mail leads to this server
    expect(page.get_by_text("Bert", exact=False).first).to_be_visible()
    assert page.url.startswith(base + "/seat/")


def test_the_login_page_and_the_new_game_form_fit_a_phone(site, browser):
    _, base = site
    context, page = phone_page(browser)
    try:
        page.goto(base + "/admin/login")
        width, inner = overflow(page)
        assert width <= inner, f"the login page is {width} px wide on a {inner} px screen"
        page.screenshot(path=SHOTS / "admin-login-phone.png", full_page=True)
        log_in(page, base, "/admin/games/new")
        width, inner = overflow(page)
        page.screenshot(path=SHOTS / "admin-new-game-phone.png", full_page=True)
        assert width <= inner, f"the new-game form is {width} px wide on a {inner} px screen"
    finally:
        context.close()


def test_each_players_email_field_has_its_own_label(site, page):
    _, base = site
    log_in(page, base, "/admin/games/new")
    for i in range(5):
        assert page.get_by_label(f"Player {i + 1} email").count() == 1
        assert page.get_by_label(f"Player {i + 1} colour").count() == 1


def test_on_a_phone_each_label_of_the_new_game_form_stays_by_its_field(site, browser):
    _, base = site
    context, page = phone_page(browser)
    try:
        log_in(page, base, "/admin/games/new")
        assert page.evaluate(MISPLACED_LABELS) == []
    finally:
        context.close()


def test_the_game_page_and_the_confirmation_page_fit_a_phone(site, browser):
    app, base = site
    created, _ = new_game(app)
    context, page = phone_page(browser)
    try:
        log_in(page, base, f"/admin/games/{created.game_id}")
        widths = {"game page": overflow(page)}
        page.get_by_role("group", name="Pause the game").get_by_role("button").click()
        page.get_by_label("Reason").wait_for()
        widths["confirmation page"] = overflow(page)
        assert all(width <= inner for width, inner in widths.values()), widths
    finally:
        context.close()
