"""`python -m engine playout --game knights-castles`: one JSON object, the same for the same seed."""

from __future__ import annotations

import json

import pytest
from test_kk_cli import run

from engine.__main__ import main
from engine.knights_castles import apply_move, new_game, parse_move

COLOURS = ["yellow", "red", "green", "purple", "blue", "orange"]


def kc_playout(players: int, seed: int, *extra: str, hash_seed: str | None = None) -> dict:
    done = run("playout", "--game", "knights-castles", "--players", str(players),
               "--seed", str(seed), *extra, hash_seed=hash_seed)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout.count("\n") == 1
    return json.loads(done.stdout)


@pytest.mark.parametrize("players", [2, 6])
def test_playout_prints_the_game_as_the_issue_asks(players):
    """playout: {"game", "players", "moves", "gold", "winners", "dice"}, and the moves replay to
    the same gold and dice."""
    result = kc_playout(players, 7)
    assert set(result) == {"game", "players", "moves", "gold", "winners", "dice"}
    assert result["game"] == "knights-castles" and result["players"] == players
    assert list(result["gold"]) == COLOURS[:players]
    best = max(result["gold"].values())
    assert result["winners"] == [c for c, g in result["gold"].items() if g == best]
    assert result["dice"] and all(1 <= d <= 6 for d in result["dice"])
    state = new_game(players, 7)
    for text in result["moves"]:
        state = apply_move(state, parse_move(text))
    assert state.is_over
    assert dict(zip(state.players, state.gold)) == result["gold"]
    assert list(state.dice) == result["dice"]


def test_playout_is_the_same_for_the_same_seed_in_any_process(capsys):
    """playout: the same seed gives the same game (hash seeds differ), another seed another."""
    first = kc_playout(4, 42, hash_seed="1")
    assert kc_playout(4, 42, hash_seed="2") == first
    assert main(["playout", "--game", "knights-castles", "--players", "4", "--seed", "42"]) == 0
    assert json.loads(capsys.readouterr().out) == first
    assert kc_playout(4, 43)["moves"] != first["moves"]


def test_playout_with_a_variant():
    """playout --variant no-buying: nobody buys a card."""
    result = kc_playout(2, 5, "--variant", "no-buying")
    assert "buy" not in result["moves"]


@pytest.mark.parametrize("args,message", [
    (["--game", "knights-castles", "--players", "7"], "invalid choice"),
    (["--game", "knights-castles", "--players", "1"], "invalid choice"),
    (["--players", "2"], "Kardinal & König is for 3 to 5 players"),
    (["--players", "4", "--variant", "catch-up"], "has no --variant"),
    (["--game", "knights-castles", "--players", "3", "--variant", "no-buying"],
     "for a two-player game only"),
    (["--game", "chess", "--players", "2"], "invalid choice"),
])
def test_playout_refuses_what_the_game_does_not_allow(args, message):
    """playout: a player count or game the engine does not know is a usage error (exit 2)."""
    done = run("playout", *args, "--seed", "1")
    assert done.returncode == 2 and message in done.stderr and done.stdout == ""
