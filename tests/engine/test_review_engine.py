"""The strong computer player's review of a finished game (engine.review): seeded, pure, and
its chances agree with how the game ended."""

from __future__ import annotations

import random

import pytest

from engine import review
from engine.games import game_package

PLAYOUTS = 6  # few: these tests check the contract, not the figures' precision


def _played(game: str, players: int, seed: int):
    """A seeded game to its end, seat 0 `greedy` and the others `random` (a clear winner):
    its set-up, its moves in notation and its last state."""
    package = game_package(game)
    first = state = package.new_game(players, seed)
    board = getattr(state, "board", None)
    rng = random.Random(seed)
    notations = []
    while not state.is_over:
        seat = state.to_move
        view = package.view_for(state, seat)
        name = "greedy" if seat == 0 else "random"
        move = (package.bots.choose_move(name, view, rng) if board is None
                else package.bots.choose_move(name, view, rng, board))
        notations.append(str(move))
        state = package.apply_move(state, move)
    return first, notations, state


@pytest.fixture(scope="module", params=["kardinal-koenig", "knights-castles"])
def played(request):
    game = request.param
    first, notations, last = _played(game, 3, 11)
    return game, first, notations, last


def test_one_decision_a_turn_of_the_turns_player_each_with_a_choice(played):
    """One reviewed move a turn: the turn player's, with more than one legal move."""
    game, first, notations, _ = played
    found = review.decisions(game, first, notations)
    assert found, "a whole game has decisions to review"
    seen = set()
    for index, state in found:
        assert state.to_move == state.current and review.is_decision(game, state)
        assert index < len(notations)
        seen.add(index)
    assert len(seen) == len(found)
    assert len(found) < len(notations)  # not every move: one a turn
    package, state, turns = game_package(game), first, []
    for i, text in enumerate(notations):  # each turn's moves of its player, with their choices
        if not turns or state.current != turns[-1][0]:
            turns.append((state.current, []))
        if state.to_move == state.current:
            turns[-1][1].append((review.choices(game, state), i))
        state = package.apply_move(state, package.parse_move(text, state.board)
                                   if hasattr(state, "board") else package.parse_move(text))
    expected = [max(moves, key=lambda m: (m[0], -m[1]))[1] for _, moves in turns
                if any(count > 1 for count, _ in moves)]
    assert [index for index, _ in found] == expected  # the turn's richest choice


def test_the_same_seed_gives_the_same_figures_and_another_may_differ(played):
    """The review is deterministic given its seed (no global random)."""
    game, first, notations, _ = played
    index, state = review.decisions(game, first, notations)[3]
    one = review.review_decision(game, state, notations[index], "seed-a", PLAYOUTS)
    random.seed(99)  # the global random must not matter
    two = review.review_decision(game, state, notations[index], "seed-a", PLAYOUTS)
    assert one == two
    assert one.played == notations[index]
    for chance in (one.before, one.after, one.bot_after):
        assert chance is None or 0.0 <= chance <= 1.0


def test_the_winners_chances_at_its_last_turn_are_above_an_even_share(played):
    """Chances agree in sign with the result: the winner's last turn shows it ahead."""
    game, first, notations, last = played
    package = game_package(game)
    winners = _winners(package, last)
    assert len(winners) == 1, "this seeded game has one clear winner"
    winner = winners[0]
    found = review.decisions(game, first, notations)
    index, state = [f for f in found if f[1].to_move == winner][-1]
    decision = review.review_decision(game, state, notations[index], "last", PLAYOUTS * 2)
    assert decision.seat == winner
    assert decision.after > 1 / len(last.players)
    assert decision.before > 1 / len(last.players)


def _winners(package, state) -> list[int]:
    result = package.outcome(state)
    if hasattr(result, "winners"):
        return sorted(result.winners)
    return [s for s in range(len(state.players)) if state.gold[s] == max(state.gold)]


def test_the_bots_choice_is_named_past_the_threshold_and_costs_are_ranked():
    """A move is costly by the chances it gave away; the three costliest of a seat, worst first."""
    same = review.Decision(0, "pass", 0.5, 0.5, None, None)
    worse = review.Decision(0, "x", 0.6, 0.2, "y", 0.62)
    slight = review.Decision(0, "x", 0.3, 0.3, "y", 0.33)
    lucky = review.Decision(0, "x", 0.3, 0.5, "y", 0.4)
    other = review.Decision(1, "x", 0.9, 0.1, "y", 0.9)
    small = review.Decision(0, "x", 0.31, 0.3, None, None)
    assert not same.differs and same.cost == 0
    assert worse.differs and worse.cost == pytest.approx(0.42)
    assert not slight.differs and slight.cost == pytest.approx(0.03)
    assert not lucky.differs and lucky.cost == 0
    reviews = [same, worse, slight, lucky, other, small]
    assert review.costliest(reviews, 0) == [1, 2, 5]
    assert review.costliest(reviews, 1) == [4]
