"""What one seat, or a spectator, may see of a Knights & Castles position.

A `SeatView` copies only public facts (gold, cards in play, advances, the discard pile, every
die, how many cards each hand and the deck hold, the upkeep paid this build phase, what each
seat's latest tax phase yielded, the draws the turn still owes) and the viewer's own hand. It never holds
another seat's hand, the deck order or the seed. An open offer's cards are seen by the two
seats it concerns; the others see that an offer is open, between whom. The two cards of a
Scholastics draw are seen by their drawer alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .cards import ID, counts_to_ids
from .outcome import outcome
from .rules import dp_total, revenue, unsupported
from .state import GameState


@dataclass(frozen=True)
class SeatView:
    """One seat's (or, with seat None, a spectator's) view of a position."""

    players: tuple[str, ...]
    seat: int | None
    variants: tuple[str, ...]
    start: int
    current: int
    to_move: int | None
    phase: str
    step: str
    turn: int
    ply: int
    hand: tuple[str, ...] | None
    choice: tuple[str, ...] | None
    hand_sizes: tuple[int, ...]
    deck_size: int
    gold: tuple[int, ...]
    tableau: tuple[tuple[str, ...], ...]
    shared: tuple[tuple[str, ...], ...]
    dp: tuple[int, ...]
    revenue: tuple[int, ...]
    unsupported: tuple[int, ...]
    paid: tuple[tuple[str, ...], ...]
    taxed: tuple[int, ...]
    draws_left: int
    discard: tuple[str, ...]
    dice: tuple[int, ...]
    loss: dict[str, Any] | None
    offer: dict[str, Any] | None
    offered: tuple[str, ...]
    outcome: dict[str, Any] | None
    start_chosen: bool = False  # the organiser chose the start seat: nobody rolled for it

    @property
    def is_my_move(self) -> bool:
        return self.seat is not None and self.seat == self.to_move

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data; colours stand for seats."""
        p = self.players
        return {
            "game": "knights-castles", "players": list(p),
            "seat": None if self.seat is None else p[self.seat], "variants": list(self.variants),
            "start": p[self.start], "current": p[self.current],
            "to_move": None if self.to_move is None else p[self.to_move],
            "phase": self.phase, "step": self.step, "turn": self.turn, "ply": self.ply,
            "hand": None if self.hand is None else list(self.hand),
            "choice": None if self.choice is None else list(self.choice),
            "hand_sizes": dict(zip(p, self.hand_sizes)), "deck_size": self.deck_size,
            "gold": dict(zip(p, self.gold)),
            "tableau": {c: list(t) for c, t in zip(p, self.tableau)},
            "shared": {c: list(s) for c, s in zip(p, self.shared)},
            "dp": dict(zip(p, self.dp)), "revenue": dict(zip(p, self.revenue)),
            "unsupported": dict(zip(p, self.unsupported)),
            "paid": {c: list(k) for c, k in zip(p, self.paid)},
            "taxed": dict(zip(p, self.taxed)), "draws_left": self.draws_left,
            "discard": list(self.discard), "dice": list(self.dice), "loss": self.loss,
            "offer": self.offer, "offered": list(self.offered), "outcome": self.outcome,
        }


def view_for(state: GameState, seat: int | None) -> SeatView:
    """The view of `seat` (0..n-1), or of a spectator when `seat` is None."""
    if seat is not None and not (isinstance(seat, int) and 0 <= seat < len(state.players)):
        raise ValueError(f"no seat {seat!r} in a game of {len(state.players)}")
    p = state.players
    loss = None
    if state.loss is not None:
        l = state.loss
        loss = {"target": p[l.target], "by": p[l.by], "card": ID[l.card], "roll": l.roll,
                "kinds": [ID[k] for k in l.kinds]}
    offer: dict[str, Any] | None = None
    if state.offer is not None:
        o = state.offer
        offer = {"from": p[state.current], "to": o.target}
        if seat is not None and p[seat] in (o.target, p[state.current]):
            offer.update(give_gold=o.give_gold, give=list(o.give), ask_gold=o.ask_gold,
                         ask=list(o.ask), notation=str(o))
    result = outcome(state)
    own = seat is not None
    return SeatView(
        players=p, seat=seat, variants=state.variants, start=state.start,
        start_chosen=state.start_chosen,
        current=state.current, to_move=state.to_move, phase=state.phase, step=state.step,
        turn=state.turn, ply=state.ply,
        hand=tuple(counts_to_ids(state.hands[seat])) if seat is not None else None,
        choice=tuple(ID[k] for k in state.choice) if own and seat == state.current else None,
        hand_sizes=tuple(map(sum, state.hands)), deck_size=len(state.deck), gold=state.gold,
        tableau=tuple(tuple(counts_to_ids(t)) for t in state.tableau),
        shared=tuple(tuple(ID[k] for k in s) for s in state.shared),
        dp=tuple(dp_total(state, s) for s in state.seats),
        revenue=tuple(revenue(state, s) for s in state.seats),
        unsupported=tuple(sum(unsupported(state, s)) for s in state.seats),
        paid=tuple(tuple(ID[k] for k in state.paid[s]) for s in state.seats),
        taxed=state.revenue, draws_left=state.draws_left,
        discard=tuple(ID[k] for k in state.discard), dice=state.dice, loss=loss, offer=offer,
        offered=tuple(p[s] for s in state.offered),
        outcome=None if result is None else result.to_dict(p))
