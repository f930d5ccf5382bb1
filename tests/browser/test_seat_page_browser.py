"""The seat page in a real browser (Debian's chromium through Playwright): Enter submits the
form it is pressed in, the action panel holds the next step and its errors beside the map at
1280 px and above it at 390 px, the map zooms in its own frame, and the preview speaks of the
future and shows the map as it will be. Screenshots go to tests/artifacts/screenshots/."""

from __future__ import annotations

import pytest
from browser_support import (
    PHONE,
    SHOTS,
    monastery_move,
    require_browser,
    site_with_admin,
)

sync_api = require_browser()

from server import game_state, new_game, play_moves

import engine

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

WIDE = {"width": 1280, "height": 900}


@pytest.fixture(scope="module")
def site(tmp_path_factory, database):
    with site_with_admin(tmp_path_factory, "seat-page") as served:
        yield served


def _open_seat(site, page, seed: str) -> engine.Place:
    """A new game's first seat page; returns a monastery placement it may make."""
    app, base = site
    created, tokens = new_game(app, 3, seed, start=0)
    _, state = game_state(app, created.game_id)
    page.goto(f"{base}/seat/{tokens[0]}")
    return monastery_move(state)


def _previewed(page, move) -> None:
    sync_api.expect(page.get_by_role("heading", name="Confirm your move")).to_be_visible()
    assert page.locator("#action code").first.inner_text() == str(move)


