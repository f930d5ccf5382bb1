"""Times on the seat page: the game's time zone until a player chooses their own, messages in
the seat's zone, and a vacation ended early from the page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from server import field, game_state, new_game
from sqlmodel import select

from pbem.ground.db import reading, utcnow
from pbem.ground.models import Seat

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL


def _berlin_game(app, seed):
    from pbem.services.deadlines import time_control

    with app.app_context():
        time = time_control(72, "24,2", False, "Europe/Berlin")
    return new_game(app, 3, seed, start=0, time=time)


def _seat(app, game_id, number) -> Seat:
    with app.app_context(), reading() as session:
        return session.exec(select(Seat).where(Seat.game_id == game_id,
                                               Seat.number == number)).one()


def _post(client, token, path, **data):
    page = client.get(f"/seat/{token}").get_data(as_text=True)
    return client.post(f"/seat/{token}/{path}", data={"csrf_token": field(page, "csrf_token"),
                                                      **data}, follow_redirects=True)


def test_deadlines_show_in_the_games_zone_until_the_player_chooses(app, client):
    """A Berlin game shows its players Berlin time; a player's own zone wins once chosen."""
    _created, tokens = _berlin_game(app, "tz-1")
    page = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    assert "(Europe/Berlin)" in page and " UTC." not in page
    assert 'value="Europe/Berlin"' in page
    other = client.get(f"/seat/{tokens[1]}").get_data(as_text=True)
    assert "who has until" in other and "(Europe/Berlin)" in other
    response = _post(client, tokens[1], "timezone", timezone="America/New_York")
    page = response.get_data(as_text=True)
    assert "Times are now shown in America/New_York." in page
    assert "(America/New_York)" in page and "(Europe/Berlin)</time>" not in page


def test_the_vacation_message_is_in_the_seats_zone(app, client):
    """After choosing a zone, the vacation's confirmation speaks that zone, not UTC."""
    created, tokens = _berlin_game(app, "tz-2")
    _post(client, tokens[1], "timezone", timezone="Asia/Tokyo")
    page = _post(client, tokens[1], "vacation", days="2").get_data(as_text=True)
    until = _seat(app, created.game_id, 1).vacation_until
    assert until is not None
    assert "Your clock is paused until" in page
    message = page.split("Your clock is paused until", 1)[1].split("</p>", 1)[0]
    assert "(Asia/Tokyo)" in message and "UTC" not in message
    local = until.astimezone(__import__("zoneinfo").ZoneInfo("Asia/Tokyo"))
    assert f"{local.hour:02d}:{local.minute:02d}" in message


def test_a_vacation_ends_early_from_the_page_and_unused_days_come_back(app, client):
    """"End my vacation now" stops the pause, gives back the whole days not used, and the
    deadline of a seat to move is computed anew without the rest of the vacation."""
    created, tokens = _berlin_game(app, "tz-3")
    before, _ = game_state(app, created.game_id)
    page = _post(client, tokens[0], "vacation", days="3").get_data(as_text=True)
    assert "End my vacation now" in page
    during, _ = game_state(app, created.game_id)
    assert during.deadline_at - before.deadline_at >= timedelta(days=3) - timedelta(minutes=1)
    page = _post(client, tokens[0], "vacation/end").get_data(as_text=True)
    assert "Your vacation is over: your clock runs again. 2 unused days are given back." in page
    seat = _seat(app, created.game_id, 0)
    assert seat.vacation_days_used == 1 and seat.vacation_until <= utcnow()
    after, _ = game_state(app, created.game_id)
    assert after.deadline_at < during.deadline_at - timedelta(days=2)
    assert "End my vacation now" not in page
    again = _post(client, tokens[0], "vacation/end")
    assert again.status_code == 422 and "not on vacation" in again.get_data(as_text=True)
    assert _seat(app, created.game_id, 0).vacation_days_used == 1


def test_the_maps_legend_shows_each_card_colour_and_its_countries(app, client):
    """Under the map, each card colour with its swatch and the countries it places in."""
    _created, tokens = _berlin_game(app, "legend")
    page = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    legend = page.split('<ul class="legend"', 1)[1].split(">", 1)[1].split("</ul>", 1)[0]
    import re

    items = [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", item)).strip()
             for item in legend.split("</li>") if "<li" in item]
    # Each letter is named as the notation's (issue 32: "C" beside "Creme").
    assert items == ["R Red cards (R in the notation): Franken, Aragon",
                     "G Green cards (G in the notation): Bayern, Burgund",
                     "C Cream cards (C in the notation): Lothringen, Italien",
                     "O Orange cards (O in the notation): England, Schwaben",
                     "P Purple cards (P in the notation): Frankreich"]
    assert 'class="swatch card-P"' in legend


def test_mails_give_deadlines_in_the_games_zone_until_the_player_chooses(app, client, mailbox):
    """The invitation of a Berlin game says the deadline in Berlin time, not UTC."""
    from server import text_of

    created, _tokens = _berlin_game(app, "tz-mail")
    [invitation] = mailbox.to("p0@example.org")
    text = text_of(invitation)
    game, _ = game_state(app, created.game_id)
    berlin = game.deadline_at.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Berlin"))
    assert f"{berlin.hour:02d}:{berlin.minute:02d} (Europe/Berlin)" in text
    assert " UTC" not in text
