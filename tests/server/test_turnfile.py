"""Turn files: the position and an orders block as text, downloaded, filled in, uploaded."""

import re

import pytest
from server import field, game_state, new_game, text_of

import engine
from pbem.services.turnfile import ORDERS_LINE, read

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL


def test_bottom_posted_orders_below_the_quote_are_read():
    """Orders written under the quoted mail count too; the quote and its header do not."""
    orders = read("On Mon, the judge wrote:\n> Turn: 4\n> draw G\n\nexchange R\ndraw deck\n")
    assert orders.lines == ["exchange R", "draw deck"]


def test_orders_are_read_from_under_the_orders_line():
    """Comments, quoted lines and blank lines are left out; the Turn line says the turn."""
    orders = read(f"Game: 1\nTurn: 12\nYour hand: ...\n{ORDERS_LINE}\n# example: draw deck\n\n"
                  "  GG Franken: Mainz \n> draw G\ndraw deck\n")
    assert orders.turn == 12
    assert orders.lines == ["GG Franken: Mainz", "draw deck"]


@pytest.mark.parametrize("tail", ["-- \nAnna", "On Sat, 21 Nov 2026, Bruno wrote:\n> draw G",
                                  "-----Original Message-----\ndraw G",
                                  "Am 21.11.2026 um 10:00 schrieb Bruno <b@x.org>:\n> draw G"])
def test_a_reply_s_own_lines_end_at_the_quote_or_signature(tail):
    """In a reply without the orders line, the orders are the lines before the quoted mail."""
    orders = read(f"Turn: 3\nexchange R\ndraw deck\n\n{tail}\n")
    assert orders == read("Turn: 3\nexchange R\ndraw deck\n")
    assert orders.lines == ["exchange R", "draw deck"] and orders.turn == 3


def _download(client, token):
    response = client.get(f"/seat/{token}/turnfile")
    assert response.status_code == 200
    assert response.mimetype == "text/plain"
    assert "attachment" in response.headers["Content-Disposition"]
    return response.get_data(as_text=True)


def _upload(client, token, text, **extra):
    import io

    page = client.get(f"/seat/{token}").get_data(as_text=True)
    return client.post(f"/seat/{token}/turnfile", data={
        "csrf_token": field(page, "csrf_token"),
        "turnfile": (io.BytesIO(text.encode("utf-8")), "turn.txt"), **extra},
        content_type="multipart/form-data")


def _whole_turn(state):
    """A placement and the draws that follow it, in the notation."""
    place = next(m for m in engine.legal_moves(state) if isinstance(m, engine.Place))
    after = engine.apply_move(state, place)
    return [str(place)] + ["draw deck"] * after.draws_left


def test_a_whole_turn_is_played_by_uploading_the_turn_file(app, client):
    """The downloaded file, with a whole turn written in, plays that turn in one upload."""
    _, tokens = new_game(app, 3, "upload", start=0)
    game, state = game_state(app)
    text = _download(client, tokens[0])
    assert f"Turn: 1 (move {game.turn})" in text and ORDERS_LINE in text
    assert "Your hand (yellow)" in text and "Your hand (red)" not in text
    orders = _whole_turn(state)
    response = _upload(client, tokens[0], text + "\n".join(orders) + "\n")
    assert response.status_code == 303, response.get_data(as_text=True)
    game, after = game_state(app)
    assert after.current == 1 and game.turn == len(orders)


def test_a_stale_or_broken_turn_file_changes_nothing(app, client):
    """An old file, a bad order or a file without its Turn line is refused; nothing changes."""
    _, tokens = new_game(app, 3, "stale", start=0)
    game, state = game_state(app)
    old = _download(client, tokens[0])
    orders = _whole_turn(state)
    no_turn = re.sub(r"Turn: \d+ \(move \d+\)\n", "", old)
    assert no_turn != old
    for text, status, message in [
            (no_turn + orders[0], 400, "Turn:"),
            (old + "Franken: nowhere", 422, "&#39;Franken: nowhere&#39;"),
            (old, 400, "No orders found")]:
        response = _upload(client, tokens[0], text)
        assert response.status_code == status
        assert message in response.get_data(as_text=True)
        assert game_state(app)[0].turn == game.turn
    _upload(client, tokens[0], old + "\n".join(orders))
    turn = game_state(app)[0].turn
    response = _upload(client, tokens[0], old + "\n".join(orders))
    assert response.status_code == 409 and "already recorded" in response.get_data(as_text=True)
    assert game_state(app)[0].turn == turn


def test_a_later_bad_order_keeps_the_earlier_ones_and_says_where_it_stopped(app, client):
    """When the second order fails, the first stands and the page names the failing line."""
    _, tokens = new_game(app, 3, "partial", start=0)
    _, state = game_state(app)
    orders = _whole_turn(state)
    response = _upload(client, tokens[0], f"Turn: 0\n{orders[0]}\ndraw nowhere\n")
    assert response.status_code == 303
    page = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    assert "Stopped at &#39;draw nowhere&#39;" in page
    assert game_state(app)[0].turn == 1


