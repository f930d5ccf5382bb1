"""The scheduler (`pbem.scheduler.jobs.run_jobs`) driven by an injected clock: reminders, timeouts and the
default move, absent seats, weekends, vacations, pauses, the outage guard, time zones, and
`pbem run-jobs`.

Most apps here are built with a huge SCHEDULER_OUTAGE_MINUTES so that jumping the clock from one
deadline to the next is not taken for an outage; the outage test uses the real threshold and
runs every 30 minutes.
"""

from __future__ import annotations

import dataclasses
import html
from collections import Counter
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from server import Mailbox, field, game_state, make_app, new_game, text_of, token_in
from sqlalchemy import event
from sqlmodel import select

import engine
from pbem.games.kardinal_koenig import KardinalKoenig
from pbem.ground.db import get_engine, reading
from pbem.ground.models import PENDING, JobState, MoveRecord, OutboxMessage, Seat, Timer
from pbem.scheduler.jobs import _claim, handle_due_timers, run_jobs
from pbem.services.clock_controls import extend_deadline, pause_game, resume_game
from pbem.services.deadlines import TimeControl
from pbem.services.moves import submit_move

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

T0 = datetime(2026, 11, 24, 12, tzinfo=UTC)  # a Tuesday
HOUR, MINUTE = timedelta(hours=1), timedelta(minutes=1)
BERLIN = ZoneInfo("Europe/Berlin")
TITLE = "Kardinal & König #1"
ADMIN = "admin@example.org"
RULES = KardinalKoenig()


# --- helpers ------------------------------------------------------------------------------------

def scheduler_app(tmp_path, **config):
    settings = {"SCHEDULER_OUTAGE_MINUTES": 100000, "MAIL_ADMINS": ADMIN, **config}
    return make_app(tmp_path / "x", **settings)


class Clock:
    def __init__(self, now: datetime):
        self.now = now


@pytest.fixture
def clock(monkeypatch):
    """The time the web pages and the services see when not given one."""
    fake = Clock(T0)
    for module in ("creating", "moves", "seats", "clock_controls", "seat_settings"):  # they ask it
        monkeypatch.setattr(f"pbem.services.{module}.utcnow", lambda: fake.now)
    monkeypatch.setattr("pbem.web.seat.utcnow", lambda: fake.now)
    return fake


def started(tmp_path, players=3, seed="1", now=T0, **config):
    """An app, a game created at `now` (seed 1: seat 0 starts, holding O O R), a first
    scheduler run (which only records the time), and its mailbox."""
    app = scheduler_app(tmp_path, **config)
    _, tokens = new_game(app, players, seed, now=now)
    run_jobs(app, now)
    return app, tokens, Mailbox(app)


def records(app, game_id=1) -> list[tuple]:
    """The move log: (seat, notation, actor, via) in order."""
    with app.app_context(), reading() as session:
        rows = session.exec(select(MoveRecord).where(MoveRecord.game_id == game_id)
                            .order_by(MoveRecord.number)).all()
        return [(r.seat, r.notation, r.actor, r.via) for r in rows]


def seat_row(app, number, game_id=1) -> Seat:
    with app.app_context(), reading() as session:
        return session.exec(select(Seat).where(Seat.game_id == game_id,
                                               Seat.number == number)).one()


def pending(app, game_id=1) -> list[tuple[str, datetime]]:
    with app.app_context(), reading() as session:
        rows = session.exec(select(Timer).where(Timer.game_id == game_id,
                                                Timer.status == PENDING)
                            .order_by(Timer.due_at)).all()
        return [(t.kind, t.due_at) for t in rows]


def subjects(mailbox, address) -> list[str]:
    return [str(m["Subject"]) for m in mailbox.to(address)]


def mails(mailbox, address, words) -> list:
    return [m for m in mailbox.to(address) if words in str(m["Subject"])]


def deadline(app, game_id=1) -> datetime:
    return game_state(app, game_id)[0].deadline_at


def human_turn(app, tokens, now, game_id=1) -> int:
    """The seat to move plays its whole turn itself: an exchange, then draws. Returns the seat."""
    game, state = game_state(app, game_id)
    seat = state.current
    while not state.is_over and state.current == seat:
        legal = [str(m) for m in engine.legal_moves(state)]
        move = next((m for m in legal if m.startswith("exchange")), None) or \
            ("draw deck" if "draw deck" in legal else legal[0])
        with app.app_context():
            submit_move(tokens[seat], move, game.turn, now=now)
        game, state = game_state(app, game_id)
    return seat


def post_form(client, token, action, **data):
    """A POST from the seat page's own form (with its CSRF token)."""
    page = client.get(f"/seat/{token}").get_data(as_text=True)
    return client.post(f"/seat/{token}/{action}",
                       data={"csrf_token": field(page, "csrf_token"), **data})


def page_text(client, token) -> str:
    response = client.get(f"/seat/{token}")
    assert response.status_code == 200
    return html.unescape(response.get_data(as_text=True))


def expected_exchange(hand) -> str:
    """The default move's card, written out from the rule in docs/rules-notes.md."""
    box = "RGCOP"
    counts = Counter(hand)
    most = max(counts.values())
    if most == 2 and len(counts) > 1:  # keep the pair (a joker) when another card can go
        candidates = [c for c in counts if counts[c] != 2]
    else:
        candidates = [c for c in counts if counts[c] == most]
    return min(candidates, key=box.index)


# --- 1. reminders -------------------------------------------------------------------------------

