"""Turn files: the position as plain text with an orders block, and reading orders back.

A turn file is what a "your turn" mail's text part carries and what the seat page offers for
download; the player writes moves in the notation under the ORDERS line and uploads it (or, in
a later step, replies by mail). Reading is forgiving about what surrounds the orders (quoted
text, signatures, the rest of the file) and strict about the orders themselves: each one goes
through `submit_move` like any other move.
"""

from __future__ import annotations

import re
import textwrap
import unicodedata
from dataclasses import dataclass

from ..ground import i18n
from ..ground.i18n import gettext
from . import quoting

ORDERS_LINE = "=== ORDERS ==="
# A turn file holds one turn, which in some games is many moves (buys, builds, payments, offers
# and discards); far more than any turn takes is a mistake, not a turn.
MAX_ORDERS = 100
# "Turn: 12 (move 47)": the turn as players count it, and the game's move counter that makes a
# file from an old position stale. Files written before the turn number was added say
# "Turn: 47", the move counter alone. Matched against one stripped line at a time (fullmatch):
# a pattern run over the whole text with MULTILINE and a leading \s* scans every following
# blank line from every line start, quadratic in the lines (issue 34: 32,000 newlines took 8 s).
# The line is written in the reader's words ("Zug: 12 (Schritt 47)", "Turno: 12 (jugada 47)")
# and read back in any of the three languages, whatever the reader's is now.
TURN_WORDS = {"en": ("Turn", "move"), "de": ("Zug", "Schritt"), "es": ("Turno", "jugada")}
_TURNS = "|".join(turn for turn, _ in TURN_WORDS.values())
_MOVES = "|".join(move for _, move in TURN_WORDS.values())
TURN_LINE = re.compile(rf"(?:{_TURNS}):\s*(\d{{1,9}})(?:\s*\((?:{_MOVES})\s+(\d{{1,9}})\))?",
                       re.IGNORECASE)
# Our comment lines under the ORDERS line are at most this long, so that a mail program that
# re-wraps quoted text at 72 characters, after its "> " or ">> ", leaves each whole: the
# continuation of a wrapped comment would be a line without '#'.
COMMENT_WIDTH = 64


def turn_line(turn_number: int | None, moves: int) -> str:
    """The file's 'Turn:' line in the reader's words: the players' turn and the move counter
    it was made at."""
    turn, move = TURN_WORDS.get(i18n.language(), TURN_WORDS["en"])
    return f"{turn}: {moves}" if turn_number is None else \
        f"{turn}: {turn_number} ({move} {moves})"


def file_name(kind: str, game_id: int, turn_number: int, colour: str) -> str:
    """The name a turn file is saved under, in the reader's words and as players count turns:
    'kk-partie3-zug1-gelb.txt'; ASCII only, for every file system and mail program."""
    words = {"en": ("game", "turn"), "de": ("partie", "zug"), "es": ("partida", "turno")}
    game, turn = words.get(i18n.language(), words["en"])
    prefix = "".join(word[0] for word in kind.split("-"))  # the initials of the game's words
    shown = unicodedata.normalize("NFKD", i18n.colour(colour).lower().replace("ü", "ue"))
    shown = re.sub(r"[^a-z0-9]+", "-", shown.encode("ascii", "ignore").decode()).strip("-")
    return f"{prefix}-{game}{game_id}-{turn}{turn_number}-{shown or 'seat'}.txt"


