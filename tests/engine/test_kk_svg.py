"""The board picture (kardinal_koenig.svg): valid SVG from the board data, showing exactly the view."""

from __future__ import annotations

import random
import re
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import replace
from importlib import resources
from pathlib import Path

import pytest

from engine import (
    ADVISOR,
    PLAYER_COLOURS,
    Place,
    apply_move,
    default_board,
    legal_moves,
    load_board,
    new_game,
    view_for,
)
from engine.errors import BoardError
from engine.kardinal_koenig.board import parse_board
from engine.kardinal_koenig.svg import (
    SvgOptions,
    _Grid,
    _layout,
    _project,
    board_svg,
    player_letter,
)

NS = {"s": "http://www.w3.org/2000/svg"}
ROOT = Path(__file__).resolve().parent.parent
BOARD = default_board()
BOARD_TEXT = resources.files("engine.kardinal_koenig").joinpath("data/kardinal-koenig.toml").read_text("utf-8")


def played(plies: int, seed: int = 5, players: int = 4):
    """A seeded game after `plies` moves, placing advisors whenever it can so crests fill up."""
    state = new_game(players, seed)
    chooser = random.Random(f"svg:{seed}")
    for _ in range(plies):
        if state.is_over:
            break
        moves = legal_moves(state)
        with_advisor = [m for m in moves if isinstance(m, Place) and ADVISOR in m.pieces]
        pool = with_advisor if with_advisor and chooser.random() < 0.4 else moves
        state = apply_move(state, chooser.choice(pool))
    return state


@pytest.fixture(scope="module")
def midgame():
    state = played(70)
    assert len([s for s in state.monasteries if s >= 0]) >= 8
    assert any(any(counts) for counts in state.advisors)
    return state


def parse(svg: str) -> ET.Element:
    assert not svg.startswith("<?xml")
    return ET.fromstring(svg)


def classes(element: ET.Element) -> set[str]:
    return set(element.get("class", "").split())


def having(root: ET.Element, cls: str) -> list[ET.Element]:
    return [e for e in root.iter() if cls in classes(e)]


def texts(element: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in element.iter(f"{{{NS['s']}}}text")]


def test_player_letter():
    assert [player_letter(c) for c in PLAYER_COLOURS] == ["Y", "R", "G", "P", "B"]
    assert player_letter("yellow") == "Y"


def test_plain_map_parses_and_holds_the_whole_board():
    root = parse(board_svg(BOARD))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("role") == "img"
    assert re.fullmatch(r"0 0 1000 [\d.]+", root.get("viewBox"))
    ids = {e.get("id") for e in root.iter() if e.get("id")}
    for ref in root.get("aria-labelledby").split():
        assert ref in ids
    assert root.find("s:title", NS).text == BOARD.name
    assert root.find("s:desc", NS).text
    assert root.find("s:style", NS) is not None

    countries = [e for e in having(root, "country") if e.tag.endswith("path")]
    assert len(countries) == 9
    assert [e.get("data-country") for e in countries] == [c.name for c in BOARD.countries]
    assert all(e.get("d", "").startswith("M") for e in countries)
    fills = {e.get("data-country"): e.get("fill") for e in countries}
    by_card: dict[str, set[str]] = {}
    for country in BOARD.countries:
        by_card.setdefault(country.card, set()).add(fills[country.name])
    assert all(len(f) == 1 for f in by_card.values()), "one tint per card colour"
    assert len({f for fs in by_card.values() for f in fs}) == len(BOARD.cards)

    roads = having(root, "road")
    assert len(roads) == len(BOARD.roads) == 68
    assert all(r.tag.endswith("line") for r in roads)

    fields = having(root, "field")
    assert [f.get("data-field") for f in fields] == [f.name for f in BOARD.fields]
    all_text = texts(root)
    for field in BOARD.fields:
        assert field.name in all_text
    for country in BOARD.countries:
        assert country.name in all_text


