"""Knights & Castles: seeded random games to the end, with the invariants checked after every move.

Gold is never negative; the 106 cards are all somewhere (deck + hands + in play + discard pile);
after its build phase the turn's tableau is supported (or paid for); every listed move is legal,
reads back from its notation and applies; positions survive JSON; a replay of the log from the
seed gives the same game bit for bit. A second chooser makes trades the target can accept, so
trades happen too (uniformly random offers almost never can be accepted).
"""

from __future__ import annotations

import random

import pytest

from engine.knights_castles import (
    Accept,
    Offer,
    apply_move,
    from_json,
    legal_moves,
    new_game,
    outcome,
    parse_move,
    random_playout,
    replay,
    to_json,
    unsupported,
)
from engine.knights_castles.cards import ID
from engine.knights_castles.state import ANSWER, END, EVENT, LOSS, RESEARCH, TRADE

AFTER_BUILD = (RESEARCH, EVENT, LOSS, TRADE, ANSWER, END)


def check(state) -> None:
    assert all(g >= 0 for g in state.gold), state.gold
    assert state.card_total() == 106
    assert all(min(v) >= 0 for v in state.hands + state.tableau)
    if state.step in AFTER_BUILD:
        assert not any(unsupported(state, state.current)), (state.step, state.tableau)


@pytest.mark.slow
@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_thousands_of_random_games_keep_the_invariants(players):
    """Invariants over 1000 seeded games (200 per player count), after every move."""
    for seed in range(200):
        state = None
        for before, moves, move, state in random_playout(players, seed):
            check(state)
            assert state.ply == before.ply + 1
        assert state.is_over and not state.deck
        result = outcome(state)
        assert result.winners and all(state.gold[w] == max(state.gold) for w in result.winners)


def trader(seed: int):
    """A chooser that, in the trade phase, often offers one hand card for one card the target
    holds, and accepts what it can; otherwise uniform among the legal moves."""
    rng = random.Random(f"trader:{seed}")

    def choose(state, moves):
        if state.step == TRADE and moves.spaces and rng.random() < 0.7:
            space = rng.choice(moves.spaces)
            mine = [ID[k] for k, n in enumerate(state.hands[state.current]) if n]
            theirs = [ID[k] for k, n in enumerate(state.hands[space.target]) if n]
            if mine and theirs:
                offer = Offer(space.colour, rng.choice((0, 0, 1)), (rng.choice(mine),), 0,
                              (rng.choice(theirs),))
                if offer.give_gold > state.gold[state.current]:
                    offer = Offer(space.colour, 0, offer.give, 0, offer.ask)
                assert offer in moves
                return offer
        if state.step == ANSWER and Accept() in moves and rng.random() < 0.8:
            return Accept()
        return moves[int(rng.random() * len(moves))]
    return choose


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_games_with_trades_and_every_check(players):
    """Every listed move reads back and is legal; JSON round-trips; the replay is bit for bit."""
    accepted = 0
    for seed in range(5):
        choose, rng = trader(seed), random.Random(seed)
        state, log = new_game(players, seed), []
        while not state.is_over:
            moves = legal_moves(state)
            for i in {0, len(moves) - 1, int(rng.random() * len(moves))}:
                move = moves[i]
                assert parse_move(str(move)) == move and move in moves
            move = choose(state, moves)
            after = apply_move(state, move)
            if isinstance(move, Accept):
                accepted += 1
            if isinstance(move, Accept) and after.step == TRADE and after.turn == state.turn:
                offer, me, them = state.offer, state.current, state.to_move
                assert after.gold[me] == state.gold[me] - offer.give_gold + offer.ask_gold
                assert after.gold[them] == state.gold[them] + offer.give_gold - offer.ask_gold
                assert sum(after.hands[me]) == (sum(state.hands[me]) - len(offer.give)
                                                + len(offer.ask))
            check(after)
            assert from_json(to_json(after)) == after
            log.append(str(move))
            state = after
        assert replay(players, seed, (), log) == state
    assert accepted > 0


@pytest.mark.parametrize("variants", [("catch-up",), ("no-buying",), ("knights-from-hand",),
                                      ("catch-up", "no-buying", "knights-from-hand")])
def test_variants_play_to_the_end(variants):
    """The variants keep the invariants too (in two-player games, the only ones they are for)."""
    for seed in range(30):
        for _, _, move, state in random_playout(2, seed, variants):
            check(state)
            if "no-buying" in variants:
                assert str(move) != "buy"
        assert state.is_over


def test_the_same_seed_gives_the_same_game_and_another_seed_another():
    """Randomness is the seed's: the same seed plays the same game, dice included."""
    def game(seed):
        moves = [str(m) for _, _, m, _ in random_playout(4, seed)]
        return moves, [s for *_, s in random_playout(4, seed)][-1].dice
    assert game(5) == game(5)
    assert game(5) != game(6)


def test_the_speed_tricks_change_nothing_a_caller_sees():
    """apply_move leaves its input as it was, and the legal moves it keeps with a new position
    (and the move objects it shares between positions) are those worked out afresh."""
    from engine.knights_castles.rules import replace

    for players in (2, 5):
        for before, moves, move, after in random_playout(players, players + 40):
            frozen = to_json(before)
            again = apply_move(before, move)
            assert to_json(before) == frozen and again == after and again is not before
            fresh = legal_moves(replace(after))  # a copy without the cached moves
            kept = legal_moves(after)
            assert kept is not fresh and list(kept.moves) == list(fresh.moves)
            assert len(kept) == len(fresh) and kept.offers_to() == fresh.offers_to()
            if len(kept):
                assert kept[len(kept) - 1] == fresh[len(fresh) - 1]
