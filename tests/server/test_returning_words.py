"""No English word on issue 33's pages and mails for a German or a Spanish player: the profile
page (with ratings and the calendar link), the public profile page, the lobby (an open rated
game with a minimum rating and the rule book's reading), the ranking page, a tournament's
standings page, the undo notices of the seat page, the move and calendar feeds, and the mails
(the "my games" link asked at /me, lobby news, a tournament's rounds, undo requests and
answers), read as tests/server/test_english_words.py reads a whole game."""

from __future__ import annotations

import re

import pytest
from server import Mailbox, html_of, make_app, play_moves, text_of
from sqlmodel import select
from test_english_words import english_in, english_words  # noqa: F401 (the fixture)
from test_tournaments import play_out, play_round, tables_of, tournament

from pbem.games import rules_for
from pbem.ground.db import reading, writing
from pbem.ground.models import FEED_CALENDAR, FEED_SEAT, Profile, Seat
from pbem.services import (
    feeds,
    game_settings,
    lobby,
    mail,
    pairings,
    stewardship,
    tournaments,
    undo,
)
from pbem.services.creating import create_game
from pbem.services.deadlines import time_control
from pbem.services.players import PlayerSpec
from pbem.services.profiles import profile_for, request_link
from pbem.services.tournaments import Setup

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

KIND = "kardinal-koenig"
PEOPLE = {"Bernd": "de", "Carmen": "es", "Dora": "de", "Elena": "es", "Anna": "en",
          "Frank": "en"}
TOURNAMENT = "Kardinal 2026"


def _address(name: str) -> str:
    return f"{name.lower()}@example.org"


def _spec(name: str) -> PlayerSpec:
    return PlayerSpec(name, _address(name), language=PEOPLE[name])


@pytest.fixture
def app(tmp_path):
    return make_app(tmp_path / "instance", GAMES_LOBBY=True, MAIL_BOARD_PICTURE=False,
                    SCHEDULER_OUTAGE_MINUTES=10**6)


