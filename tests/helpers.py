"""Small builders for scenario tests: a position from a compact one-line literal."""

from __future__ import annotations

from dataclasses import replace

from engine import default_board, new_game
from engine.state import ADVISORS_EACH, EMPTY, MONASTERIES_EACH, GameState

BOARD = default_board()


def fill(country: str, **counts: int) -> dict[str, str]:
    """Monasteries on the first free fields of `country`: fill("Frankreich", green=4, red=2)."""
    fields = [BOARD.fields[f].name for f in BOARD.country(country).fields]
    out, i = {}, 0
    for colour, count in counts.items():
        for _ in range(count):
            out[fields[i]] = colour
            i += 1
    return out


def scenario(players: int = 5, *, hands: dict[str, str] | None = None,
             monasteries: dict[str, str] | None = None,
             advisors: dict[str, list[str]] | None = None, current: str = "yellow",
             deck: str | None = None, face_up: str | None = None, discard: str | None = None,
             supply: dict[str, tuple[int, int]] | None = None, seed: int = 1, **changes) -> GameState:
    """A state of a seeded game with the given pieces, hands (colour -> codes) and cards.

    `deck` is written top card first. Supplies follow the pieces on the board unless `supply`
    gives (monasteries, advisors) left for a colour.
    """
    state = new_game(players, seed, start=0)
    seat = {colour: i for i, colour in enumerate(state.players)}
    fields = [EMPTY] * len(BOARD.fields)
    for name, colour in (monasteries or {}).items():
        fields[BOARD.field_named(name).index] = seat[colour]
    crests = [[0] * players for _ in BOARD.countries]
    for country, colours in (advisors or {}).items():
        for colour in colours:
            crests[BOARD.country(country).index][seat[colour]] += 1
    monks = [MONASTERIES_EACH - fields.count(s) for s in range(players)]
    advs = [ADVISORS_EACH - sum(c[s] for c in crests) for s in range(players)]
    for colour, (m, a) in (supply or {}).items():
        monks[seat[colour]], advs[seat[colour]] = m, a
    hand_list = list(state.hands)
    for colour, codes in (hands or {}).items():
        hand_list[seat[colour]] = tuple(sorted(codes))
    state = replace(
        state, monasteries=tuple(fields), advisors=tuple(tuple(c) for c in crests),
        monastery_supply=tuple(monks), advisor_supply=tuple(advs), hands=tuple(hand_list),
        current=seat[current])
    if deck is not None:
        state = replace(state, deck=tuple(reversed(deck)))
    if face_up is not None:
        state = replace(state, face_up=tuple(sorted(face_up)))
    if discard is not None:
        state = replace(state, discard=tuple(discard))
    return replace(state, **changes) if changes else state


def seat_of(state: GameState, colour: str) -> int:
    return state.players.index(colour)
