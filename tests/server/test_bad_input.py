"""The seat pages given bad input: every refusal says why, shows the form again, changes nothing.

"Nothing changed" is checked against every row of every table. No request may answer 500: the
test app propagates exceptions, so a crash fails the test with its traceback.
"""

import html as html_lib
import re

import pytest
from server import field, module_app
from sqlalchemy import select
from sqlmodel import SQLModel

import pbem.ground.models  # noqa: F401  (the tables, for the database snapshot)
from pbem.ground.db import get_engine
from pbem.services.creating import create_game
from pbem.services.players import parse_player
from pbem.services.seats import UNKNOWN_LINK

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

EXPIRED = ("The form had expired or came from elsewhere, so nothing was done. Reload the page "
           "and try again.")
NO_TURN = "The form did not say which turn it was made for."


def database(app) -> dict:
    """Every row of every table."""
    with get_engine(app).connect() as conn:
        return {t.name: [tuple(row) for row in conn.execute(select(t).order_by(*t.primary_key))]
                for t in SQLModel.metadata.sorted_tables}


def text(response) -> str:
    return html_lib.unescape(response.get_data(as_text=True))


def alert(response) -> str:
    """The message in the page's alert box."""
    match = re.search(r'role="alert">(?:<p>)?(.*?)(?:</p>)?</', response.get_data(as_text=True),
                      re.DOTALL)
    assert match, "the page shows no message"
    return html_lib.unescape(match.group(1)).strip()


def shows(page: str, name: str, value: str) -> bool:
    """Whether the move form in `page` holds `value` in the input or select called `name`."""
    for tag in re.findall(rf'<input [^>]*name="{name}"[^>]*>', page):
        held = re.search(r'value="([^"]*)"', tag)
        if held and html_lib.unescape(held.group(1)) == value:
            return True
    select_ = re.search(rf'<select name="{name}">(.*?)</select>', page, re.DOTALL)
    return bool(select_) and value in [
        html_lib.unescape(v) for v in re.findall(r'<option value="([^"]*)" selected>',
                                                 select_.group(1))]


class Seats:
    """A new 3-player game as the test client sees it: tokens, the seat to move, its page."""

    def __init__(self, app, client):
        self.app, self.client = app, client
        with app.app_context():
            created = create_game([parse_player(f"Player {i} <p{i}@example.org>")
                                   for i in range(3)], "bad-input")
        self.tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]
        self.refresh()

    def refresh(self):
        document = self.client.get(f"/api/v1/seat/{self.tokens[0]}").get_json()
        self.mover = document["waiting_for"]
        self.token = self.tokens[self.mover]
        self.other = self.tokens[(self.mover + 1) % 3]
        self.document = self.client.get(f"/api/v1/seat/{self.token}").get_json()
        self.turn = self.document["turn"]
        self.hand = self.document["view"]["hand"]
        page = self.client.get(f"/seat/{self.token}")
        assert page.status_code == 200
        self.page = page.get_data(as_text=True)
        self.csrf = field(self.page, "csrf_token")

    def form(self, **fields) -> dict:
        return {"csrf_token": self.csrf, "turn": str(self.turn), **fields}

    def post(self, path: str, data, token: str | None = None, **kwargs):
        return self.client.post(f"/seat/{token or self.token}/{path}", data=data, **kwargs)


@pytest.fixture(scope="module")
def app(tmp_path_factory, database):
    """One app for the whole file (each test makes its own game in it): much faster."""
    return module_app(tmp_path_factory, "bad-input")


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def seats(app, client):
    return Seats(app, client)


class Unchanged:
    def __init__(self, app):
        self.app = app

    def __enter__(self):
        self.before = database(self.app)
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            assert database(self.app) == self.before


# --- unknown links ------------------------------------------------------------------------------

def test_unknown_tokens_get_a_404_page_that_says_what_to_do(app, client, seats):
    with Unchanged(app):
        for token in ("A" * 32, "A" * 31, "Zq", seats.token[:-1] + "!", seats.token + "A"):
            response = client.get(f"/seat/{token}")
            assert response.status_code == 404 and response.mimetype == "text/html"
            assert alert(response) == UNKNOWN_LINK
            assert "<h1>Not found</h1>" in response.get_data(as_text=True)
            assert token not in text(response)
            for path in ("move", "preview", "settings", "edit"):
                response = seats.post(path, seats.form(move="pass", action="pass",
                                                        notify="turn"), token=token)
                assert response.status_code == 404, (path, token)
                assert alert(response) == UNKNOWN_LINK


