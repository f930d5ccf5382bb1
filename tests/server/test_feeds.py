"""The feeds (issue 33): a game's moves as Atom, public for the spectator view and private for a
seat, read back by feedparser; their keys (stable, hashed, revoked); conditional GET."""

from __future__ import annotations

import re

import feedparser
import pytest
from server import field, game_state, new_game, play_moves
from sqlmodel import select

from pbem.ground.db import reading
from pbem.ground.logs import hide_secrets
from pbem.ground.models import FeedKey, Seat
from pbem.ground.tokens import hash_token
from pbem.services import talk
from pbem.services.seats import revoke_seat_links
from pbem.services.stewardship import create_admin, hand_over

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

FEED_LINK = re.compile(r"http://localhost/feeds/([A-Za-z0-9_-]{32})/moves\.atom")
SECRET = "the-private-word-zebra"


def _draw_first(legal):
    return next((m for m in legal if str(m) == "draw deck"), legal[0])


def _played(app, moves: int = 9, seed: str = "feeds-1"):
    created, tokens = new_game(app, players=3, seed=seed)
    play_moves(app, tokens, moves, game_id=created.game_id, pick=_draw_first)
    game, __ = game_state(app, created.game_id)
    return game, tokens


def _feed_key(client, token: str) -> str:
    page = client.get(f"/seat/{token}").get_data(as_text=True)
    response = client.post(f"/seat/{token}/feed", data={"csrf_token": field(page, "csrf_token")})
    assert response.status_code == 303
    keys = FEED_LINK.findall(client.get(f"/seat/{token}").get_data(as_text=True))
    assert len(keys) == 1
    return keys[0]


def _spectator_lines(app, game) -> list[list[str]]:
    from pbem.games import rules_for
    from pbem.services.log import log_for

    with app.test_request_context(), reading() as session:
        entries = log_for(session, game, -1, 50, rules_for(game.kind))[0]
        return [list(e.lines) for e in entries]


def test_the_public_feed_is_the_spectator_log_without_hands_or_private_messages(app, client):
    """Every move is an entry in a spectator's words; no seat's own draw, no message."""
    game, tokens = _played(app)
    with app.app_context():
        talk.post_message(tokens[0], f"psst {SECRET}", "1")
        talk.post_message(tokens[0], f"hello all {SECRET}-public", None)
    response = client.get(f"/watch/{game.watch_id}/feed.atom")
    assert response.status_code == 200
    assert response.mimetype == "application/atom+xml"
    body = response.get_data(as_text=True)
    parsed = feedparser.parse(response.data)
    assert not parsed.bozo, parsed.bozo_exception
    assert parsed.feed.title == f"{game.title} #{game.id}: the moves"
    assert len(parsed.entries) == game.turn == 9
    expected = _spectator_lines(app, game)
    assert [e.content[0].value for e in parsed.entries] == ["\n".join(lines)
                                                            for lines in expected]
    assert any("drew a card from the deck" in e.content[0].value for e in parsed.entries)
    assert SECRET not in body and "(you)" not in body
    assert len({e.id for e in parsed.entries}) == 9
    assert parsed.entries[0].link == f"http://localhost/watch/{game.watch_id}?at=9"
    # The spectator page names the feed for browsers and feed readers.
    page = client.get(f"/watch/{game.watch_id}").get_data(as_text=True)
    assert f'href="/watch/{game.watch_id}/feed.atom"' in page


def test_the_public_feed_speaks_the_configured_language_or_the_asked_one(app, client):
    game, __ = _played(app, moves=3, seed="feeds-lang")
    english = feedparser.parse(client.get(f"/watch/{game.watch_id}/feed.atom").data)
    german = feedparser.parse(client.get(f"/watch/{game.watch_id}/feed.atom?lang=de").data)
    assert english.feed.language == "en" and german.feed.language == "de"
    assert german.feed.title == f"{game.title} #{game.id}: die Züge"
    assert german.entries[0].content[0].value != english.entries[0].content[0].value
    refused = client.get(f"/watch/{game.watch_id}/feed.atom?lang=xx")
    assert refused.status_code == 400 and "unknown language" in refused.get_data(as_text=True)
    app.config["GAMES_LANGUAGE"] = "es"
    spanish = feedparser.parse(client.get(f"/watch/{game.watch_id}/feed.atom").data)
    assert spanish.feed.language == "es"
    assert spanish.feed.title == f"{game.title} #{game.id}: las jugadas"
    assert client.get("/watch/nosuchgame123/feed.atom").status_code == 404
    assert client.get("/watch/bad!/feed.atom").status_code == 404


