"""The "my games" page: one private page per email address, linked from every mail to a seat,
listing the player's games, whose move, deadlines and results; opening it changes nothing;
an organiser can revoke its links."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from server import field, game_state, html_of, play_moves, text_of
from sqlalchemy import select as sa_select
from sqlmodel import SQLModel, select

import pbem.models  # noqa: F401  (every table, for the snapshot)
from pbem.db import get_engine, reading
from pbem.models import PlayerKey
from pbem.services import create_game, parse_player
from pbem.stewardship import create_admin, revoke_games_links

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

GAMES_LINK = re.compile(r"https?://[^\s<>\"']+/me/([A-Za-z0-9_-]{32})")


def _game(app, names: list[str], seed: str, title: str):
    with app.app_context():
        created = create_game([parse_player(n) for n in names], seed, start=0, title=title)
    return created.game_id, [link.rsplit("/", 1)[1] for _, _, link in created.links]


def _everything(app):
    with get_engine(app).connect() as conn:
        rows = {t.name: [tuple(r) for r in conn.execute(sa_select(t).order_by(*t.primary_key))]
                for t in SQLModel.metadata.sorted_tables}
    folder = Path(app.config["MAIL_FOLDER"])
    return rows, sorted(p.name for p in folder.glob("*")) if folder.is_dir() else []


def _games_token(mailbox, address: str) -> str:
    message = mailbox.to(address)[-1]
    text, html = GAMES_LINK.findall(text_of(message)), GAMES_LINK.findall(html_of(message))
    assert len(text) == 1 and text == html, "one my-games link, the same in both parts"
    return text[0]


def _rows(page: str) -> list[str]:
    body = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row)).strip()
            for row in body.split("</tr>") if "<t" in row]


ANNA = "Anna <anna@example.org>"


def test_every_mail_links_the_players_games_which_lists_them_all(app, client, mailbox):
    """Anna plays two games: her page lists both, says where it is her move and whose
    it is elsewhere, with the deadlines; nobody else's games appear."""
    first, tokens1 = _game(app, [ANNA, "Bruno <b@example.org>", "Chiara <c@example.org>"],
                           "mine-1", "Spring cup")
    second, tokens2 = _game(app, ["Dieter <d@example.org>", "anna <ANNA@example.org>",
                                  "Elif <e@example.org>"], "mine-2", "Club game")
    _game(app, ["X <x@example.org>", "Y <y@example.org>", "Z <z@example.org>"], "other",
          "Not hers")
    token = _games_token(mailbox, "anna@example.org")
    before = _everything(app)
    response = client.get(f"/me/{token}")
    assert response.status_code == 200
    assert _everything(app) == before, "opening the page changed something"
    page = response.get_data(as_text=True)
    assert "anna@example.org" in page and "Not hers" not in page
    assert "It is your move in 1 game." in page
    rows = _rows(page)
    assert len(rows) == 2
    assert rows[0].startswith(f"Spring cup #{first}") and "Your move" in rows[0]
    assert rows[1].startswith(f"Club game #{second}") and "Dieter (yellow)" in rows[1]
    game, _ = game_state(app, first)
    assert game.deadline_at.strftime("%H:%M") in rows[0] and "UTC" in rows[0]


def test_open_is_a_post_that_mints_a_fresh_seat_link(app, client, mailbox):
    """The page's Open button leads to the player's own seat with a new key."""
    game_id, tokens = _game(app, [ANNA, "Bruno <b@example.org>", "Chiara <c@example.org>"],
                            "mine-3", "Spring cup")
    token = _games_token(mailbox, "anna@example.org")
    page = client.get(f"/me/{token}").get_data(as_text=True)
    response = client.post(f"/me/{token}/open", data={
        "csrf_token": field(page, "csrf_token"), "game": str(game_id)})
    assert response.status_code == 303
    seat_token = response.headers["Location"].rsplit("/", 1)[1]
    assert seat_token not in tokens
    seat_page = client.get(f"/seat/{seat_token}").get_data(as_text=True)
    assert "You are <strong>Anna</strong>" in seat_page
    # someone else's game, or nonsense, opens nothing
    other, _ = _game(app, ["X <x@example.org>", "Y <y@example.org>", "Z <z@example.org>"],
                     "other-2", "Not hers")
    before = _everything(app)
    for game in (str(other), "abc", "", "9" * 40):
        refused = client.post(f"/me/{token}/open", data={
            "csrf_token": field(page, "csrf_token"), "game": game})
        assert refused.status_code in (400, 404), game
    assert _everything(app) == before


def test_a_finished_game_shows_its_result(app, client, mailbox):
    """Once a game is over the page says who won, the player's score and place."""
    # A board picture for each of the game's hundreds of mails (test_mail_content covers
    # them) was most of this test's time.
    app.config["MAIL_BOARD_PICTURE"] = False
    game_id, tokens = _game(app, [ANNA, "Bruno <b@example.org>", "Chiara <c@example.org>"],
                            "mine-4", "Short game")
    play_moves(app, tokens, 5000, game_id=game_id)
    game, state = game_state(app, game_id)
    assert game.status == "finished"
    token = _games_token(mailbox, "anna@example.org")
    [row] = _rows(client.get(f"/me/{token}").get_data(as_text=True))
    assert "The game is over" in row
    assert f"Your score: {state.scores[0]}," in row
    assert ("You won" in row) == (0 in __import__("engine").outcome(state).winners)


def test_bad_and_revoked_links_show_nothing(app, client, mailbox):
    """A malformed, unknown or revoked key gets one clear page and no game."""
    game_id, _ = _game(app, [ANNA, "Bruno <b@example.org>", "Chiara <c@example.org>"],
                       "mine-5", "Spring cup")
    token = _games_token(mailbox, "anna@example.org")
    for bad in ("short", "A" * 32, token[:-1] + ("A" if token[-1] != "A" else "B")):
        response = client.get(f"/me/{bad}")
        assert response.status_code == 404 and "Spring cup" not in response.get_data(True)
    with app.app_context():
        admin = create_admin("org@example.org", "a long enough password")
        assert revoke_games_links(admin, game_id, 0, "lost phone") >= 1
    response = client.get(f"/me/{token}")
    assert response.status_code == 404 and "revoked" in response.get_data(as_text=True)
    with reading(app) as db:
        keys = db.exec(select(PlayerKey).where(PlayerKey.email == "anna@example.org")).all()
    assert keys and all(k.revoked_at is not None for k in keys)
    assert all(len(k.token_hash) == 64 and k.token_hash != token for k in keys)


def test_the_key_is_kept_out_of_the_stored_mail_and_the_log(app, client, mailbox, caplog):
    """Once sent, the stored copy of the mail no longer holds the key, and the request log
    masks it."""
    _game(app, [ANNA, "Bruno <b@example.org>", "Chiara <c@example.org>"], "mine-6", "Cup")
    token = _games_token(mailbox, "anna@example.org")
    from pbem.models import OutboxMessage

    with reading(app) as db:
        bodies = [m.text_body + m.html_body for m in db.exec(select(OutboxMessage))]
    assert bodies and not any(token in body for body in bodies)
    from pbem.web import HideSeatSecrets
    import logging

    record = logging.LogRecord("werkzeug", logging.INFO, "", 0, f'"GET /me/{token} HTTP/1.1"',
                               (), None)
    HideSeatSecrets().filter(record)
    assert token not in record.getMessage() and "/me/[hidden]" in record.getMessage()
