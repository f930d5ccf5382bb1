"""Whole games played through the seat pages, using only the links found in the sent mail."""

import random
import re

import pytest
from server import field, game_state, legal_in, text_of, token_in

from engine import Place, default_board, parse_move
from pbem.services.creating import create_game
from pbem.services.players import parse_player

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

BOARD = default_board()


def _players(n):
    return [parse_player(f"Player {i} <p{i}@example.org>") for i in range(n)]


def _form_for(move: Place) -> dict:
    """The structured form fields a player would fill in for a placement."""
    form = {"action": "place", "country": move.country}
    for code in set(move.cards):
        form[f"cards_{code}"] = str(move.cards.count(code))
    for key, piece in zip(("piece1", "piece2"), move.pieces):
        form[key] = piece
    return form


def _to_move(mailbox):
    """The seat token in the newest 'your turn' mail (or the starting invitation)."""
    messages = mailbox.messages()
    for message in reversed(messages):
        subject = str(message["Subject"])
        # The starter's invitation says so in its subject (issue 32), and in its text.
        if subject.endswith("Your turn") or (subject.endswith("invited to play, and you start")
                                             and "You start" in text_of(message)):
            return message
    raise AssertionError("no mail tells anyone it is their turn")


def play_through_pages(app, client, mailbox, players, seed):
    with app.app_context():
        create_game(_players(players), seed)
    chooser = random.Random(seed)
    moves, turn_number = 0, 1  # turns as players count them: a placement and its draws are one
    while True:
        mail = _to_move(mailbox)
        token = token_in(mail)
        page = client.get(f"/seat/{token}").get_data(as_text=True)
        if "The game is over" in page:
            return moves
        assert "It is your move." in page, "the mail said it was this seat's turn"
        while "It is your move." in page:
            turn = field(page, "turn")
            csrf = field(page, "csrf_token")
            legal = legal_in(page)
            choice = chooser.choice(legal)
            move = parse_move(choice, BOARD)
            if choice.startswith("draw"):
                response = client.post(f"/seat/{token}/move", data={
                    "csrf_token": csrf, "turn": turn, "action": "draw",
                    "source": choice.split()[1]})
            else:
                form = _form_for(move) if isinstance(move, Place) and chooser.random() < 0.7 \
                    else {"action": "text", "notation": choice}
                preview = client.post(f"/seat/{token}/preview",
                                      data={"csrf_token": csrf, "turn": turn, **form})
                body = preview.get_data(as_text=True)
                assert preview.status_code == 200, body
                assert "Confirm this move" in body
                assert field(body, "move") == choice
                response = client.post(f"/seat/{token}/move", data={
                    "csrf_token": csrf, "turn": turn, "move": field(body, "move")})
            assert response.status_code == 303, response.get_data(as_text=True)
            moves += 1
            page = client.get(f"/seat/{token}").get_data(as_text=True)
            if game_state(app)[1].phase == "play":  # that move ended the turn
                turn_number += 1
            assert f"Turn {turn_number}." in page


@pytest.mark.parametrize("players,seed", [(3, "pages-3"), (5, "pages-5")])
def test_whole_game_through_the_pages_to_the_final_mail(app, client, mailbox, players, seed):
    """A whole game played by following the links in the mail ends with everyone's final mail."""
    app.config["MAIL_BOARD_PICTURE"] = False  # no picture is read here (test_mail_content's)
    moves = play_through_pages(app, client, mailbox, players, seed)
    assert moves > 30
    for i in range(players):
        finals = [m for m in mailbox.to(f"p{i}@example.org")
                  if str(m["Subject"]).endswith("The game is over")]
        assert len(finals) == 1
        text = text_of(finals[0])
        assert "Total" in text and "Rank" in text
        assert re.search(r"\w+ = [^,]* \(winner\)", text)
