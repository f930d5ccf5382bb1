"""Computer players in hosted games: seated at creation (service, command line, admin form),
given an absent seat by an admin or by the game's setting, and played by the scheduler alone,
every move through `submit_move`, marked as the computer's in the log and the mail."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest
from server import Mailbox, field, game_state, make_app, text_of
from sqlmodel import select

import engine
from pbem.games import SetupProblem
from pbem.ground.db import reading
from pbem.ground.i18n import render
from pbem.ground.models import FINISHED, AuditEntry, Game, MoveRecord, OutboxMessage, Seat
from pbem.scheduler.jobs import run_jobs
from pbem.services import stewardship
from pbem.services.creating import create_game
from pbem.services.errors import NotFound
from pbem.services.moves import submit_move
from pbem.services.players import PlayerSpec, bot_player, parse_player

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

T0 = datetime(2026, 11, 24, 12, tzinfo=UTC)
MINUTE, HOUR = timedelta(minutes=1), timedelta(hours=1)
ADMIN, PASSWORD = "boss@example.org", "a long enough password"


@pytest.fixture
def app(tmp_path):
    """Jumping the clock to a deadline must not be taken for a scheduler outage."""
    return make_app(tmp_path / "instance", SCHEDULER_OUTAGE_MINUTES=10**6, MAIL_ADMINS=ADMIN)


def people(*numbers):
    return [parse_player(f"Player {i} <p{i}@example.org>") for i in numbers]


def create(app, players, seed="bots", **kwargs):
    with app.app_context():
        created = create_game(players, seed, now=T0, **kwargs)
    return created.game_id, [None if link is None else link.rsplit("/", 1)[1]
                             for _, _, link in created.links]


def records(app, game_id=1) -> list[MoveRecord]:
    with app.app_context(), reading() as session:
        return list(session.exec(select(MoveRecord).where(MoveRecord.game_id == game_id)
                                 .order_by(MoveRecord.number)))


def seat_row(app, number, game_id=1) -> Seat:
    with app.app_context(), reading() as session:
        return session.exec(select(Seat).where(Seat.game_id == game_id,
                                               Seat.number == number)).one()


def seat_mail(app) -> list[OutboxMessage]:
    with app.app_context(), reading() as session:
        return list(session.exec(select(OutboxMessage).where(OutboxMessage.seat_id.is_not(None))))


def person_turn(app, token, now, rng, game_id=1) -> None:
    """The seat to move plays its whole turn through its link: a random legal move each time."""
    game, state = game_state(app, game_id)
    seat = state.current
    while not state.is_over and state.current == seat:
        with app.app_context():
            submit_move(token, str(rng.choice(engine.legal_moves(state))), game.turn, now=now)
        game, state = game_state(app, game_id)


def test_a_game_of_four_computer_players_runs_to_its_end_by_the_scheduler_alone(app):
    """Four computer players seated through the service: only the scheduler's runs move, each
    move is logged as the computer's (actor bot, via scheduler), and no seat gets a mail."""
    game_id, links = create(app, [bot_player(b) for b in ("strong", "greedy", "random",
                                                           "random")])
    assert links == [None] * 4
    now, runs = T0, 0
    while game_state(app, game_id)[0].status != FINISHED:
        runs += 1
        assert runs < 500, "the game did not end"
        now += MINUTE
        run_jobs(app, now)
    _game, state = game_state(app, game_id)
    assert state.is_over and engine.kardinal_koenig.outcome(state) is not None
    log = records(app, game_id)
    assert len(log) == state.ply > 40
    assert {(r.actor, r.via) for r in log} == {("bot", "scheduler")}
    with app.app_context():  # stored as message ids and parameters; read here in English
        spectator = [render(__import__("json").loads(r.lines_json)["-1"][0]) for r in log]
    assert all(line.startswith("Computer player (") for line in spectator)
    assert seat_mail(app) == []
    # the log replays to the same game: every move was a legal move of the real state
    assert engine.replay(state.players, state.seed, [r.notation for r in log],
                         start=state.start) == state


