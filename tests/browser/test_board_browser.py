"""The board picture in a real browser (Debian's chromium through Playwright): a whole turn
played by clicking the map, the history view, the spectator page, and an axe-core check of the
seat page. Screenshots go to tests/artifacts/screenshots/ (git-ignored)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from browser_support import (
    ADMIN,
    PASSWORD,
    SHOTS,
    WAIT_MS,
    monastery_move,
    require_browser,
    site_with_admin,
)

sync_api = require_browser()

from server import game_state, new_game, play_moves

import engine

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

AXE = Path(__file__).resolve().parent.parent / "browser" / "node_modules" / "axe-core" / "axe.min.js"


def _axe() -> Path:
    """axe-core from the npm registry (`.ci/run` installs it; installed here when missing)."""
    if not AXE.exists():
        subprocess.run(["npm", "ci", "--prefix", str(AXE.parents[2]), "--no-audit", "--no-fund"],
                       check=True, capture_output=True, timeout=300)
    return AXE


@pytest.fixture(scope="module")
def site(tmp_path_factory, database):
    """(app, base URL): the app served on a free port, with an admin account; the links in
    the mail lead to this server."""
    with site_with_admin(tmp_path_factory, "board") as served:
        yield served


def test_a_whole_turn_is_played_by_clicking_the_map(site, page):
    """Click a field, preview, confirm, then draw with the buttons: the turn passes on."""
    app, base = site
    created, tokens = new_game(app, 3, "click-1", start=0)
    game, state = game_state(app, created.game_id)
    move = monastery_move(state)
    page.goto(f"{base}/seat/{tokens[0]}")
    page.locator(f'svg [data-field="{move.pieces[0]}"].clickable').click()
    panel = page.locator("#map-choice")
    sync_api.expect(panel).to_contain_text(f"a monastery at {move.pieces[0]}")
    page.screenshot(path=SHOTS / "seat-page-clicked.png", full_page=True)
    panel.get_by_role("button", name="Preview this placement").click()
    sync_api.expect(page.get_by_role("heading", name="Confirm your move")).to_be_visible()
    assert str(move) in page.locator("code").first.inner_text()
    page.get_by_role("button", name="Confirm this move").click()
    # The placement's page has loaded once its draw button shows (a count does not wait).
    sync_api.expect(page.get_by_role("button", name="Draw the top card of the deck")
                    .first).to_be_visible()
    while page.get_by_role("button", name="Draw the top card of the deck").count():
        page.get_by_role("button", name="Draw the top card of the deck").click()
        page.wait_for_load_state()
    game, after = game_state(app, created.game_id)
    assert after.current == 1 and game.turn >= 2
    owner = after.monasteries[after.board.field_named(move.pieces[0]).index]
    assert owner == 0, "the clicked field holds seat 0's monastery"
    sync_api.expect(page.locator(f'svg [data-field="{move.pieces[0]}"]')).to_have_attribute(
        "data-owner", after.players[0])


def test_a_crest_click_places_an_advisor_and_asks_which_cards(site, page):
    """Clicking a crest chooses an advisor; with several ways to pay the page asks which."""
    app, base = site
    created, tokens = new_game(app, 3, "click-2", start=0)

    def advisors(state):
        return [m for m in engine.legal_moves(state) if isinstance(m, engine.Place)
                and m.pieces == (engine.ADVISOR,)]

    # Advisors need monasteries in their country first: play on until the seat to move can.
    play_moves(app, tokens, 200, game_id=created.game_id,
               pick=lambda legal: next((m for m in legal if isinstance(m, engine.Place)
                                        and engine.ADVISOR not in m.pieces), legal[0]),
               until=lambda state: state.phase == "play" and bool(advisors(state)))
    _, state = game_state(app, created.game_id)
    places = advisors(state)
    assert places, "some seat could place an advisor within 200 moves"
    country = places[0].country
    ways = sorted({"".join(m.cards) for m in places if m.country == country})
    page.goto(f"{base}/seat/{tokens[state.current]}")
    page.locator(f'svg [data-crest="{country}"].clickable').click()
    panel = page.locator("#map-choice")
    sync_api.expect(panel).to_contain_text(f"an advisor in {country}")
    assert panel.get_by_role("radio").count() == (len(ways) if len(ways) > 1 else 0)
    panel.get_by_role("button", name="Preview this placement").click()
    sync_api.expect(page.get_by_role("heading", name="Confirm your move")).to_be_visible()


def test_the_click_panel_speaks_german_and_names_the_empty_country_rule(site, page):
    """On a German seat page the panel is German (issue 32, point 6), and two fields clicked in
    a country where nobody has built yet are refused for that reason, not for the cards."""
    from sqlmodel import select

    from pbem.ground.db import writing
    from pbem.ground.models import Seat

    app, base = site
    created, tokens = new_game(app, 3, "click-de", start=0)
    with app.app_context(), writing() as session:
        for seat in session.exec(select(Seat).where(Seat.game_id == created.game_id)):
            seat.language = "de"
            session.add(seat)
    __, state = game_state(app, created.game_id)
    move = monastery_move(state)
    country = next(c for c in state.board.countries if c.name == move.country)
    other = next(state.board.fields[f].name for f in country.fields
                 if state.board.fields[f].name != move.pieces[0])
    page.goto(f"{base}/seat/{tokens[0]}")
    page.locator(f'svg [data-field="{move.pieces[0]}"].clickable').click()
    panel = page.locator("#map-choice")
    sync_api.expect(panel).to_contain_text(f"Du hast ein Kloster in {move.pieces[0]} gewählt.")
    sync_api.expect(panel.get_by_role("button", name="Vorschau dieses Einsetzens")).to_be_visible()
    page.locator(f'svg [data-field="{other}"].clickable').click()
    sync_api.expect(panel).to_contain_text(f"In {move.country} hat noch niemand gebaut")
    assert "Dafür reichen deine Karten nicht" not in panel.inner_text()
    assert "You chose" not in panel.inner_text()


def test_the_keyboard_goes_on_from_the_map_and_the_cards_are_named(site, page):
    """Issue 43, point 9: a field chosen with the keyboard moves the focus on to what comes
    next (the Preview button was 77 Tab presses away, after the whole map), or to the choice
    of cards when there is one; the cards are named by colour and countries, not "O RR"."""
    app, base = site
    created, tokens = new_game(app, 3, "keys-1", start=0)
    _, state = game_state(app, created.game_id)
    move = monastery_move(state)
    card = state.board.card(move.cards[0])
    page.goto(f"{base}/seat/{tokens[0]}")
    page.locator(f'svg [data-field="{move.pieces[0]}"].clickable').focus()
    page.keyboard.press("Enter")
    panel = page.locator("#map-choice")
    sync_api.expect(panel).to_contain_text(f"1 × {card.colour} ({card.label})")
    focused = page.locator(":focus")
    sync_api.expect(focused).to_have_text("Preview this placement")
    page.screenshot(path=SHOTS / "seat-page-keyboard-choice.png", full_page=True)
    page.keyboard.press("Enter")
    sync_api.expect(page.get_by_role("heading", name="Confirm your move")).to_be_visible()

    # Where several ways of paying place the same piece, the focus goes to the choice.
    for n in range(40):
        created, tokens = new_game(app, 3, f"keys-ways-{n}", start=0)
        _, state = game_state(app, created.game_id)
        places = [m for m in engine.legal_moves(state) if isinstance(m, engine.Place)
                  and len(m.pieces) == 1 and m.pieces[0] != engine.ADVISOR]
        ways = {}
        for m in places:
            ways.setdefault(m.pieces[0], set()).add(m.cards)
        field = next((f for f, paid in ways.items() if len(paid) > 1), None)
        if field:
            break
    assert field, "a field with two ways of paying in one of 40 deals"
    page.goto(f"{base}/seat/{tokens[0]}")
    page.locator(f'svg [data-field="{field}"].clickable').focus()
    page.keyboard.press("Enter")
    sync_api.expect(page.locator(":focus")).to_have_attribute("type", "radio")
    labels = panel.locator("label").all_inner_texts()
    assert len(labels) == len(ways[field])
    for label in labels:
        assert " × " in label and "(" in label, labels
        assert not any(label.strip() == cards for cards in ways[field]), labels
    colours = {state.board.card(c).colour for cards in ways[field] for c in cards}
    assert all(any(colour in label for label in labels) for colour in colours), labels
    page.keyboard.press("Tab")
    sync_api.expect(page.locator(":focus")).to_have_text("Preview this placement")


def test_the_history_shows_the_board_after_any_move(site, page):
    """The spectator history replays the game: each move's board, with previous and next."""
    app, base = site
    created, tokens = new_game(app, 3, "history")
    play_moves(app, tokens, 6, game_id=created.game_id)
    game, _ = game_state(app, created.game_id)
    page.goto(f"{base}/watch/{game.watch_id}?at=2")
    svg = page.locator("svg.kk-board")
    sync_api.expect(svg).to_have_count(1)
    owners = sorted(svg.locator("[data-owner]").evaluate_all(
        "els => els.map(e => e.dataset.field)"))
    now = game_state(app, created.game_id)[1]
    state = engine.replay(now.players, game.seed, _notations(app, created.game_id)[:2],
                          start=game.start_seat)
    expected = sorted(state.board.fields[f].name for f, s in enumerate(state.monasteries)
                      if s != -1)
    assert owners == expected
    page.get_by_role("link", name="Next").first.click()
    assert "at=3" in page.url


