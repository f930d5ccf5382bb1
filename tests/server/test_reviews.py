"""Issue 46, point 3: a finished game's review by the strong computer player, queued when the
game ends, made by the scheduler a few turns a run (resumable: the real `pbem scheduler`
killed mid-review and started again goes on without redoing a turn), and shown on the
history pages of the finished game only, in the reader's language."""

from __future__ import annotations

import random
import re
import signal
import sys
from datetime import UTC, datetime

import pytest
from server import make_app
from sqlmodel import delete, select
from test_deploy_processes import process, wait_for
from test_pbem_cli import environment

from engine import review as engine_review
from pbem.games import rules_for
from pbem.ground.db import reading, writing
from pbem.ground.models import (
    DONE,
    FINISHED,
    PENDING,
    Game,
    GameReview,
    MoveRecord,
    Seat,
    SeatKey,
    TurnReview,
)
from pbem.ground.tokens import hash_token, new_token
from pbem.services.creating import create_game
from pbem.services.moves import submit_move
from pbem.services.players import parse_player
from pbem.services.reviews import run_due_reviews

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

KIND = "kardinal-koenig"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
PLAYERS = ["Anna <anna@example.org>", "Bruno <bruno@example.org>",
           "Chiara <chiara@example.org>"]


def _play_to_the_end(app, seed: str = "review-1") -> int:
    """A game of three, every move through submit_move: Anna plays `greedy`, the others
    legal moves at random (a clear winner); returns its id."""
    with app.app_context():
        game_id = create_game([parse_player(p) for p in PLAYERS], seed, kind=KIND,
                              start=0).game_id
    chooser = random.Random(seed)
    rules = rules_for(KIND)
    while True:
        with app.app_context(), reading() as session:
            game = session.get(Game, game_id)
            state = rules.loads(game.state_json)
            to_move = rules.to_move(state)
            if to_move is None:
                return game_id
            seat = session.exec(select(Seat).where(Seat.game_id == game_id,
                                                   Seat.number == to_move)).one()
            turn, seat_id = game.turn, seat.id
        move = rules.bot_move(state, "greedy", f"{seed}:{turn}") if to_move == 0 \
            else chooser.choice(rules.legal(state))
        with app.app_context():
            submit_move(None, move, turn, seat_id=seat_id)


@pytest.fixture(scope="module")
def finished_template(tmp_path_factory, database):
    """One finished game, played once a module and database (the move path is the slow part),
    with the turns its review will have."""
    app = make_app(tmp_path_factory.mktemp("reviewed") / "instance",
                   SCHEDULER_REVIEW_PLAYOUTS=1)
    game_id = _play_to_the_end(app)
    with app.app_context(), reading() as session:
        game = session.get(Game, game_id)
        assert game.status == FINISHED
        rules = rules_for(KIND)
        notations = list(session.exec(select(MoveRecord.notation).where(
            MoveRecord.game_id == game_id).order_by(MoveRecord.number)))
        first = rules.history_state(rules.loads(game.state_json), [])
    return app, game_id, [i for i, _ in engine_review.decisions(KIND, first, notations)]


def _rows(app, game_id) -> dict[int, tuple]:
    with app.app_context(), reading() as session:
        return {r.number: (r.id, r.seat, r.played, r.before, r.after, r.bot_move, r.bot_after)
                for r in session.exec(select(TurnReview).where(TurnReview.game_id == game_id))}


def _set_head(app, game_id, **values) -> None:
    with app.app_context(), writing() as session:
        head = session.get(GameReview, game_id)
        for key, value in values.items():
            setattr(head, key, value)
        session.add(head)


def _head(app, game_id) -> GameReview | None:
    with app.app_context(), reading() as session:
        return session.get(GameReview, game_id)


def test_a_finished_game_is_queued_and_reviewed_a_few_turns_a_run(finished_template):
    """The end of a game queues its review; each run reviews at most the turns it may, each
    turn once, going on where the last run stopped; the review is done when every turn of
    each seat has its row, and a run then changes nothing."""
    app, game_id, turns = finished_template
    head = _head(app, game_id)
    assert head is not None and head.status == PENDING  # queued by the game's end
    with app.app_context():
        assert run_due_reviews(NOW, turns=3) == {"review_turns": 3}
    first = _rows(app, game_id)
    assert sorted(first) == turns[:3]
    assert _head(app, game_id).turns == len(turns)
    assert _head(app, game_id).status == PENDING  # given back for the next run
    with app.app_context():
        assert run_due_reviews(NOW, turns=3) == {"review_turns": 3}
    rows = _rows(app, game_id)
    assert sorted(rows) == turns[:6] and {n: rows[n] for n in first} == first
    assert {seat for _, seat, *_ in rows.values()} == {0, 1, 2}  # each seat's turns
    head = _head(app, game_id)
    assert head.cpu_seconds > 0 and head.playouts == 1