def test_two_people_and_two_computer_players_play_to_the_end(app):
    """Two people moving through their links and two computer players moved by the scheduler
    finish a game; the people's mail shows which moves the computer made."""
    game_id, tokens = create(app, people(0, 1) + [bot_player("strong"), bot_player("greedy")])
    assert tokens[0] and tokens[1] and tokens[2:] == [None, None]
    rng, now, steps = random.Random(3), T0, 0
    while game_state(app, game_id)[0].status != FINISHED:
        steps += 1
        assert steps < 500, "the game did not end"
        now += MINUTE
        state = game_state(app, game_id)[1]
        if state.current < 2:
            person_turn(app, tokens[state.current], now, rng, game_id)
        else:
            run_jobs(app, now)
    actors = {(r.seat < 2, r.actor, r.via) for r in records(app, game_id)}
    assert actors == {(True, "player", "web"), (False, "bot", "scheduler")}
    mailbox = Mailbox(app)
    mailbox.deliver() if hasattr(mailbox, "deliver") else None
    for address in ("p0@", "p1@"):
        mails = mailbox.to(address)
        subjects = [str(m["Subject"]) for m in mails]
        assert any("Your turn" in s for s in subjects)
        assert any("The game is over" in s for s in subjects)
        assert any("Computer player (strong):" in text_of(m) for m in mails)
        assert any("Computer player (greedy):" in text_of(m) for m in mails)
    with app.app_context(), reading() as session:
        bot_seats = [s.id for s in session.exec(select(Seat).where(Seat.bot.is_not(None)))]
    assert len(bot_seats) == 2
    assert not [m for m in seat_mail(app) if m.seat_id in bot_seats]


def test_the_seat_page_names_the_computer_player_once_a_move_in_the_readers_words(app):
    """A computer player's move reads 'Computer player (strong): purple ...' on a person's
    page, without a second '(computer player)' tag; on a German page in German."""
    german = PlayerSpec("Bernd", "bernd@example.org", language="de")
    game_id, tokens = create(app, people(0) + [german, bot_player("strong")])
    now, rng = T0, random.Random(1)
    while len(records(app, game_id)) < 12:
        now += MINUTE
        current = game_state(app, game_id)[1].current
        if current < 2:
            person_turn(app, tokens[current], now, rng, game_id)
        else:
            run_jobs(app, now)
    client = app.test_client()
    page = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    assert "Computer player (strong):" in page and "(computer player)" not in page
    page = client.get(f"/seat/{tokens[1]}").get_data(as_text=True)
    assert "Computerspieler (stark):" in page and "(Computerspieler)" not in page
    assert "Computer (stark)" in page and "(strong)" not in page


def _play_until_seat_0(app, tokens, now, rng):
    while game_state(app)[1].current != 0:
        person_turn(app, tokens[game_state(app)[1].current], now, rng)


@pytest.mark.parametrize("absent_bot", ["greedy", None])
def test_an_absent_seat_is_played_by_the_computer_when_the_game_says_so(tmp_path, absent_bot):
    """With the game's setting, an absent seat's turns are the computer player's moves (and the
    seat is told); without it, the default move (a card exchanged) as before."""
    app = make_app(tmp_path / "instance", SCHEDULER_OUTAGE_MINUTES=10**6,
                   GAMES_ABSENT_AFTER_TIMEOUTS=1)
    _, tokens = create(app, people(0, 1, 2), seed="1", start=0, absent_bot=absent_bot)
    rng = random.Random(5)
    deadline = game_state(app)[0].deadline_at
    run_jobs(app, deadline)  # seat 0 misses its deadline: the default move, and it is absent
    assert [r.actor for r in records(app)] == ["timeout", "timeout"]
    assert seat_row(app, 0).absent
    now = deadline + MINUTE
    _play_until_seat_0(app, tokens, now, rng)
    before = len(records(app))
    run_jobs(app, now + MINUTE)
    played = records(app)[before:]
    assert played and all(r.seat == 0 and r.via == "scheduler" for r in played)
    mailbox = Mailbox(app)
    last = [m for m in mailbox.to("p0@") if "moved for you" in str(m["Subject"])][-1]
    if absent_bot:
        assert {r.actor for r in played} == {"bot"}
        assert str(last["Subject"]).endswith("computer player (greedy) moved for you")
        assert "Computer player (greedy):" in text_of(last)
    else:
        assert {r.actor for r in played} == {"timeout"}
        assert str(played[0].notation).startswith("exchange")
    assert game_state(app)[1].current == 1
    # the person comes back by moving: their turns wait for them again
    _play_until_seat_0(app, tokens, now + 2 * MINUTE, rng)
    person_turn(app, tokens[0], now + 3 * MINUTE, rng)
    assert not seat_row(app, 0).absent and records(app)[-1].actor == "player"


