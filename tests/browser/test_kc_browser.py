"""Knights & Castles in a real browser (Debian's chromium through Playwright): a trade offered
with the seat page's offer form, then accepted by the other seat on its own page; and a choice
played with its button. Screenshots go to tests/artifacts/screenshots/ (git-ignored)."""

from __future__ import annotations

import pytest
from browser_support import SHOTS, require_browser, site_with_admin

sync_api = require_browser()

from server import new_game
from sqlmodel import select

import engine.knights_castles as kc
from engine.knights_castles.cards import INDEX, KINDS
from pbem.games import rules_for
from pbem.ground.db import reading
from pbem.ground.models import Game, MoveRecord
from pbem.services.moves import submit_move

RULES = rules_for("knights-castles")

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL


@pytest.fixture(scope="module")
def site(tmp_path_factory, database):
    with site_with_admin(tmp_path_factory, "kc-browser") as served:
        yield served


def stored(app, game_id):
    with app.app_context(), reading() as session:
        game = session.get(Game, game_id)
        return game, kc.from_json(game.state_json)


def card_name(card_id: str) -> str:
    """A card's printed name, as an English page writes it."""
    return KINDS[INDEX[card_id]].name


def test_a_trade_offered_on_the_page_and_accepted_by_the_other_seat(site, page):
    """Trade: yellow fills in the offer form, previews and confirms; red, asked by its own
    page, accepts; the cards change hands."""
    app, base = site
    created, tokens = new_game(app, 3, "kc-browser-1", kind="knights-castles", start=0)
    game, state = stored(app, created.game_id)
    while not (state.step == "trade" and state.to_move == 0):  # to yellow's trade phase
        with app.app_context():
            submit_move(tokens[state.to_move], RULES.default_move(state), game.turn)
        game, state = stored(app, created.game_id)
    give = kc.view_for(state, 0).hand[0]
    ask = kc.view_for(state, 1).hand[-1]  # the test knows red's hand; yellow's page does not
    page.goto(f"{base}/seat/{tokens[0]}")
    form = page.locator("#offer-form")
    form.get_by_label("To").select_option("red")
    form.get_by_label("and cards").first.fill(give)
    form.locator('input[name="ask_cards"]').fill(ask)
    form.get_by_role("button", name="Preview the offer").click()
    sync_api.expect(page.get_by_role("heading", name="Confirm your move")).to_be_visible()
    offer = f"offer red: {give} for {ask}"
    assert offer in page.locator("code").first.inner_text()
    page.screenshot(path=SHOTS / "kc-offer-preview.png", full_page=True)
    page.get_by_role("button", name="Confirm this move").click()
    page.wait_for_load_state()
    sync_api.expect(page.get_by_text("Waiting for").first).to_be_visible()

    page.goto(f"{base}/seat/{tokens[1]}")
    # red sees the offer, in words
    words = f"Open offer from yellow to red: {card_name(give)} for {card_name(ask)}."
    sync_api.expect(page.get_by_text(words).first).to_be_visible()
    page.get_by_role("button", name="accept", exact=True).click()
    sync_api.expect(page.get_by_role("heading", name="Confirm your move")).to_be_visible()
    page.get_by_role("button", name="Confirm this move").click()
    page.wait_for_load_state()
    page.screenshot(path=SHOTS / "kc-accepted.png", full_page=True)
    _, after = stored(app, created.game_id)
    assert kc.view_for(after, 0).hand.count(ask) == kc.view_for(state, 0).hand.count(ask) + 1
    assert kc.view_for(after, 1).hand.count(give) == kc.view_for(state, 1).hand.count(give) + 1
    with app.app_context(), reading() as session:
        log = [(r.seat, r.notation) for r in session.exec(
            select(MoveRecord).where(MoveRecord.game_id == created.game_id)
            .order_by(MoveRecord.number)).all()]
    assert log[-2:] == [(0, offer), (1, "accept")]
