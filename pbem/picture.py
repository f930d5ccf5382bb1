"""The board as a PNG picture for HTML mail, which mail programs show where they show no SVG.

The picture is the spectator's board (`GameRules.board_picture`, the same SVG as the pages),
rendered by resvg when a mail is built for sending, never inside a move's transaction. One move
mails every seat the same picture, so the last few are kept.

A game that gives its picture in layers (`picture_board` and `picture_pieces`) has its bare
board (map, countries, roads, names) rendered once per language and size and kept, with its
PNG rows deflated band by band; a position then costs only its pieces and the bands they touch:
a deadline burst mails a different position per game. Each piece is a small picture of its own,
rendered once, and kept as drawn over what lies under it (the board, or the board and the
pieces drawn before it there), so a position mostly copies kept rows; the bands no piece touches
reuse the board's deflated bands as they are (a deflate stream may be cut where the compressor
was flushed: each band starts on a byte and refers to nothing before it).
"""

from __future__ import annotations

import io
import json
import struct
from functools import lru_cache

import resvg_py
from isal import isal_zlib
from PIL import Image

from .kept import Kept

WIDTH = 800  # pixels; the mail shows it at 600 (sharp on high-density screens), scaled down
BOARD_UNITS = 1000  # the width of a board picture's viewBox
PNG_LEVEL = 1  # ISA-L's level 1: a fifth of zlib's level-1 time, 7% larger
BAND = 8  # rows deflated together; a position's pieces touch about two bands in five
DRAWN_KEPT = 4096  # pieces kept as drawn (a few KB each; the panel's ground some 300 KB)


@lru_cache(maxsize=16)
def png_of(kind: str, state_json: str, language: str = "en") -> bytes:
    """The board of the game `kind` in the stored state, its words in `language`, as PNG bytes
    (ValueError if the renderer fails)."""
    from flask_babel import force_locale

    from .games import rules_for

    rules = rules_for(kind)
    with force_locale(language):
        state = rules.loads(state_json)
        if not hasattr(rules, "picture_pieces"):
            svg = rules.board_picture(state, None, False)
            return resvg_py.svg_to_bytes(svg_string=svg, width=WIDTH)
        room_below, pieces = rules.picture_pieces(state, WIDTH / BOARD_UNITS)
        return _board(kind, language, room_below).png(pieces)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (struct.pack(">I", len(data)) + kind + data
            + struct.pack(">I", isal_zlib.crc32(data, isal_zlib.crc32(kind))))


