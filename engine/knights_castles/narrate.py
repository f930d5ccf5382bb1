"""A Knights & Castles move in words, as one reader may read it.

`describe(before, move, after, reader)` says what the move did, and what happened by itself
after it (dice, a loss with one possible answer, a new turn, the end), in the words of `reader`
(a seat, or None for a spectator), so it names no card the reader may not know: a Scholastics
keep and an offer's cards are told only to the seats they concern.
"""

from __future__ import annotations

from .cards import ID, KINDS, counts_to_ids
from .moves import Accept, Buy, Decline, Done, Keep, Lose, Move, Offer, Pay, Play, War
from .state import OVER, PHASE_OF, GameState

_ASKS = {"keep": "keep one of two cards", "buy": "buy cards or end the draw phase",
         "build": "build", "upkeep": "pay for or give up unsupported cards",
         "research": "research", "event": "play an event", "loss": "choose losses",
         "trade": "trade", "answer": "answer an offer", "end": "discard down to 7 cards"}


def name(card: str) -> str:
    """A card id as printed: 'trade-route' -> 'Trade Route'."""
    from .cards import INDEX

    return KINDS[INDEX[card]].name if card in INDEX else card


def _names(cards) -> str:
    return ", ".join(name(c) for c in cards) or "nothing"


def _side(gold: int, cards) -> str:
    """'5 gold and Town, Mine', '5 gold', 'Town' (one side of an offer)."""
    parts = ([f"{gold} gold"] if gold else []) + ([_names(cards)] if cards else [])
    return " and ".join(parts) or "nothing"


def describe(before: GameState, move: Move, after: GameState, reader: int | None) -> list[str]:
    """What `move` did and what followed by itself, in `reader`'s words."""
    p = before.players
    mover = before.to_move
    who = "You" if reader == mover else p[mover]
    lines = [_line(before, move, after, reader, who)]
    rolled = after.dice[len(before.dice):]
    if rolled:
        lines.append("The die shows " + ", ".join(map(str, rolled)) + ".")
    if isinstance(move, (Play, War)) and after.loss is None:
        target = before.players.index(move.target) if move.target else None
        if target is not None:
            lost = [ID[k] for k in range(len(KINDS))
                    for _ in range(max(0, before.tableau[target][k] - after.tableau[target][k]))]
            lines.append(f"{'You lose' if reader == target else p[target] + ' loses'} "
                         f"{_names(lost)}.")
    if after.turn > before.turn:
        lines.append(f"Turn {after.turn}: {p[after.current]} draws and collects tax.")
    if after.step == OVER:
        best = max(after.gold)
        winners = [p[s] for s in after.seats if after.gold[s] == best]
        lines.append(f"The last card is drawn: the game is over. Most gold ({best}): "
                     f"{' and '.join(winners)}.")
    elif after.to_move != mover or after.step != before.step:
        lines.append(f"Now {'you' if reader == after.to_move else p[after.to_move]}: "
                     f"{_ASKS[after.step]} ({PHASE_OF[after.step]} phase).")
    return lines


def _line(before: GameState, move: Move, after: GameState, reader, who: str) -> str:
    p, seat = before.players, before.current
    if isinstance(move, Done):
        return f"{who} ended the {before.phase} phase."
    if isinstance(move, Buy):
        return f"{who} bought a card for 5 gold."
    if isinstance(move, Keep):
        a, b = (ID[k] for k in before.choice)
        other = b if move.card == a else a
        if reader == seat:
            return f"You kept {name(move.card)} and discarded {name(other)}."
        return f"{who} kept one of two cards drawn and discarded {name(other)}."
    if isinstance(move, Lose):
        return f"{who} lost {_names(move.cards)}."
    if isinstance(move, Pay):
        return f"{who} paid 1 gold to keep the unsupported {name(move.card)}."
    if isinstance(move, Offer):
        target = p.index(move.target)
        if reader in (seat, target):
            return (f"{who} offered {move.target} {_side(move.give_gold, move.give)} for "
                    f"{_side(move.ask_gold, move.ask)}.")
        return f"{who} made {move.target} an offer."
    if isinstance(move, Accept):
        offer = before.offer
        if reader in (seat, before.to_move):
            return (f"{who} accepted: {p[seat]} gave {_side(offer.give_gold, offer.give)} for "
                    f"{_side(offer.ask_gold, offer.ask)}.")
        return f"{who} accepted {p[seat]}'s offer."
    if isinstance(move, Decline):
        return f"{who} declined {p[seat]}'s offer."
    if isinstance(move, War):
        return f"{who} discarded a Knights card as an act of war on {move.target}."
    if isinstance(move, Play):
        target = f" on {move.target}" if move.target else ""
        return f"{who} played {name(move.card)}{target}."
    verb = {"build": "built", "abandon": "gave up", "research": "researched",
            "share": "paid 10 gold to share", "discard": "discarded"}[str(move).split()[0]]
    return f"{who} {verb} {name(move.card)}."


def hand_words(counts: tuple[int, ...]) -> str:
    """A hand as printed names, for text mails."""
    return _names(counts_to_ids(counts))
