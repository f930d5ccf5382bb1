"""Games as versioned JSON, and replaying a game from its seed and move log.

`to_json` writes every field of a `GameState` (secrets included: this is for the server's own
storage, never for a player). `from_json` treats its input as hostile: anything that is not a
consistent position of the given board raises `StateError` and nothing is built.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any, cast

from ..errors import StateError
from ..words import count
from .board import Board, default_board
from .moves import Move, parse_move
from .rules import apply_move
from .state import (
    ADVISORS_EACH,
    DRAW,
    EMPTY,
    JOKER_OTHER,
    JOKER_RULES,
    MONASTERIES_EACH,
    OVER,
    PLAY,
    PLAYER_COLOURS,
    REMOVED_PER_COLOUR,
    GameState,
    new_game,
)

FORMAT = 1
GAME = "kardinal-koenig"


def to_dict(state: GameState) -> dict[str, Any]:
    """Every field of the state as JSON-ready data (cards as strings of colour codes)."""
    return {
        "format": FORMAT,
        "game": GAME,
        "board": {"id": state.board.id, "digest": state.board.digest},
        "players": list(state.players),
        "start": state.start,
        "seed": state.seed,
        "deck": "".join(state.deck),
        "face_up": "".join(state.face_up),
        "discard": "".join(state.discard),
        "removed": "".join(state.removed),
        "hands": ["".join(h) for h in state.hands],
        "monasteries": list(state.monasteries),
        "advisors": [list(a) for a in state.advisors],
        "monastery_supply": list(state.monastery_supply),
        "advisor_supply": list(state.advisor_supply),
        "scores": list(state.scores),
        "current": state.current,
        "phase": state.phase,
        "draws_left": state.draws_left,
        "drawn": ["".join(d) for d in state.drawn],
        "exhaustions": state.exhaustions,
        "last_seat": state.last_seat,
        "ply": state.ply,
        "intermediate": list(state.intermediate) if state.intermediate is not None else None,
        "end_reason": state.end_reason,
        "joker": state.joker,
    }


def to_json(state: GameState) -> str:
    return json.dumps(to_dict(state), ensure_ascii=False, separators=(",", ":"))


def _need(ok: bool, message: str) -> None:
    if not ok:
        raise StateError(message)


def _int(data: dict[str, Any], key: str, low: int, high: int) -> int:
    value = data.get(key)
    _need(isinstance(value, int) and not isinstance(value, bool) and low <= value <= high,
          f"'{key}' must be a whole number from {low} to {high}")
    return cast(int, value)


def _ints(value: Any, key: str, length: int, low: int, high: int) -> tuple[int, ...]:
    _need(isinstance(value, list) and len(value) == length
          and all(isinstance(v, int) and not isinstance(v, bool) and low <= v <= high for v in value),
          f"'{key}' must be a list of {length} whole numbers from {low} to {high}")
    return tuple(value)


def _cards(value: Any, key: str, board: Board) -> tuple[str, ...]:
    _need(isinstance(value, str) and all(c in board.by_code for c in value),
          f"'{key}' must be a text of card codes ({''.join(board.by_code)})")
    return tuple(value)


def from_dict(data: Any, board: Board | None = None) -> GameState:
    """Rebuild a state written by `to_dict`, checking that it is a consistent position."""
    board = board or default_board()
    _need(isinstance(data, dict), "a saved game must be a JSON object")
    _need(data.get("format") == FORMAT, f"unknown saved-game format {data.get('format')!r}; "
                                        f"this engine reads format {FORMAT}")
    _need(data.get("game") == GAME, f"this is not a {GAME} game")
    saved_board = data.get("board")
    _need(isinstance(saved_board, dict) and saved_board.get("id") == board.id
          and saved_board.get("digest") == board.digest,
          f"the game was saved on another board than {board.id} ({board.digest})")
    players = data.get("players")
    _need(isinstance(players, list) and 3 <= len(players) <= 5
          and all(p in PLAYER_COLOURS for p in players) and len(set(players)) == len(players),
          "'players' must list 3 to 5 different player colours")
    n = len(players)
    seed = data.get("seed")
    _need(isinstance(seed, (int, str)) and not isinstance(seed, bool), "'seed' must be a number or text")
    hands = data.get("hands")
    _need(isinstance(hands, list) and len(hands) == n, f"'hands' must list {n} hands")
    drawn = data.get("drawn")
    _need(isinstance(drawn, list) and len(drawn) == n, f"'drawn' must list {n} entries")
    advisors = data.get("advisors")
    _need(isinstance(advisors, list) and len(advisors) == len(board.countries),
          f"'advisors' must hold one list per country ({len(board.countries)})")
    phase = data.get("phase")
    _need(phase in (PLAY, DRAW, OVER), "'phase' must be play, draw or over")
    last_seat = data.get("last_seat")
    _need(last_seat is None or (isinstance(last_seat, int) and not isinstance(last_seat, bool)
                                and 0 <= last_seat < n), "'last_seat' must be empty or a seat")
    intermediate = data.get("intermediate")
    end_reason = data.get("end_reason")
    _need(end_reason is None or isinstance(end_reason, str), "'end_reason' must be empty or text")
    joker = data.get("joker", JOKER_OTHER)  # games saved before the switch: the German reading
    _need(joker in JOKER_RULES, f"'joker' must be one of {', '.join(JOKER_RULES)}")
    state = GameState(
        board=board, players=tuple(players), start=_int(data, "start", 0, n - 1), seed=seed,
        deck=_cards(data.get("deck"), "deck", board),
        face_up=_cards(data.get("face_up"), "face_up", board),
        discard=_cards(data.get("discard"), "discard", board),
        removed=_cards(data.get("removed"), "removed", board),
        hands=tuple(_cards(h, "hands", board) for h in hands),
        monasteries=_ints(data.get("monasteries"), "monasteries", len(board.fields), EMPTY, n - 1),
        advisors=tuple(_ints(a, "advisors", n, 0, ADVISORS_EACH) for a in advisors),
        monastery_supply=_ints(data.get("monastery_supply"), "monastery_supply", n, 0,
                               MONASTERIES_EACH),
        advisor_supply=_ints(data.get("advisor_supply"), "advisor_supply", n, 0, ADVISORS_EACH),
        scores=_ints(data.get("scores"), "scores", n, 0, 10**6),
        current=_int(data, "current", 0, n - 1), phase=phase,
        draws_left=_int(data, "draws_left", 0, 3),
        drawn=tuple(_cards(d, "drawn", board) for d in drawn),
        exhaustions=_int(data, "exhaustions", 0, 2), last_seat=last_seat,
        ply=_int(data, "ply", 0, 10**6),
        intermediate=None if intermediate is None else _ints(
            intermediate, "intermediate", len(board.fields), EMPTY, n - 1),
        end_reason=end_reason, joker=joker)
    _check_consistent(state)
    return state


def _check_consistent(state: GameState) -> None:
    board, n = state.board, len(state.players)
    everything = Counter(state.deck + state.face_up + state.discard + state.removed)
    for hand in state.hands:
        everything.update(hand)
    expected = Counter({c.code: c.count for c in board.cards})
    _need(everything == expected, "the cards do not add up to the board's deck")
    _need(Counter(state.removed) == Counter({c.code: REMOVED_PER_COLOUR[n] for c in board.cards
                                             if REMOVED_PER_COLOUR[n]}),
          f"a {n}-player game sets aside "
          f"{count(REMOVED_PER_COLOUR[n], 'card', 'cards')} of each colour")
    for seat in state.seats:
        on_board = sum(1 for s in state.monasteries if s == seat)
        _need(on_board + state.monastery_supply[seat] == MONASTERIES_EACH,
              f"the monasteries of {state.players[seat]} do not add up to {MONASTERIES_EACH}")
        placed = sum(a[seat] for a in state.advisors)
        _need(placed + state.advisor_supply[seat] == ADVISORS_EACH,
              f"the advisors of {state.players[seat]} do not add up to {ADVISORS_EACH}")
    for country in board.countries:
        _need(sum(state.advisors[country.index]) <= max(state.monastery_counts(country.index)),
              f"{country.name} holds more advisors than its advisor cap allows")
    _need(all(len(h) <= 3 for h in state.hands) and len(state.face_up) <= 2,
          "a hand holds at most 3 cards and at most 2 cards lie face up")
    _need((state.exhaustions >= 1) == (state.intermediate is not None),
          "'intermediate' must be set exactly when the deck has run out")
    _need((state.exhaustions >= 2) == (state.last_seat is not None),
          "'last_seat' must be set exactly when the deck has run out twice")
    _need((state.phase == OVER) == (state.end_reason is not None),
          "'end_reason' must be set exactly when the game is over")


def from_json(text: str | bytes, board: Board | None = None) -> GameState:
    """Read a state written by `to_json`; StateError for anything else."""
    try:
        data = json.loads(text)
    except (ValueError, TypeError) as exc:
        raise StateError(f"a saved game must be JSON: {exc}") from None
    return from_dict(data, board)


def replay(players: int | tuple[str, ...] | list[str], seed: int | str,
           moves: Iterable[Move | str], board: Board | None = None,
           start: int | None = None, joker: str = JOKER_OTHER) -> GameState:
    """The state reached from a new game by applying `moves` (objects or notation) in order."""
    board = board or default_board()
    state = new_game(players, seed, board=board, start=start, joker=joker)
    for move in moves:
        state = apply_move(state, parse_move(move, board) if isinstance(move, str) else move)
    return state