def test_an_admin_hands_an_absent_seat_to_a_computer_player_and_back(app):
    """The admin gives seat 1 to the strong computer player: its old links stop working, the
    person is told, the scheduler plays its turns; handing it over to a person gives it back."""
    _, tokens = create(app, people(0, 1, 2), seed="1", start=1)
    with app.app_context():
        admin = stewardship.create_admin(ADMIN, PASSWORD)
        with pytest.raises(stewardship.Malformed, match="no computer player 'clever'"):
            stewardship.hand_to_bot(admin, 1, 1, "clever", "gone")
        stewardship.hand_to_bot(admin, 1, 1, "strong", "left the club", now=T0 + HOUR)
        with pytest.raises(NotFound):
            submit_move(tokens[1], "draw deck", 0)
        with pytest.raises(stewardship.Rejected, match="computer player"):
            stewardship.resend_link(admin, 1, 1, "try")
    seat = seat_row(app, 1)
    assert seat.bot == "strong" and not seat.absent
    mailbox = Mailbox(app)
    told = [m for m in mailbox.to("p1@") if "handed over" in str(m["Subject"])]
    assert told and "a computer player (strong)" in text_of(told[0])
    assert game_state(app)[0].deadline_at == T0 + HOUR  # its turn: due at once
    run_jobs(app, T0 + HOUR + MINUTE)
    assert {r.actor for r in records(app)} == {"bot"} and game_state(app)[1].current == 2
    with app.app_context(), reading() as session:
        entry = session.exec(select(AuditEntry).where(AuditEntry.action == "hand to bot")).one()
    assert "Player 1 <p1@example.org> -> computer player (strong)" in entry.detail
    # the next time it is seat 1's turn, a person takes it back with a deadline of their own
    rng = random.Random(2)
    while game_state(app)[1].current != 1:
        person_turn(app, tokens[game_state(app)[1].current], T0 + 2 * HOUR, rng)
    with app.app_context():
        stewardship.hand_over(admin, 1, 1, "Eve", "eve@example.org", "a new member",
                              now=T0 + 3 * HOUR)
    assert seat_row(app, 1).bot is None
    assert game_state(app)[0].deadline_at == T0 + 3 * HOUR + 72 * HOUR
    assert run_jobs(app, T0 + 4 * HOUR)["timeouts"] == 0


def test_the_setting_for_absent_players_can_be_changed_by_the_admin(app):
    """An admin switches absent players' turns to the computer and back; everyone is told."""
    create(app, people(0, 1, 2))
    with app.app_context():
        admin = stewardship.create_admin(ADMIN, PASSWORD)
        stewardship.set_absent_bot(admin, 1, "strong", "keep the game alive")
        with pytest.raises(stewardship.Rejected):
            stewardship.set_absent_bot(admin, 1, "strong", "again")
        with pytest.raises(stewardship.Malformed):
            stewardship.set_absent_bot(admin, 1, "genius", "no such")
    assert game_state(app)[0].absent_bot == "strong"
    notices = [m for m in Mailbox(app).messages() if "Absent players" in str(m["Subject"])]
    assert len(notices) == 3 and "a computer player (strong) plays" in text_of(notices[0])
    with app.app_context():
        stewardship.set_absent_bot(admin, 1, "default", "back to the rule")
    assert game_state(app)[0].absent_bot is None


