"""The one interface through which the server plays a game, in two parts.

`Rules`, the rules the server plays by: set up, who is to move, the legal moves in text, parse
and apply a move, a seat's view, the outcome, the default move for a seat that missed its
deadline, the computer players, and the position after any number of logged moves. `Shown`,
how a game is shown: the log and the position in words, the result table, the forms, the
variant questions, the pictures and a move's preview. Each is a Protocol; their optional
members are methods with defaults in `RulesBase` and `ShownBase`, which both adapters inherit,
so a caller calls them and never asks whether they are there. `GameRules` is both parts, what
`rules_for` gives. The web pages, the API, the mails and the services know a game only through
it: a new game is its engine package, one entry in the list of games (`engine.games`), an
adapter here and its templates (docs/adding-a-game.md lists each, and a test checks them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..ground.i18n import gettext
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
    tie_label: str | None  # what breaks a tie in total, e.g. "Pieces left" (None: nothing)
    tie_values: tuple[int, ...]
    ranks: tuple[int, ...]  # 1 = first; seats tied in total and tie-break share a rank
    winners: tuple[int, ...]
    reason: str  # why the game ended
    tie_break: str | None  # how a tie for the most points was broken, when there was one
    notes: tuple[str, ...]  # how the parts earn points, in a sentence or two
    rules_url: str
    total_label: str | None = None  # what the total is called (None: "Total")


class Rules(Protocol):
    """The rules the server plays by: set-up, whose decision, the legal moves, parse and apply,
    the views, the outcome, the default move and the computer players. Optional members have
    their defaults in `RulesBase`."""

    kind: str  # the key in the registry and the templates folder name
    min_players: int
    max_players: int
    colours: tuple[str, ...]  # seat colours, in the order seats take them by default
    variants: dict[str, str]  # readings of the rules a game is created with; the first is default

    def new_state(self, colours: list[str], seed: str, start: int | None,
                  variant: str | None = None) -> Any: ...
    def variant_of(self, state: Any) -> str: ...
    def dumps(self, state: Any) -> str: ...
    def loads(self, text: str) -> Any: ...
    def ply(self, state: Any) -> int: ...
    def to_move(self, state: Any) -> int | None: ...
    def start_seat(self, state: Any) -> int: ...
    # Every move the seat to move may make now, each accepted exactly as written.
    def legal(self, state: Any) -> list[str]: ...
    # A move in the reader's words, read back as the same move (pages and turn files show
    # moves so; the log and the API keep the notation); by default the notation itself.
    def in_words(self, notation: str) -> str: ...
    # Moves too many to list (an offer in a card game of trades), as patterns to fill in, like
    # "offer red: <gold and/or cards> for <gold and/or cards>"; never a move as written.
    def move_patterns(self, state: Any) -> list[str]: ...
    def parse(self, state: Any, text: str) -> Any: ...
    def apply(self, state: Any, move: Any) -> Any: ...
    def notation(self, move: Any) -> str: ...
    def replay(self, state: Any, notations: list[str]) -> Any: ...  # same set-up, these moves
    # The game as it was after the first moves of its log (same set-up): for the history pages.
    def history_state(self, state: Any, notations: list[str]) -> Any: ...
    def view(self, state: Any, seat: int | None) -> Any: ...
    # JSON-ready: shared by every caller asking for the same position and seat (ByState).
    def view_dict(self, state: Any, seat: int | None) -> dict: ...
    def scores(self, state: Any) -> dict[str, int]: ...
    def outcome(self, state: Any) -> dict | None: ...
    def default_move(self, state: Any) -> str: ...  # played for a seat that timed out
    bots: tuple[str, ...]  # the computer players this game has, weakest first
    # The move computer player `bot` makes for the seat to move, from that seat's view alone;
    # `seed` is its random input.
    def bot_move(self, state: Any, bot: str, seed: str) -> str: ...
    # How players count turns (pbem.services.turns), defaults in RulesBase.
    continues_turn: tuple[str, ...] | None
    turn_begins: str | tuple[str, ...] | None
    def starts_turn(self, notation: str) -> bool: ...
    def mid_turn(self, state: Any) -> bool: ...
    def reveals_hidden(self, before: Any, after: Any) -> bool: ...
    def turn_label(self, state: Any, turn: int) -> str: ...  # "Turn 7"
    def turn_short(self, state: Any, turn: int) -> str: ...  # "turn 7", in a sentence


class RulesBase:
    """The defaults of `Rules`'s optional members: every logged move begins a turn."""

    # The notation prefixes of moves that go on with the turn in progress (K&K's "draw"),
    # counted by the database; None when only `starts_turn` knows.
    continues_turn: tuple[str, ...] | None = ()
    # The message id of the log sentence that a move beginning a turn holds ("Round
    # %(round)d: ..."), for games whose notation does not say where a turn ends (several: the
    # one written now, then those of older moves); None: the notation says it.
    turn_begins: str | tuple[str, ...] | None = None
    # The message ids of log sentences a mail's news leaves out (a phase ended), and of those
    # it keeps only the last of (whose move it is now): what happened, not each step.
    quiet_in_news: frozenset[str] = frozenset()
    latest_only_in_news: frozenset[str] = frozenset()

    def news(self, lines: list) -> list:
        """A mail's account of the moves since the reader's last (`lines`: stored sentences,
        pbem.ground.i18n.Sentence, oldest first), without the steps that say nothing."""
        if not (self.quiet_in_news or self.latest_only_in_news):
            return lines

        def key(line):
            data = getattr(line, "data", None)
            return data.get("t") if isinstance(data, dict) and isinstance(data.get("t"), str) \
                else None

        keys = [key(line) for line in lines]
        last = max((i for i, k in enumerate(keys) if k in self.latest_only_in_news), default=-1)
        return [line for i, (line, k) in enumerate(zip(lines, keys))
                if k not in self.quiet_in_news
                and (k not in self.latest_only_in_news or i == last)]

    def in_words(self, notation: str) -> str:
        """A move of the notation in the reader's words: the notation itself, for a game whose
        notation is the same in every language."""
        return notation

    def starts_turn(self, notation: str) -> bool:
        """Whether a logged move (its notation) begins a turn, the first move aside."""
        return not notation.startswith(self.continues_turn or ())

    def mid_turn(self, state: Any) -> bool:
        """Whether `state` is in the middle of a turn (the seat to move goes on with it)."""
        return False

    def reveals_hidden(self, before: Any, after: Any) -> bool:
        """Whether the moves from `before` to `after` showed a card of the hidden deck (drawn
        by the mover, or turned face up): what was seen cannot be unseen, so such a turn is
        not taken back by agreement (pbem.services.undo). Both games keep their secret deck in
        the state's `deck`, drawn from its end; any change to it showed a card."""
        return getattr(before, "deck", None) != getattr(after, "deck", None)

    def turn_label(self, state: Any, turn: int) -> str:
        """Turn `turn` (the first being 1) as players name it, for a heading or a list: "Turn
        7"."""
        return gettext("Turn %(n)d", n=turn)

    def turn_short(self, state: Any, turn: int) -> str:
        """The same inside a sentence: "turn 7"."""
        return gettext("turn %(n)d", n=turn)


