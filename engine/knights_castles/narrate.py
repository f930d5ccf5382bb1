"""A Knights & Castles move in words, as one reader may read it.

`describe(before, move, after, reader)` says what the move did, and what happened by itself
after it (dice, a loss with one possible answer, a new turn, the end), in the words of `reader`
(a seat, or None for a spectator), so it names no card the reader may not know: a Scholastics
keep and an offer's cards are told only to the seats they concern.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..words import Phrase, both, player, say, say_n
from .cards import ID, KINDS, counts_to_ids
from .moves import (
    Abandon,
    Accept,
    Build,
    Buy,
    Decline,
    Discard,
    Done,
    Keep,
    Lose,
    Move,
    Offer,
    Pay,
    Play,
    Research,
    Share,
    War,
)
from .state import OVER, PHASE_OF, GameState

_ASKS = {"keep": say("keep one of two cards"), "buy": say("buy cards or end the draw phase"),
         "build": say("build"), "upkeep": say("pay for or give up unsupported cards"),
         "research": say("research"), "event": say("play an event"),
         "loss": say("choose losses"), "trade": say("trade"), "answer": say("answer an offer"),
         "end": say("discard down to 7 cards")}
PHASES = {"draw": say("draw phase"), "tax": say("tax phase"), "build": say("build phase"),
          "research": say("research phase"), "event": say("event phase"),
          "trade": say("trade phase"), "end": say("end phase"), "over": say("game over")}
"""Each phase's name, as the position lines and the pages say it."""


def name(card: str) -> Phrase | str:
    """A card id as printed: 'trade-route' -> 'Trade Route' (a Phrase a server translates)."""
    from .cards import INDEX

    return KINDS[INDEX[card]].name if card in INDEX else card


def phase(step_phase: str) -> Phrase | str:
    """A phase ('draw') by its name ('draw phase')."""
    return PHASES.get(step_phase, step_phase)


def names(cards: Iterable[str]) -> Phrase:
    """Cards by their printed names, joined by commas; 'nothing' for none."""
    shown = [name(c) for c in cards]
    return say("%(cards)s", cards=shown) if shown else say("nothing")


def _side(gold: int, cards: Sequence[str]) -> Phrase:
    """'5 gold and Town, Mine', '5 gold', 'Town' (one side of an offer)."""
    parts = ([say_n("%(num)d gold", "%(num)d gold", gold)] if gold else []) \
        + ([names(cards)] if cards else [])
    return both(parts) if parts else say("nothing")


def describe(before: GameState, move: Move, after: GameState, reader: int | None) -> list[Phrase]:
    """What `move` did and what followed by itself, in `reader`'s words."""
    p = [player(c) for c in before.players]
    mover = before.to_move
    assert mover is not None, "a move is made by the seat to move"
    lines = [_line(before, move, after, reader, reader == mover, p[mover])]
    rolled = after.dice[len(before.dice):]
    if rolled:
        lines.append(say("The die shows %(dice)s.", dice=", ".join(map(str, rolled))))
    if isinstance(move, (Play, War)) and after.loss is None:
        target = before.players.index(move.target) if move.target else None
        if target is not None:
            lost = [ID[k] for k in range(len(KINDS))
                    for _ in range(max(0, before.tableau[target][k] - after.tableau[target][k]))]
            lines.append(say("You lose %(cards)s.", cards=names(lost)) if reader == target
                         else say("%(who)s loses %(cards)s.", who=p[target], cards=names(lost)))
    if after.turn > before.turn:
        # Players count rounds of the table; `turn` is kept for the server, which counts the
        # turns by this sentence (pbem.services.turns).
        lines.append(say("Round %(round)d: %(who)s draws and collects tax.", round=after.round,
                         who=p[after.current], turn=after.turn))
    if after.step == OVER:
        best = max(after.gold)
        winners = [p[s] for s in after.seats if after.gold[s] == best]
        lines.append(say("The last card is drawn: the game is over. Most gold (%(gold)d): "
                         "%(winners)s.", gold=best, winners=both(winners)))
    elif after.to_move is not None and (after.to_move != mover or after.step != before.step):
        asks, where = _ASKS[after.step], phase(PHASE_OF[after.step])
        lines.append(say("Now you: %(asks)s (%(phase)s).", asks=asks, phase=where)
                     if reader == after.to_move else
                     say("Now %(who)s: %(asks)s (%(phase)s).", who=p[after.to_move], asks=asks,
                         phase=where))
    return lines


def _line(before: GameState, move: Move, after: GameState, reader: int | None, mine: bool,
          who: Phrase) -> Phrase:
    """The move itself: `mine` when the reader made it ("You ..."), else by `who`."""
    said = _SAID_BY_MOVE.get(type(move))
    if said is not None:
        return said(before, move, reader, mine, who)
    assert isinstance(move, (Build, Abandon, Research, Share, Discard)), move
    yours, theirs = _CARD_MOVES[str(move).split()[0]]
    card = name(move.card)
    return say(str(yours.key), card=card) if mine else say(str(theirs.key), who=who, card=card)


# One small function per kind of move that is not a plain card move (see _CARD_MOVES):
# (the position before, the move, the reader's seat, whether the reader made it, the mover).

