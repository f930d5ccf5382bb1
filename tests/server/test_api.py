"""The JSON API (docs/api.md): whole games played only through it, and every refusal.

Every refusal is checked to leave the game exactly as it was: the answers of a GET for every
seat, and every row of every table, are the same before and after.
"""

import json
import random
import re
import threading
from pathlib import Path

import pytest
from server import module_app, text_of, token_in
from sqlalchemy import select
from sqlmodel import SQLModel
from werkzeug.serving import make_server

import pbem.ground.models  # noqa: F401  (the tables, for the database snapshot)
from pbem.ground.db import get_engine
from pbem.services.creating import create_game
from pbem.services.players import parse_player
from pbem.services.seats import UNKNOWN_LINK

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

DOC = Path(__file__).resolve().parent.parent.parent / "docs" / "api.md"


def _players(n):
    return [parse_player(f"Player {i} <p{i}@example.org>") for i in range(n)]


def database(app) -> dict:
    """Every row of every table: what 'nothing changed' is checked against."""
    with get_engine(app).connect() as conn:
        return {t.name: [tuple(row) for row in conn.execute(select(t).order_by(*t.primary_key))]
                for t in SQLModel.metadata.sorted_tables}


def invitations(mailbox, n) -> list[str]:
    """Each seat's token, read from its invitation mail."""
    tokens = []
    for i in range(n):
        mails = [m for m in mailbox.to(f"p{i}@example.org")
                 if str(m["Subject"]).endswith(("You are invited to play",
                                                "You are invited to play, and you start"))]
        assert len(mails) == 1
        tokens.append(token_in(mails[0]))
    return tokens


def api_get(client, token):
    response = client.get(f"/api/v1/seat/{token}")
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    assert response.headers["Cache-Control"] == "no-store"
    return response.get_json()


def api_move(client, token, body, **kwargs):
    if "data" not in kwargs:
        kwargs["json"] = body
    return client.post(f"/api/v1/seat/{token}/move", **kwargs)


# --- whole games --------------------------------------------------------------------------------

@pytest.mark.parametrize("players,seed", [(3, "api-3"), (5, "api-5")])
def test_whole_game_through_the_api(app, client, mailbox, players, seed):
    app.config["MAIL_BOARD_PICTURE"] = False  # no picture is read here (test_mail_content's)
    with app.app_context():
        create_game(_players(players), seed)
    tokens = invitations(mailbox, players)
    chooser = random.Random(seed)
    document = api_get(client, tokens[0])
    moves = turns = followed = 0
    while document["status"] == "running":
        if not document["to_move"]:  # a new turn: read it as the seat to move sees it
            seat = document["waiting_for"]
            turns += 1
            if turns % 10 == 1:  # now and then, follow the link in the seat's newest mail
                newest = mailbox.to(f"p{seat}@example.org")[-1]
                assert str(newest["Subject"]).endswith(("Your turn", "You are invited to play",
                                                        "and you start"))
                tokens[seat] = token_in(newest)
                followed += 1
            if turns % 8 == 0:  # the others may look, but not move
                for other in range(players):
                    if other != seat:
                        theirs = api_get(client, tokens[other])
                        assert theirs["to_move"] is False and theirs["legal"] == []
                        assert theirs["waiting_for"] == seat
            document = api_get(client, tokens[seat])
            assert document["to_move"] is True and document["seat"] == seat
        seat, turn = document["seat"], document["turn"]
        assert document["legal"] and document["view"]["ply"] == turn
        choice = chooser.choice(document["legal"])
        response = api_move(client, tokens[seat], {"move": choice, "turn": turn})
        assert response.status_code == 200, response.get_data(as_text=True)
        document = response.get_json()
        assert document["turn"] == turn + 1 and document["seat"] == seat
        assert document["applied"] == {"move": choice, "lines": document["log"][0]["lines"]}
        assert {k: document["log"][0][k] for k in ("turn", "seat", "move")} == {
            "turn": turn, "seat": seat, "move": choice}
        moves += 1
    assert moves > 30 and followed >= 3
    assert document["status"] == "finished"
    assert document["to_move"] is False and document["legal"] == []
    assert document["waiting_for"] is None and document["deadline"] is None
    outcome = document["outcome"]
    colours = [p["colour"] for p in document["players"]]
    assert outcome["winners"] and set(outcome["winners"]) <= set(colours)
    assert set(outcome["scores"]) == set(colours)
    best = max(outcome["scores"].values())
    assert all(outcome["scores"][w] == best for w in outcome["winners"])
    for seat, token in enumerate(tokens):
        final = api_get(client, token)
        assert final["status"] == "finished" and final["outcome"] == outcome
        assert final["turn"] == moves and final["seat"] == seat
        finals = [m for m in mailbox.to(f"p{seat}@example.org")
                  if str(m["Subject"]).endswith("The game is over")]
        assert len(finals) == 1
        text = text_of(finals[0])
        assert "Total" in text and "Rank" in text
        for colour in outcome["winners"]:
            assert re.search(rf"\b{colour} = [^,]* \(winner\)", text)
    # A finished game takes no more moves.
    before = database(app)
    response = api_move(client, tokens[0], {"move": "pass", "turn": moves})
    assert response.status_code == 409
    assert response.get_json() == {"error": "This game is finished; no more moves can be made.",
                                   "status": 409}
    assert database(app) == before