def test_a_post_without_a_valid_csrf_token_is_400_and_changes_nothing(app, seats):
    with Unchanged(app):
        for path in ("move", "preview", "settings", "edit"):
            for csrf in (None, "", "forged", seats.csrf[:-2]):
                data = seats.form(move=seats.document["legal"][0], action="text",
                                  notation=seats.document["legal"][0], notify="turn")
                if csrf is None:
                    del data["csrf_token"]
                else:
                    data["csrf_token"] = csrf
                response = seats.post(path, data)
                assert response.status_code == 400, (path, csrf)
                assert alert(response) == EXPIRED
    # A new client (another browser) cannot use this client's token either.
    other = app.test_client()
    with Unchanged(app):
        response = other.post(f"/seat/{seats.token}/move",
                              data=seats.form(move=seats.document["legal"][0]))
        assert response.status_code == 400 and alert(response) == EXPIRED


# --- malformed forms ------------------------------------------------------------------------------

def _place(seats, **changes):
    """A placement form as the page would send it, for one card the seat holds."""
    code = seats.hand[0]
    fields = {"action": "place", f"cards_{code}": "1", "country": "Franken", "piece1": "Mainz",
              "piece2": ""}
    fields.update(changes)
    return seats.form(**{k: v for k, v in fields.items() if v is not None})


def test_malformed_placements_are_refused_with_the_form_shown_again(app, seats):
    code = seats.hand[0]
    colour = {"R": "red", "G": "green", "C": "cream", "O": "orange", "P": "purple"}[code]
    cases = [
        ({f"cards_{code}": "abc"}, f"the number of {colour} cards must be 0, 1, 2 or 3"),
        ({f"cards_{code}": "9"}, f"the number of {colour} cards must be 0, 1, 2 or 3"),
        ({f"cards_{code}": "-1"}, f"the number of {colour} cards must be 0, 1, 2 or 3"),
        ({f"cards_{code}": "0"}, "choose the cards to play: one to three"),
        ({"country": "Atlantis"}, "choose the country to place in"),
        ({"country": None}, "choose the country to place in"),
        ({"piece1": "Atlantis"}, "choose each piece from the list: an advisor or a cloister field"),
        ({"piece1": None, "piece2": None}, ("choose what to place in Franken: a monastery on "
                                            "a free cloister field, or an advisor")),
        ({"action": "fly"}, "choose what to do: place pieces, exchange a card, or pass"),
        ({"action": None}, "choose what to do: place pieces, exchange a card, or pass"),
    ]
    for path in ("preview", "move"):
        for changes, message in cases:
            data = _place(seats, **changes)
            data["notation"] = "my own words"  # typed, then another button pressed
            with Unchanged(app):
                response = seats.post(path, data)
            assert response.status_code == 422, (path, changes, text(response)[:300])
            assert alert(response) == message, (path, changes)
            page = response.get_data(as_text=True)
            assert "It is your move." in page
            assert f"Turn {seats.document['turn_number']}." in page
            # The form again, as the player filled it in.
            assert shows(page, "turn", str(seats.turn))
            assert shows(page, "notation", "my own words"), (path, changes)
            for name in ("country", "piece1"):
                if data.get(name) and data[name] != "Atlantis":
                    assert shows(page, name, data[name]), (path, changes, name)
            if data.get(f"cards_{code}") is not None:
                assert shows(page, f"cards_{code}", data[f"cards_{code}"]), (path, changes)


def test_other_malformed_moves_are_refused_with_the_form_shown_again(app, seats):
    cases = [
        ({"action": "exchange", "exchange": "Z"}, "choose the card to exchange"),
        ({"action": "exchange"}, "choose the card to exchange"),
        ({"action": "draw", "source": "sky"},
         "choose where to draw from: the deck or a face-up card"),
        ({"action": "text", "notation": ""}, "type a move in the box, for example 'draw deck'"),
        ({"action": "text", "notation": "   "}, "type a move in the box, for example 'draw deck'"),
        ({"action": "text", "notation": "drwa deck"}, "'drwa' is not a move (did you mean draw?)"),
        ({"action": "text", "notation": "x" * 5000}, "a move is at most 200 characters long"),
        ({"action": "text", "notation": "draw deck"},
         "there is nothing to draw now: first play cards or exchange one"),
    ]
    for path in ("preview", "move"):
        for changes, message in cases:
            with Unchanged(app):
                response = seats.post(path, seats.form(**changes))
            assert response.status_code == 422, (path, changes)
            assert alert(response).startswith(message), (path, changes, alert(response))
            if changes.get("notation", "").strip():
                assert shows(response.get_data(as_text=True), "notation", changes["notation"])