class Shown(Protocol):
    """How a game is shown: its names and words, the log and the position in words, the
    result, the forms, the variant questions, the pictures and the preview of a move. Optional
    members have their defaults in `ShownBase`."""

    title: str
    rules_url: str  # where players read the whole rules
    # The folder of the game's templates (board.html, ...: docs/adding-a-game.md); None: the
    # server's templates/games/<kind>/.
    templates: str | None
    order_examples: tuple[str, ...]  # a whole turn in the notation, for turn files
    variant_question: str  # what the create form asks about `variants`
    variant_help: str  # how to name `variants` on the command line, in a sentence
    def summary(self) -> str: ...  # the game in a sentence or two, for the front page
    def how_to_play(self, state: Any) -> list[str]: ...  # paragraphs for the invitation mail
    def variant_label(self, variant: str) -> str: ...  # a `variants` key in the reader's words
    def variant_note(self, state: Any) -> str: ...  # shown on every page and mail of the game
    # A logged move's notation as `reader` may see it (a move can name a secret card). It may
    # depend on the game's players, not on the rest of the position: an answer's log items
    # are kept from one move to the next (pbem.web.api).
    def notation_for(self, state: Any, notation: str, mover: int, reader: int | None) -> str: ...
    def describe(self, before: Any, move: Any, after: Any, reader: int | None) -> list[str]: ...
    def outcome_lines(self, state: Any) -> list[str]: ...
    def position_lines(self, state: Any, seat: int | None) -> list[str]: ...
    def move_from_form(self, state: Any, form: Any) -> str: ...
    # The board as one <svg> element as `seat` (None: a spectator) may see it; `interactive`
    # marks what can be clicked to build a move. Never in mail: mail programs do not show SVG.
    def board_picture(self, state: Any, seat: int | None, interactive: bool) -> str: ...
    # What a move will do, for its preview; a game that foretells also takes
    # board_picture(..., move=) to ring the pieces a move placed.
    def foretell(self, before: Any, move: Any, after: Any) -> list[str] | None: ...
    def foretold_state(self, before: Any, move: Any, after: Any) -> Any: ...
    def result_table(self, state: Any) -> ResultTable | None: ...
    def position_summary(self, state: Any, seat: int | None) -> list[str]: ...
    def picture_pieces(self, state: Any, pixels_per_unit: float
                       ) -> tuple[float, list[tuple]] | None: ...
    def picture_board(self, room_below: float) -> str: ...
    def picture_samples(self) -> list[Any]: ...


