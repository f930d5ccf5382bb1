"""The mail's board picture (pbem.games.picture): the bare board rendered once per size, a position's
pieces drawn over a copy of it, in the game's palette of 256 colours, the same to the eye as
rendering the whole SVG."""

from __future__ import annotations

import io
import random
import re
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from flask_babel import force_locale
from PIL import Image, ImageChops

from pbem import create_app
from pbem.games import picture, rules_for
from pbem.ground.kept import Kept

KIND = "kardinal-koenig"
COLOURS = ["yellow", "red", "green", "blue", "purple"]


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    app = create_app({"INSTANCE_PATH": str(tmp_path_factory.mktemp("instance")),
                      "SECRET_KEY": "picture"})
    with app.app_context():
        yield app


def position(players: int, plies: int, seed: int):
    """A seeded game after `plies` random legal moves (monasteries, advisors, scores)."""
    rules = rules_for(KIND)
    state = rules.new_state(COLOURS[:players], f"picture-{seed}", None)
    chooser = random.Random(seed)
    for _ in range(plies):
        if rules.to_move(state) is None:
            break
        state = rules.apply(state, rules.parse(state, chooser.choice(rules.legal(state))))
    return state


def whole(state, language: str) -> Image.Image:
    """The picture as it was made before it came in layers: the whole SVG through resvg."""
    rules = rules_for(KIND)
    with force_locale(language):
        svg = rules.board_picture(state, None, False)
    return Image.open(io.BytesIO(picture.render(svg, picture.WIDTH))).convert("RGB")


@pytest.mark.parametrize("players, plies, seed, language", [
    (3, 0, 1, "en"), (3, 60, 2, "en"), (4, 90, 3, "de"), (5, 45, 4, "es"), (4, 140, 5, "en")])
def test_the_layered_picture_looks_like_the_whole_one(app, players, plies, seed, language):
    """Pixel by pixel against the whole SVG rendered at once: the same size, and only the
    anti-aliasing of a few edges differs (text is placed on whole pixels per piece)."""
    state = position(players, plies, seed)
    png = picture.png_of(KIND, rules_for(KIND).dumps(state), language)
    layered = Image.open(io.BytesIO(png))
    assert layered.format == "PNG"
    assert layered.mode == "P", "an 8-bit palette PNG"
    layered = layered.convert("RGB")
    expected = whole(state, language)
    assert layered.size == expected.size
    histogram = ImageChops.difference(layered, expected).convert("L").histogram()
    pixels = expected.size[0] * expected.size[1]
    assert sum(histogram[33:]) < pixels * 0.01, "more than 1% of the pixels look different"
    assert sum(level * count for level, count in enumerate(histogram)) / pixels < 1.0


def palette_error(palette: picture.Palette, image: Image.Image):
    """Each pixel's error when `image` (RGB) is quantized with `palette`: its channels' greatest
    difference."""
    quantized = np.asarray(palette.image(palette.indices(image)).convert("RGB"), dtype=np.int16)
    return np.abs(quantized - np.asarray(image, dtype=np.int16)).max(axis=2)


def within_bound(error) -> bool:
    """The palette's error on a picture is not seen: under a third of a level on average, one
    pixel in a thousand off by more than 24 levels (anti-aliased edges), none by more than 40."""
    return error.mean() < 0.33 and np.percentile(error, 99.9) <= 24 and error.max() <= 40


@pytest.mark.parametrize("players, plies, seed, language", [
    (3, 0, 1, "en"), (4, 90, 3, "de"), (5, 45, 4, "es"), (5, 200, 6, "en")])
