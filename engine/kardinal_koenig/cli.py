"""Kardinal & König's own command of `python -m engine`: `score`, the final scoring of a position
file. This module opens the file; `position` reads and checks what is in it."""

from __future__ import annotations

import json
import sys

from ..errors import StateError
from .board import default_board
from .position import Position, check_reachable, parse_position_json

MAX_POSITION_BYTES = 1_000_000


def read_position(path: str) -> Position:
    """The position in a file; StateError or OSError names what is wrong in one line."""
    with open(path, "rb") as handle:
        raw = handle.read(MAX_POSITION_BYTES + 1)
    if len(raw) > MAX_POSITION_BYTES:
        raise StateError(f"the file is larger than {MAX_POSITION_BYTES} bytes; a position "
                         f"file is a few lines")
    position = parse_position_json(raw, default_board())
    check_reachable(position, default_board())
    return position


def score_file(path: str) -> int:
    """Print the breakdown JSON of the position in `path`; the exit status (2 with one line on
    stderr when the file cannot be read or is not a position)."""
    # A file name may hold a line break or undecodable bytes; the error must stay one line.
    name = path if path.isprintable() else ascii(path)
    try:
        position = read_position(path)
    except OSError as exc:
        print(f"error: {name}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except StateError as exc:
        print(f"error: {name}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(position.final_breakdown(default_board()).to_dict(), ensure_ascii=False))
    return 0
