"""Turn files: the position as plain text with an orders block, and reading orders back.

A turn file is what a "your turn" mail's text part carries and what the seat page offers for
download; the player writes moves in the notation under the ORDERS line and uploads it (or, in
a later step, replies by mail). Reading is forgiving about what surrounds the orders (quoted
text, signatures, the rest of the file) and strict about the orders themselves: each one goes
through `submit_move` like any other move.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ORDERS_LINE = "=== ORDERS ==="
MAX_ORDERS = 8  # a turn is at most four moves; more is a mistake, not a turn
TURN_LINE = re.compile(r"^\s*Turn:\s*(\d{1,9})\s*$", re.MULTILINE)
# Where a reply's own text ends: the quoted original, a signature, a forwarded header.
STOP = re.compile(r"^(--\s*$|On .{0,200}wrote:\s*$|-{3,}\s*Original Message|_{5,}|From:\s|"
                  r"Am .{0,200}schrieb .{0,100}:\s*$)", re.IGNORECASE)


def render(game_title: str, game_id: int, seat_name: str, colour: str, turn: int,
           position: list[str], legal: list[str]) -> str:
    """The turn file of one seat for one turn."""
    lines = [f"{game_title} by post: turn file", f"Game: {game_id}",
             f"Seat: {seat_name} ({colour})", f"Turn: {turn}", "", *position, ""]
    if legal:
        lines.append(f"Legal moves now ({len(legal)}), for example:")
        lines.extend(f"#   {move}" for move in legal[:12])
        lines.append("")
    lines += [ORDERS_LINE,
              "# Write your moves below, one per line, in the notation; lines starting with #",
              "# are ignored. A whole turn at once is fine, for example:",
              "#   GG Franken: Mainz",
              "#   draw deck",
              "#   draw G",
              ""]
    return "\n".join(lines)


@dataclass(frozen=True)
class Orders:
    turn: int | None  # the turn the file was made for, when it says
    lines: list[str]  # the moves, as written


def read(text: str) -> Orders:
    """The orders in a turn file or a reply: the lines after the ORDERS line (or, without one,
    the reply's own lines), up to the quoted original or a signature; comments, quoted lines
    and blank lines left out."""
    match = TURN_LINE.search(text)
    turn = int(match.group(1)) if match else None
    lines = text.splitlines()
    marked = [i for i, line in enumerate(lines) if line.strip() == ORDERS_LINE]
    if marked:
        lines = lines[marked[0] + 1:]
    orders = []
    for line in lines:
        stripped = line.strip()
        if STOP.match(stripped):
            break
        if not stripped or stripped.startswith(("#", ">")):
            continue
        if not marked and TURN_LINE.match(line):
            continue
        orders.append(stripped)
    return Orders(turn, orders)