def test_alliances_are_numbered_squares_and_only_sea_ones_are_dashed():
    root = parse(board_svg(BOARD))
    squares = having(root, "alliance")
    assert len(squares) == 15
    assert [int(texts(a)[0]) for a in squares] == list(range(1, 16))
    assert all(a.find("s:rect", NS) is not None for a in squares)
    sea = {a.number for a in BOARD.alliances if a.sea}
    assert len(sea) == 6
    assert {int(a.get("data-alliance")) for a in squares if "sea" in classes(a)} == sea
    dashed = having(root, "sea-link")
    assert sorted(int(d.get("data-alliance")) for d in dashed) == sorted(sea)
    for line in dashed:
        assert len(line.get("points").split()) >= 2


def test_alliance_squares_sit_on_borders_or_in_the_water_between():
    layout = _layout(BOARD)
    points, height = _project(BOARD)
    grid = _Grid(BOARD, points, height)
    placed = []
    for alliance, spot in zip(BOARD.alliances, layout.alliances):
        pair = {BOARD.country(c).index for c in alliance.countries}
        around = {grid.at(spot.x + dx, spot.y + dy) for dx in (-14, 0, 14) for dy in (-14, 0, 14)}
        if alliance.sea:
            assert grid.at(spot.x, spot.y) == -1, alliance
            assert spot.link[1] == (spot.x, spot.y)
            assert {grid.at(*spot.link[0]), grid.at(*spot.link[2])} == pair, alliance
        else:
            assert pair <= around, alliance
            assert spot.link == ()
        for x, y in placed:  # no two squares overlap
            assert abs(spot.x - x) >= 19 or abs(spot.y - y) >= 19
        placed.append((spot.x, spot.y))


def test_monasteries_show_owner_colour_and_letter(midgame):
    view = view_for(midgame, None)
    root = parse(board_svg(BOARD, view))
    owners = dict(view.monasteries)
    for field in having(root, "field"):
        name = field.get("data-field")
        if name in owners:
            colour = owners[name]
            assert "monastery" in classes(field)
            assert field.get("data-owner") == colour
            circle = field.find("s:circle", NS)
            assert "fill:#" in circle.get("style")
            marks = [t for t in field.iter(f"{{{NS['s']}}}text") if "mark" in classes(t)]
            assert [m.text for m in marks] == [player_letter(colour)]
        else:
            assert "monastery" not in classes(field)
            assert field.get("data-owner") is None
    fills = {f.get("data-owner"): f.find("s:circle", NS).get("style")
             for f in having(root, "monastery")}
    assert len(set(fills.values())) == len(fills)  # one fill per colour


def test_advisor_counts_are_shown_on_the_crests(midgame):
    view = view_for(midgame, 0)
    root = parse(board_svg(BOARD, view))
    crests = {c.get("data-crest"): c for c in having(root, "crest")}
    assert list(crests) == [c.name for c in BOARD.countries]
    for country, counts in view.advisors:
        markers = having(crests[country], "advisor")
        expected = [(view.players[s], n) for s, n in enumerate(counts) if n]
        assert [(m.get("data-colour"), int(m.get("data-count"))) for m in markers] == expected
        for marker, (colour, n) in zip(markers, expected):
            assert texts(marker) == [f"{player_letter(colour)}{n}"]
    assert any(having(c, "advisor") for c in crests.values())


def test_crests_show_the_card_colour(midgame):
    root = parse(board_svg(BOARD))
    for crest in having(root, "crest"):
        country = BOARD.country(crest.get("data-crest"))
        assert country.card in texts(crest)
        assert BOARD.card(country.card).colour in crest.find("s:title", NS).text