def render(game_title: str, game_id: int, seat_name: str, colour: str, turn: int,
           position: list[str], legal: list[str], examples: tuple[str, ...] = (),
           turn_number: int | None = None) -> str:
    """The turn file of one seat for one turn (`turn`: the game's move counter; `turn_number`:
    the turn as players count it); `examples` are a whole turn in the game's notation (its
    rules' `order_examples`)."""
    # The Turn and ORDERS lines are read back and stay as they are; the rest is the reader's.
    seat = f"{seat_name} ({i18n.colour(colour)})"
    lines = [gettext("Turn file of %(seat)s in %(game)s", seat=seat,
                     game=f"{game_title} #{game_id}"),
             gettext("Game: %(id)d", id=game_id), gettext("Seat: %(seat)s", seat=seat),
             turn_line(turn_number, turn), "", *position, ""]
    if legal:
        lines.append(gettext("Legal moves now (%(num)d), for example:", num=len(legal)))
        lines.extend(f"#   {move}" for move in legal[:12])
        lines.append("")
    lines += [ORDERS_LINE,
              *("# " + line for line in textwrap.wrap(
                  gettext("Write your moves below, one per line, in the notation (in English, "
                          "German or Spanish); lines starting with # are ignored.") + " " +
                  (gettext("A whole turn at once is fine, for example:") if examples else
                   gettext("A whole turn at once is fine.")), COMMENT_WIDTH - 2)),
              *(f"#   {example}" for example in examples),
              ""]
    return "\n".join(lines)


@dataclass(frozen=True)
class Orders:
    turn: int | None  # the turn the file was made for, when it says
    lines: list[str]  # the moves, as written (but see `printable`)


def printable(line: str) -> str:
    """`line` with each character that is neither printable nor a space (NUL, terminal escapes,
    direction overrides) made U+FFFD: no order or message holds one, an answer quoting the line
    must not carry one, and PostgreSQL cannot store a NUL in text at all."""
    if line.isprintable():
        return line
    return "".join(c if c.isprintable() or c.isspace() else "\ufffd" for c in line)


def _lines(text: str) -> list[str]:
    return [quoting.plain(printable(line)) for line in text.splitlines()]


def own_lines(text: str) -> list[str]:
    """The lines a reply's writer wrote (stripped, see `printable`): quoted lines ('>') and the
    line introducing them left out wherever they stand, and nothing from a signature or an
    original pasted unquoted on (pbem.services.quoting)."""
    lines = _lines(text)
    own, _ = quoting.own_part(lines)
    return [lines[at] for at in own]


def read_talk(text: str) -> tuple[str, Orders]:
    """A reply to a message: its own text above an ORDERS line (all of it without one) is the
    message; the orders under that line, if any, are orders as in `read`."""
    own = own_lines(text)
    marked = [i for i, line in enumerate(own) if line == ORDERS_LINE]
    message = "\n".join(own[:marked[0]] if marked else own).strip("\n")
    return message, read(text) if marked else Orders(None, [])


def turn_in(text: str) -> int | None:
    """The move counter of the text's first 'Turn:' line (quoted lines do not count), if any."""
    for line in text.splitlines():
        match = TURN_LINE.fullmatch(line.strip())
        if match:
            return int(match.group(2) or match.group(1))
    return None


def read(text: str) -> Orders:
    """The orders in a turn file or a reply.

    Only the reply's own lines count: quoted lines ('>') and the line introducing them are left
    out wherever they stand (top or bottom posting), and reading ends at a signature or at an
    original pasted unquoted. Within them, the lines after an ORDERS line if there is one, else
    all; comments ('#') and blank lines left out. When they hold none, the lines written under
    the ORDERS line of an original added without '>' (an answer written into the quoted turn
    file) are the orders: under it the server writes only comments."""
    turn = turn_in(text)
    lines = _lines(text)
    own, cut = quoting.own_part(lines)
    orders = _orders([lines[at] for at in own])
    if not orders and cut < len(lines):
        orders = _written_into(lines[cut:])
    return Orders(turn, orders)


def _orders(own: list[str]) -> list[str]:
    marked = [i for i, line in enumerate(own) if line == ORDERS_LINE]
    if marked:
        own = own[marked[-1] + 1:]
    return [line for line in own if line and not line.startswith("#")
            and (marked or not TURN_LINE.fullmatch(line))]


def _written_into(original: list[str]) -> list[str]:
    """The lines written under the ORDERS line of a quoted original, up to where that original
    ends (the next quote, separator or signature)."""
    marked = [i for i, line in enumerate(original) if line == ORDERS_LINE]
    if not marked:
        return []
    below = original[marked[-1] + 1:]
    own, _ = quoting.own_part(below)
    return [below[at] for at in own if below[at] and not below[at].startswith("#")]