# --- refusals -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def shared_app(tmp_path_factory, database):
    """One app for the tests that each make a game of their own in it: much faster."""
    return module_app(tmp_path_factory, "api")


@pytest.fixture
def game(shared_app):
    """A new 3-player game two moves in: (app, client, tokens by seat, seat to move, its
    document)."""
    app, client = shared_app, shared_app.test_client()
    with app.app_context():
        created = create_game(_players(3), "api-refusals")
    tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]
    for _ in range(2):
        document = api_get(client, tokens[0])
        mover = document["waiting_for"]
        mine = api_get(client, tokens[mover])
        response = api_move(client, tokens[mover], {"move": mine["legal"][0],
                                                    "turn": mine["turn"]})
        assert response.status_code == 200
    mover = api_get(client, tokens[0])["waiting_for"]
    return app, client, tokens, mover, api_get(client, tokens[mover])


class Unchanged:
    """Asserts that a block leaves every seat's answer and every database row as they were."""

    def __init__(self, app, client, tokens):
        self.app, self.client, self.tokens = app, client, tokens

    def _state(self):
        return [api_get(self.client, t) for t in self.tokens], database(self.app)

    def __enter__(self):
        self.before = self._state()
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            after = self._state()
            assert after[0] == self.before[0]
            assert after[1] == self.before[1]


def _refused(response, status):
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) == {"error", "status"}
    assert body["status"] == status
    assert isinstance(body["error"], str) and body["error"]
    return body["error"]


def test_stale_turn_is_409_and_a_second_send_is_recognised(game):
    app, client, tokens, mover, document = game
    token, turn = tokens[mover], document["turn"]
    with Unchanged(app, client, tokens):
        now = f"turn {document['turn_number']} (move {turn})"
        for stale in (turn - 1, turn + 1, 0):
            error = _refused(api_move(client, token, {"move": document["legal"][0],
                                                      "turn": stale}), 409)
            assert f"after move {stale}" in error or f"made for move {stale}" in error
            assert now in error
        for key in ("moves_played", "turn"):  # one number, its new name and its old one
            error = _refused(api_move(client, token, {"move": document["legal"][0],
                                                      key: turn + 1}), 409)
            assert f"made for move {turn + 1}, which the game has not reached" in error
    choice = document["legal"][0]
    assert api_move(client, token, {"move": choice, "turn": turn}).status_code == 200
    with Unchanged(app, client, tokens):
        # The same request again (a retry after a lost answer): told it was already recorded.
        error = _refused(api_move(client, token, {"move": choice, "turn": turn}), 409)
        assert f"Your move '{choice}' was already recorded" in error


def test_a_paused_game_offers_no_moves_and_takes_none(game):
    from pbem.ground.db import writing
    from pbem.ground.models import PAUSED, Game

    app, client, tokens, mover, document = game
    with app.app_context(), writing() as session:
        row = session.get(Game, document["game"])
        row.status = PAUSED
        session.add(row)
    paused = api_get(client, tokens[mover])
    assert paused["status"] == "paused"
    assert paused["to_move"] is False and paused["legal"] == []
    assert paused["waiting_for"] == mover and paused["turn"] == document["turn"]
    with Unchanged(app, client, tokens):
        error = _refused(api_move(client, tokens[mover], {"move": document["legal"][0],
                                                         "turn": document["turn"]}), 409)
        assert error == ("This game is paused by an organiser: no moves until it goes on "
                         "(everyone gets a mail then). Nothing was changed.")