def test_reminders_come_at_24_and_2_hours_before_the_deadline_each_once(tmp_path):
    """With 72 h and reminders 24,2: one reminder at 48 h, one at 70 h, never twice."""
    app, _, mailbox = started(tmp_path)
    assert deadline(app) == T0 + 72 * HOUR

    def reminders_at(moment):
        return run_jobs(app, moment)["reminders"]

    assert reminders_at(T0 + 47 * HOUR + 59 * MINUTE) == 0
    assert reminders_at(T0 + 48 * HOUR) == 1
    assert reminders_at(T0 + 48 * HOUR) == 0
    assert reminders_at(T0 + 49 * HOUR) == 0
    assert reminders_at(T0 + 69 * HOUR + 59 * MINUTE) == 0
    assert reminders_at(T0 + 70 * HOUR) == 1
    assert reminders_at(T0 + 71 * HOUR) == 0
    sent = mails(mailbox, "p0@", "Reminder")
    assert len(sent) == 2
    assert all(str(m["Subject"]) == f"[{TITLE}] Reminder: your move is due Friday 27 November "
               "2026, 12:00 UTC" for m in sent)
    assert not [m for m in mailbox.messages() if "Reminder" in str(m["Subject"])
                and "p0@" not in str(m["To"])]
    body = text_of(sent[0])
    assert "Please move by Friday 27 November 2026, 12:00 UTC." in body
    _, state = game_state(app)
    assert f"Your hand (yellow): {RULES.card_words(state.hands[0])}" in body
    assert "Your hand (yellow): 2 orange cards (England/Schwaben), 1 red card (Franken/Aragon)" \
        in body
    client = app.test_client()
    assert "It is your move." in page_text(client, token_in(sent[0]))


def test_no_reminder_after_the_seat_has_moved(tmp_path):
    """Once the seat has played its turn, that turn's later reminder and timeout never come."""
    app, tokens, mailbox = started(tmp_path)
    assert run_jobs(app, T0 + 48 * HOUR)["reminders"] == 1
    human_turn(app, tokens, T0 + 50 * HOUR)
    for hours in (70, 72, 90):
        counts = run_jobs(app, T0 + hours * HOUR)
        assert counts["reminders"] == counts["timeouts"] == 0
    assert len(mails(mailbox, "p0@", "Reminder")) == 1
    assert [r[2] for r in records(app)] == ["player", "player"]
    # seat 1's turn began at 50 h: its own reminders follow its own deadline
    assert deadline(app) == T0 + 122 * HOUR
    assert run_jobs(app, T0 + 98 * HOUR)["reminders"] == 1
    assert len(mails(mailbox, "p1@", "Reminder")) == 1


def test_a_reminder_already_sent_is_not_sent_again_when_the_deadline_moves(tmp_path):
    """An extension that puts a reminder's time in the past does not send it a second time."""
    app, _, mailbox = started(tmp_path)
    assert run_jobs(app, T0 + 48 * HOUR)["reminders"] == 1
    with app.app_context():
        assert extend_deadline(1, 1, now=T0 + 60 * HOUR) == T0 + 73 * HOUR
    assert pending(app) == [("reminder", T0 + 71 * HOUR), ("timeout", T0 + 73 * HOUR)]
    assert run_jobs(app, T0 + 60 * HOUR)["reminders"] == 0
    assert run_jobs(app, T0 + 71 * HOUR)["reminders"] == 1
    assert run_jobs(app, T0 + 72 * HOUR)["timeouts"] == 0
    assert run_jobs(app, T0 + 73 * HOUR)["timeouts"] == 1
    assert len(mails(mailbox, "p0@", "Reminder")) == 2


# --- 2. the timeout and the default move --------------------------------------------------------

@pytest.mark.parametrize("hand, card", [
    ("GGR", "R"), ("GGG", "G"), ("GRC", "R"), ("RRG", "G"), ("OOP", "P"), ("COP", "C"),
    ("PPP", "P"), ("OOR", "R"), ("CCP", "P"), ("GOP", "G"),
])
def test_the_default_move_exchanges_the_card_held_most_keeping_a_pair(hand, card):
    """Exchange the card held most, but keep a pair if another can go; ties in box order."""
    state = engine.new_game(3, "1")
    state = dataclasses.replace(state, hands=(tuple(sorted(hand)),) + state.hands[1:])
    assert expected_exchange(hand) == card
    assert RULES.default_move(state) == f"exchange {card}"


def test_the_default_move_in_a_refill_draws_from_the_deck():
    """In the middle of a refill the default move is a draw from the deck."""
    state = engine.new_game(3, "1")
    state = engine.apply_move(state, engine.parse_move("OO Franken: Mainz", state.board))
    assert state.phase == "draw"
    assert RULES.default_move(state) == "draw deck"


def test_a_timeout_plays_the_exchange_and_a_draw_through_the_normal_path(tmp_path):
    """At the deadline the server exchanges (by the rule) and draws from the deck, as a move."""
    app, tokens, mailbox = started(tmp_path)
    _, state = game_state(app)
    card = expected_exchange(state.hands[0])
    assert run_jobs(app, T0 + 72 * HOUR - MINUTE)["timeouts"] == 0
    assert records(app) == []
    assert run_jobs(app, T0 + 72 * HOUR)["timeouts"] == 1
    assert records(app) == [(0, f"exchange {card}", "timeout", "scheduler"),
                            (0, "draw deck", "timeout", "scheduler")]
    game, state = game_state(app)
    assert state.current == 1 and game.turn == 2 and game.status == "running"
    assert game.deadline_at == T0 + 144 * HOUR  # seat 1's turn began at the timeout
    assert seat_row(app, 0).timeouts_in_row == 1 and not seat_row(app, 0).absent

    told = mails(mailbox, "p0@", "Your deadline passed: the server moved for you")
    assert len(told) == 1
    body = text_of(told[0])
    # Players are named by name and colour, "you" in the mail to themselves (issue 43).
    assert "Player 0 (you, yellow) exchanged a red card (Franken/Aragon)." in body
    assert "from the deck." in body
    assert "Your next turn is yours again as usual." in body
    turn = mails(mailbox, "p1@", "Your turn")
    assert len(turn) == 1 and "Player 0 (yellow) exchanged a red card" in text_of(turn[0])
    assert len(mails(mailbox, "p2@", "Player 1 is next")) == 1
    assert mails(mailbox, ADMIN, "") == []
    # the game goes on: seat 1 plays, and the same timeout is never played again
    human_turn(app, tokens, T0 + 73 * HOUR)
    assert run_jobs(app, T0 + 74 * HOUR)["timeouts"] == 0
    assert [r[0] for r in records(app)] == [0, 0, 1, 1]


