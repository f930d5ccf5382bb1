"""Knights & Castles positions for tests, built from a compact literal in one call.

    position(hands={0: "village 2 town"}, tableau={0: "village town"}, gold={0: 7})

builds a 2-player position at the current seat's build phase: the named cards where they are
said to be, every other card in the deck (the cards of `deck_top` drawn first), and a seed whose
next die rolls `roll` when one is asked for.
"""

from __future__ import annotations

from engine.knights_castles import KINDS
from engine.knights_castles.cards import INDEX, N_KINDS
from engine.knights_castles.moves import COLOURS, parse_move
from engine.knights_castles.rules import apply_move, replace
from engine.knights_castles.state import BUILD, GameState, roll


def cards(text: str) -> list[int]:
    """'2 village, town' as kind indices."""
    out, count = [], 1
    for word in text.replace(",", " ").split():
        if word.isdigit():
            count = int(word)
            continue
        out.extend([INDEX[word]] * count)
        count = 1
    return out


def vector(text: str) -> tuple[int, ...]:
    counts = [0] * N_KINDS
    for k in cards(text):
        counts[k] += 1
    return tuple(counts)


def seed_rolling(*rolls: int, first_die: int = 0) -> int:
    """A seed whose dice number first_die, first_die+1, ... roll `rolls`."""
    for seed in range(100_000):
        if all(roll(seed, first_die + i) == r for i, r in enumerate(rolls)):
            return seed
    raise AssertionError(f"no seed rolls {rolls}")


def position(players: int = 2, *, hands=None, tableau=None, shared=None, gold=None,
             discard: str = "", deck_top: str = "", deck_size: int | None = None, step=BUILD,
             current: int = 0, rolls: tuple[int, ...] = (), variants=(), **fields) -> GameState:
    """A position with the given cards; the rest of the 106 in the deck (or, when `deck_size`
    is given, that many in the deck and the others in the discard pile)."""
    hands, tableau, shared, gold = hands or {}, tableau or {}, shared or {}, gold or {}
    used = [0] * N_KINDS
    for text in [*hands.values(), *tableau.values(), discard, deck_top]:
        for k in cards(text):
            used[k] += 1
    rest = [k for k, kind in enumerate(KINDS) for _ in range(kind.count - used[k])]
    if any(kind.count - used[k] < 0 for k, kind in enumerate(KINDS)):
        raise AssertionError("more cards of a kind than the game has")
    top = cards(deck_top)
    deck = rest + top[::-1]  # the deck is drawn from its end
    extra = cards(discard)
    if deck_size is not None:
        extra += deck[:len(deck) - deck_size]
        deck = deck[len(deck) - deck_size:]
    seed = seed_rolling(*rolls) if rolls else 0
    state = GameState(
        players=COLOURS[:players], seed=seed, variants=tuple(variants), deck=tuple(deck),
        hands=tuple(vector(hands.get(s, "")) for s in range(players)),
        tableau=tuple(vector(tableau.get(s, "")) for s in range(players)),
        shared=tuple(tuple(cards(shared.get(s, ""))) for s in range(players)),
        discard=tuple(extra), gold=tuple(gold.get(s, 0) for s in range(players)), dice=(),
        start=0, current=current, step=step, paid=((),) * players, revenue=(0,) * players)
    assert state.card_total() == 106
    return replace(state, **fields) if fields else state


def play(state: GameState, *notations: str) -> GameState:
    """The position after the moves, each written in the notation."""
    for text in notations:
        state = apply_move(state, parse_move(text))
    return state


def legal(state: GameState) -> list[str]:
    """The legal moves other than offers, in notation."""
    from engine.knights_castles import legal_moves

    return [str(m) for m in legal_moves(state).moves]