def test_interactive_marks_exactly_the_free_fields_and_crests(midgame):
    view = view_for(midgame, midgame.current)
    root = parse(board_svg(BOARD, view, SvgOptions(interactive=True)))
    occupied = {name for name, _ in view.monasteries}
    clickable = having(root, "clickable")
    fields = [e for e in clickable if e.get("data-field")]
    crests = [e for e in clickable if e.get("data-crest")]
    assert len(fields) + len(crests) == len(clickable)
    assert {e.get("data-field") for e in fields} == {f.name for f in BOARD.fields} - occupied
    assert {e.get("data-crest") for e in crests} == {c.name for c in BOARD.countries}
    for element in clickable:
        assert element.get("tabindex") == "0"
        assert element.get("role") == "button"
    for element in fields:
        field = BOARD.field_named(element.get("data-field"))
        assert element.get("data-country") == field.country
        assert "field" in classes(element)
        assert element.get("aria-label") == f"Place a monastery at {field.name} ({field.country})"
    for element in crests:
        assert element.get("aria-label") == f"Place an advisor in {element.get('data-crest')}"
    for element in having(root, "monastery"):
        assert "clickable" not in classes(element)
        assert element.get("tabindex") is None and element.get("role") is None

    still = parse(board_svg(BOARD, view))
    assert not having(still, "clickable")
    assert not [e for e in still.iter() if e.get("tabindex") or e.get("role") == "button"]


def test_a_spectator_sees_no_hand_and_a_seat_exactly_its_own(midgame):
    spectator = view_for(midgame, None)
    root = parse(board_svg(BOARD, spectator))
    assert not having(root, "hand")
    assert [c.get("data-card") for c in having(root, "card")] == list(spectator.face_up)
    assert "hand" not in root.find("s:desc", NS).text.lower()
    for seat in midgame.seats:
        view = view_for(midgame, seat)
        root = parse(board_svg(BOARD, view))
        hand = [c for c in having(root, "card") if "hand" in classes(c)]
        assert [c.get("data-card") for c in hand] == list(view.hand)
        face_up = [c for c in having(root, "card") if "face-up" in classes(c)]
        assert [c.get("data-card") for c in face_up] == list(view.face_up)
        for card in hand + face_up:
            colour = BOARD.card(card.get("data-card"))
            assert colour.colour in texts(card)
            assert all(country in texts(card) for country in colour.countries)


def test_scores_are_shown_per_player(midgame):
    view = view_for(midgame, 1)
    root = parse(board_svg(BOARD, view))
    rows = having(root, "score")
    assert [(r.get("data-colour"), int(r.get("data-score"))) for r in rows] == \
        list(zip(view.players, view.scores))
    for row, colour in zip(rows, view.players):
        assert player_letter(colour) in texts(row)


def test_all_text_is_escaped():
    text = (BOARD_TEXT.replace('name = "Kardinal', 'name = "<b>&amp; Kardinal')
            .replace('colour = "red"', "colour = \"red<&>'\\\"\"")
            .replace('"Mainz"', "\"Mainz's\""))
    board = parse_board(tomllib.loads(text))
    with pytest.raises(BoardError):  # the board format itself refuses <&> in field names
        parse_board(tomllib.loads(BOARD_TEXT.replace('"Mainz"', '"Mainz <&>"')))
    # ...so, to prove the picture escapes them anyway, rename fields behind the validator's back
    odd = replace(board, fields=tuple(replace(f, name=f'{f.name} <&> "{i}"')
                                      for i, f in enumerate(board.fields)))
    state = new_game(4, 3, board=board)
    view = view_for(state, 0)
    for picture in (board_svg(board, view, SvgOptions(title="<script>&")),
                    board_svg(odd, None, SvgOptions(interactive=True))):
        root = parse(picture)
        assert root is not None
    root = parse(board_svg(board, view, SvgOptions(title="<script>&", interactive=True)))
    assert root.find("s:title", NS).text == "<script>&"
    assert "Mainz's" in texts(root)
    assert any(e.get("aria-label") == "Place a monastery at Mainz's (Franken)" for e in root.iter())
    red = [c for c in having(root, "card") if c.get("data-card") == "R"]
    assert any("red<&>'\"" in texts(c) for c in red) or "R" not in view.face_up + view.hand
    root = parse(board_svg(odd, None, SvgOptions(interactive=True)))
    assert {e.get("data-field") for e in having(root, "field")} == {f.name for f in odd.fields}
    assert all(f.name in texts(root) for f in odd.fields)
    assert "<b>&amp; Kardinal" in root.find("s:title", NS).text


