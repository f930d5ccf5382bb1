"""Knights & Castles: no page, API answer, preview or mail for one seat shows another seat's
hand or the deck's order (the differential check of test_hidden_info.py, for the second game).

Every card hidden from the seat (the other hands and the deck) is dealt again, keeping how many
each holds, and everything the seat is shown must stay the same to the character; a control
shows that a change the seat may see does show.
"""

from __future__ import annotations

import random
import re

import pytest
from server import field, make_app
from test_hidden_info import NOW, composed_mails
from test_hidden_info import masked as masked_kk
from test_kc_view import redeal

import engine.knights_castles as kc
from engine.knights_castles.rules import replace
from pbem.games import rules_for
from pbem.ground.db import reading, writing
from pbem.ground.models import Game
from pbem.services.creating import create_game
from pbem.services.moves import submit_move
from pbem.services.players import parse_player

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

PLAYERS = 4
RULES = rules_for("knights-castles")
ME = re.compile(r"/me/[A-Za-z0-9_-]{32}")  # the "all your games" link, new in every mail


def masked(text):
    return ME.sub("/me/<key>", masked_kk(text))


def stored(app) -> kc.GameState:
    with app.app_context(), reading() as session:
        return kc.from_json(session.get(Game, 1).state_json)


@pytest.fixture(scope="module")
def app(tmp_path_factory, database):
    app = make_app(tmp_path_factory.mktemp("kc-hidden") / "instance")
    with app.app_context():
        created = create_game([parse_player(f"P{i} <p{i}@example.org>") for i in range(PLAYERS)],
                              "kc-hidden", kind="knights-castles", now=NOW)
    app.tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]
    chooser = random.Random(7)
    turn = 0
    # Far enough in that cards are in play, discarded and traded; stopped where the seat to
    # move builds, so that its choices depend on its hand.
    while True:
        state = stored(app)
        if turn >= 60 and state.step == "build" and len(RULES.legal(state)) > 2:
            break
        with app.app_context():
            submit_move(app.tokens[state.to_move], chooser.choice(RULES.legal(state)), turn,
                        now=NOW)
        turn += 1
    app.turn = turn
    return app


def renders(app, client, seat: int) -> dict:
    token = app.tokens[seat]
    page = client.get(f"/seat/{token}")
    answer = client.get(f"/api/v1/seat/{token}")
    assert page.status_code == answer.status_code == 200
    shown = {"page": masked(page.get_data(as_text=True)),
             "api": masked(answer.get_data(as_text=True)),
             "mails": [masked(m) for m in composed_mails(app, seat)]}
    document = answer.get_json()
    if document["to_move"]:
        csrf = field(page.get_data(as_text=True), "csrf_token")
        previews = []
        for move in document["legal"]:
            response = client.post(f"/seat/{token}/preview", data={
                "csrf_token": csrf, "turn": document["turn"], "action": "move", "move": move})
            assert response.status_code == 200, response.get_data(as_text=True)
            previews.append(masked(response.get_data(as_text=True)))
        shown["previews"] = previews
    return shown


@pytest.mark.parametrize("seat", range(PLAYERS))
def test_nothing_a_seat_is_shown_depends_on_cards_hidden_from_it(app, seat):
    """Hidden information: hands and deck are secret in pages, API, previews and mails."""
    client = app.test_client()
    original = stored(app)
    assert sum(map(sum, original.tableau)) and original.discard
    try:
        before = renders(app, client, seat)
        assert ("previews" in before) == (seat == original.to_move)
        for attempt in range(2):
            store_state_kc(app, redeal(original, seat, random.Random(f"{seat}:{attempt}")))
            after = renders(app, client, seat)
            for key in before:
                assert after[key] == before[key], f"seat {seat}'s {key} shows a hidden card"
        # The control: one card of the seat's own hand swapped with a deck card shows.
        hand, deck = list(original.hands[seat]), list(original.deck)
        mine = next(k for k, n in enumerate(hand) if n)
        other = next(k for k in deck if k != mine)
        hand[mine] -= 1
        hand[other] += 1
        deck[deck.index(other)] = mine
        hands = list(original.hands)
        hands[seat] = tuple(hand)
        store_state_kc(app, replace(original, hands=tuple(hands), deck=tuple(deck)))
        control = renders(app, client, seat)
        for key in ("page", "api", "mails"):
            assert control[key] != before[key], key
    finally:
        store_state_kc(app, original)


def store_state_kc(app, state) -> None:
    """The stored game's state replaced (as test_hidden_info.store_state, for this game)."""
    with app.app_context(), writing() as session:
        game = session.get(Game, 1)
        game.state_json = kc.to_json(state)
        session.add(game)