def _notations(app, game_id):
    from sqlmodel import select

    from pbem.ground.db import reading
    from pbem.ground.models import MoveRecord

    with app.app_context(), reading() as session:
        return [r.notation for r in session.exec(select(MoveRecord).where(
            MoveRecord.game_id == game_id).order_by(MoveRecord.number))]


def test_the_spectator_page_holds_no_hand(site, page):
    """The public page shows the board and face-up cards but no seat's hand."""
    app, base = site
    created, tokens = new_game(app, 4, "spectator")
    play_moves(app, tokens, 5, game_id=created.game_id)
    game, state = game_state(app, created.game_id)
    page.goto(f"{base}/watch/{game.watch_id}")
    sync_api.expect(page.locator("svg.kk-board")).to_have_count(1)
    assert page.locator("svg .card.hand").count() == 0
    assert "Your hand" not in page.content()
    assert page.locator("svg .card.face-up").count() == len(state.face_up)
    page.screenshot(path=SHOTS / "spectator-page.png", full_page=True)


def test_the_seat_page_passes_axe_and_screenshots_are_kept(site, browser):
    """axe-core finds no serious or critical problem on the seat page (map included)."""
    app, base = site
    # The page's Content-Security-Policy rightly refuses injected scripts; axe is ours.
    context = browser.new_context(viewport={"width": 1100, "height": 900}, bypass_csp=True)
    context.set_default_timeout(WAIT_MS)
    page = context.new_page()
    created, tokens = new_game(app, 3, "axe", start=0)
    play_moves(app, tokens, 1, game_id=created.game_id)
    page.goto(f"{base}/seat/{tokens[0]}")
    page.add_script_tag(path=str(_axe()))
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    bad = [(v["id"], v["impact"], v["help"], len(v["nodes"])) for v in result["violations"]
           if v["impact"] in ("serious", "critical")]
    assert bad == [], bad
    page.screenshot(path=SHOTS / "seat-page.png", full_page=True)
    page.goto(f"{base}/admin/games/{created.game_id}")
    page.get_by_label("Email").fill(ADMIN)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    sync_api.expect(page.locator("svg.kk-board")).to_have_count(1)
    page.screenshot(path=SHOTS / "admin-game-board.png", full_page=True)
    context.close()