def _png(width: int, height: int, deflated: bytes) -> bytes:
    """An 8-bit RGB PNG of `width` x `height` pixels from its deflated rows (a zlib stream)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", deflated)
            + _chunk(b"IEND", b""))


def _rows(image: Image.Image) -> bytes:
    """An RGB image's PNG rows: each unfiltered (a zero byte before its pixels). A board is
    mostly flat colour, which deflate packs best unfiltered: a quarter smaller than Pillow's
    PNG (which filters every row, at any level) in a fraction of the time."""
    raw = image.tobytes()
    stride = 3 * image.size[0]
    return b"".join(b"\0" + raw[i:i + stride] for i in range(0, len(raw), stride))


def _deflated(data) -> bytes:
    """`data` as raw deflate blocks (no zlib header), ended by a full flush: on a byte, and
    referring to nothing before it, so that it can stand anywhere in a stream. ISA-L (Intel's
    storage library) is five times as fast as zlib's fastest level, for 7% more bytes."""
    compressor = isal_zlib.compressobj(PNG_LEVEL, isal_zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush(isal_zlib.Z_FULL_FLUSH)


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


_drawn = Kept(DRAWN_KEPT)  # (board, piece, pieces under it) -> its pixels drawn over them


class _Board:
    """A bare board kept for the positions drawn over it: its PNG rows, and per band of rows
    those rows deflated and their Adler-32."""

    def __init__(self, key: tuple, image: Image.Image):
        self.key = key
        self.width, self.height = image.size
        self.stride = 3 * self.width + 1  # a PNG row: its filter byte, then its pixels
        self.rows = _rows(image)
        self.bands = [self._band(band) for band in range(-(-self.height // BAND))]

    def _band(self, band: int) -> tuple[bytes, int, int]:
        data = self.rows[band * BAND * self.stride:(band + 1) * BAND * self.stride]
        return _deflated(data), isal_zlib.adler32(data), len(data)

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
        stride = self.stride
        drawn = {first: bytearray(self.rows[first * BAND * stride:(last + 1) * BAND * stride])
                 for first, last in runs}
        run_of = {band: first for first, last in runs for band in range(first, last + 1)}
        placed: list[tuple[int, int, int, int, str]] = []
        for left, top, width, height, svg in pieces:
            first = run_of[top // BAND]
            rows = drawn[first]
            offset = (top - first * BAND) * stride + 1 + 3 * left
            under = tuple(other for other in placed if _overlap(other, left, top, width, height))
            placed.append((left, top, width, height, svg))
            key = (self.key, svg, tuple(other[4] for other in under))
            pixels = _drawn.get(key)
            if pixels is None:
                pixels = _draw(rows, offset, stride, width, height, svg)
                _drawn.put(key, pixels)
            line = 3 * width
            for row in range(height):
                start = offset + row * stride
                rows[start:start + line] = pixels[row * line:(row + 1) * line]
        parts, adler, band = [ZLIB_HEADER], 1, 0
        for first, last in runs:
            for deflated, band_adler, length in self.bands[band:first]:
                parts.append(deflated)
                adler = adler32_combine(adler, band_adler, length)
            rows = drawn[first]
            parts.append(_deflated(rows))
            adler = adler32_combine(adler, isal_zlib.adler32(rows), len(rows))
            band = last + 1
        for deflated, band_adler, length in self.bands[band:]:
            parts.append(deflated)
            adler = adler32_combine(adler, band_adler, length)
        parts += [LAST_BLOCK, struct.pack(">I", adler)]
        return _png(self.width, self.height, b"".join(parts))


def _overlap(piece, left: int, top: int, width: int, height: int) -> bool:
    other_left, other_top, other_width, other_height, _ = piece
    return (other_left < left + width and left < other_left + other_width
            and other_top < top + height and top < other_top + other_height)


def _draw(rows: bytearray, offset: int, stride: int, width: int, height: int,
          svg: str) -> bytes:
    """The pixels (RGB, row after row) of the piece `svg` drawn over what `rows` holds where
    it goes (from `offset`, a row every `stride` bytes)."""
    line = 3 * width
    under = b"".join(rows[offset + row * stride:offset + row * stride + line]
                     for row in range(height))
    region = Image.frombytes("RGB", (width, height), under)
    piece = _piece(svg, width, height)
    region.paste(piece, (0, 0), piece)  # by the piece's alpha
    return region.tobytes()


@lru_cache(maxsize=8)
def _board(kind: str, language: str, room_below: float) -> _Board:
    """The bare board of `kind` with `room_below` under its map, rendered once (per process)
    for each language and panel height, in RGB (the panel drawn over it covers the room).
    Called inside `force_locale(language)`."""
    from .games import rules_for

    svg = rules_for(kind).picture_board(room_below)
    board = _decoded(resvg_py.svg_to_bytes(svg_string=svg, width=WIDTH))
    # White where nothing is drawn: the last row, which the panel covers only in part (a
    # transparent pixel of the whole picture shows on the mail's white).
    image = Image.alpha_composite(Image.new("RGBA", board.size, "white"), board).convert("RGB")
    return _Board((kind, language, room_below), image)


@lru_cache(maxsize=4096)
def _piece(svg: str, width: int, height: int) -> Image.Image:
    """A piece of a position, rendered once: positions share most of their pieces (a piece on
    a field, a score, a card), and resvg's cost is mostly the fonts it loads for each picture it
    renders, however small (a few KB each)."""
    piece = _decoded(resvg_py.svg_to_bytes(svg_string=svg, width=width))
    if piece.size != (width, height):  # resvg rounds the height up, by a pixel
        piece = piece.crop((0, 0, width, height))
    return piece


def _decoded(png: bytes) -> Image.Image:
    """PNG bytes as a loaded RGBA image: the kept ones are shared by the threads that send mail,
    and a lazily decoded image must not be decoded by two of them at once."""
    with Image.open(io.BytesIO(png)) as image:
        image.load()
        return image.convert("RGBA")


def for_message(picture_json: str) -> tuple[str, bytes]:
    """(content id, PNG) for an outbox row's `picture_json`."""
    data = json.loads(picture_json)
    return data["cid"], png_of(data["kind"], data["state"], data.get("language", "en"))
