"""The game log in plain words: what a move did, told to one reader.

A deck card is named only to the seat that drew it; everyone else reads "drew a card".
"""

from __future__ import annotations

from .moves import ADVISOR, DECK, Draw, Exchange, Move, Pass, Place
from .outcome import intermediate_of, outcome
from .state import GameState
from ..words import plural


def _card(state: GameState, code: str, count: int = 1) -> str:
    card = state.board.card(code)
    if count >= 2:
        return f"{'two' if count == 2 else 'three'} {card.colour} cards ({card.label})"
    article = "an" if card.colour[0] in "aeiou" else "a"
    return f"{article} {card.colour} card ({card.label})"


def _cards_played(state: GameState, move: Place) -> str:
    shown = state.board.country(move.country).card
    singles = [c for c in move.cards if c == shown]
    joker = [c for c in move.cards if c != shown]
    if not joker and len(singles) == len(move.pieces) + 1:  # a pair of the country's own colour
        joker, singles = singles[:2], singles[2:]           # as a joker (English/Spanish books)
    parts = [_card(state, singles[0], len(singles))] if singles else []
    if joker:
        parts.append(_card(state, joker[0], 2) + " as a joker,")
    return " and ".join(parts)


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
        lines.append(f"{who} played {_cards_played(before, move)} and placed {_pieces(move)}.")
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
        lines.append(f"{plural(len(result.winners), 'Winner', 'Winners')}: {names}.")
    # Who moves next is not a thing this move did; pages and mails say it on a line of its own.
    return lines


def foretell(before: GameState, move: Move, after: GameState) -> list[str]:
    """Sentences telling the seat to move what `move` will do, for its preview.

    Said to the mover in the future tense; a card still hidden in the deck is never named."""
    actor = before.current
    lines = []
    if isinstance(move, Place):
        lines.append(f"You will play {_cards_played(before, move)} and place {_pieces(move)}.")
    elif isinstance(move, Exchange):
        lines.append(f"You will discard {_card(before, move.card)} and then draw one card, "
                     "from the deck or a face-up card.")
    elif isinstance(move, Draw):
        if move.source == DECK:
            lines.append("You will draw the top card of the deck (you see it once it is yours).")
        else:
            lines.append(f"You will take the face-up {before.board.card(move.source).colour} "
                         "card.")
    elif isinstance(move, Pass):
        lines.append("You will pass, since you can neither place a piece nor exchange a card.")
    gained = after.scores[actor] - before.scores[actor]
    if after.exhaustions > before.exhaustions:
        if before.exhaustions == 0:
            lines.append("The deck will run out: the intermediate scoring follows at once, and "
                         "the discard pile is shuffled into a new deck.")
        if after.exhaustions >= 2:
            lines.append(f"The deck will run out a second time: the round is played out, ending "
                         f"with {after.players[after.last_seat]}.")
    result = outcome(after)
    if result is not None:
        lines.append(f"The game will then be over: {result.reason}.")
        names = " and ".join(after.players[s] for s in result.winners)
        lines.append(f"Winner{'s' if len(result.winners) > 1 else ''}: {names}.")
    elif after.current == actor and after.draws_left:
        lines.append(f"Then you draw {after.draws_left} "
                     f"card{'s' if after.draws_left != 1 else ''} back, one at a time, from the "
                     "deck or the face-up cards.")
    elif after.current != actor:
        lines.append(f"Then it is {after.players[after.current]}'s turn.")
    if gained and result is None:
        lines.append(f"Your score will go from {before.scores[actor]} to {after.scores[actor]}.")
    return lines
