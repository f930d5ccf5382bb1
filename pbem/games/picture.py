"""The board as a PNG picture for HTML mail, which mail programs show where they show no SVG.

The picture is the spectator's board (`GameRules.board_picture`, the same SVG as the pages),
rendered by resvg when a mail is built for sending, never inside a move's transaction. One move
mails every seat the same picture, so the last few are kept.

A game that gives its picture in layers (`picture_board` and `picture_pieces`) has its bare
board (map, countries, roads, names) rendered once per size and kept (its names are the
board's own, the same in every language), with its
PNG rows deflated band by band; a position then costs only its pieces and the bands they touch:
a deadline burst mails a different position per game. Each piece is a small picture of its own,
rendered once, and kept as drawn over what lies under it (the board, or the board and the
pieces drawn before it there), so a position mostly copies kept rows; the bands no piece touches
reuse the board's deflated bands as they are (a deflate stream may be cut where the compressor
was flushed: each band starts on a byte and refers to nothing before it).

Such a picture is an 8-bit palette PNG: one byte a pixel, less than half the bytes of RGB (a
mail carries it in base64) and a third of the rows to deflate. Its 256 colours are the game's,
taken from a sample of positions that shows every colour its pictures can (`picture_samples`)
and kept in pbem.games.picture_palettes, and each pixel is the palette's nearest colour to
it: a function of that pixel alone, so the board and each kept piece are quantized once, when
kept, and a position pastes palette indices. The picture is then exactly the RGB one quantized with
that palette (to the eye the same: a fifth of a level off on average, at most 30 levels on a
few anti-aliased edge pixels).

What a process keeps (the bare boards, the pieces as resvg drew them and as drawn in place) is
not written anywhere: a new process (a restart after an outage) draws each again once. A
scheduler and its helper senders draw the bare boards as they start (`warm_up`: numpy's import
and some 0.4 s a board); the pieces come as positions need them (a quarter of a second over a
first burst of a thousand positions), which stays the same however long the server has run.
"""

from __future__ import annotations

import io
import struct
import zlib
from functools import lru_cache
from pathlib import Path

import orjson
import resvg_py
from isal import isal_zlib
from PIL import Image

from ..ground.kept import Kept

WIDTH = 800  # pixels; the mail shows it at 600 (sharp on high-density screens), scaled down
BOARD_UNITS = 1000  # the width of a board picture's viewBox
PNG_LEVEL = 1  # ISA-L's level 1 for a position's bands: a fifth of zlib's level-1 time
BOARD_LEVEL = 9  # zlib's best for the board's bands, deflated once: a tenth smaller
BAND = 32  # rows deflated together: a position's pieces touch about three bands in five, and
# bands of 8 rows made its PNG 5% bigger (each band is deflated on its own)
DRAWN_KEPT = 4096  # pieces kept as drawn (a few KB each; the panel's ground some 400 KB)
COLOURS = 256  # a palette's most (an 8-bit palette PNG's)
SAMPLE_LANGUAGE = "en"  # the words of the pictures a palette is taken from
FLAT_PIXELS = 1000  # a colour of more of a palette's sample (3.2 million pixels) is kept as is
KMEANS = 2  # k-means passes over median cut's colours (more change nothing here)

# The pictures' fonts, shipped with the package (pbem/games/fonts/LICENSE: free licences) and the only
# ones resvg is given: it draws no text where no installed font answers the SVG's `sans-serif`
# (a Debian machine with only its default fonts has no Arial or an alias of it), reads the
# installed fonts once per process (a font installed later changes nothing until a restart),
# and would draw a different picture with each machine's fonts. Liberation Sans has Arial's
# metrics, which the boards' labels are laid out for; DejaVu Sans draws the few signs it has no
# glyph for (resvg falls back to a font that has one: the "◀" of the player to move).
FONTS = Path(__file__).resolve().parent / "fonts"
FONT = "Liberation Sans"
FONT_FILES = [str(FONTS / name) for name in ("LiberationSans-Regular.ttf",
                                             "LiberationSans-Bold.ttf", "DejaVuSans.ttf")]
FONT_OPTIONS = {"skip_system_fonts": True, "font_files": FONT_FILES, "font_family": FONT,
                "sans_serif_family": FONT, "serif_family": FONT, "monospace_family": FONT,
                "cursive_family": FONT, "fantasy_family": FONT}