def test_a_missing_or_unreadable_turn_number_is_400(app, seats):
    for path in ("preview", "move"):
        for turn in (None, "", "abc", "-1", "1.0", " 1", "0x1", "9" * 10, "9" * 400):
            data = seats.form(action="text", notation=seats.document["legal"][0],
                              move=seats.document["legal"][0])
            if turn is None:
                del data["turn"]
            else:
                data["turn"] = turn
            with Unchanged(app):
                response = seats.post(path, data)
            assert response.status_code == 400, (path, turn)
            assert alert(response).startswith(NO_TURN), (path, turn)
            assert "It is your move." in response.get_data(as_text=True)


def test_a_missing_turn_number_keeps_what_the_player_typed(app, seats):
    data = seats.form(action="text", notation="GG Bayern: Melk, advisor")
    del data["turn"]
    response = seats.post("preview", data)
    assert response.status_code == 400
    assert shows(response.get_data(as_text=True), "notation", "GG Bayern: Melk, advisor")


UNICODE_DIGITS = ["\u00b2", "\u2463", "\u2083"]  # superscript 2, circled 4, subscript 3


def test_a_turn_written_in_unicode_digits_is_400_not_a_crash(app, seats):
    for turn in UNICODE_DIGITS:
        with Unchanged(app):
            response = seats.post("move", seats.form(turn=turn, move="pass"))
        assert response.status_code == 400
        assert alert(response).startswith(NO_TURN)


def test_a_card_count_in_unicode_digits_is_422_not_a_crash(app, seats):
    for count in UNICODE_DIGITS:
        with Unchanged(app):
            response = seats.post("preview", _place(seats, **{f"cards_{seats.hand[0]}": count}))
        assert response.status_code == 422
        assert "cards must be 0, 1, 2 or 3" in alert(response)


def test_a_bad_mail_setting_is_refused(app, seats):
    for choice in ("", "weekly", "EVERY", "x" * 3000):
        with Unchanged(app):
            response = seats.post("settings", seats.form(notify=choice))
        assert response.status_code == 422
        assert alert(response) == "choose one of the offered mail settings"


# --- the game has moved on ------------------------------------------------------------------------

def test_a_wrong_turn_number_is_409_moved_on(app, seats):
    legal = seats.document["legal"][0]
    for path in ("preview", "move"):
        for turn in (seats.turn + 1, seats.turn + 7, 999999999):
            with Unchanged(app):
                response = seats.post(path, seats.form(turn=str(turn), action="text",
                                                       notation=legal, move=legal))
            assert response.status_code == 409, (path, turn)
            message = alert(response)
            assert f"made for move {turn}, which the game has not reached" in message
            assert f"it is at turn {seats.document['turn_number']} (move {seats.turn})" in message
            assert "Nothing was changed" in message


def test_a_double_click_is_told_the_move_was_already_recorded(app, client, seats):
    legal = seats.document["legal"][0]
    preview = seats.post("preview", seats.form(action="text", notation=legal))
    assert preview.status_code == 200
    page = preview.get_data(as_text=True)
    confirm = {"csrf_token": field(page, "csrf_token"), "turn": field(page, "turn"),
               "move": field(page, "move")}
    first = seats.post("move", confirm)
    assert first.status_code == 303
    with Unchanged(app):
        second = seats.post("move", confirm)
    assert second.status_code == 409
    assert alert(second) == (f"Your move '{legal}' was already recorded (a second click or a "
                             "second tab?). Nothing more was changed.")
    # The same for a draw button pressed twice: one card is drawn, not two.
    seats.refresh()
    assert seats.document["view"]["phase"] == "draw"
    draw = seats.form(action="draw", source="deck")
    assert seats.post("move", draw).status_code == 303
    with Unchanged(app):
        again = seats.post("move", draw)
    assert again.status_code == 409 and "already recorded" in alert(again)


def test_a_move_out_of_turn_is_409(app, seats):
    legal = seats.document["legal"][0]
    with Unchanged(app):
        response = seats.post("move", seats.form(move=legal), token=seats.other)
        assert response.status_code == 409
        assert alert(response).startswith("It is not your move: the game waits for "
                                          f"Player {seats.mover} ")
        # A preview out of turn is refused the same way.
        response = seats.post("preview", seats.form(action="text", notation=legal),
                              token=seats.other)
        assert response.status_code == 409
        assert "not your move" in alert(response)
        assert "Confirm this move" not in response.get_data(as_text=True)


