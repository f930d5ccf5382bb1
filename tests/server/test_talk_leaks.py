"""Private messages stay private: no other seat's page, API answer or mail, no spectator page
and no history page shows them.

Differential, as tests/server/test_hidden_info.py does for cards: everything an outsider of a private
conversation is shown is rendered, the private messages between two other seats are rewritten
in the stored game (and one more is sent), and everything is rendered again: it must not have
changed by a single character once the fresh tokens are masked. A control checks that the same
renders do change when a message to everyone changes, so the comparison is not vacuous.
"""

from __future__ import annotations

import pytest
from server import make_app, new_game, play_moves
from sqlalchemy import update
from sqlmodel import select
from test_hidden_info import masked

from pbem.ground.db import reading, writing
from pbem.ground.models import Game, OutboxMessage, Seat, TalkMessage
from pbem.services.talk import post_message

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

SECRET = "ZEBRA-PRIVATE-0-1"


@pytest.fixture
def app(tmp_path):
    return make_app(tmp_path / "instance", MAIL_REPLY_DOMAIN="games.example.org")


def _game(app):
    created, tokens = new_game(app, 4, "talk-leak", start=0)
    play_moves(app, tokens, 6)
    with app.app_context():
        post_message(tokens[0], "public: hello all", "all")
        post_message(tokens[0], f"{SECRET} from 0", "1")
        post_message(tokens[1], f"{SECRET} back from 1", "0")
        post_message(tokens[2], "public: hi from 2", "all")
        post_message(tokens[3], "private 3 to 2", "2")
    return created.game_id, tokens


def _mails_to(app, email: str) -> list[str]:
    with app.app_context(), reading() as session:
        seat_ids = [s.id for s in session.exec(select(Seat).where(Seat.email == email))]
        return [masked(f"{m.subject}\n{m.text_body}\n{m.html_body}")
                for m in session.exec(select(OutboxMessage).where(
                    OutboxMessage.seat_id.in_(seat_ids)).order_by(OutboxMessage.id))]


def _outsider_views(app, client, game_id: int, tokens: list[str]) -> dict:
    """What seats 2 and 3 (outside the 0-1 conversation) and a spectator are shown."""
    with app.app_context(), reading() as session:
        watch_id = session.get(Game, game_id).watch_id
    shown = {"spectator": masked(client.get(f"/watch/{watch_id}").get_data(as_text=True))}
    for seat in (2, 3):
        token = tokens[seat]
        shown[f"page {seat}"] = masked(client.get(f"/seat/{token}").get_data(as_text=True))
        shown[f"api {seat}"] = masked(client.get(f"/api/v1/seat/{token}").get_data(as_text=True))
        shown[f"messages {seat}"] = client.get(
            f"/api/v1/seat/{token}/messages").get_data(as_text=True)
        shown[f"history {seat}"] = masked(
            client.get(f"/seat/{token}/history").get_data(as_text=True))
        shown[f"mails {seat}"] = _mails_to(app, f"p{seat}@example.org")
    for seat in (0, 1):  # the history pages of the two writers carry no messages either
        shown[f"history {seat}"] = masked(
            client.get(f"/seat/{tokens[seat]}/history").get_data(as_text=True))
    return shown


def _rewrite(app, condition, body: str) -> None:
    with app.app_context(), writing() as session:
        session.exec(update(TalkMessage).where(condition).values(body=body))


def test_private_messages_between_two_seats_change_nothing_anyone_else_sees(app, client):
    game_id, tokens = _game(app)
    before = _outsider_views(app, client, game_id, tokens)
    flat = repr(before)
    assert SECRET not in flat
    assert "public: hello all" in before["page 2"] and "public: hello all" in before["page 3"]
    assert "private 3 to 2" in before["page 2"] and "private 3 to 2" not in before["spectator"]
    _rewrite(app, TalkMessage.to_seat.in_([0, 1]) & TalkMessage.sender.in_([0, 1]),
             "something else entirely, and much longer than before " * 5)
    with app.app_context():
        post_message(tokens[1], f"{SECRET} once more", "0")
    after = _outsider_views(app, client, game_id, tokens)
    for name in before:
        assert after[name] == before[name], f"{name} changed with a private message of 0 and 1"
    # The control: a message to everyone, changed, does show.
    _rewrite(app, TalkMessage.to_seat.is_(None) & (TalkMessage.sender == 0), "changed words")
    control = _outsider_views(app, client, game_id, tokens)
    assert control["page 2"] != before["page 2"] and control["messages 3"] != before["messages 3"]


def test_the_two_writers_see_their_private_messages_and_only_theirs(app, client):
    _, tokens = _game(app)
    for seat in (0, 1):
        page = client.get(f"/seat/{tokens[seat]}").get_data(as_text=True)
        assert f"{SECRET} from 0" in page and f"{SECRET} back from 1" in page
        assert "private 3 to 2" not in page
        texts = [m["text"] for m in client.get(
            f"/api/v1/seat/{tokens[seat]}/messages").get_json()["messages"]]
        assert "private 3 to 2" not in texts and f"{SECRET} from 0" in texts
    assert not any(SECRET in mail for seat in (2, 3)
                   for mail in _mails_to(app, f"p{seat}@example.org"))
    assert any(SECRET in mail for mail in _mails_to(app, "p1@example.org"))