def test_the_html_mail_shows_its_board_picture_in_the_mailbox(site, page):
    """The HTML mail's PNG board (an inline part, cid:) shows in a browser on the mailbox page:
    the image loads, at the mail's width, and is the very PNG the mail holds."""
    from email import policy
    from email.parser import BytesParser

    from server import Mailbox

    app, base = site
    mailbox = Mailbox(app)
    mailbox.deliver()  # the module's earlier games' mail, so only this game's is new below
    before = set(mailbox.folder.glob("*.eml")) if mailbox.folder.is_dir() else set()
    new_game(app, 3, "mail-picture", start=0)
    mailbox.deliver()
    (path,) = [p for p in mailbox.folder.glob("*.eml")
               if p not in before and "p0@example.org" in p.read_text()]
    name = path.stem
    with path.open("rb") as f:
        mail = BytesParser(policy=policy.default).parse(f)
    (png,) = [p.get_content() for p in mail.walk() if p.get_content_type() == "image/png"]
    page.goto(f"{base}/mailbox/{name}/html")
    image = page.locator("img").first
    sync_api.expect(image).to_be_visible()
    loaded = image.evaluate("i => i.complete && i.naturalWidth")
    assert loaded == 800, "the browser decoded the attached 800 px PNG"
    assert image.evaluate("i => i.clientWidth") == 600, "shown at the width the mail asks"
    shown = page.request.get(image.evaluate("i => i.src"))
    assert shown.ok and shown.headers["content-type"] == "image/png" and shown.body() == png
    page.screenshot(path=SHOTS / "mail-html-picture.png", full_page=True)
    assert page.request.get(f"{base}/mailbox/{name}/part/no-such-part").status == 404
