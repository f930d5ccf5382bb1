"""The spectator page, the board picture and the history pages (pbem/watch.py), the picture on
the seat and admin pages, and the board summary in the HTML mails.

The spectator's pages are checked by difference: the hands and the deck are dealt anew in the
stored game and every page must read the same, while a change a spectator may see does show.
"""

from __future__ import annotations

import html
import json
import random
import re
from collections import Counter
from dataclasses import replace
from xml.etree import ElementTree

import pytest
from server import field, make_app, module_app
from sqlmodel import select

import engine
from pbem.games import rules_for
from pbem.ground import schema
from pbem.ground.db import reading, writing
from pbem.ground.i18n import render
from pbem.ground.models import Game, MoveRecord, OutboxMessage, Seat
from pbem.ground.tokens import TOKEN_PATTERN
from pbem.scheduler.outbox import deliver_all_due
from pbem.services import stewardship, turns
from pbem.services.creating import create_game
from pbem.services.mail import kinds, sending
from pbem.services.mail.sending import send
from pbem.services.moves import submit_move
from pbem.services.players import parse_player

from helpers import redealt

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

SEED = "watch-seed-51"
PLAYERS = 4
RULES = rules_for("kardinal-koenig")
CSRF = re.compile(r'name="csrf_token" value="[^"]*"')
CLICKABLE = re.compile(r'class="[^"]*\bclickable\b')


# --- one game for the module, with the state after every move --------------------------------

def stored(app, game_id: int = 1) -> tuple[Game, engine.GameState]:
    with app.app_context(), reading() as session:
        game = session.get(Game, game_id)
    return game, RULES.loads(game.state_json)


def store(app, state, game_id: int = 1) -> None:
    with app.app_context(), writing() as session:
        game = session.get(Game, game_id)
        game.state_json = RULES.dumps(state)
        session.add(game)


@pytest.fixture(scope="module")
def app(tmp_path_factory, database):
    """A game of four played 24 moves in and on to the start of a turn; `app.states[n]` is the
    state after n moves, as the server stored it then."""
    app = module_app(tmp_path_factory, "watch")
    with app.app_context():
        created = create_game([parse_player(f"Player {i} <p{i}@example.org>")
                               for i in range(PLAYERS)], SEED)
    app.tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]
    chooser = random.Random(SEED)
    states = [stored(app)[1]]
    while len(states) <= 24 or states[-1].phase != "play":
        state = states[-1]
        legal = RULES.legal(state)
        places = [m for m in legal if ":" in m]  # prefer placements: the board fills up
        with app.app_context():
            submit_move(app.tokens[state.current], chooser.choice(places or legal),
                        len(states) - 1)
        states.append(stored(app)[1])
    app.states = states
    app.watch_id = stored(app)[0].watch_id
    return app


@pytest.fixture
def client(app):
    return app.test_client()


def notations(app) -> list[str]:
    with app.app_context(), reading() as session:
        return [r.notation for r in session.exec(select(MoveRecord).order_by(MoveRecord.number))]


def page(client, url: str, status: int = 200) -> str:
    response = client.get(url)
    assert response.status_code == status, (url, response.status_code)
    return response.get_data(as_text=True)