def test_the_small_test_board_draws_its_own_map():
    board = load_board(ROOT / "data" / "test-board.toml")
    state = new_game(3, 1, board=board)
    for view in (None, view_for(state, None), view_for(state, 2)):
        root = parse(board_svg(board, view, SvgOptions(interactive=view is not None)))
        assert len(having(root, "field")) == len(board.fields) == 4
        assert len([e for e in having(root, "country") if e.tag.endswith("path")]) == 2
        assert len(having(root, "road")) == 1
        assert len(having(root, "alliance")) == 1
        assert not having(root, "sea-link")
        assert "Stift Sankt Florian bei Linz" in texts(root)


def test_rendering_is_deterministic(midgame):
    view = view_for(midgame, 2)
    first = board_svg(BOARD, view, SvgOptions(interactive=True))
    assert board_svg(BOARD, view, SvgOptions(interactive=True)) == first
    _layout.cache_clear()
    assert board_svg(BOARD, view, SvgOptions(interactive=True)) == first
    fresh = parse_board(tomllib.loads(BOARD_TEXT))  # another Board object, the same data
    assert board_svg(fresh, view, SvgOptions(interactive=True)) == first


def test_ids_are_unique_and_prefixed(midgame):
    one = parse(board_svg(BOARD, view_for(midgame, 0)))
    two = parse(board_svg(BOARD, view_for(midgame, 1)))
    ids_one = [e.get("id") for e in one.iter() if e.get("id")]
    ids_two = [e.get("id") for e in two.iter() if e.get("id")]
    assert len(ids_one) == len(set(ids_one))
    assert not set(ids_one) & set(ids_two)
    prefix = one.get("id")
    assert all(i == prefix or i.startswith(prefix + "-") for i in ids_one)
    mine = parse(board_svg(BOARD, None, SvgOptions(id_prefix="left")))
    assert mine.get("id") == "left" and mine.get("aria-labelledby") == "left-title left-desc"


def test_write_a_midgame_picture_to_look_at(midgame):
    """tests/artifacts/board.svg (git-ignored): open it, or turn it into a PNG with
    chromium --headless --screenshot=board.png --window-size=1000,1236 file://.../board.svg"""
    out = ROOT / "artifacts"
    out.mkdir(exist_ok=True)
    view = view_for(midgame, midgame.current)
    picture = board_svg(BOARD, view, SvgOptions(title="A game of four after 70 moves"))
    parse(picture)
    (out / "board.svg").write_text(picture, encoding="utf-8")


def _hls(hex_colour: str) -> tuple[float, float, float]:
    import colorsys

    return colorsys.rgb_to_hls(*(int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)))


def _luminance(hex_colour: str) -> float:
    channels = [int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def test_each_country_is_a_light_tint_of_its_card_colour():
    """Frankreich (purple cards) is light purple, Bayern and Burgund (green) light green, and
    so on: the hue of the card, light enough that the dark labels read at 7:1 or better; the
    crests keep the full card colour and its letter for colour-blind readers."""
    from engine.kardinal_koenig.svg import CARD_HEX

    root = parse(board_svg(BOARD))
    countries = [e for e in having(root, "country") if e.tag.endswith("path")]
    for element in countries:
        country = BOARD.country(element.get("data-country"))
        card = BOARD.card(country.card)
        fill = element.get("fill")
        hue, lightness, _ = _hls(fill)
        card_hue = _hls(CARD_HEX[card.colour])[0]
        assert min(abs(hue - card_hue), 1 - abs(hue - card_hue)) < 0.02, (country.name, fill)
        assert lightness >= 0.8, (country.name, fill)
        contrast = (_luminance(fill) + 0.05) / (_luminance("#1d1d1d") + 0.05)
        assert contrast >= 7, (country.name, fill, contrast)
        crest = root.find(f".//s:g[@data-crest='{country.name}']", NS)
        assert crest.find("s:path", NS).get("fill") == CARD_HEX[card.colour]
        assert next(t.text for t in crest.findall("s:text", NS)) == card.code