def test_a_move_out_of_turn_is_409(game):
    app, client, tokens, mover, document = game
    with Unchanged(app, client, tokens):
        for seat, token in enumerate(tokens):
            if seat == mover:
                continue
            theirs = api_get(client, token)
            assert theirs["to_move"] is False and theirs["legal"] == []
            error = _refused(api_move(client, token, {"move": document["legal"][0],
                                                      "turn": document["turn"]}), 409)
            assert error.startswith("It is not your move: the game waits for Player "
                                    f"{mover} ({document['colour']})")


ILLEGAL = [
    ("pass", "you may pass only when you can neither place a piece nor exchange a card"),
    ("draw deck", "there is nothing to draw now: first play cards or exchange one"),
    ("drwa deck", "'drwa' is not a move (did you mean draw?)"),
    ("R Frankn: Mainz", "'Frankn' is not a country, a cloister field or 'advisor'"),
    ("!!!", ""),
    ("", ""),
    ("\x00\ud800", ""),
    ("R Franken: Mainz" + " x" * 200, "a move is at most 200 characters long"),
]


def test_an_illegal_or_unreadable_move_is_422_with_the_engines_message(game):
    from engine import IllegalMoveError, NotationError, apply_move, parse_move
    from pbem.games import rules_for
    from pbem.ground.db import reading
    from pbem.ground.models import Game

    app, client, tokens, mover, document = game
    assert document["view"]["phase"] == "play"
    with app.app_context(), reading() as session:
        row = session.get(Game, document["game"])
        state = rules_for(row.kind).loads(row.state_json)
    with Unchanged(app, client, tokens):
        for text, message in ILLEGAL:
            with pytest.raises((IllegalMoveError, NotationError)) as refused:
                apply_move(state, parse_move(text, state.board))
            expected = str(refused.value)
            assert expected.startswith(message)
            error = _refused(api_move(client, tokens[mover], {"move": text,
                                                             "turn": document["turn"]}), 422)
            assert error == expected


def test_an_illegal_placement_names_the_hand(game):
    app, client, tokens, mover, document = game
    hand = document["view"]["hand"]
    missing = next(code for code in "RGCOP" if code not in hand)
    with Unchanged(app, client, tokens):
        error = _refused(api_move(client, tokens[mover], {"move": f"{missing * 3} Franken: Fulda",
                                                         "turn": document["turn"]}), 422)
        assert error.startswith(f"you do not hold the cards {missing * 3}; your hand is ")


BAD_TOKENS = [
    "A" * 32,  # well formed, but no seat has it
    "A" * 31, "A" * 33, "Zq", "%C3%A9" * 8, "A" * 31 + "!", "A" * 31 + "%00", "A" * 5000,
]


def test_an_unknown_token_is_404_and_says_nothing_more(game):
    app, client, tokens, _, document = game
    with Unchanged(app, client, tokens):
        for token in BAD_TOKENS:
            for response in (client.get(f"/api/v1/seat/{token}"),
                             api_move(client, token, {"move": document["legal"][0],
                                                      "turn": document["turn"]})):
                # The same answer for every bad token: it tells nothing about which exist.
                assert response.status_code == 404, token
                assert response.get_json() == {"error": UNKNOWN_LINK, "status": 404}
                assert "Set-Cookie" not in response.headers


def test_a_token_that_differs_in_one_letter_is_404(game):
    app, client, tokens, mover, document = game
    real = tokens[mover]
    near = real[:-1] + ("A" if real[-1] != "A" else "B")
    with Unchanged(app, client, tokens):
        _refused(client.get(f"/api/v1/seat/{near}"), 404)
        _refused(api_move(client, near, {"move": document["legal"][0],
                                         "turn": document["turn"]}), 404)


