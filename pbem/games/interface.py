"""The one interface through which the server plays a game.

The web pages, the API, the mails and the services know a game only through `GameRules`:
set up, who is to move, the legal moves in text, parse and apply a move, a seat's view, the
log in words, the outcome, the default move for a seat that missed its deadline, the board as a
picture, and the position after any number of logged moves. A second game
is a second module here plus its templates under `templates/games/<kind>/`; nothing else
changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..ground.kept import Kept


class MoveError(ValueError):
    """A move that does not parse or is not legal now; the message is for the player."""


class SetupProblem(ValueError):
    """A game that cannot be set up as asked (player count, colours, seed)."""


@dataclass(frozen=True)
class ResultTable:
    """The end of a game as one table, built once and shown on the pages and in the final mail:
    for each seat (by colour) the points of each part, the total, the tie-break figure, the
    rank and whether it won, with the sentences that explain them."""

    colours: tuple[str, ...]
    parts: tuple[tuple[str, tuple[int, ...]], ...]  # (label, points per seat), summed below
    totals: tuple[int, ...]
    tie_label: str  # what breaks a tie in total, e.g. "Pieces left"
    tie_values: tuple[int, ...]
    ranks: tuple[int, ...]  # 1 = first; seats tied in total and tie-break share a rank
    winners: tuple[int, ...]
    reason: str  # why the game ended
    tie_break: str | None  # how a tie for the most points was broken, when there was one
    notes: tuple[str, ...]  # how the parts earn points, in a sentence or two
    rules_url: str


class GameRules(Protocol):
    kind: str  # the key in the registry and the templates folder name
    title: str
    min_players: int
    max_players: int
    colours: tuple[str, ...]  # seat colours, in the order seats take them by default
    rules_url: str  # where players read the whole rules
    variants: dict[str, str]  # readings of the rules a game is created with; the first is default
    order_examples: tuple[str, ...]  # a whole turn in the notation, for turn files
    variant_question: str  # what the create form asks about `variants`
    variant_help: str  # how to name `variants` on the command line, in a sentence
    def summary(self) -> str: ...  # the game in a sentence or two, for the front page

    def new_state(self, colours: list[str], seed: str, start: int | None,
                  variant: str | None = None) -> Any: ...
    def variant_of(self, state: Any) -> str: ...
    def how_to_play(self, state: Any) -> list[str]: ...  # paragraphs for the invitation mail
    def variant_label(self, variant: str) -> str: ...  # a `variants` key in the reader's words
    def variant_note(self, state: Any) -> str: ...  # shown on every page and mail of the game
    def dumps(self, state: Any) -> str: ...
    def loads(self, text: str) -> Any: ...
    def ply(self, state: Any) -> int: ...
    def to_move(self, state: Any) -> int | None: ...
    def start_seat(self, state: Any) -> int: ...
    # Every move the seat to move may make now, each accepted exactly as written.
    def legal(self, state: Any) -> list[str]: ...
    # Optional: in_words(notation) -> the move in the reader's words, read back as the same
    # move (pages and turn files show moves so; the log and the API keep the notation).
    # Moves too many to list (an offer in a card game of trades), as patterns to fill in, like
    # "offer red: <gold and/or cards> for <gold and/or cards>"; never a move as written.
    def move_patterns(self, state: Any) -> list[str]: ...
    def parse(self, state: Any, text: str) -> Any: ...
    def apply(self, state: Any, move: Any) -> Any: ...
    def notation(self, move: Any) -> str: ...
    # A logged move's notation as `reader` may see it (a move can name a secret card). It may
    # depend on the game's players, not on the rest of the position: an answer's log items
    # are kept from one move to the next (pbem.web.api).
    def notation_for(self, state: Any, notation: str, mover: int, reader: int | None) -> str: ...
    def describe(self, before: Any, move: Any, after: Any, reader: int | None) -> list[str]: ...
    # Optional: what a move will do, for its preview (in the future tense); also
    # board_picture(..., move=) to ring the pieces a move placed.
    # def foretell(self, before: Any, move: Any, after: Any) -> list[str]: ...
    # and with it the position a preview may show without revealing a hidden card:
    # def foretold_state(self, before: Any, move: Any, after: Any) -> Any: ...
    def view(self, state: Any, seat: int | None) -> Any: ...
    # JSON-ready: shared by every caller asking for the same position and seat (ByState).
    def view_dict(self, state: Any, seat: int | None) -> dict: ...
    def scores(self, state: Any) -> dict[str, int]: ...
    def outcome(self, state: Any) -> dict | None: ...
    def outcome_lines(self, state: Any) -> list[str]: ...
    # Optional: result_table(state) -> ResultTable | None, the result as one table (pages and
    # the final mail show it instead of outcome_lines).
    def position_lines(self, state: Any, seat: int | None) -> list[str]: ...
    # Optional: position_summary(state, seat), the lines the HTML mail lists above its picture
    # and table of the board (by default position_lines).
    def move_from_form(self, state: Any, form: Any) -> str: ...
    def default_move(self, state: Any) -> str: ...  # played for a seat that timed out
    bots: tuple[str, ...]  # the computer players this game has, weakest first
    # The move computer player `bot` makes for the seat to move, from that seat's view alone;
    # `seed` is its random input.
    def bot_move(self, state: Any, bot: str, seed: str) -> str: ...
    def replay(self, state: Any, notations: list[str]) -> Any: ...  # same set-up, these moves
    # The game as it was after the first moves of its log (same set-up): for the history pages.
    def history_state(self, state: Any, notations: list[str]) -> Any: ...
    # The board as one <svg> element as `seat` (None: a spectator) may see it; `interactive`
    # marks what can be clicked to build a move. Never in mail: mail programs do not show SVG.
    def board_picture(self, state: Any, seat: int | None, interactive: bool) -> str: ...
    # Optional, for the mail's PNG (pbem.games.picture), which then renders the bare board once per
    # size and language and draws only a position's pieces over a copy of it:
    # picture_pieces(state, pixels_per_unit) -> (room_below, [(left, top, width, height,
    # svg)]) and picture_board(room_below) -> svg, together the spectator's board_picture.


class StateCache:
    """Parsed states by the JSON text they were read from or written as, the most recent
    `size` of them: a game's states are immutable, so one text is one state whatever row it
    came from, and a position written after a move is not parsed again by the next request
    that reads it (`remember`). Safe for threads; `get` parses what it does not hold."""

    def __init__(self, read: Callable[[str], Any], size: int = 256):
        self._read = read
        self._states = Kept(size)

    def get(self, text: str) -> Any:
        return self._states.get_or_make(text, lambda: self._read(text))

    def remember(self, text: str, state: Any) -> Any:
        """Keep `state` as what `text` reads as; returns it."""
        return self._states.put(text, state)


class ByState:
    """`compute(state, *args)` kept for the most recent `size` calls, by the state's identity
    (a state read from one text is one object: StateCache) and the arguments. For what is
    costly to derive and read often, like a seat's view of the position an API answer shows;
    the value is shared by every caller, so nobody may change it. Safe for threads."""

    def __init__(self, compute: Callable[..., Any], size: int = 128):
        self._compute = compute
        self._values = Kept(size)

    def __call__(self, state: Any, *args) -> Any:
        key = (id(state), *args)
        held = self._values.get(key)
        if held is not None and held[0] is state:  # the state itself: ids are reused
            return held[1]
        value = self._compute(state, *args)
        self._values.put(key, (state, value))  # holding the state keeps its id its own
        return value


def choices(rules: GameRules, state: Any) -> list[str]:
    """What the seat to move can do, for people to read (turn files, mail): the legal moves,
    then the patterns of those too many to list, in the reader's words where the game has
    them."""
    return [move_words(rules, m) for m in rules.legal(state)] + rules.move_patterns(state)


def move_words(rules: GameRules, notation: str) -> str:
    """A move in the reader's words where the game writes them (`in_words`), else as it is."""
    say = getattr(rules, "in_words", None)
    return say(notation) if say is not None else notation
