"""Bots: legal moves from a seat's view alone, the same move whatever the hidden cards are,
sound choices in plain positions, and a deterministic arena."""

import json
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from engine import Exchange, Place, apply_move, legal_moves, new_game, view_for
from engine.arena import play_arena, play_game, run_arena, summarise, wilson
from engine.kardinal_koenig.bots import BOT_NAMES, BOTS, choose_move
from engine.kardinal_koenig.bots.view_state import sampled_state, unseen_cards, visible_state
from engine.kardinal_koenig.playout import random_playout
from engine.kardinal_koenig.state import JOKER_ANY
from engine.kardinal_koenig.view import SeatView

from helpers import BOARD, redealt, scenario, seat_of

ROOT = Path(__file__).resolve().parent.parent.parent


def _positions(players=4, seed=5, every=7):
    """Positions of a seeded random game, some in the play phase and some mid-refill."""
    return [before for before, _, _, _ in random_playout(players, seed)
            if before.ply % every == 0 and before.deck][:12]


def test_every_bot_answers_with_a_legal_move_from_the_view_alone():
    """Each bot's move, chosen from the view of the seat to move, is legal in the real game."""
    for state in _positions():
        for name in BOT_NAMES:
            move = choose_move(name, view_for(state, state.current), random.Random(1))
            assert move in legal_moves(state)
            apply_move(state, move)


def test_a_bot_is_given_a_view_and_refuses_the_state():
    """A bot takes a SeatView only: the full state, another seat's view or a spectator's view is
    refused."""
    state = new_game(4, 8)
    for name in BOT_NAMES:
        with pytest.raises(TypeError):
            choose_move(name, state, random.Random(1))
        with pytest.raises(ValueError):
            choose_move(name, view_for(state, None), random.Random(1))
        with pytest.raises(ValueError):
            choose_move(name, view_for(state, (state.current + 1) % 4), random.Random(1))
    with pytest.raises(ValueError, match="unknown bot"):
        choose_move("clever", view_for(state, state.current), random.Random(1))


def test_the_arena_hands_each_bot_only_its_own_seats_view(monkeypatch):
    """In a whole arena game, every call of a bot gets the SeatView of the seat it plays."""
    seen = []

    def spy(view, rng, board):
        seen.append(view)
        return BOTS["random"](view, rng, board)

    monkeypatch.setitem(BOTS, "spy", spy)
    result = play_game(["spy", "random", "spy"], 3, 0)
    assert seen and result.moves > len(seen)
    assert all(type(view) is SeatView and view.seat == view.current for view in seen)


@pytest.mark.parametrize("name", BOT_NAMES)
def test_the_choice_is_the_same_when_the_hidden_cards_are_dealt_anew(name):
    """Re-dealing every card hidden from the seat to move (other hands, deck order) leaves its
    view, and so its bot's move, unchanged."""
    checked = 0
    for number, state in enumerate(_positions(seed=11, every=5)):
        seat = state.current
        other = redealt(state, seat, random.Random(number))
        assert other.hands != state.hands or other.deck != state.deck
        assert view_for(other, seat) == view_for(state, seat)
        first = choose_move(name, view_for(state, seat), random.Random(f"bot:{number}"))
        again = choose_move(name, view_for(other, seat), random.Random(f"bot:{number}"))
        assert first == again
        checked += 1
    assert checked >= 8


def test_a_sampled_deal_agrees_with_everything_the_view_shows():
    """A determinization keeps the seat's own hand and all public facts, and deals the hidden
    cards from exactly the cards the seat cannot see."""
    for state in _positions(players=5, seed=3, every=4):
        seat = state.current
        view = view_for(state, seat)
        unseen = unseen_cards(view, BOARD)
        hidden = sorted(list(state.deck) + [c for s in state.seats if s != seat
                                            for c in state.hands[s]])
        assert unseen == hidden
        for deal in (visible_state(view, BOARD), sampled_state(view, BOARD, random.Random(2))):
            assert replace(view_for(deal, seat), intermediate=None) == \
                replace(view, intermediate=None)
            assert legal_moves(deal) == legal_moves(state)
        anywhere = replace(state, joker=JOKER_ANY)  # the English books' joker: a public rule
        assert legal_moves(visible_state(view_for(anywhere, seat), BOARD)) == \
            legal_moves(anywhere)


def test_the_same_view_and_random_input_give_the_same_move():
    """A bot is a function of its view and its random input."""
    state = _positions(seed=21)[3]
    view = view_for(state, state.current)
    for name in BOT_NAMES:
        moves = {choose_move(name, view, random.Random(99)) for _ in range(3)}
        assert len(moves) == 1


def _path_of_four():
    """Four fields joined by roads in a line, the last in a country with room for the move."""
    neighbours = BOARD.neighbours
    for a in range(len(BOARD.fields)):
        for b in neighbours[a]:
            for c in neighbours[b]:
                for d in neighbours[c]:
                    if len({a, b, c, d}) == 4 and a not in neighbours[c] and \
                            b not in neighbours[d] and a not in neighbours[d]:
                        return [BOARD.fields[f] for f in (a, b, c, d)]
    raise AssertionError("the board has no path of four fields")


@pytest.mark.parametrize("name", ["greedy", "strong"])
def test_greedy_and_strong_close_a_chain_of_four(name):
    """With three monasteries in a row on a road and the card for the fourth field, the bots
    build the fourth and score the chain."""
    path = _path_of_four()
    last = path[-1]
    card = BOARD.country(last.country).card
    others = [c.code for c in BOARD.cards if c.code != card]
    state = scenario(4, monasteries={f.name: "yellow" for f in path[:3]},
                     hands={"yellow": card + others[0] + others[1]})
    move = choose_move(name, view_for(state, seat_of(state, "yellow")), random.Random(4))
    assert isinstance(move, Place) and last.name in move.pieces


