"""The game log in plain words: what a move did, told to one reader.

A deck card is named only to the seat that drew it; everyone else reads "drew a card".
"""

from __future__ import annotations

from .moves import ADVISOR, DECK, Draw, Exchange, Move, Pass, Place
from .outcome import intermediate_of, outcome
from .state import GameState


def _card(state: GameState, code: str) -> str:
    card = state.board.card(code)
    return f"a {card.colour} card ({card.label})"


def _pieces(move: Place) -> str:
    words = [f"an advisor in {move.country}" if p == ADVISOR else f"a monastery at {p}"
             for p in move.pieces]
    return " and ".join(words)


def describe(before: GameState, move: Move, after: GameState, reader: int | None) -> list[str]:
    """Sentences telling `reader` (a seat, or None for a spectator) what `move` did."""
    actor = before.current
    who = before.players[actor]
    lines = []
    if isinstance(move, Place):
        cards = ", ".join(_card(before, c) for c in move.cards)
        lines.append(f"{who} played {cards} and placed {_pieces(move)}.")
    elif isinstance(move, Exchange):
        lines.append(f"{who} exchanged {_card(before, move.card)}.")
    elif isinstance(move, Draw):
        if move.source != DECK:
            lines.append(f"{who} took the face-up {before.board.card(move.source).colour} card.")
        elif reader == actor:
            card = after.drawn[actor][-1] if after.drawn[actor] else None
            lines.append(f"{who} (you) drew {_card(before, card)} from the deck." if card
                         else f"{who} (you) drew a card from the deck.")
        else:
            lines.append(f"{who} drew a card from the deck.")
    elif isinstance(move, Pass):
        lines.append(f"{who} could neither place a piece nor exchange a card, and passed.")
    if after.exhaustions > before.exhaustions:
        if before.exhaustions == 0:
            lines.append("The deck ran out: intermediate scoring. The discard pile is shuffled "
                         "into a new deck.")
            lines.extend(intermediate_of(after).lines()[1:])
        if after.exhaustions >= 2:
            lines.append(f"The deck ran out a second time: the round is played out, ending with "
                         f"{after.players[after.last_seat]}.")
    result = outcome(after)
    if result is not None:
        lines.append(f"The game is over: {result.reason}.")
        lines.extend(result.breakdown.lines())
        names = " and ".join(after.players[s] for s in result.winners)
        lines.append(f"Winner{'s' if len(result.winners) > 1 else ''}: {names}.")
    elif after.current != actor:
        lines.append(f"{after.players[after.current]} is next.")
    return lines