def test_feeds_answer_a_poll_of_an_unchanged_feed_with_304(app, client):
    """ETag and Last-Modified; a move makes a new version."""
    game, tokens = _played(app, moves=2, seed="feeds-etag")
    url = f"/watch/{game.watch_id}/feed.atom"
    first = client.get(url)
    etag, modified = first.headers["ETag"], first.headers["Last-Modified"]
    again = client.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.data == b""
    assert client.get(url, headers={"If-Modified-Since": modified}).status_code == 304
    assert client.get(url + "?lang=de", headers={"If-None-Match": etag}).status_code == 200
    play_moves(app, tokens, 1, game_id=game.id)
    moved = client.get(url, headers={"If-None-Match": etag})
    assert moved.status_code == 200 and moved.headers["ETag"] != etag
    assert len(feedparser.parse(moved.data).entries) == 3
    # The seat's private feed too, and it is for that seat only: no shared cache keeps it.
    key = _feed_key(client, tokens[0])
    private = client.get(f"/feeds/{key}/moves.atom")
    assert private.headers["Cache-Control"] == "private, no-cache"
    assert client.get(f"/feeds/{key}/moves.atom",
                      headers={"If-None-Match": private.headers["ETag"]}).status_code == 304


def test_a_seat_feed_shows_its_own_draws_only_and_its_link_is_stable(app, client):
    """The seat page shows the same link on every visit; the feed tells this seat what it drew
    and no other seat's draw; making the link is a POST (a GET makes nothing)."""
    __, tokens = _played(app, seed="feeds-seat")
    before = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    assert not FEED_LINK.search(before) and "Make a feed link" in before
    with app.app_context(), reading() as session:
        assert session.exec(select(FeedKey)).all() == []
    assert client.post(f"/seat/{tokens[0]}/feed").status_code == 400  # no CSRF token
    key = _feed_key(client, tokens[0])
    for __ in range(2):
        assert FEED_LINK.findall(client.get(f"/seat/{tokens[0]}").get_data(as_text=True)) \
            == [key]
    with app.app_context(), reading() as session:
        stored = session.exec(select(FeedKey)).one()
    assert stored.token_hash == hash_token(key) and key not in stored.nonce
    with app.app_context():
        talk.post_message(tokens[1], f"to seat 0 only {SECRET}", "0")
    parsed = feedparser.parse(client.get(f"/feeds/{key}/moves.atom").data)
    assert not parsed.bozo
    assert len(parsed.entries) == 9
    text = "\n".join(e.content[0].value for e in parsed.entries)
    assert SECRET not in text
    draws = [e for e in parsed.entries if "from the deck" in e.content[0].value]
    mine = [e for e in draws if "(you) drew" in e.content[0].value]
    assert mine and len(mine) < len(draws), "its own draws named, the others' not"
    seat0 = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    assert all(e.author.split(" (")[0] in seat0 for e in parsed.entries)
    assert hide_secrets(f"GET /feeds/{key}/moves.atom") == "GET /feeds/[hidden]/moves.atom"


def test_a_revoked_or_unknown_seat_feed_is_gone(app, client):
    """410 after a new link, after the seat's links are revoked, and when the seat changes
    hands; 404 for a key that never was."""
    game, tokens = _played(app, moves=2, seed="feeds-revoke")
    old = _feed_key(client, tokens[0])
    new = _feed_key(client, tokens[0])
    assert old != new
    assert client.get(f"/feeds/{old}/moves.atom").status_code == 410
    assert client.get(f"/feeds/{new}/moves.atom").status_code == 200
    assert client.get("/feeds/" + "A" * 32 + "/moves.atom").status_code == 404
    assert client.get("/feeds/short/moves.atom").status_code == 404
    assert client.get(f"/feeds/{new}/deadlines.ics").status_code == 404  # the wrong kind
    from pbem.ground.db import utcnow, writing
    with app.app_context(), writing() as session:
        seat = session.exec(select(Seat).where(Seat.game_id == game.id,
                                               Seat.number == 0)).one()
        revoke_seat_links(session, seat, utcnow())
    assert client.get(f"/feeds/{new}/moves.atom").status_code == 410
    # Seat 1 changes hands: the feed of its former holder stops at once.
    key1 = _feed_key(client, tokens[1])
    with app.app_context():
        admin = create_admin("admin@example.org", "a long enough password")
        hand_over(admin, game.id, 1, "Newcomer", "new@example.org", "left the club")
    gone = client.get(f"/feeds/{key1}/moves.atom")
    assert gone.status_code == 410 and "no longer works" in gone.get_data(as_text=True)