def test_a_review_is_done_once_every_turn_has_its_row(tmp_path):
    """The last turns reviewed, the review is done and a run finds nothing more to do."""
    app = make_app(tmp_path / "instance", SCHEDULER_REVIEW_PLAYOUTS=1)
    game_id = _play_to_the_end(app, "review-2")
    with app.app_context():
        assert run_due_reviews(NOW, turns=1) == {"review_turns": 1}
    turns = _head(app, game_id).turns
    with app.app_context(), writing() as session:  # all but the last two, as if reviewed
        done = set(session.exec(select(TurnReview.number).where(
            TurnReview.game_id == game_id)))
        rules = rules_for(KIND)
        game = session.get(Game, game_id)
        notations = list(session.exec(select(MoveRecord.notation).where(
            MoveRecord.game_id == game_id).order_by(MoveRecord.number)))
        first = rules.history_state(rules.loads(game.state_json), [])
        todo = [i for i, _ in engine_review.decisions(KIND, first, notations)]
        assert len(todo) == turns
        for number in todo[:-2]:
            if number not in done:
                session.add(TurnReview(game_id=game_id, number=number, seat=0,
                                       played="pass", before=0.5, after=0.5, created_at=NOW))
    _set_head(app, game_id, cpu_seconds=600.5)  # its CPU budget (600 s) spent: it ends
    with app.app_context():
        assert run_due_reviews(NOW, turns=50) == {"review_turns": 0}
    assert _head(app, game_id).status == DONE
    page = app.test_client().get(f"/watch/{game.watch_id}").get_data(as_text=True)
    assert (f"The review stopped after {turns - 2} of {turns} turns: it had used the computer "
            "time a game's review may take.") in page
    _set_head(app, game_id, cpu_seconds=0.0, status=PENDING, done_at=None)
    with app.app_context():
        assert run_due_reviews(NOW, turns=50) == {"review_turns": 2}
        assert _head(app, game_id).status == DONE
        assert run_due_reviews(NOW, turns=50) == {"review_turns": 0}
    assert sorted(_rows(app, game_id)) == todo


def test_finished_games_without_a_review_get_one(tmp_path):
    """Games finished before reviews existed are queued by the scheduler's run."""
    app = make_app(tmp_path / "instance", SCHEDULER_REVIEW_PLAYOUTS=1)
    game_id = _play_to_the_end(app, "review-3")
    with app.app_context(), writing() as session:
        session.exec(delete(TurnReview).where(TurnReview.game_id == game_id))
        session.exec(delete(GameReview).where(GameReview.game_id == game_id))
    assert _head(app, game_id) is None
    with app.app_context():
        assert run_due_reviews(NOW, turns=1) == {"review_turns": 1}
    assert _head(app, game_id).status == PENDING and len(_rows(app, game_id)) == 1