def test_the_your_turn_mail_carries_the_turn_file(app, mailbox):
    """The text part of a 'your turn' mail is a turn file: its orders read back for that turn."""
    from server import play_moves

    _, tokens = new_game(app, 3, "mail-file", start=0)
    play_moves(app, tokens, 10, until=lambda s: s.current != 0)
    game, _ = game_state(app)
    mail = next(m for m in reversed(mailbox.to("p1@example.org"))
                if str(m["Subject"]).endswith("Your turn"))
    text = text_of(mail)
    assert ORDERS_LINE in text
    assert read(text + "\ndraw deck\n") == read(f"Turn: {game.turn}\ndraw deck\n")


def test_the_turn_line_counts_turns_as_players_do_and_keeps_the_move_counter():
    """'Turn: 5 (move 14)': the players' turn, and the move counter the orders are checked
    against; a file from before the turn number ('Turn: 14') still reads as move 14."""
    from pbem.services.turnfile import turn_line

    assert turn_line(5, 14) == "Turn: 5 (move 14)"
    assert read("Turn: 5 (move 14)\ndraw deck\n").turn == 14
    assert read("Turn: 14\ndraw deck\n").turn == 14
    assert read("turn: 5 (Move 14)\ndraw deck\n").turn == 14


def test_turn_numbers_count_a_placement_or_exchange_with_its_draws_as_one(app, client, mailbox):
    """After two seats' whole turns (each a placement and its draws), the page, the mail and
    the stale message speak of turn 3, and the log numbers every move by its turn."""
    from server import play_moves

    _, tokens = new_game(app, 3, "numbers", start=0)
    first = play_moves(app, tokens, 10, until=lambda s: s.current != 0)
    second = play_moves(app, tokens, 10, until=lambda s: s.current != 1)
    game, _state = game_state(app)
    assert game.turn == len(first) + len(second) >= 4
    page = client.get(f"/seat/{tokens[2]}").get_data(as_text=True)
    assert "Turn 3." in page and f"Turn {game.turn}." not in page
    assert page.count("Turn 1 ·") == len(first) and page.count("Turn 2 ·") == len(second)
    mail = next(m for m in reversed(mailbox.to("p2@example.org"))
                if str(m["Subject"]).endswith("Your turn"))
    assert "it is your turn (turn 3)" in text_of(mail)
    assert f"Turn: 3 (move {game.turn})" in text_of(mail)
    response = _upload(client, tokens[2], f"Turn: 2 (move {len(first)})\ndraw deck\n")
    message = response.get_data(as_text=True)
    assert response.status_code == 409
    assert f"made for turn 2 (after move {len(first)}), but the game has moved on to turn 3 " \
           f"(move {game.turn})" in message


@pytest.mark.parametrize("language,line,name", [
    ("de", "Zug: 1 (Schritt 0)", "kk-partie1-zug1-gelb.txt"),
    ("es", "Turno: 1 (jugada 0)", "kk-partida1-turno1-amarillo.txt"),
    ("en", "Turn: 1 (move 0)", "kk-game1-turn1-yellow.txt")])
def test_the_turn_file_speaks_the_readers_words_and_is_read_back(app, client, language, line,
                                                                 name):
    """The Turn line and the file's name in the reader's language, counting turns as players
    do (issue 32: 'Turn: 2 (move 2)' and kk-game3-turn0-red.txt in a German game); the file
    is read back as it was written, and in the other languages' words too."""
    from pbem.services.players import PlayerSpec

    with app.app_context():
        from pbem.services.creating import create_game

        created = create_game([PlayerSpec(f"P{i}", f"p{i}@example.org", language=language)
                               for i in range(3)], "words", start=0)
    token = created.links[0][2].rsplit("/", 1)[1]
    _, state = game_state(app)
    response = client.get(f"/seat/{token}/turnfile")
    assert response.headers["Content-Disposition"] == f'attachment; filename="{name}"'
    text = response.get_data(as_text=True)
    assert line in text.splitlines()
    if language != "en":
        assert "Turn:" not in text and "(move" not in text
    page = client.get(f"/seat/{token}").get_data(as_text=True)
    assert f">{line}\n</textarea>" in page
    response = _upload(client, token, text + "\n".join(_whole_turn(state)) + "\n")
    assert response.status_code == 303, response.get_data(as_text=True)
    assert game_state(app)[1].current == 1
    assert read("Zug: 2 (Schritt 5)\ndraw deck\n").turn == 5
    assert read("turno: 2 (Jugada 5)\ndraw deck\n").turn == 5