def test_creating_a_game_refuses_an_unknown_computer_player(app):
    """An unknown bot name is refused with the names there are, and nothing is created."""
    with app.app_context():
        with pytest.raises(SetupProblem, match="random, greedy, strong"):
            bot_player("clever")
        with pytest.raises(SetupProblem, match="no computer player"):
            create_game(people(0, 1, 2), "x", absent_bot="clever")
        with pytest.raises(SetupProblem, match="Knights & Castles has random, greedy, strong$"):
            bot_player("clever", "knights-castles")  # named with that game's own bots
        with reading() as session:
            assert session.exec(select(Game)).all() == []


def test_create_game_command_seats_computer_players(app):
    """`pbem create-game --bot strong` seats a computer player after the people."""
    runner = app.test_cli_runner()
    done = runner.invoke(args=["create-game", "--player", "Anna <anna@example.org>",
                               "--player", "Bruno <bruno@example.org>", "--bot", "strong",
                               "--bot", "random", "--absent-bot", "greedy", "--seed", "4"])
    assert done.exit_code == 0, done.output
    assert "Computer (strong) (green): a computer player: no link, no mail" in done.output
    with app.app_context(), reading() as session:
        seats = session.exec(select(Seat).order_by(Seat.number)).all()
        game = session.exec(select(Game)).one()
    assert [s.bot for s in seats] == [None, None, "strong", "random"]
    assert game.absent_bot == "greedy"
    bad = runner.invoke(args=["create-game", "--player", "Anna <anna@example.org>",
                              "--bot", "strong", "--bot", "genius"])
    assert bad.exit_code != 0 and "no computer player 'genius'" in bad.output


@pytest.fixture
def admin_client(app):
    with app.app_context():
        stewardship.create_admin(ADMIN, PASSWORD)
    client = app.test_client()
    csrf = field(client.get("/admin/login").get_data(as_text=True), "csrf_token")
    assert client.post("/admin/login", data={"csrf_token": csrf, "email": ADMIN,
                                             "password": PASSWORD}).status_code == 303
    return client


def test_the_admin_pages_seat_computer_players_and_hand_them_seats(app, admin_client):
    """The create form seats computer players (no email needed) and chooses the absent rule;
    the game page hands a seat to a computer player through the confirmation page."""
    page = admin_client.get("/admin/games/new").get_data(as_text=True)
    assert 'name="bot0"' in page and "a computer player (strong)" in page
    form = {"csrf_token": field(page, "csrf_token"), "start": "0", "deadline_hours": "72",
            "reminders": "24,2", "timezone": "UTC", "title": "Club night", "seed": "7",
            "absent_bot": "strong", "variant": "",
            "name0": "Anna", "email0": "anna@example.org", "colour0": "yellow", "bot0": "",
            "name1": "", "email1": "", "colour1": "red", "bot1": "strong",
            "name2": "Robo", "email2": "", "colour2": "green", "bot2": "random",
            "colour3": "purple", "colour4": "blue"}
    response = admin_client.post("/admin/games/new", data=form)
    assert response.status_code == 303, response.get_data(as_text=True)
    assert [(s.name, s.bot) for s in (seat_row(app, n) for n in range(3))] == \
        [("Anna", None), ("Computer (strong)", "strong"), ("Robo", "random")]
    assert game_state(app)[0].absent_bot == "strong"
    bad = admin_client.post("/admin/games/new", data={**form, "bot1": "genius"})
    assert bad.status_code == 422 and "no computer player" in bad.get_data(as_text=True)

    shown = admin_client.get("/admin/games/1").get_data(as_text=True)
    assert "(computer player: strong)" in shown and "played by the computer player (strong)" in shown
    confirm = admin_client.post("/admin/games/1/confirm", data={
        "csrf_token": field(shown, "csrf_token"), "action": "bot", "seat": "0", "bot": "greedy"})
    text = confirm.get_data(as_text=True)
    assert confirm.status_code == 200 and "Let the computer player (greedy) play" in text
    assert seat_row(app, 0).bot is None  # the confirmation changes nothing
    done = admin_client.post("/admin/games/1/do", data={
        "csrf_token": field(text, "csrf_token"), "action": "bot", "seat": "0", "bot": "greedy",
        "reason": "Anna left"})
    assert done.status_code == 303
    assert seat_row(app, 0).bot == "greedy"
