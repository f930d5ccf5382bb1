"""Positions a bot may reason about, built from one seat's view and nothing else.

A bot is never given a `GameState`: it gets a `SeatView`. To use the rules (`legal_moves`,
`apply_move`) it rebuilds a state from the view. `visible_state` fills the hidden parts (the
other hands, the deck order, the seed) in one fixed way, for questions whose answer does not
depend on them (the seat's legal moves); `sampled_state` deals them at random, consistent with
all the view shows, for search (a "determinization").
"""

from __future__ import annotations

import random
from collections import Counter

from ..board import Board, default_board
from ..state import EMPTY, GameState
from ..view import SeatView


def check_view(view: object, board: Board | None = None) -> Board:
    """The board of `view`; TypeError unless it is a seat's view with that seat to move."""
    if not isinstance(view, SeatView):
        raise TypeError(f"a bot plays from a SeatView (engine.view_for), not {type(view).__name__}")
    if view.seat is None or not view.is_my_turn:
        raise ValueError("a bot moves only for the seat whose view it is, on that seat's turn")
    board = board or default_board()
    if board.id != view.board_id:
        raise ValueError(f"the view is of board {view.board_id!r}, not {board.id!r}")
    return board


def unseen_cards(view: SeatView, board: Board) -> list[str]:
    """The cards this seat cannot see (the other hands and the deck), sorted."""
    left = Counter({c.code: c.count for c in board.cards})
    left.subtract(view.removed)
    left.subtract(view.discard)
    left.subtract(view.face_up)
    left.subtract(view.hand)
    if any(n < 0 for n in left.values()):
        raise ValueError("the view shows more cards of a colour than the game has")
    unseen = sorted(left.elements())
    others = sum(n for s, n in enumerate(view.hand_sizes) if s != view.seat)
    if len(unseen) != others + view.deck_size:
        raise ValueError("the view's card counts do not add up")
    return unseen


def _state(view: SeatView, board: Board, hidden: list[str], seed: int | str) -> GameState:
    hands, rest = [], list(hidden)
    for seat, size in enumerate(view.hand_sizes):
        if seat == view.seat:
            assert view.hand is not None, "a seat's own view holds its hand"
            hands.append(tuple(view.hand))
        else:
            hands.append(tuple(sorted(rest[:size])))
            rest = rest[size:]
    monasteries = [EMPTY] * len(board.fields)
    colour_seat = {colour: s for s, colour in enumerate(view.players)}
    for name, colour in view.monasteries:
        monasteries[board.field_named(name).index] = colour_seat[colour]
    advisors = dict(view.advisors)
    drawn: list[tuple[str, ...]] = [()] * len(view.players)
    assert view.seat is not None and view.drawn is not None, "a bot plays from a seat's view"
    drawn[view.seat] = tuple(view.drawn)
    return GameState(
        board=board, players=view.players, start=view.start, seed=seed, deck=tuple(rest),
        face_up=view.face_up, discard=view.discard, removed=view.removed, hands=tuple(hands),
        monasteries=tuple(monasteries),
        advisors=tuple(tuple(advisors[c.name]) for c in board.countries),
        monastery_supply=view.monastery_supply, advisor_supply=view.advisor_supply,
        scores=view.scores, current=view.current, phase=view.phase, draws_left=view.draws_left,
        drawn=tuple(drawn), exhaustions=view.exhaustions, last_seat=view.last_seat,
        ply=view.ply, intermediate=tuple(monasteries) if view.exhaustions else None,
        end_reason=view.end_reason, joker=view.joker)


def visible_state(view: SeatView, board: Board) -> GameState:
    """A state equal to the real one in all the view shows, hidden cards in sorted order."""
    return _state(view, board, unseen_cards(view, board), "bot")


def sampled_state(view: SeatView, board: Board, rng: random.Random,
                  unseen: list[str] | None = None) -> GameState:
    """A state the real one could be, as far as the view tells: hidden cards dealt at random."""
    hidden = list(unseen if unseen is not None else unseen_cards(view, board))
    rng.shuffle(hidden)
    return _state(view, board, hidden, rng.getrandbits(32))
