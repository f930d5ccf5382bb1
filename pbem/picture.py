"""The board as a PNG picture for HTML mail, which mail programs show where they show no SVG.

The picture is the spectator's board (`GameRules.board_picture`, the same SVG as the pages),
rendered by resvg when a mail is built for sending, never inside a move's transaction. One move
mails every seat the same picture, so the last few are kept.
"""

from __future__ import annotations

import json
from functools import lru_cache

import resvg_py

WIDTH = 800  # pixels; the mail shows it at 600 (sharp on high-density screens), scaled down


@lru_cache(maxsize=16)
def png_of(kind: str, state_json: str, language: str = "en") -> bytes:
    """The board of the game `kind` in the stored state, its words in `language`, as PNG bytes
    (ValueError if the renderer fails)."""
    from flask_babel import force_locale

    from .games import rules_for

    rules = rules_for(kind)
    with force_locale(language):
        svg = rules.board_picture(rules.loads(state_json), None, False)
    return resvg_py.svg_to_bytes(svg_string=svg, width=WIDTH)


def for_message(picture_json: str) -> tuple[str, bytes]:
    """(content id, PNG) for an outbox row's `picture_json`."""
    data = json.loads(picture_json)
    return data["cid"], png_of(data["kind"], data["state"], data.get("language", "en"))