def test_the_palette_picture_is_the_rgb_one_within_a_small_error(app, players, plies, seed,
                                                                  language):
    """The game's palette quantizes a position's RGB picture within the bound, and adds little
    to the layers' own difference from the whole SVG rendered at once; a wrong palette (the
    bare board's colours alone, without the pieces') is caught by both."""
    state = position(players, plies, seed)
    rgb = pasted(state, language)
    png = picture.png_of(KIND, rules_for(KIND).dumps(state), language)
    expected = np.asarray(whole(state, language), dtype=np.int16)
    layers_error = np.abs(np.asarray(rgb, dtype=np.int16) - expected).max(axis=2).mean()
    shown = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)
    assert within_bound(palette_error(picture._palette(KIND), rgb))
    assert np.abs(shown - expected).max(axis=2).mean() < layers_error + 0.4
    with force_locale(language):
        room, _ = rules_for(KIND).picture_pieces(state, picture.WIDTH / picture.BOARD_UNITS)
    wrong = picture.Palette.of_sample(picture._board(KIND, language, room).image)
    assert not within_bound(palette_error(wrong, rgb))
    quantized = wrong.image(wrong.indices(rgb)).convert("RGB")
    assert np.abs(np.asarray(quantized, dtype=np.int16) - expected).max(axis=2).mean() \
        >= layers_error + 0.4


def test_the_kept_palette_holds_every_colour_of_the_sample(app):
    """pbem.games.picture_palettes is the palette of the game's sample (`picture_samples`: every
    player colour, every card colour face up): each colour of over FLAT_PIXELS of the sample's
    pixels (the fills of countries, pieces, cards, panel) is in it exactly, and each sample
    picture is within the bound (else write the module anew: python3 -m pbem.games.picture)."""
    kept = picture._palette(KIND)
    rules = rules_for(KIND)
    samples = rules.picture_samples()
    assert {card.colour for card in rules.board.cards} <= {
        rules.board.find_card(code).colour for state in samples for code in state.face_up}
    assert all(set(rules.colours) <= set(state.players) for state in samples)
    sample = picture.sample(KIND)
    shown, counts = np.unique(picture._packed(np.asarray(sample)).reshape(-1),
                              return_counts=True)
    flat = set(shown[counts > picture.FLAT_PIXELS].tolist())
    assert len(flat) > 40, "the fills of the board, the pieces and the cards"
    colours = picture._packed(np.frombuffer(kept.rgb, dtype=np.uint8).reshape(-1, 3))
    assert flat <= set(colours.tolist()), sorted(f"{colour:06x}" for colour in flat
                                                 - set(colours.tolist()))
    for top in range(0, sample.size[1], 1000):
        assert within_bound(palette_error(kept, sample.crop((0, top, picture.WIDTH,
                                                             top + 1000))))


def test_a_position_costs_only_its_pieces(app, monkeypatch):
    """The bare board is rendered once for every position with the same panel, in every
    language (its words are in titles a picture does not show: the names on the map are the
    board's own); the pieces of a position (a monastery, advisors, a score, a card) are kept
    and shared."""
    picture._board.cache_clear()
    picture._bare_board.cache_clear()
    picture._rendered.cache_clear()
    picture._piece.cache_clear()
    monkeypatch.setattr(picture, "_drawn", Kept(picture.DRAWN_KEPT))  # none drawn in place yet
    rules = rules_for(KIND)
    states = [position(4, plies, 10 + plies) for plies in (20, 40, 60)]
    pngs = {picture.png_of(KIND, rules.dumps(state), "en") for state in states}
    assert len(pngs) == 3, "three positions, three pictures"
    assert picture._board.cache_info().misses == 1
    pieces = picture._piece.cache_info()
    assert pieces.hits > 0, "the same piece is not drawn twice"
    with force_locale("de"):
        german = picture.png_of(KIND, rules.dumps(position(4, 30, 7)), "de")
    assert picture._board.cache_info().misses == 2
    assert picture._bare_board.cache_info().misses == 1, "the same bare board in German"
    assert picture._rendered.cache_info().misses == 1
    assert german not in pngs


