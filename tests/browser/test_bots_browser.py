"""Computer players through the admin pages in a real browser (chromium via Playwright): the
create form seats one without an email, the game page shows it, and a seat is handed to one
through the confirmation page; the scheduler then plays its turn."""

from __future__ import annotations

import pytest
from browser_support import ADMIN, PASSWORD, SHOTS, require_browser, site_with_admin

sync_api = require_browser()

from sqlmodel import select

from pbem.ground.db import reading
from pbem.ground.models import Game, MoveRecord, Seat
from pbem.scheduler.jobs import run_jobs

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL


@pytest.fixture(scope="module")
def site(tmp_path_factory, database):
    with site_with_admin(tmp_path_factory, "bots-browser") as served:
        yield served


def test_an_admin_seats_a_computer_player_and_hands_it_a_seat(site, page):
    app, base = site
    expect = sync_api.expect
    page.goto(base + "/admin/games/new")
    page.get_by_label("Email").fill(ADMIN)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(base + "/admin/games/new")
    for i, (name, email) in enumerate([("Anna", "anna@example.org"),
                                       ("Bert", "bert@example.org")]):
        page.get_by_label(f"Player {i + 1} name").fill(name)
        page.get_by_label(f"Player {i + 1} email").fill(email)
    page.get_by_label("Player 3 is").select_option(label="a computer player (strong)")
    page.get_by_label("Start player").select_option(label="player 1")
    page.get_by_label("An absent player's turns are played by").select_option(
        label="the computer player (greedy)")
    page.screenshot(path=SHOTS / "admin-new-game-with-bot.png", full_page=True)
    page.get_by_role("button", name="Create the game and invite the players").click()

    page.wait_for_url(base + "/admin/games/1")
    expect(page.get_by_text("(computer player: strong)")).to_be_visible()
    expect(page.get_by_text("played by the computer player (greedy)")).to_be_visible()

    seat_form = page.get_by_role("group", name="Let a computer player play the seat")
    seat_form.get_by_label("Seat", exact=True).select_option(label="1: Anna (yellow)")
    seat_form.get_by_label("Computer player").select_option("random")
    seat_form.get_by_role("button", name="Continue").click()
    expect(page.get_by_text("Let the computer player (random) play the seat of Anna")).to_be_visible()
    page.get_by_label("Reason").fill("Anna is travelling")
    page.get_by_role("button", name="Yes, do it").click()
    page.wait_for_url(base + "/admin/games/1")
    expect(page.get_by_role("status")).to_contain_text("Let a computer player play the seat")
    page.screenshot(path=SHOTS / "admin-game-with-bots.png", full_page=True)

    with reading(app) as db:
        seats = db.exec(select(Seat).order_by(Seat.number)).all()
        deadline = db.get(Game, 1).deadline_at
    assert [(s.name, s.bot) for s in seats] == [("Anna", "random"), ("Bert", None),
                                                ("Computer (strong)", "strong")]
    run_jobs(app, deadline)  # Anna's turn is the computer's now, played by the scheduler
    with reading(app) as db:
        played = db.exec(select(MoveRecord)).all()
    assert played and {(r.seat, r.actor, r.via) for r in played} == {(0, "bot", "scheduler")}
    page.reload()
    expect(page.get_by_text("computer player via scheduler").first).to_be_visible()