# --- the calendar of an address's deadlines ------------------------------------------------------

GAMES_LINK = re.compile(r"https?://[^\s<>\"']+/me/([A-Za-z0-9_-]{32})")
CALENDAR_LINK = re.compile(r"http://localhost/feeds/([A-Za-z0-9_-]{32})/deadlines\.ics")


def _games_token(mailbox, address: str) -> str:
    from server import text_of

    return GAMES_LINK.findall(text_of(mailbox.to(address)[-1]))[0]


def _calendar_key(client, games_token: str) -> str:
    page = client.get(f"/me/{games_token}").get_data(as_text=True)
    response = client.post(f"/me/{games_token}/calendar",
                           data={"csrf_token": field(page, "csrf_token")})
    assert response.status_code == 303
    keys = CALENDAR_LINK.findall(client.get(f"/me/{games_token}").get_data(as_text=True))
    assert len(keys) == 1
    return keys[0]


def _two_games(app):
    """Anna to move in the first game; in the second she plays third, Bruno to move."""
    from pbem.services.creating import create_game
    from pbem.services.players import parse_player

    people = ["Anna <anna@example.org>", "Bruno <b@example.org>", "Chiara <c@example.org>"]
    with app.app_context():
        first = create_game([parse_player(p) for p in people], "cal-1", start=0, title="Spring")
        second = create_game([parse_player(p) for p in people[1:] + people[:1]], "cal-2",
                             start=0, title="Autumn")
    return [[link.rsplit("/", 1)[1] for __, __, link in c.links] for c in (first, second)], \
        (first.game_id, second.game_id)


def test_the_calendar_lists_each_running_games_deadline_for_two_parsers(app, client, mailbox):
    """An event at each deadline (with the game's reminders as alarms where it is her move),
    read by icalendar and by vobject, which parses iCalendar on its own."""
    import vobject
    from icalendar import Calendar

    (tokens1, __), (first, second) = _two_games(app)
    games_token = _games_token(mailbox, "anna@example.org")
    page = client.get(f"/me/{games_token}").get_data(as_text=True)
    assert "Make a calendar link" in page and not CALENDAR_LINK.search(page)
    key = _calendar_key(client, games_token)
    response = client.get(f"/feeds/{key}/deadlines.ics")
    assert response.status_code == 200 and response.mimetype == "text/calendar"
    assert response.headers["Cache-Control"] == "private, no-cache"
    assert "Date" not in response.headers  # the HTTP server adds the one (issue 43, point 12)
    spring, __ = game_state(app, first)
    autumn, __ = game_state(app, second)

    parsed = Calendar.from_ical(response.data)
    events = {str(e["summary"]): e for e in parsed.walk("VEVENT")}
    mine = events[f"Your move in Spring #{first}: deadline"]
    assert mine.decoded("dtstart") == spring.deadline_at.replace(microsecond=0)
    assert sorted(a.decoded("trigger").total_seconds() / 3600 for a in mine.walk("VALARM")) \
        == [-24, -2]
    waiting = events[f"Autumn #{second}: Bruno's deadline"]
    assert waiting.decoded("dtstart") == autumn.deadline_at.replace(microsecond=0)
    assert list(waiting.walk("VALARM")) == []
    assert len(events) == 2

    again = vobject.readOne(response.get_data(as_text=True))
    read = {e.summary.value: e for e in again.vevent_list}
    assert set(read) == set(events)
    assert read[f"Your move in Spring #{first}: deadline"].dtstart.value \
        == spring.deadline_at.replace(microsecond=0)
    assert len(read[f"Your move in Spring #{first}: deadline"].valarm_list) == 2
    assert len({e.uid.value for e in again.vevent_list}) == 2
    assert "anna@example.org" not in response.get_data(as_text=True)

    # Anna moves in Spring: her event there becomes Bruno's deadline, without alarms.
    etag = response.headers["ETag"]
    assert client.get(f"/feeds/{key}/deadlines.ics",
                      headers={"If-None-Match": etag}).status_code == 304
    play_moves(app, tokens1, 3, game_id=first, until=lambda s: s.current != 0)
    moved = client.get(f"/feeds/{key}/deadlines.ics", headers={"If-None-Match": etag})
    assert moved.status_code == 200
    summaries = sorted(str(e["summary"]) for e in Calendar.from_ical(moved.data).walk("VEVENT"))
    assert summaries == [f"Autumn #{second}: Bruno's deadline",
                         f"Spring #{first}: Bruno's deadline"]


