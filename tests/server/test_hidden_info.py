"""No page, API answer or mail for one seat shows another seat's cards or the deck's order.

Differential: what a seat is shown is rendered, the cards hidden from it are dealt differently
in the stored game (same counts; its own hand, its own draws, the face-up cards and the discard
kept), and everything is rendered again: it must not have changed by a single character, once
the CSRF tokens and the seat-link tokens (new on every render) are masked. A control checks
that the same renders do change when something the seat may see changes, so the comparison is
not vacuous.
"""

import json
import os
import random
import re
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from server import field, make_app
from sqlmodel import select

from engine import from_json, to_json
from pbem.games import rules_for
from pbem.ground import i18n
from pbem.ground.db import reading, writing
from pbem.ground.i18n import render
from pbem.ground.models import DigestItem, Game, MoveRecord, OutboxMessage, Seat
from pbem.services.creating import create_game
from pbem.services.mail import kinds, sending
from pbem.services.mail.sending import send
from pbem.services.moves import submit_move
from pbem.services.players import parse_player

from helpers import redealt

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

SEED = "hidden-seed-7f3a9c"
PLAYERS = 4
NOW = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)  # every row written at one fixed time
TOKEN = re.compile(r"/seat/[A-Za-z0-9_-]{32}")
MINE = re.compile(r"/me/[A-Za-z0-9_-]{32}")  # the "my games" link, new in every mail
WATCH = re.compile(r"/watch/[A-Za-z0-9_-]{16}")  # each server gives its game a random one
CSRF = re.compile(r'name="csrf_token" value="[^"]*"')


def _app(tmp_path_factory, name):
    with pytest.MonkeyPatch.context() as patch:
        for key in [k for k in os.environ if k.startswith("PBEM_")]:
            patch.delenv(key)
        return make_app(tmp_path_factory.mktemp(name) / "instance")


def _game(app, moves: int, stop=lambda state: True):
    """A seeded game played `moves` moves in (then on until `stop(state)`), at a fixed time."""
    with app.app_context():
        created = create_game([parse_player(f"Player {i} <p{i}@example.org>")
                               for i in range(PLAYERS)], SEED, now=NOW)
        tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]
        chooser = random.Random(SEED)
        played = 0
        while True:
            state = stored_state(app)
            if played >= moves and stop(state):
                return tokens
            rules = rules_for("kardinal-koenig")
            choice = chooser.choice(rules.legal(state))
            submit_move(tokens[state.current], choice, played, now=NOW)
            played += 1


def stored_state(app):
    with app.app_context(), reading() as session:
        return from_json(session.get(Game, 1).state_json)


def store_state(app, state) -> None:
    with app.app_context(), writing() as session:
        game = session.get(Game, 1)
        game.state_json = to_json(state)
        session.add(game)


def masked(text: str) -> str:
    text = WATCH.sub("/watch/<id>", TOKEN.sub("/seat/<token>", MINE.sub("/me/<token>", text)))
    text = re.sub(r'src="cid:[^"]+"', 'src="cid:<id>"', text)  # a random content id
    return CSRF.sub('name="csrf_token" value=""', text)


def composed_mails(app, seat_number: int) -> list[str]:
    """Every kind of mail the game writes to this seat, composed now and never stored."""
    with app.app_context(), reading() as session:
        game = session.get(Game, 1)
        seats = list(session.exec(select(Seat).where(Seat.game_id == 1).order_by(Seat.number)))
        seat = seats[seat_number]
        rules = rules_for(game.kind)
        state = rules.loads(game.state_json)
        lines = [line for record in session.exec(select(MoveRecord).order_by(MoveRecord.number))
                 for line in json.loads(record.lines_json)[str(seat_number)]]
        items = [DigestItem(seat_id=seat.id, text=json.dumps(lines), created_at=NOW)]
        messages = [
            send(session, kinds.INVITATION, game=game, seat=seat, seats=seats, rules=rules,
                 state=state),
            send(session, kinds.YOUR_TURN, game=game, seat=seat,
                 news=[i18n.lazy(line) for line in lines]),
            send(session, kinds.MOVED, game=game, seat=seat,
                 lines=[i18n.lazy(line) for line in lines], next_seat=seats[state.current]),
            send(session, kinds.DIGEST, game=game, seat=seat, rules=rules, state=state,
                 items=items),
        ]
        # The mails a move causes are written when they are delivered: written here by the
        # same function.
        bodies = ["\n".join([m.subject, *(sending.render(session, m) if m.intent_json
                                           else (m.text_body, m.html_body))])
                  for m in messages]
        session.rollback()  # the seat keys and digest flags they made are not kept
    return [masked(body) for body in bodies]