class ShownBase:
    """The defaults of `Shown`'s optional members."""

    templates: str | None = None  # the game's templates are in templates/games/<kind>/

    def foretell(self, before: Any, move: Any, after: Any) -> list[str] | None:
        """What a move will do, in the future tense, for its preview; None for a game that
        cannot foretell (the preview then shows the position after it in words)."""
        return None

    def foretold_state(self, before: Any, move: Any, after: Any) -> Any:
        """The position a preview may show without revealing a hidden card."""
        return after

    def result_table(self, state: Any) -> ResultTable | None:
        """The result as one table (pages and the final mail show it instead of
        `outcome_lines`); None when the game has none, or is not over."""
        return None

    def position_summary(self: Shown, state: Any, seat: int | None) -> list[str]:
        """The lines an HTML mail lists above its picture and table of the board."""
        return self.position_lines(state, seat)

    def picture_pieces(self, state: Any, pixels_per_unit: float
                       ) -> tuple[float, list[tuple]] | None:
        """The mail's PNG (pbem.games.picture) in layers: (room_below, [(left, top, width,
        height, svg)]), the pieces drawn over `picture_board(room_below)`, together the
        spectator's `board_picture`; None when the picture is drawn whole from that."""
        return None

    def picture_board(self, room_below: float) -> str:
        """The bare board under `picture_pieces`, as svg."""
        raise NotImplementedError(f"{type(self).__name__} draws its picture whole")

    def picture_samples(self) -> list[Any]:
        """Positions that show every colour the pictures can (for their palette); none by
        default."""
        return []


class GameRules(Rules, Shown, Protocol):
    """A game as the server hosts it: its rules and how it is shown (what `rules_for` gives).
    A second game is an adapter inheriting `RulesBase` and `ShownBase`."""


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
    """A move in the reader's words (`in_words`)."""
    return rules.in_words(notation)