def _bodies(document):
    move, turn = document["legal"][0], document["turn"]
    good = json.dumps({"move": move, "turn": turn})
    return [
        ("not JSON", {"data": "move=pass&turn=1", "content_type": "application/json"}),
        ("JSON sent as text/plain", {"data": good, "content_type": "text/plain"}),
        ("JSON as a form", {"data": {"move": move, "turn": str(turn)}}),
        ("no body", {"data": b"", "content_type": "application/json"}),
        ("not UTF-8", {"data": b'{"move": "\xff", "turn": 1}', "content_type": "application/json"}),
        ("a list", {"json": [move, turn]}),
        ("a string", {"json": move}),
        ("a number", {"json": turn}),
        ("null", {"json": None}),
        ("no move", {"json": {"turn": turn}}),
        ("no turn", {"json": {"move": move}}),
        ("empty object", {"json": {}}),
        ("an extra field", {"json": {"move": move, "turn": turn, "seat": 0}}),
        ("move misspelt", {"json": {"mvoe": move, "turn": turn}}),
        ("turn as a string", {"json": {"move": move, "turn": str(turn)}}),
        ("turn as true", {"json": {"move": move, "turn": True}}),
        ("turn as false", {"json": {"move": move, "turn": False}}),
        ("turn as a float", {"json": {"move": move, "turn": float(turn)}}),
        ("turn as null", {"json": {"move": move, "turn": None}}),
        ("turn as a list", {"json": {"move": move, "turn": [turn]}}),
        ("turn negative", {"json": {"move": move, "turn": -1}}),
        ("turn too big for the database", {"json": {"move": move, "turn": 2**64}}),
        ("turn with 5000 digits", {"data": '{"move": "pass", "turn": ' + "9" * 5000 + "}",
                                   "content_type": "application/json"}),
        ("turn NaN", {"data": '{"move": "pass", "turn": NaN}',
                      "content_type": "application/json"}),
        ("move as a number", {"json": {"move": 5, "turn": turn}}),
        ("move as a list", {"json": {"move": [move], "turn": turn}}),
        ("move as null", {"json": {"move": None, "turn": turn}}),
        ("deeply nested list", {"data": "[" * 20000 + "]" * 20000,
                                "content_type": "application/json"}),
        ("deeply nested object", {"data": '{"move":' * 5000 + "1" + "}" * 5000,
                                  "content_type": "application/json"}),
    ]


def test_malformed_bodies_are_400(game):
    app, client, tokens, mover, document = game
    with Unchanged(app, client, tokens):
        for label, kwargs in _bodies(document):
            response = api_move(client, tokens[mover], None, **kwargs)
            assert response.status_code == 400, (label, response.get_data(as_text=True))
            _refused(response, 400)


def test_the_400_messages_say_what_to_send(game):
    _, client, tokens, mover, document = game
    token, move, turn = tokens[mover], document["legal"][0], document["turn"]
    assert '{"move": "<notation>", "moves_played": <moves_played>}' in _refused(
        api_move(client, token, [move, turn]), 400)
    # Two different numbers: the body has the documented form (the schema cannot say "equal"),
    # so it is a 422, never a 400 (issue 34 point 13).
    assert "one number under two names" in _refused(
        api_move(client, token, {"move": move, "turn": turn, "moves_played": turn + 1}), 422)
    assert "Content-Type: application/json" in _refused(
        api_move(client, token, None, data=json.dumps({"move": move, "turn": turn})), 400)
    assert _refused(api_move(client, token, {"move": move, "turn": turn, "seat": 1}), 400) == (
        'the body must hold exactly "move" (text) and "moves_played" (a number; "turn" is its '
        'old name); unknown: seat')
    assert "a whole number" in _refused(api_move(client, token, {"move": move, "turn": "3"}), 400)
    assert "text in the notation" in _refused(api_move(client, token, {"move": 3, "turn": turn}),
                                              400)


def test_a_body_over_the_limit_is_413(game):
    app, client, tokens, mover, document = game
    limit = app.config["MAX_CONTENT_LENGTH"]
    assert limit == 64 * 1024
    with Unchanged(app, client, tokens):
        body = json.dumps({"move": "x" * limit, "turn": document["turn"]})
        error = _refused(api_move(client, tokens[mover], None, data=body,
                                  content_type="application/json"), 413)
        assert "too much data" in error
    # Just under the limit is read, and refused for what it says.
    body = json.dumps({"move": "draw deck" + " " * (limit - 100), "turn": document["turn"]})
    with Unchanged(app, client, tokens):
        _refused(api_move(client, tokens[mover], None, data=body,
                          content_type="application/json"), 422)


