"""Small builders for scenario tests: a position from a compact one-line literal."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from engine import default_board, new_game
from engine.kardinal_koenig.serialize import from_dict, to_dict
from engine.kardinal_koenig.state import ADVISORS_EACH, EMPTY, MONASTERIES_EACH, GameState

BOARD = default_board()


def check_golden(request, path, text: str) -> None:
    """A golden playthrough `text` is the file at `path`, or is written there with
    --update-golden (then read the diff before committing it)."""
    if request.config.getoption("--update-golden"):
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, \
        "the playthrough changed; if intended, rerun with --update-golden and read the diff"


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


def redealt(state, keep: int | None, rng):
    """`state` with every card hidden from seat `keep` (None: a spectator) dealt anew: the other
    hands and the deck, in the same counts.

    All `keep` may know stays: its own hand and draws, the face-up cards, the discard pile, the
    cards set aside. The other seats' draws follow their new hands. The result is checked as a
    saved game would be."""
    others = [s for s in state.seats if s != keep]
    hidden = list(state.deck) + [c for s in others for c in state.hands[s]]
    for _ in range(100):
        rng.shuffle(hidden)
        hands, drawn, rest = list(state.hands), list(state.drawn), list(hidden)
        for s in others:
            size = len(state.hands[s])
            hands[s], rest = tuple(sorted(rest[:size])), rest[size:]
            drawn[s] = tuple(hands[s][:len(state.drawn[s])])
        candidate = replace(state, hands=tuple(hands), drawn=tuple(drawn), deck=tuple(rest))
        if all(candidate.hands[s] != state.hands[s] for s in others if state.hands[s]) and \
                candidate.deck[-1] != state.deck[-1] and candidate.deck[::2] != state.deck[::2]:
            break
    else:
        raise AssertionError("could not deal the hidden cards differently")
    assert Counter(candidate.deck) + sum((Counter(h) for h in candidate.hands), Counter()) == \
        Counter(state.deck) + sum((Counter(h) for h in state.hands), Counter())
    return from_dict(to_dict(candidate), state.board)