def test_a_game_without_layers_is_rendered_whole(app):
    """Knights & Castles draws its tableaus in one SVG: its picture is that SVG, rendered."""
    rules = rules_for("knights-castles")
    state = rules.new_state(list(rules.colours[:3]), "picture-kc", None)
    png = picture.png_of("knights-castles", rules.dumps(state), "en")
    expected = picture.render(rules.board_picture(state, None, False), picture.WIDTH)
    assert png == expected


def test_kept_pictures_are_decoded_before_threads_share_them(app):
    """Senders in several threads share the kept board and pieces: each is decoded once, when
    kept (a lazily decoded PNG read by two threads at once failed an assertion in Pillow)."""
    from concurrent.futures import ThreadPoolExecutor
    from threading import Barrier

    from PIL import ImageFile

    picture._board.cache_clear()
    picture._piece.cache_clear()
    picture.png_of.cache_clear()
    state_json = rules_for(KIND).dumps(position(3, 50, 21))
    start = Barrier(4)

    def render() -> bytes:
        start.wait(10)
        with app.app_context():
            return picture.png_of.__wrapped__(KIND, state_json, "en")

    with ThreadPoolExecutor(4) as pool:
        pngs = [future.result(60) for future in [pool.submit(render) for _ in range(4)]]
    assert len(set(pngs)) == 1
    _, pieces = rules_for(KIND).picture_pieces(rules_for(KIND).loads(state_json),
                                                picture.WIDTH / picture.BOARD_UNITS)
    kept = [picture._piece(svg, width, height) for _, _, width, height, svg in pieces]
    assert not any(isinstance(image, ImageFile.ImageFile) for image in kept)


def pasted(state, language: str) -> Image.Image:
    """The position drawn the plain way: a copy of the whole bare board with every piece
    pasted over it in order, by its alpha (what the kept bands and pieces must give), in RGB."""
    rules = rules_for(KIND)
    with force_locale(language):
        room, pieces = rules.picture_pieces(state, picture.WIDTH / picture.BOARD_UNITS)
        board = picture._board(KIND, language, room)
        image = board.image.copy()
        for left, top, width, height, svg in pieces:
            piece = picture._piece(svg, width, height)
            image.paste(piece, (left, top), piece)
    return image


def test_kept_bands_and_pieces_draw_exactly_what_pasting_every_piece_draws(app, monkeypatch):
    """Position after position (pieces kept from one to the next, some drawn over others, the
    board's own deflated bands where no piece is), the PNG's pixels are those of the board with
    each piece pasted over it, quantized with the game's palette pixel by pixel: the same
    palette indices, exactly; its deflate stream and checksum are whole (zlib checks them)."""
    monkeypatch.setattr(picture, "_drawn", Kept(picture.DRAWN_KEPT))  # none kept yet
    rules = rules_for(KIND)
    palette = picture._palette(KIND)
    for players, plies, seed, language in [
            (3, 30, 31, "en"), (3, 31, 31, "en"), (4, 80, 32, "en"), (3, 60, 33, "de"),
            (5, 120, 34, "es"), (3, 30, 31, "en"), (3, 30, 31, "de")]:
        state = position(players, plies, seed)
        png = picture.png_of.__wrapped__(KIND, rules.dumps(state), language)
        image = Image.open(io.BytesIO(png))
        assert image.mode == "P"
        assert bytes(image.getpalette("RGB")) == palette.rgb
        expected = palette.indices(pasted(state, language))
        assert np.array_equal(np.asarray(image), expected)
        rows = zlib.decompress(idat(png))  # raises on a broken stream or a wrong Adler-32
        assert len(rows) == image.size[1] * (image.size[0] + 1)