def _said_done(before: GameState, move: Done, reader: int | None, mine: bool,
               who: Phrase) -> Phrase:
    where = phase(before.phase)
    return (say("You ended the %(phase)s.", phase=where) if mine else
            say("%(who)s ended the %(phase)s.", who=who, phase=where))


def _said_buy(before: GameState, move: Buy, reader: int | None, mine: bool,
              who: Phrase) -> Phrase:
    return (say("You bought a card for 5 gold.") if mine else
            say("%(who)s bought a card for 5 gold.", who=who))


def _said_keep(before: GameState, move: Keep, reader: int | None, mine: bool,
               who: Phrase) -> Phrase:
    a, b = (ID[k] for k in before.choice)
    other = name(b if move.card == a else a)
    if reader == before.current:
        return say("You kept %(card)s and discarded %(other)s.", card=name(move.card),
                   other=other)
    return say("%(who)s kept one of two cards drawn and discarded %(other)s.", who=who,
               other=other)


def _said_lose(before: GameState, move: Lose, reader: int | None, mine: bool,
               who: Phrase) -> Phrase:
    cards = names(move.cards)
    return (say("You lost %(cards)s.", cards=cards) if mine else
            say("%(who)s lost %(cards)s.", who=who, cards=cards))


def _said_pay(before: GameState, move: Pay, reader: int | None, mine: bool,
              who: Phrase) -> Phrase:
    card = name(move.card)
    return (say("You paid 1 gold to keep the unsupported %(card)s.", card=card) if mine else
            say("%(who)s paid 1 gold to keep the unsupported %(card)s.", who=who, card=card))


def _said_offer(before: GameState, move: Offer, reader: int | None, mine: bool,
                who: Phrase) -> Phrase:
    target = player(move.target)
    if reader in (before.current, before.players.index(move.target)):
        give, ask = _side(move.give_gold, move.give), _side(move.ask_gold, move.ask)
        return (say("You offered %(target)s %(give)s for %(ask)s.", target=target, give=give,
                    ask=ask) if mine else
                say("%(who)s offered %(target)s %(give)s for %(ask)s.", who=who,
                    target=target, give=give, ask=ask))
    return say("%(who)s made %(target)s an offer.", who=who, target=target)


def _said_accept(before: GameState, move: Accept, reader: int | None, mine: bool,
                 who: Phrase) -> Phrase:
    offer, offerer = before.offer, player(before.players[before.current])
    assert offer is not None
    if reader in (before.current, before.to_move):
        give, ask = _side(offer.give_gold, offer.give), _side(offer.ask_gold, offer.ask)
        return (say("You accepted: %(offerer)s gave %(give)s for %(ask)s.", offerer=offerer,
                    give=give, ask=ask) if mine else
                say("%(who)s accepted: %(offerer)s gave %(give)s for %(ask)s.", who=who,
                    offerer=offerer, give=give, ask=ask))
    return say("%(who)s accepted %(offerer)s's offer.", who=who, offerer=offerer)


def _said_decline(before: GameState, move: Decline, reader: int | None, mine: bool,
                  who: Phrase) -> Phrase:
    offerer = player(before.players[before.current])
    return (say("You declined %(offerer)s's offer.", offerer=offerer) if mine else
            say("%(who)s declined %(offerer)s's offer.", who=who, offerer=offerer))


def _said_war(before: GameState, move: War, reader: int | None, mine: bool,
              who: Phrase) -> Phrase:
    target = player(move.target)
    return (say("You discarded a Knights card as an act of war on %(target)s.",
                target=target) if mine else
            say("%(who)s discarded a Knights card as an act of war on %(target)s.", who=who,
                target=target))


def _said_play(before: GameState, move: Play, reader: int | None, mine: bool,
               who: Phrase) -> Phrase:
    card = name(move.card)
    if move.target:
        target = player(move.target)
        return (say("You played %(card)s on %(target)s.", card=card, target=target) if mine
                else say("%(who)s played %(card)s on %(target)s.", who=who, card=card,
                         target=target))
    return (say("You played %(card)s.", card=card) if mine else
            say("%(who)s played %(card)s.", who=who, card=card))


_SAID_BY_MOVE: dict[type, Callable[[GameState, Any, int | None, bool, Phrase], Phrase]] = {
    Done: _said_done, Buy: _said_buy, Keep: _said_keep, Lose: _said_lose, Pay: _said_pay,
    Offer: _said_offer, Accept: _said_accept, Decline: _said_decline, War: _said_war,
    Play: _said_play,
}


# The sentences of the moves that name one card, by the move's verb: the mover's own words and
# everyone else's (message ids; the card goes in when told).
_CARD_MOVES = {
    "build": (say("You built %(card)s."), say("%(who)s built %(card)s.")),
    "abandon": (say("You gave up %(card)s."), say("%(who)s gave up %(card)s.")),
    "research": (say("You researched %(card)s."), say("%(who)s researched %(card)s.")),
    "share": (say("You paid 10 gold to share %(card)s."),
              say("%(who)s paid 10 gold to share %(card)s.")),
    "discard": (say("You discarded %(card)s."), say("%(who)s discarded %(card)s.")),
}


def hand_words(counts: tuple[int, ...]) -> Phrase:
    """A hand as printed names, for text mails."""
    return names(counts_to_ids(counts))