def renders(app, client, tokens, seat: int) -> dict:
    """Everything this seat is shown: its page, its API answer, its mails, and its previews."""
    token = tokens[seat]
    page = client.get(f"/seat/{token}")
    answer = client.get(f"/api/v1/seat/{token}")
    assert page.status_code == answer.status_code == 200
    shown = {"page": masked(page.get_data(as_text=True)),
             "api": masked(answer.get_data(as_text=True)),
             "mails": composed_mails(app, seat)}
    document = answer.get_json()
    if document["to_move"]:
        csrf = field(page.get_data(as_text=True), "csrf_token")
        previews = []
        for move in document["legal"][:3] + document["legal"][-3:]:
            response = client.post(f"/seat/{token}/preview", data={
                "csrf_token": csrf, "turn": document["turn"], "action": "text",
                "notation": move})
            assert response.status_code == 200, response.get_data(as_text=True)
            previews.append(masked(response.get_data(as_text=True)))
        shown["previews"] = previews
    return shown


@pytest.fixture(scope="module")
def app(tmp_path_factory, database):
    app = _app(tmp_path_factory, "hidden")
    # Far enough in that hands, draws and the discard are mixed, and stopped while the seat
    # to move is drawing, so that its previews include 'draw deck'.
    app.tokens = _game(app, 30, stop=lambda state: state.phase == "draw")
    return app


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.mark.parametrize("seat", range(PLAYERS))
def test_nothing_a_seat_is_shown_depends_on_cards_hidden_from_it(app, client, seat):
    original = stored_state(app)
    assert any(original.drawn) and original.discard and original.phase == "draw"
    try:
        before = renders(app, client, app.tokens, seat)
        assert ("previews" in before) == (seat == original.current)
        for attempt in range(2):
            changed = redealt(original, seat, random.Random(f"{seat}:{attempt}"))
            store_state(app, changed)
            after = renders(app, client, app.tokens, seat)
            for key in before:
                assert after[key] == before[key], f"seat {seat}'s {key} shows a hidden card"
        # The control: a change this seat may see (one card of its hand swapped with one of
        # the deck) does show, in the page, the API answer and the mails alike.
        hand, deck = list(original.hands[seat]), list(original.deck)
        swap = next(i for i, card in enumerate(deck) if card not in hand)
        hand[0], deck[swap] = deck[swap], hand[0]
        hands = list(original.hands)
        hands[seat] = tuple(sorted(hand))
        store_state(app, replace(original, hands=tuple(hands), deck=tuple(deck)))
        control = renders(app, client, app.tokens, seat)
        for key in ("page", "api", "mails"):
            assert control[key] != before[key], key
    finally:
        store_state(app, original)


