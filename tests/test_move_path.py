"""What the move path keeps from one request to the next, and why it is never stale.

A page or an API answer is made again after every move, mostly from the same parts: the
position (parsed once per JSON text, and a position a move wrote is the one the next request
reads), a seat's view of it (once per position and seat), the log entries (once per record,
reader and language, keyed by the whole row) and the answer's items for them. Each part is
keyed by what it is made of, so a taken-back move made anew, a state stored over another or a
second seat never gets another's part.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from server import new_game
from sqlmodel import select

import engine
import engine.knights_castles as kc
from pbem import stewardship
from pbem.api import API_LOG, _LogItems
from pbem.db import reading, utcnow
from pbem.games import ByState, StateCache, rules_for
from pbem.models import Game, MoveRecord
from pbem.services import LogEntry, load_seat, submit_move


@pytest.mark.parametrize("kind", ["kardinal-koenig", "knights-castles"])
def test_a_position_written_is_the_one_read_back_and_equal_to_a_fresh_parse(kind):
    rules = rules_for(kind)
    state = (engine.new_game(("red", "green", "yellow"), "cache") if kind == "kardinal-koenig"
             else kc.new_game(3, 7))
    chooser = random.Random(kind)
    for _ in range(12):
        state = rules.apply(state, rules.parse(state, chooser.choice(rules.legal(state))))
        text = rules.dumps(state)
        assert rules.loads(text) is state  # no parse for the next request
        fresh = (engine.from_json(text) if kind == "kardinal-koenig" else kc.from_json(text))
        assert fresh == state and rules.dumps(fresh) == text
    assert rules.loads(text + " ") == state and rules.loads(text + " ") is not state


def test_the_state_cache_keeps_the_latest_texts_and_parses_the_rest():
    parsed = []
    cache = StateCache(lambda text: parsed.append(text) or [text], size=2)
    first = cache.get("a")
    assert cache.get("a") is first and parsed == ["a"]
    cache.remember("b", ["b"])
    cache.get("a")  # the latest again: "b" is the oldest now
    cache.get("c")
    assert cache.get("a") is first and parsed == ["a", "c"]
    cache.get("b")
    assert parsed == ["a", "c", "b"]


def test_a_view_is_made_once_per_position_and_seat_and_is_that_seats_own():
    rules = rules_for("kardinal-koenig")
    state = engine.new_game(("red", "green", "yellow"), "views")
    again = engine.from_json(rules.dumps(state))  # equal, but another object
    assert rules.view_dict(state, 0) is rules.view_dict(state, 0)
    for seat in (0, 1, None):
        assert rules.view_dict(state, seat) == engine.view_for(state, seat).to_dict()
    assert rules.view_dict(state, 0)["hand"] != rules.view_dict(state, 1)["hand"]
    assert rules.view_dict(again, 0) is not rules.view_dict(state, 0)


def test_by_state_keeps_a_value_only_for_its_own_state_object():
    made = []
    views = ByState(lambda state, seat: made.append((state, seat)) or object(), size=2)
    one, two = [1], [1]  # equal, not the same
    first = views(one, 0)
    assert views(one, 0) is first and len(made) == 1
    assert views(two, 0) is not first and len(made) == 2
    assert views(one, 1) is not first and len(made) == 3  # (one, 0), the oldest, dropped
    assert views(one, 0) is not first and len(made) == 4


def test_an_answers_log_item_is_made_once_per_entry_and_as_the_reader_sees_the_move():
    items = _LogItems()
    entry = LogEntry(3, 1, "offer green: village for town", "player", "api",
                     utcnow(), ("Green offers a trade.",), 2)
    shown = items(entry, "offer green")
    assert items(entry, "offer green") is shown
    assert shown == {"move_number": 3, "turn": 3, "turn_number": 2, "seat": 1,
                     "lines": ("Green offers a trade.",), "move": "offer green",
                     "at": entry.created_at.isoformat()}
    assert items(entry, entry.notation)["move"] == entry.notation  # another reader
    assert items(LogEntry(*entry), "offer green") is not shown  # another entry, equal or not


@pytest.mark.usefixtures("database")
def test_a_move_taken_back_and_made_anew_at_the_same_moment_shows_its_own_log_entry(app):
    """The log's entries are kept by their whole row: a record taken back and written again
    with the same number, seat and time (a frozen clock) but another move is another entry."""
    _, tokens = new_game(app, 3, "anew")
    moment = utcnow().replace(microsecond=0) + timedelta(minutes=5)
    with app.test_request_context("/"):
        admin = stewardship.create_admin("admin@example.org", "a long enough password 42")
    with reading(app) as session:
        game = session.get(Game, 1)
        rules = rules_for(game.kind)
        state = rules.loads(game.state_json)
    first, other = rules.legal(state)[:2]
    mover = tokens[rules.to_move(state)]
    with app.test_request_context("/"):
        made = submit_move(mover, first, 0, now=moment, context_log=API_LOG)
        assert [e.notation for e in made.context.log] == [first]
        assert [e.notation for e in load_seat(tokens[1], API_LOG).log] == [first]
        stewardship.take_back(admin, 1, "a slip", now=moment)
        again = submit_move(mover, other, 0, now=moment, context_log=API_LOG)
    (entry,) = again.context.log
    assert (entry.number, entry.notation, entry.created_at) == (0, other, moment)
    assert entry.lines == tuple(again.lines) != made.context.log[0].lines
    with app.test_request_context("/"):
        assert [e.notation for e in load_seat(tokens[1], API_LOG).log] == [other]
    with reading(app) as session:
        assert [r.notation for r in session.exec(select(MoveRecord))] == [other]