def test_a_timeout_in_a_refill_plays_only_the_remaining_draws(tmp_path):
    """A seat that placed and drew once is timed out with one draw from the deck, no more."""
    app, tokens, mailbox = started(tmp_path)
    with app.app_context():
        submit_move(tokens[0], "OO Franken: Mainz", 0, now=T0 + HOUR)
        submit_move(tokens[0], "draw G", 1, now=T0 + 2 * HOUR)
    assert deadline(app) == T0 + 72 * HOUR  # the turn's clock did not restart
    assert run_jobs(app, T0 + 72 * HOUR)["timeouts"] == 1
    assert records(app) == [(0, "OO Franken: Mainz", "player", "web"),
                            (0, "draw G", "player", "web"),
                            (0, "draw deck", "timeout", "scheduler")]
    assert game_state(app)[1].current == 1
    assert len(mails(mailbox, "p0@", "the server moved for you")) == 1


def test_the_timeout_mail_after_a_refill_does_not_claim_the_players_own_moves(tmp_path):
    """The 'server moved for you' mail lists what the server did, not the seat's own moves."""
    app, tokens, mailbox = started(tmp_path)
    with app.app_context():
        submit_move(tokens[0], "OO Franken: Mainz", 0, now=T0 + HOUR)
        submit_move(tokens[0], "draw G", 1, now=T0 + 2 * HOUR)
    run_jobs(app, T0 + 72 * HOUR)
    body = text_of(mails(mailbox, "p0@", "the server moved for you")[0])
    made = body.split("made your move for you:")[1].split("\n\n")[0]
    assert "from the deck" in made
    assert "placed a monastery at Mainz" not in made


# --- 3. absent seats ----------------------------------------------------------------------------

def time_out_seat_0(app, tokens) -> datetime:
    """Run the scheduler at seat 0's deadline (it times out), then seats 1 and 2 play at once.
    Returns the moment seat 0's next turn began."""
    moment = deadline(app)
    assert game_state(app)[1].current == 0
    assert run_jobs(app, moment)["timeouts"] == 1
    human_turn(app, tokens, moment + MINUTE)
    human_turn(app, tokens, moment + MINUTE)
    return moment + MINUTE


def test_three_timeouts_in_a_row_make_a_seat_absent_and_tell_the_admin_once(tmp_path):
    """Three consecutive timeouts mark a seat absent; a move of its own in between resets."""
    app, tokens, mailbox = started(tmp_path)
    time_out_seat_0(app, tokens)
    begun = time_out_seat_0(app, tokens)
    assert seat_row(app, 0).timeouts_in_row == 2
    human_turn(app, tokens, begun + HOUR)  # seat 0 plays one turn itself
    assert seat_row(app, 0).timeouts_in_row == 0
    human_turn(app, tokens, begun + HOUR)
    human_turn(app, tokens, begun + HOUR)
    time_out_seat_0(app, tokens)
    time_out_seat_0(app, tokens)
    assert seat_row(app, 0).timeouts_in_row == 2 and not seat_row(app, 0).absent
    assert mails(mailbox, ADMIN, "absent") == []
    begun = time_out_seat_0(app, tokens)
    seat = seat_row(app, 0)
    assert seat.timeouts_in_row == 3 and seat.absent
    told = mails(mailbox, ADMIN, "absent")
    assert [str(m["Subject"]) for m in told] == [f"[pbem] Player 0 is absent from {TITLE}"]
    assert "missed in a row: 3." in text_of(told[0])
    assert "marked absent" in text_of(mails(mailbox, "p0@", "the server moved for you")[-1])

    # its next turn: no 'Your turn' mail, no reminders, and the default move at the next run
    turn_mails = len(mails(mailbox, "p0@", "Your turn"))
    assert game_state(app)[1].current == 0 and deadline(app) == begun
    assert [kind for kind, _ in pending(app)] == ["timeout"]
    assert run_jobs(app, begun + MINUTE)["timeouts"] == 1
    assert game_state(app)[1].current == 1
    assert [r[2] for r in records(app)[-2:]] == ["timeout", "timeout"]
    assert len(mails(mailbox, "p0@", "Your turn")) == turn_mails
    assert len(mails(mailbox, ADMIN, "absent")) == 1  # told once, not at every turn
    assert seat_row(app, 0).absent


def test_a_timeout_rule_is_changed_in_one_place(tmp_path, monkeypatch):
    """What a passing deadline does is pbem.services.timeouts' Policy: one that makes a seat
    absent at its first timeout (the setting says three) is followed by the scheduler, the
    organisers' mail and the seat's next turn alike."""
    from pbem.services import timeouts

    class AbsentAtOnce(timeouts.Policy):
        def is_absent(self, seat) -> bool:
            return True

    monkeypatch.setattr(timeouts, "POLICY", AbsentAtOnce())
    app, tokens, mailbox = started(tmp_path)
    assert app.config["GAMES_ABSENT_AFTER_TIMEOUTS"] == 3
    begun = time_out_seat_0(app, tokens)
    seat = seat_row(app, 0)
    assert seat.timeouts_in_row == 1 and seat.absent
    assert [str(m["Subject"]) for m in mails(mailbox, ADMIN, "absent")] == [
        f"[pbem] Player 0 is absent from {TITLE}"]
    assert deadline(app) == begun  # its next turn is played at once
    assert run_jobs(app, begun + MINUTE)["timeouts"] == 1
    assert game_state(app)[1].current == 1