def svgs(text: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", text, re.DOTALL)


def hand_in(text: str) -> list[str]:
    """The card codes listed under 'Your hand' on a page."""
    match = re.search(r'<ul class="cards" aria-label="Your hand">(.*?)</ul>', text, re.DOTALL)
    assert match, "no hand on the page"
    return sorted(re.findall(r'class="card card-(\w)"', match.group(1)))


def hand_marks(svg: str) -> list[dict]:
    """The elements of a picture whose class, id or data attributes speak of a hand."""
    found = []
    for element in ElementTree.fromstring(svg).iter():
        marks = " ".join([element.get("class", ""), element.get("id", "")] +
                         [f"{k}={v}" for k, v in element.attrib.items() if k.startswith("data-")])
        if "hand" in marks.lower():
            found.append(element.attrib)
    return found


# --- the spectator's page and picture -------------------------------------------------------

def spectator_pages(client, app) -> dict[str, str]:
    base = f"/watch/{app.watch_id}"
    return {"page": page(client, base), "svg": page(client, base + "/board.svg"),
            "history": page(client, base + "?at=7")}


def test_the_spectator_sees_no_hand_and_no_deck_card(app, client, monkeypatch):
    _, original = stored(app)
    before = spectator_pages(client, app)
    picture = svgs(before["page"])
    assert len(picture) == 1 and picture[0] == before["svg"]
    assert picture[0] == RULES.board_picture(original, None, False)
    assert not CLICKABLE.search(before["page"]) and "Your hand" not in before["page"]
    # No element of the picture stands for a card in someone's hand (a seat's own picture has
    # them, so the check can fail).
    assert not hand_marks(before["svg"])
    assert hand_marks(RULES.board_picture(original, original.current, False))
    real_history = type(RULES).history_state
    try:
        for attempt in range(2):
            rng = random.Random(f"spectator:{attempt}")
            store(app, redealt(original, None, rng))
            monkeypatch.setattr(type(RULES), "history_state",
                                lambda self, state, moves, seed=attempt: redealt(
                                    real_history(self, state, moves), None, random.Random(seed)))
            after = spectator_pages(client, app)
            for key in before:
                assert after[key] == before[key], f"the spectator's {key} shows a hidden card"
        monkeypatch.undo()
        # The control: a change a spectator may see (a face-up card swapped with one of the
        # deck) shows on the page.
        deck, face_up = list(original.deck), list(original.face_up)
        swap = next(i for i, card in enumerate(deck) if card not in face_up)
        deck[swap], face_up[0] = face_up[0], deck[swap]
        store(app, replace(original, deck=tuple(deck), face_up=tuple(face_up)))
        assert spectator_pages(client, app)["page"] != before["page"]
    finally:
        store(app, original)


def test_the_spectator_page_shows_scores_turn_face_up_cards_and_the_log(app, client):
    _, state = stored(app)
    text = page(client, f"/watch/{app.watch_id}")
    mover = state.players[state.current]
    assert f"Player {state.current} ({mover}) is to move" in text
    for colour, score in zip(state.players, state.scores):
        assert re.search(rf"<td>{colour}</td>\s*<td>{score}</td>", text), colour
    face_up = re.search(r'aria-label="Face-up cards">(.*?)</ul>', text, re.DOTALL).group(1)
    assert sorted(re.findall(r"card-(\w)", face_up)) == sorted(state.face_up)
    with app.app_context(), reading() as session:
        records = list(session.exec(select(MoveRecord).order_by(MoveRecord.number)))
    shown = html.unescape(text)
    for record in records:  # every move, in a spectator's words, linked to the board after it
        with app.app_context():  # stored as message ids and parameters, shown in English here
            words = " ".join(render(line) for line in json.loads(record.lines_json)["-1"])
        n = record.number + 1
        assert re.search(rf'\?at={n}"( aria-current="page")?>Turn \d+ \(move {n}\)</a>(</strong>)?: '
                         + re.escape(words), shown), words
    draws = [r for r in records if r.notation == "draw deck"]
    assert draws and "drew a card from the deck" in text
    assert not re.search(r"drew an? \w+ card", text)  # no deck card is named
    response = client.get(f"/watch/{app.watch_id}/board.svg")
    assert response.mimetype == "image/svg+xml"
    root = ElementTree.fromstring(response.get_data(as_text=True))
    assert root.tag == "{http://www.w3.org/2000/svg}svg"  # stands alone as an image
    assert response.headers["X-Robots-Tag"].startswith("noindex")


def test_the_spectator_address_is_not_a_seat_link(app, client):
    game, _ = stored(app)
    assert re.fullmatch(r"[A-Za-z0-9_-]{16}", game.watch_id)
    with app.app_context():
        other = create_game([parse_player(f"Q {i} <q{i}@example.org>") for i in range(3)], "x")
    tokens = app.tokens + [link.rsplit("/", 1)[1] for _, _, link in other.links]
    other_game, _ = stored(app, other.game_id)
    assert other_game.watch_id != game.watch_id
    for token in tokens:
        assert token != game.watch_id and game.watch_id not in token
        assert "There is no game to watch" in page(client, f"/watch/{token}", 404)
        page(client, f"/watch/{token}/board.svg", 404)
    assert not TOKEN_PATTERN.fullmatch(game.watch_id)
    assert "This link is not valid" in page(client, f"/seat/{game.watch_id}", 404)
    page(client, f"/seat/{game.watch_id}/history", 404)
    for unknown in ("A" * 16, "nothing", "a" * 40, "..%2F"):
        page(client, f"/watch/{unknown}", 404)
    # A seat page never shows the spectator address, and the spectator page no seat link.
    assert "/seat/" not in page(client, f"/watch/{game.watch_id}")


# --- the history ------------------------------------------------------------------------------

def test_history_at_n_is_the_game_after_n_moves(app, client):
    game, now = stored(app)
    moves = notations(app)
    assert len(moves) == game.turn == len(app.states) - 1
    for n in (0, 1, 2, 9, len(moves) - 1, len(moves)):
        expected = engine.replay(now.players, now.seed, moves[:n], now.board, now.start)
        assert RULES.history_state(now, moves[:n]) == expected == app.states[n]
        text = page(client, f"/watch/{app.watch_id}?at={n}")
        assert svgs(text) == [RULES.board_picture(expected, None, False)]
        assert ("at the set-up" if n == 0 else f"after move {n} of {len(moves)}") in text
        if not expected.is_over:
            who = expected.current
            assert f"Player {who} ({expected.players[who]}) was to move" in text
        assert f'?at={n}" aria-current="page"' in text
    # A placement shows: the pictures before and after one differ.
    placed = next(n for n, m in enumerate(moves) if ":" in m)
    assert svgs(page(client, f"/watch/{app.watch_id}?at={placed}")) != \
        svgs(page(client, f"/watch/{app.watch_id}?at={placed + 1}"))
    # The page without `at` is the game now, and equal to the last step of the history.
    assert svgs(page(client, f"/watch/{app.watch_id}")) == [RULES.board_picture(now, None, False)]



def test_history_pages_count_turns_as_the_players_do(app, client):
    """A placement and its draws are one turn: the history says the turn beside the move."""
    moves = notations(app)
    counted = turns.numbers(RULES, moves)
    assert counted[-1] < len(moves)  # the test means something: turns are fewer than moves
    for n in (1, 2, 9, len(moves) - 1, len(moves)):
        text = html.unescape(page(client, f"/watch/{app.watch_id}?at={n}"))
        assert f"The board in turn {counted[n - 1]}, after move {n} of {len(moves)}" in text
        if n > 1:
            assert f"Previous: turn {counted[n - 2]} (move {n - 1})" in text
        if n < len(moves):
            assert f"Next: turn {counted[n]} (move {n + 1})" in text
    text = html.unescape(page(client, f"/seat/{app.tokens[0]}/history?at=9"))
    assert f"Previous: turn {counted[7]} (move 8)" in text
    for n, turn in enumerate(counted, 1):
        assert f">Turn {turn} (move {n})</a>" in text
    assert "After move" not in text.split('id="moves"', 1)[1]


def links(text: str, rel: str) -> list[str]:
    return re.findall(rf'href="[^"]*\?at=(\d+)" rel="{rel}"', text)


def test_history_links_every_move_and_the_previous_and_next(app, client):
    last = len(notations(app))
    base = f"/watch/{app.watch_id}"
    first = page(client, f"{base}?at=0")
    assert links(first, "prev") == [] and links(first, "next") == ["1"]
    middle = page(client, f"{base}?at=5")
    assert links(middle, "prev") == ["4"] and links(middle, "next") == ["6"]
    end = page(client, f"{base}?at={last}")
    assert links(end, "prev") == [str(last - 1)] and links(end, "next") == []
    now = page(client, base)
    assert links(now, "prev") == [str(last - 1)] and links(now, "next") == []
    listed = re.findall(rf'href="{base}\?at=(\d+)"', now)
    assert sorted(set(map(int, listed))) == list(range(last + 1))
    token = app.tokens[0]
    mine = page(client, f"/seat/{token}/history?at=3")
    assert links(mine, "prev") == ["2"] and links(mine, "next") == ["4"]
    assert f'href="/seat/{token}/history?at={last}"' in mine


@pytest.mark.parametrize("raw, status, says", [
    ("x", 400, "is not a move number"), ("-1", 400, "is not a move number"),
    ("1.5", 400, "is not a move number"), ("", 400, "is not a move number"),
    ("٣", 400, "is not a move number"), ("9" * 12, 400, "is not a move number"),
    ("{last1}", 404, "there is no position after move {last1}"),
    ("100000", 404, "there is no position after move 100000"),
])
def test_a_bad_history_address_says_what_to_use(app, client, raw, status, says):
    last = len(notations(app))
    raw, says = raw.format(last1=last + 1), says.format(last1=last + 1)
    for url in (f"/watch/{app.watch_id}?at={raw}", f"/seat/{app.tokens[1]}/history?at={raw}"):
        text = html.unescape(page(client, url, status))
        assert says in text and f"from 0 to {last}" in text


def test_a_seats_history_shows_its_own_hand_then_and_no_one_elses(app, client, monkeypatch):
    for seat in (0, 2):
        token = app.tokens[seat]
        for n in (0, 3, 10, len(app.states) - 1):
            then = app.states[n]
            text = page(client, f"/seat/{token}/history?at={n}")
            assert hand_in(text) == sorted(then.hands[seat])
            assert len(re.findall(r'class="card card-', text)) == \
                len(then.hands[seat]) + len(then.face_up)  # the hand and the face-up cards only
            assert svgs(text) == [RULES.board_picture(then, seat, False)]
            assert not CLICKABLE.search(text) and "<form" not in text.split("</header>")[1]
    # Dealt differently, the cards hidden from the seat change nothing on its history page.
    url = f"/seat/{app.tokens[1]}/history?at=9"
    before = CSRF.sub("", page(client, url))
    real = type(RULES).history_state
    monkeypatch.setattr(type(RULES), "history_state", lambda self, state, moves: redealt(
        real(self, state, moves), 1, random.Random("seat history")))
    assert CSRF.sub("", page(client, url)) == before
    assert "This link is not valid" in page(client, f"/seat/{'x' * 32}/history?at=1", 404)


def test_history_pages_change_nothing(app, client):
    def everything():
        with app.app_context(), reading() as session:
            return [[row.model_dump() for row in session.exec(select(table))]
                    for table in (Game, Seat, MoveRecord, OutboxMessage)]

    before = everything()
    page(client, f"/seat/{app.tokens[0]}/history?at=2")
    page(client, f"/watch/{app.watch_id}?at=2")
    assert client.post(f"/seat/{app.tokens[0]}/history?at=2").status_code == 405
    assert client.post(f"/watch/{app.watch_id}").status_code == 405
    assert everything() == before


# --- the seat page and the admin page ----------------------------------------------------------

def test_the_seat_page_shows_one_picture_clickable_only_on_the_seats_own_turn(app, client):
    _, now = stored(app)
    assert now.phase == "play"
    for seat, token in enumerate(app.tokens):
        text = page(client, f"/seat/{token}")
        assert text.count("<svg") == 1
        (picture,) = svgs(text)
        assert picture == RULES.board_picture(now, seat, seat == now.current)
        assert bool(CLICKABLE.search(picture)) == (seat == now.current), seat
        assert 'aria-describedby="board-table scores-table"' in text
        assert 'id="board-table"' in text and 'id="scores-table"' in text  # the text version
        assert f'href="/seat/{token}/history?at=0"' in text  # the history section
        assert f'action="/seat/{token}/history"' in text
    # While the seat draws, there is nothing to place: the picture is not clickable.
    drawing = next(n for n, s in enumerate(app.states) if s.phase == "draw")
    try:
        store(app, app.states[drawing])
        for token in app.tokens:
            text = page(client, f"/seat/{token}")
            assert text.count("<svg") == 1 and not CLICKABLE.search(text)
    finally:
        store(app, now)


def test_the_admin_page_shows_the_spectators_picture_and_address(app, client):
    with app.app_context():
        stewardship.create_admin("boss@example.org", "a long enough password")
    csrf = field(page(client, "/admin/login"), "csrf_token")
    assert client.post("/admin/login", data={"csrf_token": csrf, "email": "boss@example.org",
                                             "password": "a long enough password"}
                       ).status_code == 303
    _, now = stored(app)
    text = page(client, "/admin/games/1")
    assert svgs(text) == [RULES.board_picture(now, None, False)]
    assert not CLICKABLE.search(text)
    assert f'href="/watch/{app.watch_id}"' in text
    assert f"http://localhost/watch/{app.watch_id}" in text


# --- mail ---------------------------------------------------------------------------------------

def summary_rows(body: str) -> dict[str, tuple[str, str]]:
    table = body.split("<h3>The board</h3>", 1)[1].split("</table>", 1)[0]
    cells = re.findall(r"<tr><td[^>]*>(.*?)</td><td[^>]*>(.*?)</td><td[^>]*>(.*?)</td></tr>",
                       table)
    return {country: (monasteries, advisors) for country, monasteries, advisors in cells}


def expected_rows(state) -> dict[str, tuple[str, str]]:
    rows = {}
    for country in state.board.countries:
        owners = Counter(state.monasteries[f] for f in country.fields)
        monasteries = [f"{colour} {owners[s]}" for s, colour in enumerate(state.players)
                       if owners[s]]
        advisors = [f"{colour} {n}" for colour, n in zip(state.players,
                                                          state.advisors[country.index]) if n]
        rows[country.name] = (", ".join(monasteries) or "–", ", ".join(advisors) or "–")
    return rows


def test_html_mails_carry_a_board_summary_and_the_spectator_link_but_no_svg(app):
    link = f'<a href="http://localhost/watch/{app.watch_id}">See the board</a>'
    deliver_all_due(app)  # a move's mails are written when they are delivered
    with app.app_context(), reading() as session:
        sent = session.exec(select(OutboxMessage).where(OutboxMessage.game_id == 1)).all()
    assert {m.kind for m in sent} >= {"invitation", "your_turn", "moved"}
    for message in sent:
        assert "<svg" not in message.html_body.lower()
        assert link in message.html_body and "<h3>The board</h3>" in message.html_body
    # Composed now, each kind of mail sums up the board as it is, and so does the final one.
    _, now = stored(app)
    end = now
    chooser = random.Random("to the end")
    while not end.is_over:
        end = RULES.apply(end, RULES.parse(end, chooser.choice(RULES.legal(end))))
    with app.app_context(), reading() as session:
        game = session.get(Game, 1)
        seats = list(session.exec(select(Seat).where(Seat.game_id == 1).order_by(Seat.number)))
        bodies = [send(session, kinds.INVITATION, game=game, seat=seats[0], seats=seats,
                       rules=RULES, state=now).html_body,
                  *(sending.render(session, queued)[1] for queued in (
                      send(session, kinds.YOUR_TURN, game=game, seat=seats[1], news=["news"]),
                      send(session, kinds.MOVED, game=game, seat=seats[2], lines=["news"],
                           next_seat=seats[0]),
                      send(session, kinds.PLAYED_FOR_YOU, game=game, seat=seats[3], lines=["x"],
                           absent=False)))]
        for body in bodies:
            assert summary_rows(body) == expected_rows(now)
            assert link in body and "<svg" not in body
        game.state_json = RULES.dumps(end)  # as the last move leaves it, never stored
        final = sending.render(session, send(session, kinds.FINAL, game=game, seat=seats[0],
                                             seats=seats, lines=[]))[1]
        session.rollback()
    assert summary_rows(final) == expected_rows(end) != expected_rows(now)
    assert link in final and "<svg" not in final
    assert any(row[1] != "–" for row in expected_rows(end).values())  # advisors shown too


# --- the migration ------------------------------------------------------------------------------

def test_games_from_before_the_upgrade_get_their_own_spectator_address(tmp_path):
    app = make_app(tmp_path / "instance")
    with app.app_context():
        for n in range(3):
            create_game([parse_player(f"P {i} <p{i}@example.org>") for i in range(3)], f"m{n}")
    schema.downgrade(app, "4ec7c06975bc")  # the version before watch ids
    schema.upgrade(app)
    with reading(app) as session:
        ids = [game.watch_id for game in session.exec(select(Game))]
    assert len(set(ids)) == 3 and all(re.fullmatch(r"[A-Za-z0-9_-]{16}", i) for i in ids)
    client = app.test_client()
    for watch_id in ids:
        page(client, f"/watch/{watch_id}")