def _walk(value, path=""):
    if isinstance(value, dict):
        for key, item in value.items():
            yield f"{path}.{key}", key, item
            yield from _walk(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk(item, f"{path}[{i}]")


def test_the_api_view_holds_only_the_seats_own_hand_and_no_deck(app, client):
    state = stored_state(app)
    deck = "".join(state.deck)
    for seat, token in enumerate(app.tokens):
        document = client.get(f"/api/v1/seat/{token}").get_json()
        view = document["view"]
        assert view["seat"] == seat
        assert view["hand"] == list(state.hands[seat])
        assert view["drawn"] == list(state.drawn[seat])
        assert view["deck_size"] == len(state.deck)
        assert view["hand_sizes"] == {state.players[s]: len(h) for s, h in enumerate(state.hands)}
        for path, key, value in _walk(document):
            assert key not in ("deck", "hands", "seed", "state", "cards"), path
            assert key != "hand" or path == ".view.hand", path
            assert key != "drawn" or path == ".view.drawn", path
            if isinstance(value, (str, list)) and len(value) >= 6:
                assert value not in (deck, list(deck)), path
        text = json.dumps(document)
        assert SEED not in text and deck not in text
        # Everything else a seat reads carries no seed either.
        assert SEED not in client.get(f"/seat/{token}").get_data(as_text=True)
        assert all(SEED not in body for body in composed_mails(app, seat))


def test_the_log_names_a_drawn_card_only_to_the_seat_that_drew_it(app, client):
    with app.app_context(), reading() as session:
        records = list(session.exec(select(MoveRecord).order_by(MoveRecord.number)))
    draws = [r for r in records if r.notation == "draw deck"]
    assert len(draws) >= 5
    colours = ("red", "green", "cream", "orange", "purple")
    for record in draws:
        with app.app_context():  # stored as message ids and parameters; read here in English
            lines = {reader: [render(line) for line in told]
                     for reader, told in json.loads(record.lines_json).items()}
        colour = stored_state(app).players[record.seat]
        mover = rf"\S.* \({colour}\)"  # the player's name and colour (issue 43, point 11)
        for reader, told in lines.items():
            first = told[0]
            if reader == str(record.seat):
                assert re.fullmatch(rf"{mover} \(you\) drew an? ({'|'.join(colours)}) card "
                                    r"\(.*\) from the deck\.", first), first
            else:
                assert re.fullmatch(rf"{mover} drew a card from the deck\.", first), \
                    (reader, first)
                assert not any(re.search(rf"\b{c}\b card", line) for line in told
                               for c in colours), told


def test_previewing_a_draw_from_the_deck_does_not_name_the_card(app, client):
    state = stored_state(app)
    seat = state.current
    assert state.phase == "draw" and state.deck
    token = app.tokens[seat]
    page = client.get(f"/seat/{token}").get_data(as_text=True)
    top = state.board.card(state.deck[-1])
    base = {"csrf_token": field(page, "csrf_token"), "turn": str(stored_turn(app))}
    previews = []
    for form in ({"action": "draw", "source": "deck"},
                 {"action": "text", "notation": "draw deck"},
                 {"action": "text", "notation": "take a card from the pile"}):
        response = client.post(f"/seat/{token}/preview", data={**base, **form})
        assert response.status_code == 200, response.get_data(as_text=True)
        body = response.get_data(as_text=True)
        lines = re.findall(r"<li>([^<]*)</li>", body)
        assert lines and lines[0] == ("You will draw the top card of the deck"
                                      " (you see it once it is yours).")
        # The words (the map names every colour in its legend; the comparison below covers it).
        words = body.split('<section class="map-area"', 1)[0]
        assert top.label not in words and f"{top.colour} card" not in words
        assert field(body, "move") == "draw deck"
        previews.append(masked(body.split("<form", 1)[0]))  # the words, not the echoed form
    assert previews[0] == previews[1] == previews[2]
    # And with another card on top of the deck, the preview reads exactly the same.
    other = next(i for i, card in enumerate(state.deck) if card != state.deck[-1])
    deck = list(state.deck)
    deck[-1], deck[other] = deck[other], deck[-1]
    try:
        store_state(app, replace(state, deck=tuple(deck)))
        response = client.post(f"/seat/{token}/preview",
                               data={**base, "action": "draw", "source": "deck"})
        assert masked(response.get_data(as_text=True).split("<form", 1)[0]) == previews[0]
    finally:
        store_state(app, state)


def stored_turn(app) -> int:
    with app.app_context(), reading() as session:
        return session.get(Game, 1).turn


def test_playing_on_after_a_different_deal_tells_the_others_the_same(tmp_path_factory):
    """Two servers play the same game to the same point; in one the deck is then ordered
    differently. The seat to move plays the same turn in both, drawing different cards from the
    deck: every other seat's page, API answer and mails must still be the same in both."""
    def at_a_turns_start(state):
        return state.phase == "play"

    servers = []
    for name in ("first", "second"):
        app = _app(tmp_path_factory, name)
        app.tokens = _game(app, 20, stop=at_a_turns_start)
        servers.append(app)
    state = stored_state(servers[0])
    assert state == stored_state(servers[1])
    mover = state.current
    # The turn: a placement with as many cards as possible, then every draw from the deck.
    rules = rules_for("kardinal-koenig")
    legal = [rules.parse(state, m) for m in rules.legal(state)]
    place = max((m for m in legal if hasattr(m, "cards")), key=lambda m: len(m.cards))
    draws = len(place.cards)
    assert draws >= 2 and len(state.deck) > draws + 2
    rng = random.Random("other deck")
    deck = list(state.deck)
    while Counter(deck[-draws:]) == Counter(state.deck[-draws:]):
        rng.shuffle(deck)
    store_state(servers[1], replace(state, deck=tuple(deck)))
    with servers[0].app_context(), reading() as session:
        mails_before = len(session.exec(select(OutboxMessage)).all())
    turn = stored_turn(servers[0])
    for app in servers:
        with app.app_context():
            submit_move(app.tokens[mover], str(place), turn, now=NOW)
            for n in range(draws):
                submit_move(app.tokens[mover], "draw deck", turn + 1 + n, now=NOW)
    ends = [stored_state(app) for app in servers]
    assert ends[0].current == ends[1].current != mover
    assert ends[0].hands[mover] != ends[1].hands[mover]  # the draws did differ
    assert ends[0].face_up == ends[1].face_up

    def shown(app, seat):
        client = app.test_client()
        with app.app_context(), reading() as session:
            seat_id = session.exec(select(Seat).where(Seat.number == seat)).one().id
            mails = [masked(f"{m.subject}\n{m.text_body}\n{m.html_body}") for m in session.exec(
                select(OutboxMessage).where(OutboxMessage.seat_id == seat_id)
                .order_by(OutboxMessage.id)).all()]
        return {"page": masked(client.get(f"/seat/{app.tokens[seat]}").get_data(as_text=True)),
                "api": client.get(f"/api/v1/seat/{app.tokens[seat]}").get_json(),
                "mails": mails}

    with servers[0].app_context(), reading() as session:
        assert len(session.exec(select(OutboxMessage)).all()) > mails_before  # mails were sent
    for seat in range(PLAYERS):
        first, second = shown(servers[0], seat), shown(servers[1], seat)
        if seat == mover:
            assert first["page"] != second["page"] and first["api"] != second["api"]
            continue
        for key in first:
            assert first[key] == second[key], f"seat {seat}'s {key} tells the drawn cards"


def test_position_lines_share_what_every_seat_sees_and_each_shows_only_its_own_hand():
    """The lines after a seat's hand are made once per position and language (the mails of a
    move share them); each seat's first line is its own hand and no seat's lines name another
    hand."""
    rules = rules_for("kardinal-koenig")
    state = rules.new_state(["yellow", "red", "green"], "shared-lines", None)
    rules._public_lines.cache_clear()
    lines = {seat: rules.position_lines(state, seat) for seat in range(3)}
    assert rules._public_lines.cache_info().misses == 1
    spectator = rules.position_lines(state, None)
    for seat, said in lines.items():
        assert said[1:] == spectator
        assert said[0] == (f"Your hand ({state.players[seat]}): "
                           f"{rules.card_words(state.hands[seat])}")
        assert not any(line.startswith("Your hand") for line in said[1:])
