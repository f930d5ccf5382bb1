"""The "my games" page: one private page per email address, linked from every mail to a seat,
listing the player's games, whose move, deadlines and results; opening it changes nothing;
an organiser can revoke its links."""

from __future__ import annotations

import re
import threading
import time
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from server import field, game_state, html_of, play_moves, text_of
from sqlalchemy import select as sa_select
from sqlalchemy import text
from sqlmodel import SQLModel, select

import pbem.ground.models  # noqa: F401  (every table, for the snapshot)
from pbem.ground.db import get_engine, get_row, reading, utcnow, writing
from pbem.ground.models import Game, PlayerKey, Seat, SeatKey
from pbem.services.creating import create_game
from pbem.services.players import parse_player
from pbem.services.seats import revoke_seat_links
from pbem.services.stewardship import (
    create_admin,
    hand_over,
    hand_to_bot,
    new_link,
    revoke_games_links,
)

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
    first, _tokens1 = _game(app, [ANNA, "Bruno <b@example.org>", "Chiara <c@example.org>"],
                           "mine-1", "Spring cup")
    second, _tokens2 = _game(app, ["Dieter <d@example.org>", "anna <ANNA@example.org>",
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
    from pbem.ground.models import OutboxMessage

    with reading(app) as db:
        bodies = [m.text_body + m.html_body for m in db.exec(select(OutboxMessage))]
    assert bodies and not any(token in body for body in bodies)
    import logging

    from pbem.web.site import HideSeatSecrets

    record = logging.LogRecord("werkzeug", logging.INFO, "", 0, f'"GET /me/{token} HTTP/1.1"',
                               (), None)
    HideSeatSecrets().filter(record)
    assert token not in record.getMessage() and "/me/[hidden]" in record.getMessage()


# --- a "my games" link leads only to the seats its address holds now, and expires -------------

BRUNO, CHIARA = "Bruno <b@example.org>", "Chiara <c@example.org>"


def _open(client, token: str, game_id: int):
    """The page's Open button for `game_id`, as a browser sends it (the CSRF token from the
    admin's login form: the key's own page may no longer open)."""
    csrf = field(client.get("/admin/login").get_data(as_text=True), "csrf_token")
    return client.post(f"/me/{token}/open", data={"csrf_token": csrf, "game": str(game_id)})


def _seat_keys(app) -> set:
    with reading(app) as db:
        return {k.token_hash for k in db.exec(select(SeatKey))}


def _admin(app) -> int:
    with app.app_context():
        return create_admin("org@example.org", "a long enough password")


def test_a_new_link_for_a_seat_stops_the_leaked_my_games_link(app, client, mailbox):
    """The organiser issues a new link for Anna's seat, whose mail leaked: the leaked "my
    games" link (from any game's mail) no longer mints a seat link nor shows the games; the
    mail with the new seat link brings a "my games" link that works."""
    game_id, _ = _game(app, [ANNA, BRUNO, CHIARA], "leak-1", "Spring cup")
    other_id, _ = _game(app, [ANNA, "Dora <d@example.org>", "Emil <e@example.org>"],
                        "leak-2", "Other cup")  # its mail carried the leaked link
    leaked = _games_token(mailbox, "anna@example.org")
    assert _open(client, leaked, game_id).status_code == 303  # before: it opens the seat
    with app.app_context():
        new_link(_admin(app), game_id, 0, "Anna forwarded her mail by mistake")
    keys = _seat_keys(app)
    for game in (game_id, other_id):
        refused = _open(client, leaked, game)
        assert refused.status_code == 404, refused.get_data(as_text=True)
    assert _seat_keys(app) == keys, "the refused link minted a seat key"
    page = client.get(f"/me/{leaked}")
    assert page.status_code == 404 and "Spring cup" not in page.get_data(as_text=True)
    fresh = _games_token(mailbox, "anna@example.org")
    assert fresh != leaked
    opened = _open(client, fresh, game_id)
    assert opened.status_code == 303
    seat_page = client.get(opened.headers["Location"]).get_data(as_text=True)
    assert "You are <strong>Anna</strong>" in seat_page


def test_a_seat_handed_to_a_computer_player_is_no_longer_the_persons(app, client, mailbox):
    """After Anna's seat goes to a computer player, no "my games" link of hers opens it or
    lists it: not the one she had, nor a fresh one from a later mail of another game."""
    game_id, _ = _game(app, [ANNA, BRUNO, CHIARA], "bot-1", "Spring cup")
    old = _games_token(mailbox, "anna@example.org")
    with app.app_context():
        hand_to_bot(_admin(app), game_id, 0, "random", "Anna is away for a month")
    keys = _seat_keys(app)
    assert _open(client, old, game_id).status_code == 404
    _game(app, [ANNA, "Dora <d@example.org>", "Emil <e@example.org>"], "bot-2", "Later cup")
    fresh = _games_token(mailbox, "anna@example.org")
    keys = _seat_keys(app)
    refused = _open(client, fresh, game_id)
    assert refused.status_code == 404, refused.get_data(as_text=True)
    assert _seat_keys(app) == keys, "a seat key was minted for the computer player's seat"
    page = client.get(f"/me/{fresh}").get_data(as_text=True)
    assert "Later cup" in page and "Spring cup" not in page


def test_a_seat_handed_over_is_the_new_players_only(app, client, mailbox):
    """After Anna's seat is handed to Fritz, Anna's "my games" links neither open nor list
    it, even a fresh one; Fritz's open it."""
    game_id, _ = _game(app, [ANNA, BRUNO, CHIARA], "over-1", "Spring cup")
    old = _games_token(mailbox, "anna@example.org")
    with app.app_context():
        hand_over(_admin(app), game_id, 0, "Fritz", "fritz@example.org", "Anna stops")
    assert _open(client, old, game_id).status_code == 404
    _game(app, [ANNA, "Dora <d@example.org>", "Emil <e@example.org>"], "over-2", "Later cup")
    fresh = _games_token(mailbox, "anna@example.org")
    keys = _seat_keys(app)
    assert _open(client, fresh, game_id).status_code == 404
    assert _seat_keys(app) == keys
    assert "Spring cup" not in client.get(f"/me/{fresh}").get_data(as_text=True)
    fritz = _games_token(mailbox, "fritz@example.org")
    opened = _open(client, fritz, game_id)
    assert opened.status_code == 303
    assert "You are <strong>Fritz</strong>" in client.get(opened.headers["Location"]).get_data(
        as_text=True)


def _age(app, email: str, days: float) -> None:
    """Make the address's keys `days` older than they are."""
    with app.app_context(), writing() as db:
        for key in db.exec(select(PlayerKey).where(PlayerKey.email == email)).all():
            key.created_at -= timedelta(days=days)
            db.add(key)


def test_my_games_links_expire_like_seat_links(app, client, mailbox):
    """A "my games" link stops old_link_days (7) after a newer one was mailed, and
    my_games_link_days (14) after it was mailed, the newest too: a 30-day-old link shows the
    expired page (410) and mints nothing."""
    game_id, _ = _game(app, [ANNA, BRUNO, CHIARA], "old-1", "Spring cup")
    first = _games_token(mailbox, "anna@example.org")
    _game(app, [ANNA, "Dora <d@example.org>", "Emil <e@example.org>"], "old-2", "Later cup")
    newest = _games_token(mailbox, "anna@example.org")
    assert newest != first
    _age(app, "anna@example.org", 6)  # the newer one was mailed 6 days ago: both work
    assert client.get(f"/me/{first}").status_code == 200
    assert _open(client, first, game_id).status_code == 303
    _age(app, "anna@example.org", 2)  # 8 days: the older one has expired, the newest works
    keys = _seat_keys(app)
    expired = client.get(f"/me/{first}")
    assert expired.status_code == 410 and "Spring cup" not in expired.get_data(as_text=True)
    assert "has expired" in expired.get_data(as_text=True)
    assert _open(client, first, game_id).status_code == 410
    assert _seat_keys(app) == keys
    assert client.get(f"/me/{newest}").status_code == 200
    _age(app, "anna@example.org", 5.9)  # the newest, 13.9 days old: still works
    assert _open(client, newest, game_id).status_code == 303
    _age(app, "anna@example.org", 16.1)  # 30 days old, and no newer one: expired
    keys = _seat_keys(app)
    assert client.get(f"/me/{newest}").status_code == 410
    assert _open(client, newest, game_id).status_code == 410
    assert _seat_keys(app) == keys
    app.config["GAMES_MY_GAMES_LINK_DAYS"] = 31  # the bound is the setting
    assert client.get(f"/me/{newest}").status_code == 200


def test_an_open_during_a_revocation_waits_for_it_and_mints_nothing(app, client, mailbox):
    """A "my games" POST that comes while an organiser's new link for the seat is being made
    waits for it and is refused: the check and the new seat key are one transaction."""
    game_id, _ = _game(app, [ANNA, BRUNO, CHIARA], "race-1", "Spring cup")
    token = _games_token(mailbox, "anna@example.org")
    csrf = field(client.get("/admin/login").get_data(as_text=True), "csrf_token")
    answers = []
    with app.app_context(), writing() as db:  # what stewardship.new_link does, held open
        get_row(db, Game, game_id, with_for_update=True)
        seat = db.exec(select(Seat).where(Seat.game_id == game_id, Seat.number == 0)).one()
        revoke_seat_links(db, seat, utcnow())
        opener = threading.Thread(target=lambda: answers.append(client.post(
            f"/me/{token}/open", data={"csrf_token": csrf, "game": str(game_id)})))
        opener.start()
        if db.get_bind().dialect.name == "postgresql":  # until the POST waits for this one
            # (each query its own transaction: pg_stat_activity is a snapshot per transaction)
            with get_engine(app).connect().execution_options(
                    isolation_level="AUTOCOMMIT") as watch:
                deadline = time.monotonic() + 60
                while not watch.execute(text("SELECT count(*) FROM pg_stat_activity WHERE "
                                             "wait_event_type = 'Lock'")).scalar():
                    assert time.monotonic() < deadline, "the POST never waited"
                    time.sleep(0.01)
        # (SQLite: the POST's BEGIN IMMEDIATE waits for this transaction, or comes after it)
    opener.join(60)
    assert answers and answers[0].status_code == 404
    with reading(app) as db:
        live = db.exec(select(SeatKey).join(Seat, Seat.id == SeatKey.seat_id).where(
            Seat.game_id == game_id, Seat.number == 0, SeatKey.revoked_at.is_(None))).all()
    assert live == [], "a seat key survived the revocation"


def test_every_deadline_is_in_the_readers_time_zone_and_the_games_where_it_differs(
        app, client, mailbox):
    """Issue 43, point 8: a game made before Anna chose a time zone showed its deadline in UTC,
    a later one in her zone, on one page; now both are in hers (her profile's), each with the
    game's own time beside it where the game keeps another zone."""
    from datetime import UTC

    from pbem.ground.models import Profile
    from pbem.services.deadlines import time_control

    first, _ = _game(app, [ANNA, "Bruno <b@example.org>", "Chiara <c@example.org>"],
                     "zone-1", "Old game")
    with writing(app) as session:
        session.add(Profile(email="anna@example.org", name="Anna", timezone="Europe/Berlin"))
    with app.app_context():
        second = create_game([parse_player(n) for n in (ANNA, "Dora <d@example.org>",
                                                        "Elif <e@example.org>")],
                             "zone-2", start=0, title="New game",
                             time=time_control(timezone="America/New_York")).game_id
        third = create_game([parse_player(n) for n in (ANNA, "Fritz <f@example.org>",
                                                       "Gabi <g@example.org>")],
                            "zone-3", start=0, title="Berlin game",
                            time=time_control(timezone="Europe/Berlin")).game_id
    token = _games_token(mailbox, "anna@example.org")
    rows = {row.split(" #")[0]: row for row in _rows(client.get(f"/me/{token}")
                                                     .get_data(as_text=True))}
    for title, game_id, zone in (("Old game", first, "UTC"), ("New game", second,
                                                             "America/New_York")):
        game, _ = game_state(app, game_id)
        berlin = game.deadline_at.astimezone(ZoneInfo("Europe/Berlin"))
        own = game.deadline_at.astimezone(UTC if zone == "UTC" else ZoneInfo(zone))
        row = rows[title]
        assert f"{berlin:%H:%M} (Europe/Berlin)" in row, row
        suffix = "UTC" if zone == "UTC" else f"({zone})"
        assert "in the game&#39;s time zone: " in row and f"{own:%H:%M} {suffix}" in row, row
    assert "(Europe/Berlin)" in rows["Berlin game"] and str(third) in rows["Berlin game"]
    assert "time zone" not in rows["Berlin game"]  # the same zone: said once
