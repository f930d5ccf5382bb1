"""The game log in plain words: what a move did, told to one reader.

A deck card is named only to the seat that drew it; everyone else reads "drew a card". Each
sentence is a `Phrase`: English text that also carries its message id and parameters, so that
a server can store it without a language and write it in its reader's (see engine.words).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..words import Phrase, both, colour, player, say, say_n
from .moves import ADVISOR, DECK, Draw, Exchange, Move, Pass, Place
from .outcome import intermediate_of, outcome
from .state import GameState


def _card(state: GameState, code: str, count: int = 1) -> Phrase:
    card = state.board.card(code)
    if count == 2:
        return say("two %(colour)s cards (%(countries)s)", colour=colour(card.colour),
                   countries=card.label)
    if count >= 3:
        return say("three %(colour)s cards (%(countries)s)", colour=colour(card.colour),
                   countries=card.label)
    if card.colour[0] in "aeiou":
        return say("an %(colour)s card (%(countries)s)", colour=colour(card.colour),
                   countries=card.label)
    return say("a %(colour)s card (%(countries)s)", colour=colour(card.colour),
               countries=card.label)


def _cards_played(state: GameState, move: Place) -> Phrase:
    shown = state.board.country(move.country).card
    singles = [c for c in move.cards if c == shown]
    joker = [c for c in move.cards if c != shown]
    if not joker and len(singles) == len(move.pieces) + 1:  # a pair of the country's own colour
        joker, singles = singles[:2], singles[2:]           # as a joker (English/Spanish books)
    parts = [_card(state, singles[0], len(singles))] if singles else []
    if joker:
        parts.append(say("%(cards)s as a joker,", cards=_card(state, joker[0], 2)))
    return both(parts)


def _pieces(move: Place) -> Phrase:
    return both([say("an advisor in %(country)s", country=move.country) if p == ADVISOR
                 else say("a monastery at %(field)s", field=p) for p in move.pieces])


def _winners(after: GameState, winners: Sequence[int]) -> Phrase:
    return say_n("Winner: %(names)s.", "Winners: %(names)s.", len(winners),
                 names=both([player(after.players[s]) for s in winners]))


def describe(before: GameState, move: Move, after: GameState, reader: int | None) -> list[Phrase]:
    """Sentences telling `reader` (a seat, or None for a spectator) what `move` did."""
    actor = before.current
    who = player(before.players[actor])
    lines = []
    if isinstance(move, Place):
        lines.append(say("%(who)s played %(cards)s and placed %(pieces)s.", who=who,
                         cards=_cards_played(before, move), pieces=_pieces(move)))
    elif isinstance(move, Exchange):
        lines.append(say("%(who)s exchanged %(card)s.", who=who, card=_card(before, move.card)))
    elif isinstance(move, Draw):
        if move.source != DECK:
            lines.append(say("%(who)s took the face-up %(colour)s card.", who=who,
                             colour=colour(before.board.card(move.source).colour)))
        elif reader == actor:
            card = after.drawn[actor][-1] if after.drawn[actor] else None
            lines.append(say("%(who)s (you) drew %(card)s from the deck.", who=who,
                             card=_card(before, card)) if card
                         else say("%(who)s (you) drew a card from the deck.", who=who))
        else:
            lines.append(say("%(who)s drew a card from the deck.", who=who))
    elif isinstance(move, Pass):
        lines.append(say("%(who)s could neither place a piece nor exchange a card, and passed.",
                         who=who))
    if after.exhaustions > before.exhaustions:
        if before.exhaustions == 0:
            lines.append(say("The deck ran out: intermediate scoring. The discard pile is "
                             "shuffled into a new deck."))
            intermediate = intermediate_of(after)
            assert intermediate is not None, "the deck ran out: the intermediate scoring is done"
            lines.extend(intermediate.lines()[1:])
        if after.exhaustions >= 2:
            assert after.last_seat is not None, "the second time, the last seat is known"
            lines.append(say("The deck ran out a second time: the round is played out, ending "
                             "with %(last)s.", last=player(after.players[after.last_seat])))
    result = outcome(after)
    if result is not None:
        lines.append(say("The game is over: %(reason)s.", reason=result.reason))
        lines.extend(result.breakdown.lines())
        lines.append(_winners(after, result.winners))
    # Who moves next is not a thing this move did; pages and mails say it on a line of its own.
    return lines


def foretell(before: GameState, move: Move, after: GameState) -> list[Phrase]:
    """Sentences telling the seat to move what `move` will do, for its preview.

    Said to the mover in the future tense; a card still hidden in the deck is never named."""
    actor = before.current
    lines = []
    if isinstance(move, Place):
        lines.append(say("You will play %(cards)s and place %(pieces)s.",
                         cards=_cards_played(before, move), pieces=_pieces(move)))
    elif isinstance(move, Exchange):
        # The draw back is told below ("Then you draw 1 card back ...").
        lines.append(say("You will discard %(card)s.", card=_card(before, move.card)))
    elif isinstance(move, Draw):
        if move.source == DECK:
            lines.append(say("You will draw the top card of the deck (you see it once it is "
                             "yours)."))
        else:
            lines.append(say("You will take the face-up %(colour)s card.",
                             colour=colour(before.board.card(move.source).colour)))
    elif isinstance(move, Pass):
        lines.append(say("You will pass, since you can neither place a piece nor exchange a "
                         "card."))
    gained = after.scores[actor] - before.scores[actor]
    if after.exhaustions > before.exhaustions:
        if before.exhaustions == 0:
            lines.append(say("The deck will run out: the intermediate scoring follows at once, "
                             "and the discard pile is shuffled into a new deck."))
        if after.exhaustions >= 2:
            assert after.last_seat is not None, "the second time, the last seat is known"
            lines.append(say("The deck will run out a second time: the round is played out, "
                             "ending with %(last)s.",
                             last=player(after.players[after.last_seat])))
    result = outcome(after)
    if result is not None:
        lines.append(say("The game will then be over: %(reason)s.", reason=result.reason))
        lines.append(_winners(after, result.winners))
    elif after.current == actor and after.draws_left:
        lines.append(say_n("Then you draw %(num)d card back, one at a time, from the deck or "
                           "the face-up cards.",
                           "Then you draw %(num)d cards back, one at a time, from the deck or "
                           "the face-up cards.", after.draws_left))
    elif after.current != actor:
        lines.append(say("Then it is %(who)s's turn.", who=player(after.players[after.current])))
    if gained and result is None:
        lines.append(say("Your score will go from %(before)d to %(after)d.",
                         before=before.scores[actor], after=after.scores[actor]))
    return lines
