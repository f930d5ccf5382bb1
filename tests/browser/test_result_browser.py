"""The game-over result table in a real browser (Debian's chromium through Playwright): at
1280 and 1920 px every player's column is in sight in the seat page's panel (the whole width
once the game is over) without a sideways scroll and no sentence is cut; at 390 px the page
does not scroll sideways (the table may, in its own box). Four and five players, both games,
names as long as players give them. Screenshots go to tests/artifacts/screenshots/."""

from __future__ import annotations

import pytest
from browser_support import PHONE, SHOTS, require_browser, site_with_admin

sync_api = require_browser()

from server import finish_game

from pbem.services.creating import create_game
from pbem.services.players import parse_player

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

NAMES = ["Maximiliane Oberhuber", "Bartholomäus Zwiebelmeier", "Guadalupe Fernández-Castillo",
         "Konstantin Wolkenstein", "Annemarie Schwarzenberger"]
VIEWPORTS = {"1280": {"width": 1280, "height": 900}, "1920": {"width": 1920, "height": 1080},
             "390": PHONE}


@pytest.fixture(scope="module")
def site(tmp_path_factory, database):
    with site_with_admin(tmp_path_factory, "result-table") as served:
        yield served


def finished(app, kind: str, players: int, seed: str) -> str:
    """A finished game of `players` with long names; returns the first seat's token."""
    with app.app_context():
        created = create_game([parse_player(f"{NAMES[i]} <p{i}@example.org>")
                               for i in range(players)], seed, kind=kind)
    finish_game(app, created.game_id, seed)
    return created.links[0][2].rsplit("/", 1)[1]


# Elements in the result whose content is wider than their box (a cut or scrolled sentence).
OVERFLOWING = """(root) => [root, ...root.querySelectorAll('*')]
    .filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible'
                 || e.scrollWidth > e.clientWidth + 1 && e.tagName === 'TABLE')
    .map(e => e.tagName + '.' + e.className + ' ' + e.scrollWidth + '>' + e.clientWidth)"""


@pytest.mark.parametrize("kind", ["kardinal-koenig", "knights-castles"])
@pytest.mark.parametrize("players", [4, 5])
@pytest.mark.parametrize("name", list(VIEWPORTS))
def test_the_result_table_fits(site, sized, kind, players, name):
    app, base = site
    token = finished(app, kind, players, f"result-{kind}-{players}-{name}")
    viewport = VIEWPORTS[name]
    page = sized(viewport)
    page.goto(f"{base}/seat/{token}")
    table = page.locator("table.result").first
    sync_api.expect(table).to_be_visible()
    page.screenshot(path=SHOTS / f"result-{kind}-{players}-{name}.png", full_page=True)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= viewport["width"], f"the page is {width} px wide in {viewport['width']} px"
    panel = page.locator("#action")
    title = page.locator("#result-title").bounding_box()
    assert title["x"] + title["width"] <= viewport["width"], "the title runs out of sight"
    for cell in table.locator("td, th").all():
        assert cell.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), cell.inner_text()
    if name == "390":  # every column in sight, the winner's too: no scroll in its own box
        heads = table.locator("thead th")
        assert heads.count() == players + 1
        winner = table.locator("thead th", has_text="winner").first
        sync_api.expect(winner).to_be_in_viewport()
        for i in range(heads.count()):
            head = heads.nth(i).bounding_box()
            assert 0 <= head["x"] and head["x"] + head["width"] <= viewport["width"], \
                f"column {i} is outside the screen"
        box = table.locator("xpath=..")
        assert box.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "the table scrolls"
        return
    assert panel.evaluate(OVERFLOWING) == [], "something in the panel scrolls or is cut"
    box = panel.bounding_box()
    heads = table.locator("thead th")
    assert heads.count() == players + 1
    for i in range(heads.count()):
        head = heads.nth(i).bounding_box()
        assert box["x"] <= head["x"] and head["x"] + head["width"] <= box["x"] + box["width"], \
            f"column {i} is outside the panel"


def test_my_games_fits_a_phone(site, sized):
    """Issue 43, point 4: the "my games" page, which every mail links, was 416 px wide at 390
    px (its table 489 px) with the Open buttons off the screen: at 390 px it does not scroll
    sideways and every game's Open button is in sight."""
    import re

    from server import Mailbox, text_of

    app, base = site
    email = "phone@example.org"
    with app.app_context():
        for i, (kind, players) in enumerate([("kardinal-koenig", 5), ("knights-castles", 4),
                                             ("knights-castles", 5)]):
            addresses = [email] + [f"m{j}@example.org" for j in range(1, players)]
            created = create_game([parse_player(f"{NAMES[j]} <{addresses[j]}>")
                                   for j in range(players)], f"phone-{i}", kind=kind)
    finish_game(app, created.game_id, "phone-2")
    mine = [m for message in Mailbox(app).to(email)
            for m in re.findall(r"https?://\S+?(/me/[A-Za-z0-9_-]+)", text_of(message))]
    page = sized(PHONE)
    page.goto(base + mine[-1])
    buttons = page.locator("#my-games button")
    sync_api.expect(buttons.first).to_be_visible()
    page.screenshot(path=SHOTS / "my-games-390.png", full_page=True)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page is {width} px wide in {PHONE['width']} px"
    assert buttons.count() == 3
    for i in range(buttons.count()):
        box = buttons.nth(i).bounding_box()
        assert 0 <= box["x"] and box["x"] + box["width"] <= PHONE["width"], f"Open {i} is cut"
    table = page.locator("#my-games")
    assert table.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    # Each game's card still says which game, whose move and the result.
    text = table.inner_text()
    assert "Kardinal & König" in text and "The game is over" in text and "place" in text