def test_an_oversized_body_is_413(app, seats):
    limit = app.config["MAX_CONTENT_LENGTH"]
    for path in ("preview", "move", "settings", "edit"):
        with Unchanged(app):
            response = seats.post(path, seats.form(action="text", notation="x" * limit,
                                                   move="x" * limit))
        assert response.status_code == 413
        assert alert(response) == "That was too much data for one request. Send a shorter move."


# --- reading changes nothing ------------------------------------------------------------------------

def _masked(page: str) -> str:
    return re.sub(r'name="csrf_token" value="[^"]*"', 'name="csrf_token" value=""', page)


def test_gets_and_heads_of_every_seat_url_change_nothing(app, client, seats):
    urls = [f"/seat/{t}" for t in seats.tokens] + [f"/api/v1/seat/{t}" for t in seats.tokens]
    post_only = [f"/seat/{t}/{p}" for t in seats.tokens for p in ("move", "preview", "settings",
                                                                 "edit")]
    post_only += [f"/api/v1/seat/{t}/move" for t in seats.tokens]
    pages = [_masked(client.get(url).get_data(as_text=True)) for url in urls]
    with Unchanged(app):
        for _ in range(2):
            for url in urls:
                assert client.get(url).status_code == 200, url
                head = client.head(url)
                assert head.status_code == 200 and head.get_data() == b"", url
            for url in post_only:
                for method in (client.get, client.head):
                    response = method(url, query_string={"move": "pass", "turn": seats.turn,
                                                         "action": "pass", "notify": "digest"})
                    assert response.status_code == 405, url
    assert [_masked(client.get(url).get_data(as_text=True)) for url in urls] == pages


def test_no_request_answers_500(app, client, seats):
    """Every bad request of this file, and some more, in one loop: all are 4xx, none a crash."""
    token, legal = seats.token, seats.document["legal"][0]
    code = seats.hand[0]
    requests = []
    for path in ("move", "preview", "settings", "edit"):
        for data in (
            {},
            {"csrf_token": seats.csrf},
            seats.form(),
            seats.form(turn=""),
            seats.form(turn="\x00"),
            seats.form(turn="9" * 100),
            seats.form(action="place"),
            seats.form(action="place", **{f"cards_{code}": "1"}),
            seats.form(action="place", **{f"cards_{code}": "1", "country": "Franken"}),
            seats.form(action="place", **{f"cards_{code}": "3", "country": "Franken",
                                          "piece1": "advisor", "piece2": "advisor"}),
            seats.form(action="place", **{f"cards_{code}": "1" * 50}),
            seats.form(action="place", **{f"cards_{code}": "\u0663"}),  # Arabic-Indic 3
            seats.form(action="exchange", exchange=""),
            seats.form(action="draw", source=""),
            seats.form(action="draw", source="deck"),
            seats.form(action="pass"),
            seats.form(action="text", notation="\x00\u202e\ufeff"),
            seats.form(action="text", notation="R Franken: Mainz, Mainz, Mainz"),
            seats.form(move="\x00"),
            seats.form(move="x" * 10000),
            seats.form(move=legal, turn=str(seats.turn + 1)),
            seats.form(notify="\x00"),
        ):
            requests.append((f"/seat/{token}/{path}", data))
            requests.append((f"/seat/{seats.other}/{path}", data))
    with Unchanged(app):
        for url, data in requests:
            if url.endswith("/settings") and data.get("notify") in ("every", "turn", "digest"):
                continue
            response = client.post(url, data=data)
            if url.endswith("/edit") and data.get("csrf_token"):
                assert response.status_code == 200  # back to the form: it only shows
                continue
            assert 400 <= response.status_code < 500, (url, data, response.status_code)
            assert alert(response)
        for raw in (b"\xff\xfe\x00", b"csrf_token=" + seats.csrf.encode() + b"&turn=%FF",
                    b"%" * 100, b"=" * 100 + b"&" * 100):
            response = client.post(f"/seat/{token}/preview", data=raw,
                                   content_type="application/x-www-form-urlencoded")
            assert 400 <= response.status_code < 500, raw
        for content_type in ("multipart/form-data", "multipart/form-data; boundary=x",
                             "application/json", "text/plain"):
            response = client.post(f"/seat/{token}/move", data=b"--x\r\n\r\n",
                                   content_type=content_type)
            assert 400 <= response.status_code < 500, content_type


def test_the_page_shows_what_was_typed_escaped(app, seats):
    evil = '"><script>alert(1)</script>'
    with Unchanged(app):
        for path in ("preview", "move", "edit"):
            response = seats.post(path, seats.form(action="text", notation=evil, country=evil))
            page = response.get_data(as_text=True)
            assert "<script>" not in page
            assert shows(page, "notation", evil), path