def render(svg: str, width: int) -> bytes:
    """`svg` rendered by resvg `width` pixels wide, as PNG bytes, its text in the shipped font
    whatever fonts the machine has."""
    return resvg_py.svg_to_bytes(svg_string=svg, width=width, **FONT_OPTIONS)


@lru_cache(maxsize=16)
def png_of(kind: str, state_json: str, language: str = "en") -> bytes:
    """The board of the game `kind` in the stored state, its words in `language`, as PNG bytes
    (ValueError if the renderer fails)."""
    from flask_babel import force_locale

    from . import rules_for

    rules = rules_for(kind)
    with force_locale(language):
        return still(rules, kind, rules.loads(state_json), language)


def still(rules, kind: str, state, language: str) -> bytes:
    """The spectator's still picture of `state` as PNG bytes (inside `force_locale(language)`):
    in layers over the kept bare board where the game gives them, else its SVG rendered."""
    layers = rules.picture_pieces(state, WIDTH / BOARD_UNITS)
    if layers is None:
        return render(rules.board_picture(state, None, False), WIDTH)
    room_below, pieces = layers
    return _board(kind, language, room_below).png(pieces)


FRAME_MS = 700  # each position of the whole game's picture, and the last one longer
LAST_FRAME_MS = 5000
FRAME_WIDTH = 600  # pixels: the whole game's frames, as wide as a mail shows the board
UNCHANGED = COLOURS - 1  # the palette index of a frame's pixel that shows the frame before
COUNTER = 24  # pixels: the strip under each frame that counts the turns ("12 / 50")


def whole_game(kind: str, states: list, language: str = "en") -> bytes:
    """The whole game as one animated PNG (APNG): the spectator's still picture of each state
    of `states` (the set-up, then the position after each turn), FRAME_WIDTH wide, frame after
    frame, looping, each with the count under it (so no two frames are the same, and each
    turn keeps its own frame).

    The frames share one palette of 255 colours: the game's (pbem.games.picture_palettes) where
    it has one, else those median cut finds in the last position, which shows the most. The
    256th is transparent: each frame after the first is drawn over the one before, its pixels
    that did not change transparent, and Pillow's APNG writer keeps only the rectangle where
    anything did: a turn costs the pieces it placed and the panel's changes, a few KB."""
    import numpy as np
    from flask_babel import force_locale

    from . import rules_for
    from .picture_palettes import PALETTES

    if not states:
        raise ValueError("a game's picture needs at least its set-up")
    rules = rules_for(kind)
    with force_locale(language):
        stills = [_scaled(_decoded(still(rules, kind, state, language))) for state in states]
    height = max(image.height for image in stills)
    moves = len(stills) - 1
    flat = []
    for n, image in enumerate(stills):
        frame = Image.new("RGB", (FRAME_WIDTH, height + COUNTER), "white")
        frame.paste(image, (0, 0))
        frame.paste(_counter(n, moves), (0, height))
        flat.append(frame)
    if kind in PALETTES:  # its first 255 colours: the last index is "as before"
        palette = Palette(PALETTES[kind][:3 * UNCHANGED])
        indices = [palette.indices(frame) for frame in flat]
        rgb = palette.rgb
    else:
        shown = flat[-1].quantize(UNCHANGED, method=Image.Quantize.MEDIANCUT,
                                  dither=Image.Dither.NONE)
        indices = [np.asarray(frame.quantize(palette=shown, dither=Image.Dither.NONE))
                   for frame in flat]
        rgb = bytes(shown.getpalette("RGB")[:3 * UNCHANGED])
    frames = []
    for n, now in enumerate(indices):
        if n:  # a pixel as in the frame before is transparent: it shows that frame's
            now = np.where(now == indices[n - 1], UNCHANGED, now).astype(np.uint8)
        frame = Image.fromarray(now, "P")
        frame.putpalette(rgb.ljust(3 * COLOURS, b"\0"), "RGB")
        frames.append(frame)
    out = io.BytesIO()
    frames[0].save(out, format="PNG", save_all=True, append_images=frames[1:], loop=0,
                   duration=[FRAME_MS] * moves + [LAST_FRAME_MS], disposal=0,
                   blend=[0] + [1] * moves, transparency=UNCHANGED, optimize=True)
    return out.getvalue()