def _no_page_overflow(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    inner = page.evaluate("window.innerWidth")
    assert width <= inner, f"the page is {width} px wide in a {inner} px window"


def test_enter_in_the_typed_move_previews_that_move(site, page):
    """Enter in "Or type the move" submits that form, not the placement form above it."""
    move = _open_seat(site, page, "enter-1")
    box = page.get_by_label("Move in the notation")
    box.fill(str(move))
    box.press("Enter")
    _previewed(page, move)


def test_enter_in_the_placement_form_previews_the_placement(site, page):
    """Enter in a card count submits the placement form, with its own button's action."""
    move = _open_seat(site, page, "enter-2")
    form = page.locator("#place-form")
    form.locator("select[name=country]").select_option(move.country)
    form.locator("select[name=piece1]").select_option(move.pieces[0])
    count = form.locator(f"input[name=cards_{move.cards[0]}]")
    count.fill(str(len(move.cards)))
    count.press("Enter")
    _previewed(page, move)


def test_a_typing_mistake_is_told_in_the_action_panel(site, page):
    """The error stands in the panel that holds the form, with what was typed kept."""
    app, base = site
    _created, tokens = new_game(app, 3, "enter-3", start=0)
    page.goto(f"{base}/seat/{tokens[0]}")
    box = page.get_by_label("Move in the notation")
    box.fill("XX Nowhere: nothing")
    box.press("Enter")
    error = page.locator("#action [role=alert]")
    sync_api.expect(error).to_contain_text("not a move")
    assert page.get_by_label("Move in the notation").input_value() == "XX Nowhere: nothing"
    assert error.bounding_box()["y"] < WIDE["height"], "the error is in sight"


@pytest.mark.parametrize("viewport,name", [(WIDE, "1280"), (PHONE, "390")])
def test_the_next_step_stays_in_the_panel_at_the_top(site, sized, viewport, name):
    """Preview, Change it, Confirm, then the draw buttons: all in the panel, in sight."""
    app, base = site
    created, tokens = new_game(app, 4, f"panel-{name}", start=0)
    play_moves(app, tokens, 1, game_id=created.game_id,
               pick=lambda legal: next(m for m in legal if isinstance(m, engine.Exchange)))
    play_moves(app, tokens, 1, game_id=created.game_id)  # its draw; seat 1 is to move
    _, state = game_state(app, created.game_id)
    seat = state.current
    move = monastery_move(state)
    page = sized(viewport)
    page.goto(f"{base}/seat/{tokens[seat]}")
    _no_page_overflow(page)
    panel = page.locator("#action")
    map_box = page.locator(".map-area").bounding_box()
    panel_box = panel.bounding_box()
    if viewport is WIDE:
        assert panel_box["x"] + panel_box["width"] <= map_box["x"], "the map is beside the panel"
        assert map_box["y"] < viewport["height"] / 2
    else:
        assert map_box["y"] >= panel_box["y"] + panel_box["height"], "the map is below"
    page.screenshot(path=SHOTS / f"seat-page-{name}.png", full_page=True)

    page.get_by_label("Move in the notation").fill(str(move))
    page.get_by_role("button", name="Preview", exact=True).click()
    sync_api.expect(page.get_by_role("heading", name="Confirm your move")).to_be_visible()
    _no_page_overflow(page)
    text = page.locator("#action").inner_text()
    assert "You will play" in text and "Nothing has happened yet" in text
    assert " played " not in text and " placed " not in text, "the preview speaks of the future"
    ringed = page.locator(f'svg [data-field="{move.pieces[0]}"][data-new="true"]')
    sync_api.expect(ringed).to_have_count(1)
    assert ringed.get_attribute("data-owner") == state.players[seat], "the map as it will be"
    page.screenshot(path=SHOTS / f"seat-preview-{name}.png", full_page=True)

    page.get_by_role("button", name="Change it").click()
    sync_api.expect(page.get_by_role("heading", name="Your move")).to_be_visible()
    assert page.get_by_label("Move in the notation").input_value() == str(move)
    assert page.evaluate("location.hash") == "#action"
    page.get_by_role("button", name="Preview", exact=True).click()
    page.get_by_role("button", name="Confirm this move").click()

    draw = page.locator("#action").get_by_role("button", name="Draw the top card of the deck")
    sync_api.expect(draw).to_be_visible()
    top = draw.bounding_box()["y"]
    assert top < viewport["height"], f"the draw button is at {top} px, out of sight"
    page.screenshot(path=SHOTS / f"seat-page-draw-{name}.png", full_page=False)
    while page.get_by_role("button", name="Draw the top card of the deck").count():
        page.get_by_role("button", name="Draw the top card of the deck").click()
        page.wait_for_load_state()
    _, after = game_state(app, created.game_id)
    assert after.current != seat and after.phase == "play"


def test_the_map_zooms_in_its_own_frame_on_a_phone(site, sized):
    """At 390 px the page does not overflow; enlarging the map scrolls the map's frame."""
    app, base = site
    _created, tokens = new_game(app, 3, "zoom", start=0)
    page = sized(PHONE)
    page.goto(f"{base}/seat/{tokens[0]}")
    frame = page.locator(".map-frame")
    assert frame.evaluate("f => f.scrollWidth <= f.clientWidth + 1")
    page.get_by_text("three times").click()
    _no_page_overflow(page)
    assert frame.evaluate("f => f.scrollWidth >= 2.5 * f.clientWidth")
    label_size = page.locator("svg .label").first.evaluate(
        "t => t.getBoundingClientRect().height")
    assert label_size >= 9, f"field names are {label_size} px high when enlarged"
    page.screenshot(path=SHOTS / "seat-page-390-zoomed.png", full_page=False)


def test_the_map_offers_each_way_of_paying_once(site, page):
    """A crest and a field clicked in either order offer each way of paying once, and the
    placement previews monastery first."""
    app, base = site
    created, tokens = new_game(app, 3, "once-click", start=0)

    def pair(state):
        return [m for m in engine.legal_moves(state) if isinstance(m, engine.Place)
                and len(m.pieces) == 2 and engine.ADVISOR in m.pieces
                and state.advisor_room(state.board.country(m.country).index) > 0]

    play_moves(app, tokens, 400, game_id=created.game_id,
               until=lambda state: state.phase == "play" and bool(pair(state)))
    _, state = game_state(app, created.game_id)
    moves = pair(state)
    assert moves, "some seat could place a monastery and an advisor"
    field, country = moves[0].pieces[0], moves[0].country
    ways = sorted({"".join(m.cards) for m in moves if m.pieces[0] == field})
    for clicks in ([f'[data-crest="{country}"]', f'[data-field="{field}"]'],
                   [f'[data-field="{field}"]', f'[data-crest="{country}"]']):
        page.goto(f"{base}/seat/{tokens[state.current]}")
        for selector in clicks:
            page.locator(f"svg {selector}.clickable").click()
        panel = page.locator("#map-choice")
        sync_api.expect(panel).to_contain_text(f"a monastery at {field}")
        offered = panel.get_by_role("radio").evaluate_all("rs => rs.map(r => r.value)")
        assert sorted(offered) == (ways if len(ways) > 1 else []), offered
        panel.get_by_role("button", name="Preview this placement").click()
        sync_api.expect(page.get_by_role("heading", name="Confirm your move")).to_be_visible()
        assert page.locator("#action code").first.inner_text().endswith(f"{field}, advisor")