def test_i_am_back_makes_the_next_turn_wait_for_the_seat_again(tmp_path, clock):
    """After POST /back an absent seat's next turn has a full deadline and a 'Your turn' mail."""
    app, tokens, mailbox = started(tmp_path, GAMES_ABSENT_AFTER_TIMEOUTS=1)
    client = app.test_client()
    begun = time_out_seat_0(app, tokens)
    assert seat_row(app, 0).absent
    run_jobs(app, begun + MINUTE)  # played for it at once
    assert game_state(app)[1].current == 1
    page = page_text(client, tokens[0])
    assert "I am back" in page
    response = post_form(client, tokens[0], "back")
    assert response.status_code == 303
    seat = seat_row(app, 0)
    assert not seat.absent and seat.timeouts_in_row == 0
    assert "I am back" not in page_text(client, tokens[0])
    turn_mails = len(mails(mailbox, "p0@", "Your turn"))
    human_turn(app, tokens, begun + 2 * MINUTE)
    human_turn(app, tokens, begun + 2 * MINUTE)
    assert game_state(app)[1].current == 0
    assert deadline(app) == begun + 2 * MINUTE + 72 * HOUR
    assert run_jobs(app, begun + 3 * MINUTE)["timeouts"] == 0
    assert len(mails(mailbox, "p0@", "Your turn")) == turn_mails + 1