@pytest.mark.parametrize("name", ["greedy", "strong"])
def test_no_bot_pays_two_cards_for_one_piece_under_the_english_joker(name):
    """Issue 32 point 16: under the English joker a pair of Frankreich's own colour may place one
    piece there, but a bot never pays two cards for what one card places (the strong bot played
    `PP Frankreich: Fleury` with `P Frankreich: Fleury` and two-piece placements open)."""
    card = BOARD.country("Frankreich").card
    other = next(c.code for c in BOARD.cards if c.code != card)
    state = scenario(4, monasteries={"Chartres": "red", "Rouen": "red", "Tours": "red",
                                     "Cîteaux": "yellow"},
                     hands={"yellow": card + card + other}, joker=JOKER_ANY)
    view = view_for(state, seat_of(state, "yellow"))
    moves = legal_moves(state)
    assert Place((card, card), "Frankreich", ("Fleury",)) in moves  # legal, the English way
    assert Place((card,), "Frankreich", ("Fleury",)) in moves
    for number in range(8):
        move = choose_move(name, view, random.Random(number))
        assert move in moves
        assert not (isinstance(move, Place) and len(move.pieces) < len(move.cards)
                    and set(move.cards) == {card}), str(move)


def test_greedy_takes_a_majority_rather_than_exchange():
    """Where one card breaks a tie for a country's majority, greedy plays it (rather than
    exchange or start elsewhere): it is worth twice as much before the intermediate scoring."""
    name = "greedy"
    country = max(BOARD.countries, key=lambda c: len(c.fields))
    fields = [BOARD.fields[f].name for f in country.fields]
    state = scenario(4, monasteries={fields[0]: "red", fields[1]: "yellow", fields[2]: "red",
                                     fields[3]: "yellow"},
                     hands={"yellow": country.card * 1 + "".join(
                         c.code for c in BOARD.cards if c.code != country.card)[:2]})
    move = choose_move(name, view_for(state, seat_of(state, "yellow")), random.Random(4))
    assert not isinstance(move, Exchange)
    after = apply_move(state, move)
    counts = after.monastery_counts(country.index)
    assert counts[seat_of(state, "yellow")] == max(counts) > counts[seat_of(state, "red")]


def test_the_arena_is_the_same_for_the_same_seed():
    """Two runs with one seed give the same games; another seed gives other games."""
    bots = ["greedy", "random", "random"]
    first = list(play_arena(bots, 3, 7))
    assert first == list(play_arena(bots, 3, 7))
    assert first != list(play_arena(bots, 3, 8))
    report = run_arena("kardinal-koenig", "greedy,random,random", 3, 7)
    assert report["entries"] == run_arena("kardinal-koenig", bots, 3, 7)["entries"]


def test_the_arena_rotates_the_seats():
    """Over n games each bot sits once in every seat."""
    results = list(play_arena(["random"] * 4, 4, 1))
    for entry in range(4):
        assert sorted(r.seating.index(entry) for r in results) == [0, 1, 2, 3]
    assert sum(r.wins for r in summarise(["random"] * 4, results)) == pytest.approx(4)


def test_wilson_interval():
    """The Wilson score interval of known cases (95%)."""
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson(190, 200) == pytest.approx((0.9104, 0.9726), abs=1e-4)


@pytest.mark.parametrize("request_, message", [
    (("chess", "random,random,random", 2, 1), "unknown game"),
    (("kardinal-koenig", "random,smart,random", 2, 1), "unknown bot"),
    (("kardinal-koenig", "random,random", 2, 1), "3 to 5"),
    (("kardinal-koenig", "random,random,random", 0, 1), "1 to"),
])
def test_the_arena_refuses_a_bad_request(request_, message):
    """A bad arena request gets a message saying what to change."""
    with pytest.raises(ValueError, match=message):
        run_arena(*request_)


def _arena_cli(*args):
    return subprocess.run([sys.executable, "-m", "engine", "arena", *args], cwd=ROOT,
                          capture_output=True, encoding="utf-8", timeout=300, check=False)


def test_the_arena_command_prints_win_rates_with_intervals_and_move_times():
    """`python -m engine arena` prints each bot's wins, win rate, Wilson interval and move time,
    and its JSON is the same for the same seed (move times aside)."""
    done = _arena_cli("--game", "kardinal-koenig", "--bots", "greedy,random,random",
                      "--games", "3", "--seed", "1")
    assert done.returncode == 0, done.stderr
    assert "95% CI (Wilson)" in done.stdout and "seconds per move" in done.stdout
    assert done.stdout.count(" greedy ") >= 1 and "%" in done.stdout
    runs = [json.loads(_arena_cli("--bots", "greedy,random,random", "--games", "3",
                                  "--seed", "1", "--json").stdout) for _ in range(2)]
    for run in runs:
        assert set(run.pop("move_seconds")) == {"greedy", "random"}
        assert sum(e["wins"] for e in run["entries"]) == pytest.approx(3)
    assert runs[0] == runs[1]


def test_the_arena_command_refuses_an_unknown_bot_in_one_line():
    """A bad bot name gets one line on standard error and exit status 2."""
    done = _arena_cli("--bots", "greedy,genius,random", "--games", "2")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "unknown bot 'genius'" in done.stderr
