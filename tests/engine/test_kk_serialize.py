"""Saving and loading games: versioned JSON that round-trips, refusing anything inconsistent."""

import json

import pytest

from engine import StateError, apply_move, from_json, legal_moves, new_game, replay, to_json
from engine.kardinal_koenig.serialize import to_dict


def a_game_in_progress():
    state = new_game(4, 42)
    for _ in range(25):
        state = apply_move(state, legal_moves(state)[len(legal_moves(state)) // 2])
    return state


def test_round_trip_keeps_every_field():
    """A saved state loads back equal, field for field."""
    state = a_game_in_progress()
    text = to_json(state)
    assert json.loads(text)["format"] == 1
    assert from_json(text) == state
    assert to_json(from_json(text)) == text


def test_replay_from_seed_and_log_is_bit_for_bit():
    """The same seed and move log give exactly the same state."""
    state = new_game(5, 8)
    log = []
    for _ in range(40):
        move = legal_moves(state)[-1]
        log.append(str(move))
        state = apply_move(state, move)
    assert to_json(replay(5, 8, log)) == to_json(state)


def edit(change):
    data = to_dict(a_game_in_progress())
    change(data)
    return json.dumps(data)


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(format=2), "unknown saved-game format"),
    (lambda d: d.update(game="chess"), "not a kardinal-koenig game"),
    (lambda d: d["board"].update(digest="0000"), "another board"),
    (lambda d: d.update(players=["red", "red", "blue", "green"]), "different player colours"),
    (lambda d: d.update(deck=d["deck"] + "R"), "do not add up"),
    (lambda d: d.update(deck=d["deck"][:-1] + "X"), "card codes"),
    (lambda d: d["hands"].pop(), "must list 4 hands"),
    (lambda d: d.update(current=7), "'current'"),
    (lambda d: d.update(current=True), "'current'"),
    (lambda d: d.update(phase="dance"), "'phase'"),
    (lambda d: d["monastery_supply"].__setitem__(0, 3), "monasteries of yellow"),
    (lambda d: d["advisors"][0].__setitem__(0, 5), "advisors"),
    (lambda d: d.update(seed=None), "'seed'"),
    (lambda d: d.update(end_reason="bored"), "'end_reason'"),
    (lambda d: d.update(monasteries=[0] * 3), "'monasteries'"),
])
def test_inconsistent_saves_are_refused(change, message):
    """A saved game that is not a consistent position is refused, saying what is wrong."""
    with pytest.raises(StateError, match=message):
        from_json(edit(change))


@pytest.mark.parametrize("text", ["", "[]", "null", "{", "\x00", b"\xff\xfe", "1e999"])
def test_garbage_is_refused(text):
    """Text that is not a saved game raises StateError, never another error."""
    with pytest.raises(StateError):
        from_json(text)
