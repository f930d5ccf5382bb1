"""Knights & Castles bots: the legal moves from a seat's view alone, the same move whatever the
hidden cards are, sound choices in plain positions, the arena, and bots in server seats."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from kc_support import play, position
from server import make_app
from sqlmodel import select
from test_kc_view import redeal

import engine.knights_castles as kc
from engine.arena import run_arena
from engine.knights_castles.bots import BOT_NAMES, choose_move
from engine.knights_castles.bots.view_state import sampled_state
from engine.knights_castles.state import ANSWER, BUY, END, LOSS, OVER

ROOT = Path(__file__).resolve().parent.parent.parent


def _positions(players: int, seed: int, every: int = 3):
    return [before for i, (before, _, _, _) in enumerate(kc.random_playout(players, seed))
            if i % every == 0]


def test_the_legal_moves_seen_from_the_view_are_the_real_ones():
    """A position dealt from the seat to move's view alone has exactly the real legal moves
    (listed moves and the offers, counted and built): the view carries all they depend on."""
    checked = 0
    seen = set()
    for players in (2, 4, 6):
        for state in _positions(players, players):
            view = kc.view_for(state, state.to_move)
            guess = sampled_state(view, random.Random(checked))
            real, mine = kc.legal_moves(state), kc.legal_moves(guess)
            assert mine.moves == real.moves and len(mine) == len(real)
            assert mine.offers_to() == real.offers_to()
            if len(real) > len(real.moves):
                i = random.Random(checked).randrange(len(real.moves), len(real))
                assert mine[i] == real[i]
            assert kc.view_for(guess, state.to_move) == view
            seen.add(state.step)
            checked += 1
    assert checked > 300 and {BUY, LOSS, ANSWER, END} <= seen


@pytest.mark.parametrize("name", BOT_NAMES)
def test_a_bot_plays_a_legal_move_and_the_same_whatever_the_hidden_cards(name):
    """Each bot's move is legal, and re-dealing every card hidden from the seat to move (other
    hands, deck order) changes neither its view nor its move."""
    for number, state in enumerate(_positions(4, 11, every=9)):
        seat = state.to_move
        move = choose_move(name, kc.view_for(state, seat), random.Random(f"b:{number}"))
        kc.apply_move(state, move)  # raises if illegal
        other = redeal(state, seat, random.Random(number))
        assert kc.view_for(other, seat) == kc.view_for(state, seat)
        assert choose_move(name, kc.view_for(other, seat), random.Random(f"b:{number}")) == move


def test_a_bot_takes_only_the_view_of_the_seat_to_move():
    """The state, another seat's view, a spectator's view or an unknown bot are refused."""
    state = kc.new_game(3, 4)
    with pytest.raises(TypeError):
        choose_move("greedy", state, random.Random(1))
    for seat in [None, *(s for s in state.seats if s != state.to_move)]:
        with pytest.raises(ValueError):
            choose_move("greedy", kc.view_for(state, seat), random.Random(1))
    with pytest.raises(ValueError, match="unknown bot"):
        choose_move("clever", kc.view_for(state, state.to_move), random.Random(1))


def _greedy(state):
    return choose_move("greedy", kc.view_for(state, state.to_move), random.Random(1))


def test_greedy_builds_what_earns_and_keeps_its_best_cards():
    """greedy builds a supported town (revenue 1) rather than end the build phase, gives up
    the card of least worth in a loss, and discards its least useful card down to 7."""
    state = position(hands={0: "town mine"}, tableau={0: "village village"})
    assert str(_greedy(state)) == "build mine"  # revenue 2 beats the town's 1
    loss = play(position(hands={0: "plague"}, tableau={1: "village village town mine"},
                         step="event", rolls=(1,)), "play plague at red")
    assert loss.step == LOSS and loss.to_move == 1
    assert str(_greedy(loss)) == "lose village"  # 1 DP lost, and no income
    end = position(hands={0: "village 2 town mine city castle knights plague"}, step="end")
    assert str(_greedy(end)) == "discard knights"


def test_greedy_accepts_a_gift_and_declines_a_bad_trade():
    """greedy, asked to answer an offer, takes one that adds to its worth and refuses one that
    takes it away."""
    base = position(hands={0: "village", 1: "plague"}, gold={0: 10, 1: 10}, step="trade")
    gift = play(base, "offer red: 5 gold for plague")
    assert gift.step == ANSWER and str(_greedy(gift)) == "accept"
    robbery = play(base, "offer red: village for 10 gold")
    assert str(_greedy(robbery)) == "decline"


def test_the_arena_plays_knights_and_castles():
    """The arena seats the game's bots; greedy wins most games against three random bots
    (seats rotated; the same seed gives the same games)."""
    report = run_arena("knights-castles", "greedy,random,random,random", 12, 7)
    assert report["title"] == "Knights & Castles"
    greedy, *randoms = report["entries"]
    assert greedy["wins"] >= 8 and greedy["mean_score"] > max(r["mean_score"] for r in randoms)
    assert run_arena("knights-castles", "greedy,random,random,random", 12, 7)["entries"] == \
        report["entries"]
    with pytest.raises(ValueError, match="2 to 6"):
        run_arena("knights-castles", "greedy", 1, 1)
    with pytest.raises(ValueError, match="unknown bot"):
        run_arena("knights-castles", "greedy,clever", 1, 1)


def test_the_arena_command_line_for_knights_and_castles():
    """`python -m engine arena --game knights-castles` prints one JSON object with --json."""
    done = subprocess.run([sys.executable, "-m", "engine", "arena", "--game", "knights-castles",
                           "--bots", "greedy,random", "--games", "2", "--seed", "3", "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["game"] == "knights-castles" and len(report["entries"]) == 2


@pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL (the rest is engine only)
def test_computer_players_take_seats_and_play_a_game_to_its_end(tmp_path):
    """Server seats: a 3-player game with a greedy and a random computer player and one person
    who never moves plays to its end through the scheduler, each bot move logged as a bot's."""
    from pbem.ground.db import reading
    from pbem.ground.models import Game, MoveRecord
    from pbem.scheduler.jobs import run_jobs
    from pbem.services.creating import create_game
    from pbem.services.players import bot_player, parse_player

    app = make_app(tmp_path / "instance", SCHEDULER_OUTAGE_MINUTES=100000)
    now = datetime(2026, 11, 24, 12, tzinfo=UTC)
    with app.app_context():
        create_game([parse_player("Anna <anna@example.org>"),
                     bot_player("greedy", "knights-castles"),
                     bot_player("random", "knights-castles")],
                    "kc-bots", kind="knights-castles", now=now)
    for _ in range(3000):
        run_jobs(app, now)
        with app.app_context(), reading() as session:
            game = session.get(Game, 1)
            if game.status == "finished":
                break
        now += timedelta(hours=100)
    with app.app_context(), reading() as session:
        game = session.get(Game, 1)
        actors = {(r.seat, r.actor) for r in session.exec(select(MoveRecord)).all()}
    assert game.status == "finished" and kc.from_json(game.state_json).step == OVER
    assert {(1, "bot"), (2, "bot")} <= actors and not {a for s, a in actors if s == 0} - {
        "timeout", "absent"}
