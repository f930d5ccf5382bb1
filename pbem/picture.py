"""The board as a PNG picture for HTML mail, which mail programs show where they show no SVG.

The picture is the spectator's board (`GameRules.board_picture`, the same SVG as the pages),
rendered by resvg when a mail is built for sending, never inside a move's transaction. One move
mails every seat the same picture, so the last few are kept.

A game that gives its picture in layers (`picture_board` and `picture_pieces`) has its bare
board (map, countries, roads, names) rendered once per language and size and kept; a position
then costs only its pieces (each a small picture of its own, drawn over a copy of the board
with Pillow) and the PNG's encoding: a deadline burst mails a different position per game.
"""

from __future__ import annotations

import io
import json
import struct
import zlib
from functools import lru_cache

import resvg_py
from isal import isal_zlib
from PIL import Image

WIDTH = 800  # pixels; the mail shows it at 600 (sharp on high-density screens), scaled down
BOARD_UNITS = 1000  # the width of a board picture's viewBox
PNG_LEVEL = 1  # ISA-L's level 1: a fifth of zlib's level-1 time, 7% larger


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
        image = _board(kind, language, room_below).copy()
        for left, top, width, height, svg in pieces:
            piece = _piece(svg, width, height)
            image.paste(piece, (left, top), piece)  # over the board, by the piece's alpha
    return _png(image)


def _png(image: Image.Image) -> bytes:
    """An RGB `image` as PNG, every row unfiltered and deflated by ISA-L (a zlib stream, as
    PNG wants, made by Intel's storage library: 0.7 ms for a board where zlib's fastest level
    takes 3.8 ms, 132 KB against 123 KB). A board is mostly flat colour, which deflate packs
    best unfiltered: a quarter smaller than Pillow's PNG (which filters every row, at any level)
    in a fraction of the time (Pillow: 163 KB in 27 ms at level 1)."""
    width, height = image.size
    raw = image.tobytes()
    stride = 3 * width
    rows = b"".join(b"\0" + raw[i:i + stride] for i in range(0, len(raw), stride))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", isal_zlib.compress(rows, PNG_LEVEL)) + chunk(b"IEND", b""))


@lru_cache(maxsize=8)
def _board(kind: str, language: str, room_below: float) -> Image.Image:
    """The bare board of `kind` with `room_below` under its map, rendered once (per process)
    for each language and panel height, in RGB (the panel drawn over it covers the room).
    Called inside `force_locale(language)`."""
    from .games import rules_for

    svg = rules_for(kind).picture_board(room_below)
    board = _decoded(resvg_py.svg_to_bytes(svg_string=svg, width=WIDTH))
    # White where nothing is drawn: the last row, which the panel covers only in part (a
    # transparent pixel of the whole picture shows on the mail's white).
    return Image.alpha_composite(Image.new("RGBA", board.size, "white"), board).convert("RGB")


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