def test_a_position_deflates_only_the_bands_its_pieces_touch(app, monkeypatch):
    rules = rules_for(KIND)
    state = position(3, 40, 35)
    with force_locale("en"):
        room, pieces = rules.picture_pieces(state, picture.WIDTH / picture.BOARD_UNITS)
    board = picture._board.__wrapped__(KIND, "en", room)
    touched = {band for _, top, _, height, _ in pieces
               for band in range(top // picture.BAND, (top + height - 1) // picture.BAND + 1)}
    deflated: list[int] = []
    real = picture._deflated
    monkeypatch.setattr(picture, "_deflated", lambda data: deflated.append(data.nbytes)
                        or real(data))
    board.png(pieces)
    assert sum(deflated) == len(touched) * picture.BAND * (board.width + 1)
    assert len(touched) < len(board.bands) * 0.7


def test_adler32_combine_is_the_checksum_of_the_joined_data():
    from isal import isal_zlib

    first, second = b"the board" * 1000, bytes(range(256)) * 300
    assert picture.adler32_combine(isal_zlib.adler32(first), isal_zlib.adler32(second),
                                   len(second)) == zlib.adler32(first + second)
    assert picture.adler32_combine(1, zlib.adler32(second), len(second)) == zlib.adler32(second)


def idat(png: bytes) -> bytes:
    """The IDAT data of a PNG (its deflated rows), its chunks' checksums checked."""
    data, at = b"", 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at:at + 4])
        kind, body = png[at + 4:at + 8], png[at + 8:at + 8 + length]
        assert struct.unpack(">I", png[at + 8 + length:at + 12 + length])[0] == \
            zlib.crc32(kind + body), kind
        if kind == b"IDAT":
            data += body
        at += 12 + length
    return data


# --- the shipped font: the same words on every machine, whatever fonts it has ------------------

TEXT = re.compile(r"<text\b[^>]*>(.*?)</text>", re.DOTALL)
TAG = re.compile(r"<[^>]+>")


def kc_position(players: int, moves: int, seed: int):
    """A Knights & Castles game after `moves` random legal moves."""
    rules = rules_for("knights-castles")
    state = rules.new_state(list(rules.colours[:players]), f"picture-kc-{seed}", None)
    chooser = random.Random(seed)
    for _ in range(moves):
        if rules.to_move(state) is None:
            break
        state = rules.apply(state, rules.parse(state, chooser.choice(rules.legal(state))))
    return state


HIDDEN_FONTS_SCRIPT = """
import json, sys
from pathlib import Path

import resvg_py
from pbem import create_app
from pbem.games import picture, rules_for

folder, cases = Path(sys.argv[1]), json.loads(sys.argv[2])
svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40"><text x="4" y="28" '
       'font-family="sans-serif" font-size="20">Hello</text></svg>')
blank = '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40"></svg>'
(folder / "system.txt").write_text(str(resvg_py.svg_to_bytes(svg_string=svg)
                                       == resvg_py.svg_to_bytes(svg_string=blank)))
with create_app({"INSTANCE_PATH": str(folder / "instance"), "SECRET_KEY": "x"}).app_context():
    for number, (kind, state_json, language) in enumerate(cases):
        (folder / f"{number}.png").write_bytes(picture.png_of(kind, state_json, language))
"""