def test_issue_33s_pages_and_mails_in_german_and_spanish_have_no_english_word(
        app, english_words):
    rules = rules_for(KIND)
    names = {c.name for c in rules.board.countries} | {f.name for f in rules.board.fields} \
        | set(PEOPLE) | {TOURNAMENT, "Play-by-E-Mail"}  # German's word for it
    box = Mailbox(app)
    client = app.test_client()

    # A rated game of four, played to its end: ratings, finished games.
    with app.app_context():
        rated = create_game([_spec(n) for n in ("Bernd", "Carmen", "Dora", "Elena")],
                            "words-rated", kind=KIND, start=0, rated=True)
    play_out(app, rated.game_id, "words-rated")
    # Two unrated games where Bernd asks to take back his first placement before his draws (a
    # turn that showed a deck card is not taken back by agreement, issue 42): in the first
    # Carmen and Anna agree (the turn is taken back), in the second Carmen declines.
    pages = []
    for seed, answers in (("words-undo", ("agree", "agree")), ("words-no", ("decline",))):
        with app.app_context():
            asked = create_game([_spec(n) for n in ("Bernd", "Carmen", "Anna")], seed,
                                kind=KIND, start=0)
        tokens = {n: link.rsplit("/", 1)[1] for n, (__, __, link) in
                  zip(("Bernd", "Carmen", "Anna"), asked.links)}
        play_moves(app, list(tokens.values()), 1, game_id=asked.game_id)
        with app.app_context():
            undo.ask(tokens["Bernd"])
        pages += [("de", "seat page, asked", client.get(f"/seat/{tokens['Bernd']}")),
                  ("es", "seat page, asked of", client.get(f"/seat/{tokens['Carmen']}"))]
        for name, choice in zip(("Carmen", "Anna"), answers):
            with app.app_context():
                undo.answer(tokens[name], choice)
            pages.append(("es", f"seat page, {choice}", client.get(
                f"/seat/{tokens['Carmen']}")))

    # Profiles in their languages; "my games" keys; a calendar and a move feed each.
    keys = {}
    with app.app_context(), writing() as session:
        for name in ("Bernd", "Carmen"):
            profile = profile_for(session, _address(name))
            profile.language = PEOPLE[name]
            session.add(profile)
            keys[name] = mail.mint_player_key(session, _address(name))
        public = {n: session.exec(select(Profile).where(
            Profile.email == _address(n))).one().public_id for n in ("Bernd", "Carmen")}
    with app.app_context():
        feeds.new_calendar_feed(keys["Carmen"])
        calendar = feeds.calendar_feed_token(keys["Carmen"])
        feeds.new_seat_feed(tokens["Bernd"])
    with app.app_context(), reading() as session:
        bernd_seat = session.exec(select(Seat).where(
            Seat.game_id == asked.game_id, Seat.email == _address("Bernd"))).one()
    with app.app_context():
        moves = feeds.seat_feed_token(bernd_seat.id, _address("Bernd"))
        assert calendar and moves
        url_of = {FEED_CALENDAR: feeds.feed_url(calendar, FEED_CALENDAR),
                  FEED_SEAT: feeds.feed_url(moves, FEED_SEAT)}
    base = app.config["BASE_URL"].rstrip("/")
    pages.append(("es", "calendar", client.get(url_of[FEED_CALENDAR].removeprefix(base))))
    pages.append(("de", "move feed", client.get(url_of[FEED_SEAT].removeprefix(base))))

    # The lobby: Bernd posts a rated game with a minimum rating, Carmen joins; a second one
    # Bernd withdraws after Carmen joined (lobby news for her).
    with app.app_context():
        posting, errors = game_settings.read_lobby_form({
            "game": KIND, "players": "4", "deadline_hours": "72", "timezone": "Europe/Berlin",
            "rated": "on", "min_rating": "-50", "weekend_pause": "on",
            "variant": list(rules.variants)[-1]})
        assert not errors, errors
        first = lobby.post(keys["Bernd"], posting, "192.0.2.1")
        lobby.join(keys["Carmen"], first, "192.0.2.2")
        second = lobby.post(keys["Bernd"], posting, "192.0.2.1")
        lobby.join(keys["Carmen"], second, "192.0.2.2")
        lobby.withdraw(keys["Bernd"], second)
        request_link(_address("Bernd"), "192.0.2.9")
        request_link(_address("Carmen"), "192.0.2.9")

    # A Swiss event of six, its first round played.
    with app.app_context():
        admin = stewardship.create_admin("boss@example.org", "a long enough password")
        tid = tournaments.create_tournament(admin, Setup(
            name=TOURNAMENT, kind=KIND, variant=None, format=pairings.SWISS,
            time=time_control(72, "24", False, "UTC"), players=[_spec(n) for n in PEOPLE],
            table_size=3, rounds=3))
    play_round(app, tid, round=1)
    assert all(t.round == 1 for t in tables_of(app, tid))
    standings = f"/tournaments/{tournament(app, tid).public_id}"

    for name, language in (("Bernd", "de"), ("Carmen", "es")):
        pages.append((language, "profile", client.get(f"/me/{keys[name]}/profile")))
        pages.append((language, "lobby", client.get(f"/me/{keys[name]}/lobby")))
        pages.append((language, "games", client.get(f"/me/{keys[name]}")))
    for language in ("de", "es"):
        heard = {"Accept-Language": language}
        for what, path in (("public lobby", "/lobby"), ("ranking", f"/ratings/{KIND}"),
                           ("standings", standings), ("public profile",
                                                      f"/players/{public['Bernd']}"),
                           ("public profile", f"/players/{public['Carmen']}")):
            pages.append((language, what, client.get(path, headers=heard)))

    found = []
    for language, what, response in pages:
        assert response.status_code == 200, (what, response.status_code)
        # A calendar's PRODID names the program for other programs, not for people.
        text = re.sub(r"(?m)^PRODID:.*$", "", response.get_data(as_text=True))
        left = english_in(text, english_words[language], names)
        if left:
            found.append((language, what, left))
    kinds = set()
    for name in ("Bernd", "Carmen", "Dora", "Elena"):
        language = PEOPLE[name]
        for message in box.to(_address(name)):
            kinds.add(str(message["Subject"]))
            for is_html, body in ((False, text_of(message)), (True, html_of(message))):
                left = english_in(body, english_words[language], names, is_html)
                if left:
                    found.append((language, str(message["Subject"]), left))
    # Every kind of mail of issue 33 was read in both languages.
    for words in (r"Partien|partidas", r"offenen|abierta", TOURNAMENT,
                  r"zurück|deshacer|retirar|atrás"):
        assert any(re.search(words, s) for s in kinds), (words, sorted(kinds))
    # "du" to a player: the invitations of a tournament's round are "ihre", never "Ihre".
    assert any("Partie: ihre Einladung kommt" in text_of(m) for m in box.to(_address("Bernd")))
    # The turn taken back is told in each reader's words.
    assert any("ziehe Stapel" in text_of(m) for m in box.to(_address("Bernd")))
    assert any("robar mazo" in text_of(m) for m in box.to(_address("Carmen")))
    assert not found, "\n".join(map(str, found))