def test_other_methods_are_405_in_json(game):
    app, client, tokens, mover, _ = game
    token = tokens[mover]
    with Unchanged(app, client, tokens):
        response = client.get(f"/api/v1/seat/{token}/move")
        _refused(response, 405)
        assert set(response.headers["Allow"].split(", ")) == {"OPTIONS", "POST"}
        _refused(client.put(f"/api/v1/seat/{token}"), 405)
        _refused(client.delete(f"/api/v1/seat/{token}"), 405)
        _refused(client.post(f"/api/v1/seat/{token}", json={}), 405)
        assert client.head(f"/api/v1/seat/{token}").status_code == 200


def test_the_api_needs_no_csrf_token_and_sets_no_cookie(game):
    _, client, tokens, mover, document = game
    response = api_move(client, tokens[mover], {"move": document["legal"][0],
                                                "turn": document["turn"]})
    assert response.status_code == 200
    assert "Set-Cookie" not in response.headers
    assert "Set-Cookie" not in client.get(f"/api/v1/seat/{tokens[0]}").headers


# --- the documentation --------------------------------------------------------------------------

DOC_PLAYERS = ["Anna <anna@example.org>", "Ben <ben@example.org>", "Cleo <cleo@example.org>"]
DOC_MOVES = [(0, "R Franken: Mainz"), (0, "draw deck"), (1, "P Frankreich: Chartres")]


def _doc_blocks(kind: str) -> list[str]:
    """The ```json blocks in docs/api.md marked with `<!-- example: kind -->` on the line above."""
    text = DOC.read_text(encoding="utf-8")
    return re.findall(rf"<!-- example: {kind} -->\n```json\n(.*?)\n```", text, re.DOTALL)


def _shape(value, path="answer"):
    """The keys of every object in a JSON value, by path (list items by position)."""
    if isinstance(value, dict):
        shape = {path: sorted(value)}
        for key, item in value.items():
            shape.update(_shape(item, f"{path}.{key}"))
        return shape
    if isinstance(value, list):
        shape = {}
        for i, item in enumerate(value):
            shape.update(_shape(item, f"{path}[{i}]"))
        return shape
    return {}


def _types(value, path="answer"):
    if isinstance(value, dict):
        out = {path: "object"}
        for key, item in value.items():
            out.update(_types(item, f"{path}.{key}"))
        return out
    if isinstance(value, list):
        out = {path: "array"}
        for i, item in enumerate(value):
            out.update(_types(item, f"{path}[{i}]"))
        return out
    return {path: type(value).__name__}


def _doc_game(app, client):
    """The game the examples in docs/api.md come from, played to the example's position."""
    with app.app_context():
        created = create_game([parse_player(p) for p in DOC_PLAYERS], "api-doc")
    tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]
    for turn, (seat, move) in enumerate(DOC_MOVES):
        assert api_move(client, tokens[seat], {"move": move, "turn": turn}).status_code == 200
    return tokens


def test_the_documented_answers_have_the_keys_of_real_answers(app, client):
    tokens = _doc_game(app, client)
    (seat_example,) = _doc_blocks("seat")
    (move_example,) = _doc_blocks("move")
    (error_example,) = _doc_blocks("error")
    documented = json.loads(seat_example)
    real = api_get(client, tokens[1])
    assert _shape(documented) == _shape(real)
    assert _types(documented) == _types(real)
    # Not only the keys: the example is this very answer, but for the clock.
    for item in real["log"]:
        item.pop("at")
    for item in documented["log"]:
        item.pop("at")
    assert {**documented, "deadline": None} == {**real, "deadline": None}

    response = api_move(client, tokens[1], {"move": "draw G", "turn": real["turn"]})
    assert response.status_code == 200
    assert _shape(json.loads(move_example)) == _shape(response.get_json())
    assert _types(json.loads(move_example)) == _types(response.get_json())

    again = api_move(client, tokens[1], {"move": "draw G", "turn": real["turn"]})
    assert json.loads(error_example) == again.get_json()


def finish_by_engine(app, game_id: int, seed: str) -> None:
    """Play a stored game to its end with random legal moves, straight through the engine."""
    from engine import apply_move, legal_moves
    from pbem.games import rules_for
    from pbem.ground.db import writing
    from pbem.ground.models import FINISHED, Game

    chooser = random.Random(seed)
    with app.app_context(), writing() as session:
        game = session.get(Game, game_id)
        rules = rules_for(game.kind)
        state = rules.loads(game.state_json)
        while not state.is_over:
            state = apply_move(state, chooser.choice(legal_moves(state)))
        game.state_json, game.status = rules.dumps(state), FINISHED
        game.turn, game.deadline_at = state.ply, None
        session.add(game)