def pictures_with_fonts(tmp_path, fonts: str, cases: list) -> tuple[bool, list[bytes]]:
    """`cases` (kind, state JSON, language) drawn by pbem.games.picture in a new process that sees
    only the fonts in the folder `fonts` (fontconfig's FONTCONFIG_FILE, which resvg reads for
    the installed fonts); and whether resvg by itself drew no text there (`sans-serif`)."""
    import json
    import os
    import subprocess
    import sys

    folder = tmp_path / f"seeing-{Path(fonts).name}"
    folder.mkdir()
    config = folder / "fonts.conf"
    config.write_text(f'<?xml version="1.0"?>\n<fontconfig><dir>{fonts}</dir>'
                      f'<cachedir>{folder / "cache"}</cachedir></fontconfig>\n')
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PBEM_")},
           "FONTCONFIG_FILE": str(config), "HOME": str(folder)}
    done = subprocess.run([sys.executable, "-c", HIDDEN_FONTS_SCRIPT, str(folder),
                           json.dumps(cases)], env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return ((folder / "system.txt").read_text() == "True",
            [(folder / f"{number}.png").read_bytes() for number in range(len(cases))])


def test_pictures_have_their_words_on_a_machine_without_the_fonts_they_name(app, tmp_path):
    """resvg draws no text when no installed font answers the SVG's `sans-serif` (a Debian
    machine with only its default DejaVu fonts, or none at all): the pictures are drawn with
    the font shipped in the package, the same pixels as here, and with their words."""
    kk, kc = rules_for(KIND), rules_for("knights-castles")
    cases = [(KIND, kk.dumps(position(4, 90, 41)), "de"),
             (KIND, kk.dumps(position(3, 30, 42)), "es"),
             ("knights-castles", kc.dumps(kc_position(3, 60, 43)), "en")]
    here = [picture.png_of(*case) for case in cases]
    empty = tmp_path / "no-fonts"
    empty.mkdir()
    folders = [str(empty)]
    if Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf").exists():
        folders.append("/usr/share/fonts/truetype/dejavu")  # Debian's default fonts alone
    for fonts in folders:
        no_text, there = pictures_with_fonts(tmp_path, fonts, cases)
        if fonts == str(empty):
            assert no_text, "resvg finds no font there by itself (else this proves nothing)"
        assert there == here, f"the same pictures with only {fonts}"
    # ... and those pictures have their words: without the SVG's text they look different.
    for (kind, state_json, language), png in zip(cases, here, strict=True):
        rules = rules_for(kind)
        with force_locale(language):
            svg = rules.board_picture(rules.loads(state_json), None, False)
        assert TEXT.search(svg), "the picture has words"
        drawn = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)
        bare = np.asarray(Image.open(io.BytesIO(picture.render(TEXT.sub("", svg),
                                                               picture.WIDTH))).convert("RGB"),
                          dtype=np.int16)
        assert drawn.shape == bare.shape
        differ = (np.abs(drawn - bare).max(axis=2) > 64).sum()
        assert differ > 500, f"{kind}: only {differ} pixels of text"


def test_the_shipped_font_has_every_character_the_pictures_write(app):
    """Every character of the pictures' words, in each language, has a glyph in the shipped
    font (resvg is given no other to fall back on): drawn alone it is not the font's
    missing-glyph box."""
    import html

    kk, kc = rules_for(KIND), rules_for("knights-castles")
    states = [(kk, state) for state in kk.picture_samples()] + \
        [(kk, position(5, 200, 44))] + [(kc, kc_position(4, moves, 45)) for moves in (0, 80, 400)]
    characters = set()
    for language in ("en", "de", "es"):
        with force_locale(language):
            for rules, state in states:
                svgs = [rules.board_picture(state, None, False)]
                layers = rules.picture_pieces(state, picture.WIDTH / picture.BOARD_UNITS)
                if layers is not None:
                    svgs += [svg for *_, svg in layers[1]]
                for svg in svgs:
                    for text in TEXT.findall(svg):
                        characters |= set(html.unescape(TAG.sub("", text)))
    characters -= {" ", "\n", "\t"}
    assert len(characters) > 60, "letters, digits, and the languages' own"

    def drawn(character: str, weight: str) -> bytes:
        return picture.render('<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40">'
                              f'<text x="8" y="30" font-family="sans-serif" font-size="24" '
                              f'font-weight="{weight}">{html.escape(character)}</text></svg>',
                              40)

    for weight in ("400", "700"):
        missing = drawn("\U0010fffd", weight)  # a private-use character no font draws
        assert missing != drawn("", weight), "the missing-glyph box"
        absent = sorted(c for c in characters if drawn(c, weight) == missing)
        assert not absent, f"no glyph for {absent} (weight {weight})"
