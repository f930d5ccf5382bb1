"""Seeded random games to the end, checking the rules' invariants after every move."""

import json
import random
from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import (
    ADVISOR,
    Exchange,
    IllegalMoveError,
    NotationError,
    Place,
    apply_move,
    from_json,
    legal_moves,
    new_game,
    outcome,
    replay,
    to_json,
    view_for,
)
from engine.kardinal_koenig.state import ADVISORS_EACH, MONASTERIES_EACH

from helpers import BOARD

FULL_DECK = Counter({c.code: c.count for c in BOARD.cards})


def check_invariants(state):
    cards = Counter(state.deck + state.face_up + state.discard + state.removed)
    for hand in state.hands:
        cards.update(hand)
    assert cards == FULL_DECK, "card total conserved"
    for seat in state.seats:
        assert state.monastery_supply[seat] >= 0 and state.advisor_supply[seat] >= 0
        assert state.monasteries.count(seat) + state.monastery_supply[seat] == MONASTERIES_EACH
        assert sum(a[seat] for a in state.advisors) + state.advisor_supply[seat] == ADVISORS_EACH
        assert len(state.hands[seat]) <= 3
    for country in BOARD.countries:
        assert sum(state.advisors[country.index]) <= max(state.monastery_counts(country.index)), \
            f"advisor cap exceeded in {country.name}"
    assert len(state.face_up) <= 2


def hide_secrets_from(state, seat, rng):
    """The same public position with every secret the seat may not know dealt differently."""
    others = [s for s in state.seats if s != seat]
    pool = list(state.deck) + [c for s in others for c in state.hands[s]]
    rng.shuffle(pool)
    hands = list(state.hands)
    drawn = list(state.drawn)
    for s in others:
        hands[s] = tuple(sorted(pool.pop() for _ in state.hands[s]))
        drawn[s] = tuple(reversed(drawn[s]))
    return replace(state, hands=tuple(hands), deck=tuple(pool), drawn=tuple(drawn),
                   seed=f"other-{rng.random()}")


def check_views(state, rng):
    for seat in list(state.seats) + [None]:
        view = view_for(state, seat)
        data = json.loads(json.dumps(view.to_dict()))
        assert "seed" not in data and "deck" not in data
        assert view == view_for(hide_secrets_from(state, seat, rng), seat), \
            "a view changed when only secrets hidden from it changed"
        if seat is None:
            assert data["hand"] is None and data["drawn"] is None
        else:
            assert data["hand"] == list(state.hands[seat])


def random_illegal_candidates(state, rng):
    """Moves that look plausible but are not in legal_moves: each must be refused."""
    legal = set(legal_moves(state))
    codes = [c.code for c in BOARD.cards]
    for _ in range(6):
        country = rng.choice(BOARD.countries)
        pieces = tuple(rng.choice([ADVISOR, BOARD.fields[rng.choice(country.fields)].name,
                                   rng.choice(BOARD.fields).name])
                       for _ in range(rng.randint(1, 2)))
        move = Place(tuple(rng.choice(codes) for _ in range(rng.randint(1, 3))), country.name,
                     pieces)
        if move not in legal:
            yield move
    for code in codes:
        if Exchange(code) not in legal:
            yield Exchange(code)


def play_checked(players, seed, every_move=False):
    rng = random.Random(seed)
    state = new_game(players, seed)
    log = []
    while not state.is_over:
        moves = legal_moves(state)
        assert moves, "a game that is not over always has a legal move"
        assert len(set(moves)) == len(moves) and moves == legal_moves(state), "stable, no repeats"
        if every_move:
            for move in moves:
                apply_move(state, move)
            for move in random_illegal_candidates(state, rng):
                with pytest.raises((IllegalMoveError, NotationError)):
                    apply_move(state, move)
        move = rng.choice(moves)
        state = apply_move(state, move)
        log.append(str(move))
        check_invariants(state)
        if every_move or state.ply % 17 == 0:
            check_views(state, rng)
            assert from_json(to_json(state)) == state, "JSON round trip"
    assert replay(players, seed, log) == state, "replay from seed and move log"
    return state, log


@pytest.mark.slow
@pytest.mark.parametrize("players", [3, 4, 5])
def test_hundred_random_games_each_player_count(players):
    """Seeded random playouts to the end keep every invariant after every move."""
    reasons = Counter()
    for seed in range(100):
        state, _ = play_checked(players, seed * 7919 + players)
        result = outcome(state)
        assert max(result.scores) == result.scores[result.winners[0]]
        assert sum(result.breakdown.totals()) + sum(state.scores) >= 0
        reasons[state.end_reason] += 1
    assert reasons, "every game ended with a reason"


@pytest.mark.parametrize("players, seed", [(3, 1), (4, 2), (5, 3)])
def test_every_legal_move_applies_and_look_alikes_are_refused(players, seed):
    """At every position, each legal move applies and plausible non-legal moves are refused."""
    play_checked(players, seed, every_move=True)


@settings(max_examples=15, deadline=None)
@given(st.integers(3, 5), st.integers(0, 2**63))
def test_any_seed_plays_to_a_scored_end(players, seed):
    """Any seed gives a game that ends with final scores equal to intermediate + final breakdown."""
    state, log = play_checked(players, seed)
    result = outcome(state)
    middle = result.intermediate.totals() if result.intermediate else (0,) * players
    assert result.scores == tuple(a + b for a, b in zip(middle, result.breakdown.totals()))
    assert state.ply == len(log)
