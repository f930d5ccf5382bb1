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
from functools import lru_cache

import resvg_py
from PIL import Image

WIDTH = 800  # pixels; the mail shows it at 600 (sharp on high-density screens), scaled down
BOARD_UNITS = 1000  # the width of a board picture's viewBox
PNG_LEVEL = 1  # zlib's fastest: the picture of a position is 4% larger than at level 6 (163
               # against 157 KB), in 2/3 of the time


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
            image.alpha_composite(_piece(svg, width, height), (left, top))
    out = io.BytesIO()
    # Opaque everywhere (the sea and the panel cover it): RGB is a quarter less to compress.
    image.convert("RGB").save(out, "PNG", compress_level=PNG_LEVEL)
    return out.getvalue()


@lru_cache(maxsize=8)
def _board(kind: str, language: str, room_below: float) -> Image.Image:
    """The bare board of `kind` with `room_below` under its map, rendered once (per process)
    for each language and panel height. Called inside `force_locale(language)`."""
    from .games import rules_for

    svg = rules_for(kind).picture_board(room_below)
    return _decoded(resvg_py.svg_to_bytes(svg_string=svg, width=WIDTH))


@lru_cache(maxsize=4096)
def _piece(svg: str, width: int, height: int) -> Image.Image:
    """A piece of a position, rendered once: positions share most of their pieces (a monastery
    on a field, the advisors under a crest, a score, a card), and resvg's cost is mostly the
    fonts it loads for each picture it renders, however small (a few KB each)."""
    piece = _decoded(resvg_py.svg_to_bytes(svg_string=svg, width=width))
    if piece.size != (width, height):  # resvg rounds the height up, by a pixel
        piece = piece.crop((0, 0, width, height))
    return piece


def _decoded(png: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(png))
    return image.convert("RGBA") if image.mode != "RGBA" else image


def for_message(picture_json: str) -> tuple[str, bytes]:
    """(content id, PNG) for an outbox row's `picture_json`."""
    data = json.loads(picture_json)
    return data["cid"], png_of(data["kind"], data["state"], data.get("language", "en"))