def test_the_documented_outcome_has_the_keys_of_a_real_one(shared_app):
    app, client = shared_app, shared_app.test_client()
    (example,) = _doc_blocks("outcome")
    documented = json.loads(example)
    with app.app_context():
        created = create_game([parse_player(p) for p in DOC_PLAYERS], "api-outcome")
    finish_by_engine(app, created.game_id, "api-outcome")
    real = api_get(client, created.links[0][2].rsplit("/", 1)[1])
    assert real["status"] == "finished"
    assert _shape(documented) == _shape(real["outcome"])
    assert _types(documented) == _types(real["outcome"])


def test_the_status_codes_table_lists_every_code_the_api_answers():
    text = DOC.read_text(encoding="utf-8")
    table = set(re.findall(r"^\| (\d{3}) \|", text, re.MULTILINE))
    # 410: an old link of the seat (LinkExpired), answered since old links expire; documented
    # with issue 34 point 13 ("every error answer documented").
    assert table == {"200", "400", "404", "405", "409", "410", "413", "422"}


def test_the_python_example_plays_a_move_over_http(shared_app):
    """The urllib example in docs/api.md, run against a real server on a free port."""
    app = shared_app
    (code,) = re.findall(r"```python\n(.*?)\n```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with app.app_context():
            created = create_game(_players(3), "api-example")
        tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]
        namespace = {"__name__": "api_example"}
        exec(compile(code, str(DOC), "exec"), namespace)
        base = f"http://127.0.0.1:{server.server_port}"
        get_seat = namespace["get_seat"]
        seat = get_seat(base, tokens[0])["waiting_for"]
        mine = get_seat(base, tokens[seat])
        answer = namespace["play_one"](base, tokens[seat],
                                       lambda document: document["legal"][-1])
        assert answer["turn"] == mine["turn"] + 1
        assert answer["applied"]["move"] == mine["legal"][-1]
        assert get_seat(base, tokens[seat])["turn"] == mine["turn"] + 1
        # Not this seat's move: play_one waits for nothing and says so.
        idle = tokens[(seat + 1) % 3]
        assert namespace["play_one"](base, idle, lambda document: "pass") is None
        # A 409 (here: a stale turn) is told apart from other errors.
        status, body = namespace["post_move"](base, tokens[seat], "pass", 0)
        assert status == 409 and body["status"] == 409
        status, body = namespace["post_move"](base, "A" * 32, "pass", 0)
        assert status == 404 and body == {"error": UNKNOWN_LINK, "status": 404}
    finally:
        server.shutdown()
        thread.join()


def test_legal_lists_a_monastery_and_an_advisor_once(shared_app):
    """`legal` names each placement once: a monastery and an advisor in one country appear
    monastery first only, and the advisor-first spelling is accepted as the same move."""
    from server import game_state, new_game, play_moves

    import engine

    app, client = shared_app, shared_app.test_client()
    created, tokens = new_game(app, 3, "api-once", start=0)

    def pair(state):  # where the advisor would fit even before the monastery
        return next((m for m in engine.legal_moves(state) if isinstance(m, engine.Place)
                     and len(m.pieces) == 2 and engine.ADVISOR in m.pieces
                     and m.pieces[0] != engine.ADVISOR
                     and state.advisor_room(state.board.country(m.country).index) > 0), None)

    play_moves(app, tokens, 400, game_id=created.game_id,
               until=lambda state: state.phase == "play" and pair(state) is not None)
    game, state = game_state(app, created.game_id)
    move = pair(state)
    assert move is not None, "some seat could place a monastery and an advisor"
    document = api_get(client, tokens[state.current])
    legal = document["legal"]
    assert len(legal) == len(set(legal))
    assert str(move) in legal
    field = move.pieces[0]
    swapped = f"{''.join(move.cards)} {move.country}: advisor, {field}"
    assert swapped not in legal
    answer = api_move(client, tokens[state.current], {"move": swapped, "turn": game.turn})
    assert answer.status_code == 200, answer.get_json()
    _, after = game_state(app, created.game_id)
    assert after.monasteries[after.board.field_named(field).index] == state.current