def test_a_new_calendar_link_revokes_the_old_and_the_calendar_speaks_her_language(
        app, client, mailbox):
    from icalendar import Calendar

    from pbem.services.seat_settings import set_language

    (__, tokens2), (first, __) = _two_games(app)
    games_token = _games_token(mailbox, "anna@example.org")
    old = _calendar_key(client, games_token)
    assert CALENDAR_LINK.findall(client.get(f"/me/{games_token}").get_data(as_text=True)) \
        == [old]
    new = _calendar_key(client, games_token)
    assert new != old
    assert client.get(f"/feeds/{old}/deadlines.ics").status_code == 410
    assert client.get(f"/feeds/{new}/moves.atom").status_code == 404
    assert client.post(f"/me/{games_token}/calendar").status_code == 400  # no CSRF token
    with app.app_context():
        set_language(tokens2[2], "de")  # her seat in her latest game
    parsed = Calendar.from_ical(client.get(f"/feeds/{new}/deadlines.ics").data)
    assert f"Du bist am Zug in Spring #{first}: Frist" in \
        [str(e["summary"]) for e in parsed.walk("VEVENT")]


def test_the_feeds_leave_the_date_header_to_the_http_server(app, client):
    """Issue 43, point 12: the Atom and calendar answers carried `Date` twice behind gunicorn
    (one from the answer, one from the server): the answer carries none of its own, whether
    whole or 304."""
    created, _ = new_game(app, 3, "date")
    game, __ = game_state(app, created.game_id)
    url = f"/watch/{game.watch_id}/feed.atom"
    whole = client.get(url)
    assert whole.status_code == 200 and "Date" not in whole.headers
    again = client.get(url, headers={"If-None-Match": whole.headers["ETag"]})
    assert again.status_code == 304 and "Date" not in again.headers


@pytest.mark.parametrize("way", ["revoke my games links", "new link", "change email",
                                 "hand over", "hand to bot"])
def test_revoking_an_addresss_my_games_links_revokes_its_calendar(app, client, mailbox, way):
    """A calendar made with a leaked "my games" link stops with the links (410), whichever way
    they are revoked, and shows no game made afterwards; a new link makes a new one."""
    from pbem.services import stewardship
    from pbem.services.creating import create_game
    from pbem.services.players import parse_player

    __, (first, __) = _two_games(app)
    leaked = _games_token(mailbox, "anna@example.org")
    key = _calendar_key(client, leaked)
    assert client.get(f"/feeds/{key}/deadlines.ics").status_code == 200
    with app.app_context():
        admin = create_admin("admin@example.org", "a long enough password")
        reason = "her link leaked"
        if way == "revoke my games links":
            assert stewardship.revoke_games_links(admin, first, 0, reason) >= 1
        elif way == "new link":
            stewardship.new_link(admin, first, 0, reason)
        elif way == "change email":
            stewardship.change_email(admin, first, 0, "anna.new@example.org", reason)
        elif way == "hand over":
            stewardship.hand_over(admin, first, 0, "Dora", "dora@example.org", reason)
        else:
            stewardship.hand_to_bot(admin, first, 0, "random", reason)
        create_game([parse_player(p) for p in ["Anna <anna@example.org>",
                                               "Bruno <b@example.org>",
                                               "Chiara <c@example.org>"]],
                    "cal-after", start=0, title="Secret Winter")
    gone = client.get(f"/feeds/{key}/deadlines.ics")
    assert gone.status_code == 410 and "Secret Winter" not in gone.get_data(as_text=True)
    assert client.get(f"/me/{leaked}").status_code == 404
    fresh = _calendar_key(client, _games_token(mailbox, "anna@example.org"))
    assert fresh != key and client.get(f"/feeds/{fresh}/deadlines.ics").status_code == 200