def _scaled(image: Image.Image) -> Image.Image:
    """A still picture (RGBA) on white, FRAME_WIDTH wide (RGB)."""
    ground = Image.new("RGBA", image.size, "white")
    ground.alpha_composite(image)
    height = round(image.height * FRAME_WIDTH / image.width)
    return ground.convert("RGB").resize((FRAME_WIDTH, height), Image.Resampling.LANCZOS)


def _counter(shown: int, moves: int) -> Image.Image:
    """The strip under a frame of the whole game: "shown / moves", in figures (no words: the
    same in every language), right-aligned, in the pictures' font."""
    from PIL import ImageDraw, ImageFont

    strip = Image.new("RGB", (FRAME_WIDTH, COUNTER), "white")
    font = ImageFont.truetype(FONT_FILES[0], COUNTER * 2 // 3)
    ImageDraw.Draw(strip).text((FRAME_WIDTH - 8, COUNTER // 2), f"{shown} / {moves}",
                               fill=(64, 64, 64), font=font, anchor="rm")
    return strip


class Palette:
    """The colours of a game's pictures (at most 256), and each pixel's nearest of them."""

    def __init__(self, rgb: bytes):
        """A palette of the colours `rgb` (red, green, blue, a byte each, colour after colour)."""
        import numpy as np

        self.rgb = bytes(rgb)
        colours = np.frombuffer(self.rgb, dtype=np.uint8).reshape(-1, 3).astype(np.float64)
        self._colours = colours.T.copy()
        self._squares = (colours * colours).sum(axis=1)

    @classmethod
    def of_sample(cls, sample: Image.Image) -> Palette:
        """The palette of `sample` (RGB): each colour of over FLAT_PIXELS of its pixels, as it
        is (the fills of countries, pieces, cards and panel, which a reader sees most), and
        the rest of the 256 as median cut (Pillow's, without dithering) finds them in its other
        pixels (the edges' blends and the anti-aliased text), each moved to the mean of the
        pixels nearest it (k-means): a third less error than median cut alone, and half the
        largest."""
        import numpy as np

        pixels = np.asarray(sample, dtype=np.uint8).reshape(-1, 3)
        packed = _packed(pixels)
        shown, counts = np.unique(packed, return_counts=True)
        flat = shown[counts > FLAT_PIXELS][:COLOURS]
        others = pixels[~np.isin(packed, flat)]
        rgb = np.stack((flat >> 16, flat >> 8 & 0xFF, flat & 0xFF), axis=1).astype(np.uint8)
        left = COLOURS - len(flat)
        if left and len(others):
            quantized = Image.fromarray(others.reshape(-1, 1, 3), "RGB").quantize(
                left, method=Image.Quantize.MEDIANCUT, kmeans=KMEANS, dither=Image.Dither.NONE)
            used = quantized.getextrema()[1] + 1  # Pillow may pad the palette past its colours
            return cls(rgb.tobytes() + bytes(quantized.getpalette("RGB")[:3 * used]))
        return cls(rgb.tobytes())

    def indices(self, image: Image.Image):
        """The palette index of each pixel of `image` (RGB), as a numpy array of its rows: its
        colour's nearest (the least squared distance; the first of equals), pixel by pixel."""
        import numpy as np

        pixels = np.asarray(image, dtype=np.uint8)
        colours, where = np.unique(_packed(pixels).reshape(-1), return_inverse=True)
        rgb = np.stack((colours >> 16, colours >> 8 & 0xFF, colours & 0xFF),
                       axis=1).astype(np.float64)
        # |c - p|² less |c|², the same for every p: exact in floating point (whole numbers
        # far below 2⁵³), so the nearest and the first of equals are those of whole numbers.
        nearest = (self._squares - 2 * rgb @ self._colours).argmin(axis=1).astype(np.uint8)
        return nearest[where.reshape(-1)].reshape(pixels.shape[:2])

    def image(self, indices) -> Image.Image:
        """`indices` (rows of palette indices) as a palette image, to look at and compare."""
        image = Image.fromarray(indices, "P")
        image.putpalette(self.rgb, "RGB")
        return image


def _packed(pixels):
    """Each pixel's colour (RGB, the last axis of `pixels`) as one number: 0xRRGGBB."""
    import numpy as np

    return (pixels[..., 0].astype(np.uint32) << 16 | pixels[..., 1].astype(np.uint32) << 8
            | pixels[..., 2])


@lru_cache(maxsize=4)
def _palette(kind: str) -> Palette:
    """The palette of `kind`'s pictures, as `sampled_palette` gave it and
    pbem.games.picture_palettes keeps it (drawing the sample and finding its palette take half
    a second of a new process's first picture otherwise)."""
    from .picture_palettes import PALETTES

    return Palette(PALETTES[kind])


def sampled_palette(kind: str) -> Palette:
    """The palette of `kind`'s pictures from its sample (`sample`)."""
    return Palette.of_sample(sample(kind))


def sample(kind: str) -> Image.Image:
    """The pictures of `kind`'s sample positions (`picture_samples`) one under the other, each
    drawn as a mail draws it (`layered`), in SAMPLE_LANGUAGE: its pictures' colours do not
    depend on the language."""
    from flask_babel import force_locale

    from . import rules_for

    with force_locale(SAMPLE_LANGUAGE):
        pictures = [layered(kind, SAMPLE_LANGUAGE, state)
                    for state in rules_for(kind).picture_samples()]
    joined = Image.new("RGB", (WIDTH, sum(picture.size[1] for picture in pictures)))
    top = 0
    for picture in pictures:
        joined.paste(picture, (0, top))
        top += picture.size[1]
    return joined


def layered(kind: str, language: str, state) -> Image.Image:
    """The RGB picture of `state` drawn in layers the plain way: its bare board with every
    piece pasted over it in order, by its alpha (what a position's PNG is, quantized). Called
    inside `force_locale(language)`."""
    from . import rules_for

    rules = rules_for(kind)
    room_below, pieces = rules.picture_pieces(state, WIDTH / BOARD_UNITS)
    image = _rendered(rules.picture_board(room_below)).copy()
    for left, top, width, height, svg in pieces:
        piece = _piece(svg, width, height)
        image.paste(piece, (left, top), piece)
    return image


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", isal_zlib.crc32(data, isal_zlib.crc32(kind))))


def _png(width: int, height: int, palette: bytes, deflated: bytes) -> bytes:
    """An 8-bit palette PNG of `width` x `height` pixels from its palette (RGB triples) and
    its deflated rows (a zlib stream)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0)  # 8-bit palette, no interlace
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"PLTE", palette)
            + _chunk(b"IDAT", deflated) + _chunk(b"IEND", b""))


def _deflated(data, board: bool = False) -> bytes:
    """`data` as raw deflate blocks (no zlib header), ended by a full flush: on a byte, and
    referring to nothing before it, so that it can stand anywhere in a stream. A position's
    bands by ISA-L (Intel's storage library) at PNG_LEVEL, five times as fast as zlib's fastest
    level for 7% more bytes; the `board`'s, deflated once, by zlib at BOARD_LEVEL."""
    library, level = (zlib, BOARD_LEVEL) if board else (isal_zlib, PNG_LEVEL)
    compressor = library.compressobj(level, library.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush(library.Z_FULL_FLUSH)


ZLIB_HEADER = b"\x78\x01"  # deflate, 32 KB window, fastest
LAST_BLOCK = b"\x03\x00"  # an empty final block (fixed codes): the stream's end


def adler32_combine(first: int, second: int, second_length: int) -> int:
    """The Adler-32 of two pieces of data from each one's (zlib's adler32_combine)."""
    base = 65521
    remainder = second_length % base
    sum1 = first & 0xFFFF
    sum2 = remainder * sum1 % base
    sum1 = (sum1 + (second & 0xFFFF) + base - 1) % base
    sum2 = (sum2 + (first >> 16) + (second >> 16) + base - remainder) % base
    return sum1 | sum2 << 16


_drawn = Kept(DRAWN_KEPT)  # (board, piece, pieces under it) -> the piece drawn over them


class _Drawn:
    """A piece as drawn over what lay under it where it goes: its pixels (RGB, for a piece
    drawn over it later) and their palette indices (what a position copies)."""

    __slots__ = ("image", "indices")

    def __init__(self, image: Image.Image, indices):
        self.image = image
        self.indices = indices


class _Board:
    """A bare board kept for the positions drawn over it: its pixels, its PNG rows (palette
    indices), and per band of rows those rows deflated and their Adler-32."""

    def __init__(self, key: tuple, image: Image.Image, palette: Palette):
        import numpy as np

        self.key = key
        self.image = image
        self.palette = palette
        self.width, self.height = image.size
        # Each PNG row unfiltered (a zero byte before its pixels): the PNG specification's
        # advice for palette images, and what deflate packs best here.
        self.rows = np.zeros((self.height, self.width + 1), dtype=np.uint8)
        self.rows[:, 1:] = palette.indices(image)
        self.rows.flags.writeable = False  # shared by every position (and thread)
        self.bands = [self._band(band) for band in range(-(-self.height // BAND))]

    def _band(self, band: int) -> tuple[bytes, int, int]:
        data = self.rows[band * BAND:(band + 1) * BAND]
        return _deflated(data, board=True), isal_zlib.adler32(data), data.nbytes

    def png(self, pieces: list[tuple[int, int, int, int, str]]) -> bytes:
        """The PNG of this board with `pieces` (left, top, width, height, SVG) drawn over it
        in order, each by its alpha."""
        touched = sorted({band for _, top, _, height, _ in pieces
                          for band in range(top // BAND, (top + height - 1) // BAND + 1)})
        runs: list[list[int]] = []  # consecutive touched bands: [first, last]
        for band in touched:
            if runs and runs[-1][1] == band - 1:
                runs[-1][1] = band
            else:
                runs.append([band, band])
        drawn = {first: self.rows[first * BAND:(last + 1) * BAND].copy() for first, last in runs}
        run_of = {band: first for first, last in runs for band in range(first, last + 1)}
        placed: list[tuple[int, int, int, int, str, _Drawn]] = []
        for left, top, width, height, svg in pieces:
            under = [other for other in placed if _overlap(other, left, top, width, height)]
            key = (self.key, svg, tuple(other[4] for other in under))
            piece = _drawn.get(key)
            if piece is None:
                piece = _drawn.put(key, self._draw(left, top, width, height, svg, under))
            placed.append((left, top, width, height, svg, piece))
            first = run_of[top // BAND]
            row = top - first * BAND
            drawn[first][row:row + height, 1 + left:1 + left + width] = piece.indices
        parts, adler, band = [ZLIB_HEADER], 1, 0
        for first, last in runs:
            for deflated, band_adler, length in self.bands[band:first]:
                parts.append(deflated)
                adler = adler32_combine(adler, band_adler, length)
            rows = drawn[first]
            parts.append(_deflated(rows))
            adler = adler32_combine(adler, isal_zlib.adler32(rows), rows.nbytes)
            band = last + 1
        for deflated, band_adler, length in self.bands[band:]:
            parts.append(deflated)
            adler = adler32_combine(adler, band_adler, length)
        parts += [LAST_BLOCK, struct.pack(">I", adler)]
        return _png(self.width, self.height, self.palette.rgb, b"".join(parts))

    def _draw(self, left: int, top: int, width: int, height: int, svg: str,
              under: list[tuple[int, int, int, int, str, _Drawn]]) -> _Drawn:
        """The piece `svg` drawn over what lies where it goes: the board, and over it the
        pieces drawn before it there (`under`, in order, each as it was drawn)."""
        region = self.image.crop((left, top, left + width, top + height))
        for other_left, other_top, _, _, _, other in under:
            region.paste(other.image, (other_left - left, other_top - top))
        piece = _piece(svg, width, height)
        region.paste(piece, (0, 0), piece)  # by the piece's alpha
        return _Drawn(region, self.palette.indices(region))


def _overlap(piece, left: int, top: int, width: int, height: int) -> bool:
    other_left, other_top, other_width, other_height = piece[:4]
    return (other_left < left + width and left < other_left + other_width
            and other_top < top + height and top < other_top + other_height)


@lru_cache(maxsize=16)
def _board(kind: str, language: str, room_below: float) -> _Board:
    """The bare board of `kind` with `room_below` under its map, as kept for `language`:
    the one kept for its SVG (`_bare_board`). Called inside `force_locale(language)`."""
    from . import rules_for

    return _bare_board(kind, rules_for(kind).picture_board(room_below))


@lru_cache(maxsize=8)
def _bare_board(kind: str, svg: str) -> _Board:
    """The bare board `svg` of `kind`, kept (per process) with its rows and bands in the
    palette of `kind`: one for every language its SVG is the same in."""
    return _Board((kind, svg), _rendered(svg), _palette(kind))


@lru_cache(maxsize=8)
def _rendered(svg: str) -> Image.Image:
    """A bare board's `svg`, rendered once (per process) in RGB (the panel drawn over it
    covers the room below its map)."""
    board = _decoded(render(svg, WIDTH))
    # White where nothing is drawn: the last row, which the panel covers only in part (a
    # transparent pixel of the whole picture shows on the mail's white).
    return Image.alpha_composite(Image.new("RGBA", board.size, "white"), board).convert("RGB")


@lru_cache(maxsize=4096)
def _piece(svg: str, width: int, height: int) -> Image.Image:
    """A piece of a position, rendered once: positions share most of their pieces (a piece on
    a field, a score, a card), and resvg's cost is mostly the fonts it loads for each picture it
    renders, however small (a few KB each)."""
    piece = _decoded(render(svg, width))
    if piece.size != (width, height):  # resvg rounds the height up, by a pixel
        piece = piece.crop((0, 0, width, height))
    return piece


def _decoded(png: bytes) -> Image.Image:
    """PNG bytes as a loaded RGBA image: the kept ones are shared by the threads that send mail,
    and a lazily decoded image must not be decoded by two of them at once."""
    with Image.open(io.BytesIO(png)) as image:
        image.load()
        return image.convert("RGBA")


def warm_up() -> None:
    """Draw ahead the bare boards of every game whose pictures come in layers, for each number
    of players it takes (the panel under the map grows with them): what a process's first board
    picture would otherwise pay (numpy's import, resvg's board, its rows and bands, some 0.4 s
    a board). A scheduler and its helper senders call it as they start (pbem.scheduler.senders.warm_up).
    Called in an app context."""
    from flask_babel import force_locale

    from . import game_kinds, rules_for

    with force_locale(SAMPLE_LANGUAGE):
        for kind in game_kinds():
            rules = rules_for(kind)
            layers = [rules.picture_pieces(rules.new_state(list(rules.colours)[:players],
                                                           "warm-up", 0), WIDTH / BOARD_UNITS)
                      for players in range(rules.min_players, rules.max_players + 1)]
            rooms = {layer[0] for layer in layers if layer is not None}
            for room_below in sorted(rooms):
                _board(kind, SAMPLE_LANGUAGE, room_below)


def for_message(picture_json: str) -> tuple[str, bytes]:
    """(content id, PNG) for an outbox row's `picture_json`."""
    data = orjson.loads(picture_json)
    return data["cid"], png_of(data["kind"], data["state"], data.get("language", "en"))


def palettes_source(palettes: dict[str, bytes]) -> str:
    """The text of pbem.games.picture_palettes for `palettes` (game kind -> RGB triples)."""
    from . import picture_palettes

    lines = [f'"""{picture_palettes.__doc__}"""', "", "PALETTES = {"]
    for kind, rgb in palettes.items():
        text = rgb.hex()
        lines.append(f'    "{kind}": bytes.fromhex(')
        lines += [f'        "{text[at:at + 96]}"' for at in range(0, len(text), 96)]
        lines[-1] += "),"
    return "\n".join([*lines, "}", ""])


if __name__ == "__main__":  # python3 -m pbem.games.picture: picture_palettes written anew
    import tempfile
    from pathlib import Path

    from .. import create_app
    from . import game_kinds, picture_palettes, rules_for

    with tempfile.TemporaryDirectory() as folder, create_app(
            {"INSTANCE_PATH": folder, "SECRET_KEY": "palettes"}).app_context():
        written = {kind: sampled_palette(kind).rgb for kind in game_kinds()
                   if rules_for(kind).picture_samples()}
    Path(picture_palettes.__file__).write_text(palettes_source(written), encoding="utf-8")