def test_an_absent_seat_that_plays_its_turn_is_present_again(tmp_path):
    """An absent seat that moves on its turn before the run is reset and not timed out."""
    app, tokens, _ = started(tmp_path, GAMES_ABSENT_AFTER_TIMEOUTS=1)
    begun = time_out_seat_0(app, tokens)
    assert seat_row(app, 0).absent and deadline(app) == begun
    human_turn(app, tokens, begun + MINUTE // 2)
    seat = seat_row(app, 0)
    assert not seat.absent and seat.timeouts_in_row == 0
    assert run_jobs(app, begun + MINUTE)["timeouts"] == 0
    assert [r[2] for r in records(app)[-2:]] == ["player", "player"]
    human_turn(app, tokens, begun + 2 * MINUTE)
    human_turn(app, tokens, begun + 2 * MINUTE)
    assert deadline(app) == begun + 2 * MINUTE + 72 * HOUR  # its turns wait for it again


def test_an_absent_seat_that_starts_its_turn_is_not_timed_out_in_the_middle(tmp_path):
    """An absent seat that made the first move of its turn gets a deadline, not a timeout."""
    app, tokens, _ = started(tmp_path, GAMES_ABSENT_AFTER_TIMEOUTS=1)
    begun = time_out_seat_0(app, tokens)
    game, state = game_state(app)
    exchange = next(str(m) for m in engine.legal_moves(state) if str(m).startswith("exchange"))
    with app.app_context():
        submit_move(tokens[0], exchange, game.turn, now=begun + MINUTE // 2)
    assert not seat_row(app, 0).absent
    assert run_jobs(app, begun + MINUTE)["timeouts"] == 0
    assert records(app)[-1][2] == "player"
    assert seat_row(app, 0).timeouts_in_row == 0


# --- 4. weekends --------------------------------------------------------------------------------

def test_the_weekend_pause_carries_a_friday_deadline_to_monday(tmp_path):
    """With weekend_pause in Europe/Berlin, 24 h from Friday noon ends Monday noon, not Saturday."""
    berlin_noon = {day: datetime(2026, 11, day, 12, tzinfo=BERLIN).astimezone(UTC)
                   for day in (19, 20, 21, 23)}
    time = TimeControl(24, (2,), True, "Europe/Berlin")
    app = scheduler_app(tmp_path)
    new_game(app, 3, "1", time=time, now=berlin_noon[19])  # Thursday
    run_jobs(app, berlin_noon[19])
    assert deadline(app, 1) == berlin_noon[20]  # Friday 12:00 Berlin
    assert run_jobs(app, berlin_noon[20] - MINUTE)["timeouts"] == 0
    new_game(app, 3, "2", time=time, now=berlin_noon[20])  # Friday
    monday = berlin_noon[23]
    assert deadline(app, 2) == monday
    assert deadline(app, 2).astimezone(BERLIN) == datetime(2026, 11, 23, 12, tzinfo=BERLIN)
    assert run_jobs(app, berlin_noon[20])["timeouts"] == 1  # game 1, on Friday
    assert [r[2] for r in records(app, 1)] == ["timeout", "timeout"]
    assert deadline(app, 1) == monday  # its next turn began Friday noon too

    moment, runs = berlin_noon[20], []
    while moment + 6 * HOUR < monday - 2 * HOUR:  # every 6 hours until Monday morning
        moment += 6 * HOUR
        runs.append(moment)
        counts = run_jobs(app, moment)
        assert counts["timeouts"] == counts["reminders"] == 0, moment
    assert berlin_noon[21] in runs  # Saturday noon, when the deadline would be without a pause
    assert records(app, 2) == [] and len(records(app, 1)) == 2
    assert run_jobs(app, monday - 2 * HOUR)["reminders"] == 2
    assert run_jobs(app, monday)["timeouts"] == 2  # both games, on Monday noon
    assert [r[2] for r in records(app, 2)] == ["timeout", "timeout"]
    assert len(records(app, 1)) == 4


# --- 5. vacations -------------------------------------------------------------------------------

def test_a_vacation_in_the_seats_own_turn_moves_its_deadline_and_reminders(tmp_path, clock):
    """Two days of vacation in its own turn: deadline and reminders 2 days later; others see it."""
    app, tokens, mailbox = started(tmp_path)
    client = app.test_client()
    clock.now = T0 + 10 * HOUR
    response = post_form(client, tokens[0], "vacation", days="2")
    assert response.status_code == 303
    assert "Your clock is paused until Thursday 26 November 2026, 22:00" in \
        page_text(client, tokens[0])
    assert deadline(app) == T0 + 120 * HOUR
    assert pending(app) == [("reminder", T0 + 96 * HOUR), ("reminder", T0 + 118 * HOUR),
                            ("timeout", T0 + 120 * HOUR)]
    seat = seat_row(app, 0)
    assert seat.vacation_days_used == 2 and seat.vacation_until == T0 + 58 * HOUR
    for token in tokens[1:]:
        page = page_text(client, token)
        assert "The game waits for Player 0, who is on vacation until Thursday 26 November " \
            "2026, 22:00 UTC." in page
    assert "Sunday 29 November 2026, 12:00 UTC" in page_text(client, tokens[1])

    for hours in (48, 70, 72, 95):
        counts = run_jobs(app, T0 + hours * HOUR)
        assert counts["reminders"] == counts["timeouts"] == 0, hours
    assert run_jobs(app, T0 + 96 * HOUR)["reminders"] == 1
    assert run_jobs(app, T0 + 120 * HOUR - MINUTE)["timeouts"] == 0
    assert run_jobs(app, T0 + 120 * HOUR)["timeouts"] == 1
    reminders = mails(mailbox, "p0@", "Reminder")
    assert [str(m["Subject"]).split("due ")[1] for m in reminders] == \
        ["Sunday 29 November 2026, 12:00 UTC"] * 2


def test_the_vacation_budget_is_enforced_with_a_clear_message(tmp_path, clock):
    """Seven days a game: 3 and then 4 days are granted, one more day is refused."""
    app, tokens, _ = started(tmp_path)
    client = app.test_client()
    clock.now = T0 + HOUR
    assert post_form(client, tokens[1], "vacation", days="3").status_code == 303
    assert seat_row(app, 1).vacation_until == T0 + HOUR + timedelta(days=3)
    response = post_form(client, tokens[1], "vacation", days="5")
    assert response.status_code == 422
    assert "choose 1 to 4 days of vacation" in html.unescape(response.get_data(as_text=True))
    assert post_form(client, tokens[1], "vacation", days="4").status_code == 303
    seat = seat_row(app, 1)
    assert seat.vacation_days_used == 7
    assert seat.vacation_until == T0 + HOUR + timedelta(days=7)  # the second one adds on
    response = post_form(client, tokens[1], "vacation", days="1")
    assert response.status_code == 422
    assert "you have used all 7 days of vacation of this game" in \
        response.get_data(as_text=True)
    after = seat_row(app, 1)
    assert (after.vacation_days_used, after.vacation_until) == (7, seat.vacation_until)
    assert "You have used all your vacation days for this game." in page_text(client, tokens[1])
    assert deadline(app) == T0 + 72 * HOUR  # seat 0's turn: not its vacation


def test_a_vacation_taken_out_of_turn_delays_a_turn_that_starts_during_it(tmp_path, clock):
    """A turn that begins during the seat's vacation counts from the vacation's end."""
    app, tokens, mailbox = started(tmp_path)
    client = app.test_client()
    clock.now = T0 + HOUR
    assert post_form(client, tokens[1], "vacation", days="3").status_code == 303
    assert deadline(app) == T0 + 72 * HOUR
    human_turn(app, tokens, T0 + 2 * HOUR)  # seat 1's turn starts during its vacation
    back = T0 + HOUR + timedelta(days=3)
    assert deadline(app) == back + 72 * HOUR
    assert pending(app)[0] == ("reminder", back + 48 * HOUR)
    assert "Please move by Monday 30 November 2026, 13:00 UTC." in \
        text_of(mails(mailbox, "p1@", "Your turn")[-1])
    assert run_jobs(app, T0 + 74 * HOUR)["timeouts"] == 0
    assert run_jobs(app, back + 72 * HOUR)["timeouts"] == 1


# --- 6. game pause and the admin's controls -----------------------------------------------------

def test_a_paused_game_has_no_reminders_timeouts_or_moves_and_resumes_later(tmp_path):
    """Paused: nothing happens and moves are 409; resumed after 2 days: deadline 2 days later."""
    app, tokens, mailbox = started(tmp_path)
    client = app.test_client()
    with app.app_context():
        pause_game(1, now=T0 + 40 * HOUR)
    game, _ = game_state(app)
    assert game.status == "paused" and game.deadline_at is None and pending(app) == []
    for n in range(3):
        assert len(mails(mailbox, f"p{n}@", "The game is paused")) == 1
    for hours in (48, 70, 72, 87):
        counts = run_jobs(app, T0 + hours * HOUR)
        assert counts["reminders"] == counts["timeouts"] == 0, hours
    response = client.post(f"/api/v1/seat/{tokens[0]}/move",
                           json={"move": "exchange R", "turn": 0})
    assert response.status_code == 409
    assert "paused" in response.get_json()["error"]
    assert records(app) == [] and mails(mailbox, "p0@", "Reminder") == []

    with app.app_context():
        assert resume_game(1, now=T0 + 88 * HOUR) == T0 + 120 * HOUR
    assert game_state(app)[0].status == "running"
    for n in range(3):
        assert len(mails(mailbox, f"p{n}@", "The game goes on")) == 1
    assert pending(app) == [("reminder", T0 + 96 * HOUR), ("reminder", T0 + 118 * HOUR),
                            ("timeout", T0 + 120 * HOUR)]

    with app.app_context():
        assert extend_deadline(1, 24, now=T0 + 90 * HOUR) == T0 + 144 * HOUR
    for n in range(3):
        told = mails(mailbox, f"p{n}@", "The deadline was extended")
        assert len(told) == 1
        assert "The deadline of Player 0 (yellow) was extended by 24 hours." in text_of(told[0])
    assert run_jobs(app, T0 + 120 * HOUR)["timeouts"] == 0
    assert run_jobs(app, T0 + 143 * HOUR)["timeouts"] == 0
    assert run_jobs(app, T0 + 144 * HOUR)["timeouts"] == 1
    assert len(mails(mailbox, "p0@", "Reminder")) == 2  # at 120 h and 142 h


# --- 7. the outage guard ------------------------------------------------------------------------

def test_an_outage_moves_the_deadlines_on_instead_of_timing_out(tmp_path):
    """After 80 h without a run (past a 72 h deadline) nobody is timed out; the clock moves 80 h."""
    app = make_app(tmp_path / "x", MAIL_ADMINS=ADMIN)  # the real threshold: 60 minutes
    new_game(app, 3, "1", now=T0)
    mailbox = Mailbox(app)
    run_jobs(app, T0)
    counts = run_jobs(app, T0 + 80 * HOUR)
    assert counts["outage_games"] == 1
    assert counts["timeouts"] == counts["reminders"] == 0
    assert records(app) == []
    assert deadline(app) == T0 + 72 * HOUR + 80 * HOUR
    told = mails(mailbox, ADMIN, "")
    assert [str(m["Subject"]) for m in told] == ["[pbem] the scheduler was not running"]
    body = text_of(told[0])
    assert TITLE in body and "Player 0" in body and "80.0 hours" in body

    # then every 30 minutes, as usual: the reminders and the timeout of the new deadline
    moment, events = T0 + 80 * HOUR, []
    while moment < T0 + 152 * HOUR:
        moment += 30 * MINUTE
        counts = run_jobs(app, moment)
        assert counts["outage_games"] == 0
        events += [(kind, moment) for kind in ("reminders", "timeouts") if counts[kind]]
    assert events == [("reminders", T0 + 128 * HOUR), ("reminders", T0 + 150 * HOUR),
                      ("timeouts", T0 + 152 * HOUR)]
    assert len(mails(mailbox, ADMIN, "")) == 1


# --- 8. a game of nothing but timeouts ----------------------------------------------------------

def test_a_game_where_every_seat_only_times_out_reaches_its_final_scoring(tmp_path):
    """Run at each deadline (absent seats at once): the game ends, scored, everyone mailed."""
    app, _, mailbox = started(tmp_path)
    app.config["MAIL_BOARD_PICTURE"] = False  # no picture is read here (test_mail_content's)
    moment = T0
    for _ in range(300):
        game, state = game_state(app)
        if game.status != "running":
            break
        moment = max(moment + MINUTE, game.deadline_at)
        run_jobs(app, moment)
    game, state = game_state(app)
    assert game.status == "finished" and state.is_over and game.deadline_at is None
    assert state.exhaustions == 2
    log = records(app)
    assert {(actor, via) for _, _, actor, via in log} == {("timeout", "scheduler")}
    assert all(n.startswith(("exchange", "draw", "pass")) for _, n, _, _ in log)
    for n in range(3):
        assert seat_row(app, n).absent
        final = mails(mailbox, f"p{n}@", "The game is over")
        assert len(final) == 1 and "Rank" in text_of(final[0]) and "Total" in text_of(final[0])
    assert len(mails(mailbox, ADMIN, "absent")) == 3
    assert pending(app) == []
    assert run_jobs(app, moment + 100 * HOUR)["timeouts"] == 0


# --- 9. times in the reader's zone --------------------------------------------------------------

def test_deadlines_are_shown_in_the_seats_own_time_zone(tmp_path):
    """After choosing Europe/Berlin, the page and the next mails show Berlin time."""
    app, tokens, mailbox = started(tmp_path)
    client = app.test_client()
    assert "Friday 27 November 2026, 12:00 UTC" in page_text(client, tokens[1])
    response = post_form(client, tokens[1], "timezone", timezone="Europe/Berlin")
    assert response.status_code == 303
    page = page_text(client, tokens[1])
    assert "Times are now shown in Europe/Berlin." in page
    assert "Friday 27 November 2026, 13:00 (Europe/Berlin)" in page
    assert "Friday 27 November 2026, 12:00 UTC" in page_text(client, tokens[2])

    response = post_form(client, tokens[1], "timezone", timezone="Mars/Olympus")
    assert response.status_code == 422
    assert "unknown time zone 'Mars/Olympus'; use a name like Europe/Berlin or UTC" in \
        html.unescape(response.get_data(as_text=True))
    assert seat_row(app, 1).timezone == "Europe/Berlin"
    assert "Friday 27 November 2026, 13:00 (Europe/Berlin)" in page_text(client, tokens[1])

    human_turn(app, tokens, T0 + HOUR)
    turn = mails(mailbox, "p1@", "Your turn")
    assert len(turn) == 1
    assert "Please move by Friday 27 November 2026, 14:00 (Europe/Berlin)." in text_of(turn[0])
    assert run_jobs(app, T0 + 49 * HOUR)["reminders"] == 1
    assert subjects(mailbox, "p1@")[-1] == \
        f"[{TITLE}] Reminder: your move is due Friday 27 November 2026, 14:00 (Europe/Berlin)"


# --- 10. pbem run-jobs --------------------------------------------------------------------------

NOW = "2026-11-24T12:00:00Z"


def test_run_jobs_on_the_command_line_acts_as_at_the_time_given(tmp_path):
    """`pbem run-jobs --now` runs the job at that moment and prints what it did."""
    app = scheduler_app(tmp_path)
    new_game(app, 3, "1", now=T0 - 72 * HOUR)
    result = app.test_cli_runner().invoke(args=["run-jobs", "--now", NOW])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().startswith("outage games 0, clocks started 0, reminders 2, "
                                            "timeouts 1, obsolete 0, mail sent ")
    assert [r[2:] for r in records(app)] == [("timeout", "scheduler")] * 2
    with app.app_context(), reading() as session:
        assert session.get(JobState, "scheduler").last_run_at == T0


@pytest.mark.parametrize("now, words", [
    ("2026-11-24T12:00:00", "give the time zone too"),
    ("garbage", "'garbage' is not a time like"),
    ("", "is not a time like"),
])
def test_run_jobs_refuses_a_time_without_a_zone_or_garbage(tmp_path, now, words):
    """A bad --now is an error naming the problem, with a non-zero status, and nothing runs."""
    app = scheduler_app(tmp_path)
    new_game(app, 3, "1", now=T0 - 72 * HOUR)
    result = app.test_cli_runner().invoke(args=["run-jobs", "--now", now])
    assert result.exit_code != 0
    assert "Traceback" not in result.output and result.stdout == ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and words in errors[0] and "--now" in errors[0]
    assert records(app) == []
    with app.app_context(), reading() as session:
        assert session.get(JobState, "scheduler") is None


@pytest.mark.parametrize("now", ["2026-11-24T12:00:00", "garbage"])
def test_run_jobs_reports_a_bad_time_in_one_line(tmp_path, now):
    """Every failure of `pbem` is one line on standard error."""
    app = scheduler_app(tmp_path)
    result = app.test_cli_runner().invoke(args=["run-jobs", "--now", now])
    assert result.exit_code != 0
    assert len(result.stderr.splitlines()) == 1, result.stderr


# --- 11. obsolete timers ------------------------------------------------------------------------

def test_a_reminder_due_when_the_seat_moves_is_not_sent(tmp_path):
    """The seat moves at the very moment its reminder is due, then the job runs: no reminder."""
    app, tokens, mailbox = started(tmp_path)
    human_turn(app, tokens, T0 + 48 * HOUR)
    counts = run_jobs(app, T0 + 48 * HOUR)
    assert counts["reminders"] == counts["timeouts"] == 0
    assert run_jobs(app, T0 + 72 * HOUR)["timeouts"] == 0
    assert mails(mailbox, "p0@", "Reminder") == []
    assert [r[2] for r in records(app)] == ["player", "player"]


def test_timers_claimed_by_a_run_that_died_are_obsolete_once_the_seat_moved(tmp_path):
    """A claim given back after the seat's turn is over is never acted on."""
    app, tokens, mailbox = started(tmp_path)
    with app.app_context():
        _, ids = _claim(T0 + 72 * HOUR)  # a run claims both reminders and the timeout, and dies
    assert len(ids) == 3
    human_turn(app, tokens, T0 + 72 * HOUR + MINUTE)  # late, but nobody had moved for it
    counts = run_jobs(app, T0 + 72 * HOUR + 11 * MINUTE)  # the claims are given back
    assert counts["obsolete"] == 3
    assert counts["reminders"] == counts["timeouts"] == 0
    assert [r[2] for r in records(app)] == ["player", "player"]
    assert mails(mailbox, "p0@", "Reminder") == []
    assert mails(mailbox, "p0@", "the server moved for you") == []
    assert seat_row(app, 0).timeouts_in_row == 0


def test_a_claim_given_back_after_the_deadline_was_extended_does_not_time_out(tmp_path):
    """A timeout claimed by a run that died is obsolete once an admin has moved the deadline."""
    app, _, _ = started(tmp_path)
    with app.app_context():
        _, ids = _claim(T0 + 72 * HOUR)  # claimed, then the run dies
        assert len(ids) == 3
        extend_deadline(1, 24, now=T0 + 72 * HOUR + MINUTE)  # same seat still to move
    counts = run_jobs(app, T0 + 72 * HOUR + 11 * MINUTE)
    assert counts["obsolete"] == 3 and counts["timeouts"] == counts["reminders"] == 0
    assert records(app) == [] and deadline(app) == T0 + 96 * HOUR
    assert run_jobs(app, T0 + 96 * HOUR)["timeouts"] == 1


def test_a_simulated_jump_ahead_fires_reminders_and_timeouts_and_is_no_outage(tmp_path):
    """`run-jobs --simulated --now` three days ahead (the real threshold of 60 minutes): the
    reminders and the timeout happen, no deadline is moved for an "outage", and the
    scheduler's heartbeat keeps its real time, so a real run afterwards sees no gap either."""
    app = make_app(tmp_path / "x", MAIL_ADMINS=ADMIN)
    now = datetime.now(UTC).replace(microsecond=0)
    new_game(app, 3, "1", now=now)
    run_jobs(app, now)
    runner = app.test_cli_runner()
    counts = []
    for hours in (49, 71, 73):
        result = runner.invoke(args=["run-jobs", "--simulated", "--now",
                                     (now + hours * HOUR).isoformat()])
        assert result.exit_code == 0, result.output
        counts.append(result.stdout)
    assert all(line.startswith("outage games 0,") for line in counts)
    assert "reminders 1" in counts[0] and "reminders 1" in counts[1]
    assert "timeouts 1" in counts[2]
    assert [r[2:] for r in records(app)][:1] == [("timeout", "scheduler")]
    with app.app_context(), reading() as session:
        assert session.get(JobState, "scheduler").last_run_at == now
    assert not mails(Mailbox(app), ADMIN, ""), "no outage reported to the admins"
    assert run_jobs(app, now + 2 * MINUTE)["outage_games"] == 0
    result = runner.invoke(args=["run-jobs", "--simulated"])
    assert result.exit_code != 0 and "--simulated needs --now" in result.output


def _games_due(tmp_path, count: int):
    """An app with `count` games started at T0 (each seat 0 to move, its deadline at T0 +
    72 hours) and the scheduler's first run."""
    app = scheduler_app(tmp_path)
    for i in range(count):
        new_game(app, 3, str(i + 1), now=T0)
    run_jobs(app, T0)
    return app


def test_a_timer_that_fails_changes_nothing_and_the_others_time_out(tmp_path, monkeypatch,
                                                                    caplog):
    """Timers share write transactions, each in a savepoint of its own: one that fails half
    way (its move made, then an error) leaves its game as it was, is logged and kept claimed
    until its claim is given back; the timers around it stand."""
    import pbem.services.timeouts

    app = _games_due(tmp_path, 3)
    real = pbem.services.timeouts.submit_move

    def failing(*args, **kwargs):
        result = real(*args, **kwargs)
        if result.game_id == 2:
            raise RuntimeError("the rules broke")
        return result

    monkeypatch.setattr(pbem.services.timeouts, "submit_move", failing)
    due = T0 + 72 * HOUR + MINUTE
    with caplog.at_level("ERROR"):
        counts = run_jobs(app, due)
    assert counts["timeouts"] == 2 and "the rules broke" in caplog.text
    assert [r[2] for r in records(app, 1)][:1] == [r[2] for r in records(app, 3)][:1] == \
        ["timeout"]
    assert records(app, 2) == [] and seat_row(app, 0, 2).timeouts_in_row == 0
    with app.app_context(), reading() as session:
        held = session.exec(select(Timer).where(Timer.game_id == 2, Timer.kind == "timeout",
                                                Timer.status == "claimed")).all()
        assert len(held) == 1
        told = session.exec(select(OutboxMessage.kind).where(OutboxMessage.game_id == 2)).all()
        assert sorted(set(told)) == ["invitation", "reminder"], "no mail of a timeout"
    monkeypatch.undo()
    assert run_jobs(app, due + 11 * MINUTE)["timeouts"] == 1  # its claim given back
    assert [r[2] for r in records(app, 2)][:1] == ["timeout"]


def test_the_timers_of_a_claim_share_write_transactions_of_a_bounded_size(tmp_path,
                                                                         monkeypatch):
    import pbem.scheduler.jobs

    app = _games_due(tmp_path, 4)
    monkeypatch.setattr(pbem.scheduler.jobs, "TRANSACTION_SECONDS", 60)  # the count bounds them here
    app.config["SCHEDULER_TIMERS_PER_TRANSACTION"] = 5
    writes = []

    def begun(connection):
        writes.append(bool(connection.get_execution_options().get("pbem_write")))

    event.listen(get_engine(app), "begin", begun)
    try:
        with app.app_context():
            counts = handle_due_timers(T0 + 72 * HOUR + MINUTE)
    finally:
        event.remove(get_engine(app), "begin", begun)
    assert counts["timeouts"] == 4 and counts["reminders"] == 8  # 24 and 2 hours before
    assert sum(writes) == 1 + 3, "the claim, then the twelve timers five at a time"


def test_a_timeouts_mails_and_links_are_inserted_one_statement_a_table(tmp_path):
    """The clock's restart writes the timers waiting in the transaction before it marks the old
    ones obsolete, and only those: the timeout's three mails, their seat keys and "my games"
    keys each go in one INSERT."""
    app = _games_due(tmp_path, 1)
    assert run_jobs(app, T0 + 71 * HOUR)["reminders"] == 2  # before: only the timeout is left
    inserts = Counter()

    def statement(connection, cursor, sql, parameters, context, executemany):
        if sql.startswith("INSERT INTO"):
            inserts[sql.split()[2]] += 1

    event.listen(get_engine(app), "before_cursor_execute", statement)
    try:
        assert run_jobs(app, T0 + 72 * HOUR + MINUTE)["timeouts"] == 1
    finally:
        event.remove(get_engine(app), "before_cursor_execute", statement)
    assert inserts["outboxmessage"] == inserts["seatkey"] == inserts["playerkey"] == 1


def test_a_stop_asked_for_in_the_middle_of_a_transaction_ends_it_after_the_timer_in_hand(
        tmp_path, monkeypatch):
    """SIGTERM while a write transaction of timers is under way: the timer in hand is played
    to its end and committed with those before it; the rest of the claim goes back at once."""
    import pbem.services.timeouts
    from pbem.scheduler.outbox import stop_event

    app = _games_due(tmp_path, 6)
    assert run_jobs(app, T0 + 71 * HOUR)["reminders"] == 12  # only the timeouts are left
    real = pbem.services.timeouts.act
    acted = []

    def act(session, timer_id, claim, now):
        counted = real(session, timer_id, claim, now)
        acted.append(counted)
        if len(acted) == 2:
            stop_event(app).set()  # as the SIGTERM handler does, during the second timer
        return counted

    monkeypatch.setattr(pbem.services.timeouts, "act", act)
    with app.app_context():
        counts = handle_due_timers(T0 + 72 * HOUR + MINUTE)
    assert counts["timeouts"] == 2 and acted == ["timeouts", "timeouts"]
    with app.app_context(), reading() as session:
        kinds = Counter(t.status for t in session.exec(select(Timer).where(
            Timer.kind == "timeout", Timer.due_at <= T0 + 72 * HOUR)))
    assert kinds == {"done": 2, "pending": 4}, "the rest given back, not left claimed"
