"""Knights & Castles counts turns as its players do (issue 32, point 3): a turn is a dozen moves
in phases, so the seat page, the log, the mails and the API number turns as the engine's
"turn N of <colour>" does, never moves."""

from __future__ import annotations

import re

import pytest
from server import Mailbox, make_app, text_of
from sqlmodel import select

import engine.knights_castles as kc
from pbem.ground.db import reading
from pbem.ground.models import Game
from pbem.services.games import create_game
from pbem.services.moves import submit_move
from pbem.services.players import PlayerSpec

pytestmark = pytest.mark.usefixtures("database")


def _state(app):
    with app.app_context(), reading() as session:
        game = session.exec(select(Game)).one()
        return game, kc.from_json(game.state_json)


def test_turns_are_the_engines_turns_not_moves(tmp_path):
    app = make_app(tmp_path / "instance", MAIL_BOARD_PICTURE=False)
    box = Mailbox(app)
    players = [PlayerSpec("Anna", "anna@example.org", language="en"),
               PlayerSpec("Bernd", "bernd@example.org", language="de")]
    with app.app_context():
        created = create_game(players, "kc-turns-1", kind="knights-castles", start=0)
    tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]
    game, state = _state(app)
    while state.turn < 5:
        with app.app_context():
            submit_move(tokens[state.to_move], str(kc.default_move(state)), game.turn)
        game, state = _state(app)
    assert game.turn > 2 * state.turn  # many moves a turn: the two counts differ
    client = app.test_client()
    seat = state.to_move
    page = client.get(f"/seat/{tokens[seat]}", headers={"Accept-Language": "en"})
    text = page.get_data(as_text=True)
    header = re.search(r"Turn (\d+)\.</p>|Zug (\d+)\.</p>", text)
    assert header and int(header.group(1) or header.group(2)) == state.turn, text[:3000]
    # The log: each entry's turn is the engine's turn it was played in, 1 to the current one.
    answer = client.get(f"/api/v1/seat/{tokens[seat]}").get_json()
    assert answer["turn_number"] == state.turn
    numbers = [item["turn_number"] for item in answer["log"]]
    assert max(numbers) == state.turn and min(numbers) == 1, numbers
    assert sorted(numbers, reverse=True) == numbers
    # Each turn's announcement ("Turn 3: red draws ...") is in the entry numbered that turn.
    for item in answer["log"]:
        for line in item["lines"]:
            announced = re.search(r"Turn (\d+): ", line)
            if announced:
                assert int(announced.group(1)) == item["turn_number"], item
    # And the mails: "your turn (turn N)" never names a move count.
    for message in box.to("anna@example.org"):
        for said in re.findall(r"\(turn (\d+)\)", text_of(message)):
            assert int(said) <= state.turn, (said, message["Subject"])