def test_the_history_pages_show_the_review_and_each_players_costliest_turns(
        finished_template):
    """Spectator and seat history pages list every reviewed turn with its chances, name the
    bot's choice where it was better, and sum up each player's three costliest turns; in
    German for a German reader."""
    app, game_id, turns = finished_template
    with app.app_context():
        run_due_reviews(NOW, turns=12 - len(_rows(app, game_id)))
    rows = _rows(app, game_id)
    assert len(rows) == 12
    with app.app_context(), reading() as session:
        game = session.get(Game, game_id)
        watch_id = game.watch_id
    client = app.test_client()
    page = client.get(f"/watch/{watch_id}").get_data(as_text=True)
    assert "Review by the strong computer player" in page
    assert "The three costliest turns" in page
    section = page[page.index('id="review"'):]
    lines = re.findall(r"<li><a href=\"[^\"]*\?at=(\d+)\">(\w+)</a>, (.*?)</li>", section)
    assert [int(at) for at, _, _ in lines] == turns[:12]
    assert f"The review is being made: 12 of {len(turns)} turns so far." in page
    named = 0
    for at, name, text in lines:
        _, seat, _, before, after, bot, bot_after = rows[int(at)]
        assert name == ["Anna", "Bruno", "Chiara"][seat]
        assert f"chances {round(before * 100)}% to {round(after * 100)}%" in text
        if bot is not None and bot_after - after > engine_review.THRESHOLD:
            assert "the bot would have played" in text
            named += 1
        else:
            assert "the bot would have" not in text
    assert named, "the strong bot disagrees with some random move"
    summary = section[section.index("review-summary"):section.index("Turn by turn")]
    for name in ("Anna", "Bruno", "Chiara"):
        entry = re.search(rf"<strong>{name}</strong>.*?</li>", summary, re.DOTALL).group(0)
        assert 1 <= entry.count("<a ") <= 3 or "no turn gave chances away" in entry
    token = new_token()  # a fresh link of Bruno's, as the game's next mail would bring
    with app.app_context(), writing() as session:
        bruno = session.exec(select(Seat).where(Seat.game_id == game_id, Seat.number == 1)).one()
        session.add(SeatKey(seat_id=bruno.id, token_hash=hash_token(token)))
    own = client.get(f"/seat/{token}/history").get_data(as_text=True)
    assert own.count("chances ") == page.count("chances ")  # the same review for a seat
    assert "The three costliest turns" in own
    german = client.get(f"/watch/{watch_id}", headers={"Accept-Language": "de"})
    text = german.get_data(as_text=True)
    assert "Rückblick des starken Computerspielers" in text and "Chancen" in text


def test_a_running_game_shows_no_review(app, client):
    """Nothing of a review is shown before the game's end, even if rows were there."""
    with app.app_context():
        game_id = create_game([parse_player(p) for p in PLAYERS], "running", kind=KIND,
                              start=0).game_id
    with app.app_context(), writing() as session:
        session.add(GameReview(game_id=game_id, status=DONE, turns=1, created_at=NOW))
        session.add(TurnReview(game_id=game_id, number=0, seat=0, played="pass", before=0.5,
                               after=0.1, bot_move="draw deck", bot_after=0.9, created_at=NOW))
        watch_id = session.get(Game, game_id).watch_id
    page = client.get(f"/watch/{watch_id}").get_data(as_text=True)
    assert "strong computer player" not in page and "chances" not in page


def test_a_scheduler_killed_mid_review_resumes_without_redoing_a_turn(tmp_path,
                                                                      finished_template):
    """The real `pbem scheduler`, one turn a run, killed (SIGKILL) after a few turns; another
    started on the same database takes the dead one's claim once it is old and reviews only
    the turns without a row."""
    app, game_id, turns = finished_template
    with app.app_context(), writing() as session:
        session.exec(delete(TurnReview).where(TurnReview.game_id == game_id))
        head = session.get(GameReview, game_id)
        head.status, head.claim, head.claimed_at = PENDING, None, None
        session.add(head)
    instance = tmp_path / "instance"
    common = {"PBEM_DATABASE_URL": app.config["DATABASE_URL"],
              "PBEM_SCHEDULER_TICK_SECONDS": "1", "PBEM_SCHEDULER_CLAIM_SECONDS": "5",
              "PBEM_SCHEDULER_REVIEW_PLAYOUTS": "1", "PBEM_SECRET_KEY": "review-test"}
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    command = [sys.executable, "-m", "pbem", "scheduler"]
    with process(command, first_log, environment(
            instance, PBEM_SCHEDULER_REVIEW_TURNS="1", **common)) as first:
        wait_for(lambda: len(_rows(app, game_id)) >= 3,
                 what=lambda: f"three reviewed turns:\n{first_log.read_text()[-3000:]}")
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    before = _rows(app, game_id)
    assert 3 <= len(before) < len(turns)
    with process(command, second_log, environment(
            instance, PBEM_SCHEDULER_REVIEW_TURNS="3", **common)):
        wait_for(lambda: len(_rows(app, game_id)) >= len(before) + 3,
                 what=lambda: f"three more turns:\n{second_log.read_text()[-3000:]}")
    after = _rows(app, game_id)
    assert sorted(after) == turns[:len(after)]  # in order, none skipped
    assert {n: after[n] for n in before} == before  # the same rows, untouched
    redone = [int(n) for n in re.findall(rf"review: game {game_id} move (\d+) reviewed",
                                         second_log.read_text())]
    assert redone and not set(redone) & set(before), redone
    assert set(redone) <= set(after)
