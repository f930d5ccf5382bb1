"""Long games: what a page, an API answer or a mail says about turns is read without going
through the whole log (pbem.services.turns counts in the database), and says the same as counting the
whole log move by move would.

A game is played past the API's fifty log entries, so the entries shown start in the middle
of the game and their turns are counted from the moves before them.
"""

import random

import pytest
from server import module_app, new_game, play_moves

from pbem.games import rules_for
from pbem.ground.db import reading, writing
from pbem.ground.models import Game, MoveRecord
from pbem.services import turns
from pbem.services.seats import load_seat
from pbem.web.api import API_LOG
from pbem.web.site import turn_number_of

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL


@pytest.fixture(scope="module")
def long_game(tmp_path_factory, database):
    """A 4-player game 75 moves in (more than API_LOG), with seeded random moves: (app,
    tokens)."""
    app = module_app(tmp_path_factory, "long")
    _, tokens = new_game(app, players=4, seed="long-game")
    chooser = random.Random("long-game")
    played = play_moves(app, tokens, API_LOG + 25, pick=chooser.choice)
    assert len(played) == API_LOG + 25
    return app, tokens


def counted_by_hand(app, game_id=1):
    """Every logged move's turn, the latest move's turn and the turn in progress, counted
    over the whole log in Python."""
    with app.app_context(), reading() as session:
        game = session.get(Game, game_id)
        rules = rules_for(game.kind)
        moves = turns.notations(session, game_id)
        state = rules.loads(game.state_json)
    return turns.numbers(rules, moves), turns.at(rules, moves, len(moves), state)


def test_the_api_numbers_the_latest_moves_as_the_whole_log_counts(long_game):
    app, tokens = long_game
    numbers, now = counted_by_hand(app)
    assert len(set(numbers)) < len(numbers)  # some turns are more than one move
    client = app.test_client()
    for token in tokens:
        document = client.get(f"/api/v1/seat/{token}").get_json()
        assert document["turn_number"] == now
        log = document["log"]
        assert len(log) == API_LOG and log[-1]["move_number"] == len(numbers) - API_LOG
        assert [(e["move_number"], e["turn_number"]) for e in log] == [
            (n, numbers[n]) for n in range(len(numbers) - 1, len(numbers) - API_LOG - 1, -1)]


def test_pages_mails_and_short_logs_find_the_same_turn(long_game):
    app, tokens = long_game
    numbers, now = counted_by_hand(app)
    with app.test_request_context("/"):
        for limit in (0, 1, 7, None):
            ctx = load_seat(tokens[0], limit)
            assert ctx.turn_number == now
            assert [e.turn_number for e in ctx.log] == [numbers[e.number] for e in ctx.log]
        assert len(load_seat(tokens[0], None).log) == len(numbers)
        with reading() as session:
            game = session.get(Game, 1)
            rules = rules_for(game.kind)
            assert turn_number_of(game) == now
            assert turns.current(session, rules, 1, rules.loads(game.state_json)) == now
            for number in (0, 1, 30, len(numbers) - 1):
                assert turns.of_move(session, rules, 1, number) == numbers[number]


def test_a_log_with_a_gap_is_still_counted_from_the_moves_before_it(long_game):
    """Moves are numbered without gaps; if a row were ever missing, the entries shown are
    counted from the moves really before them, not from where the gap-free log would start."""
    app, _ = long_game
    created, tokens2 = new_game(app, players=3, seed="gap3")
    game_id = created.game_id
    play_moves(app, tokens2, 60, game_id=game_id, pick=random.Random("gap3").choice)
    with app.app_context(), writing() as session:
        session.exec(MoveRecord.__table__.delete().where(MoveRecord.game_id == game_id,
                                                         MoveRecord.number == 40))
    with app.app_context(), reading() as session:
        game = session.get(Game, game_id)
        rules = rules_for(game.kind)
        rows = session.exec(MoveRecord.__table__.select()
                            .with_only_columns(MoveRecord.number, MoveRecord.notation,
                                               MoveRecord.lines_json)
                            .where(MoveRecord.game_id == game_id)
                            .order_by(MoveRecord.number)).all()
        numbers_gap = dict(zip([n for n, _, _ in rows],
                               turns.numbered(rules, 0, [tuple(r) for r in rows])))
    # The oldest entry shown is move 9, which begins a turn: counted once, not twice.
    assert not {n: notation for n, notation, _ in rows}[9].startswith("draw")
    with app.test_request_context("/"):
        ctx = load_seat(tokens2[0], API_LOG)
    assert ctx.log[-1].number == 9
    assert [e.turn_number for e in ctx.log] == [numbers_gap[e.number] for e in ctx.log]
