"""Issue 42, point 7: /me asked for someone else's address never locks that person out (the
limits count the requester's network); the per-network limit counts an IPv4 /24 and an IPv6
/64, not one exact address; a known and an unknown address cost the same statements; display
names are unique among rated players, whatever case, spaces or look-alike letters, and the
computer players' names are reserved; the public page lists finished games a page at a time."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from server import Mailbox, field, finish_game
from sqlalchemy import event
from sqlmodel import select

from pbem.games import rules_for
from pbem.ground.db import get_engine, reading, utcnow, writing
from pbem.ground.models import Game, Profile, Seat
from pbem.services import mail
from pbem.services.creating import create_game
from pbem.services.players import bot_player, parse_player

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

KIND = "knights-castles"


def _ask(app, address: str, client_address: str):
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = client_address
    page = client.get("/me").get_data(as_text=True)
    return client.post("/me", data={"csrf_token": field(page, "csrf_token"), "email": address})


def _game(app, people: list[str], rated: bool = False, when=None) -> int:
    specs = [parse_player(p) if "<" in p else bot_player(p, KIND) for p in people]
    with app.app_context():
        return create_game(specs, "p", kind=KIND, rated=rated, now=when).game_id


def test_others_asking_for_an_address_never_lock_its_owner_out(app):
    app.config["MAIL_BOARD_PICTURE"] = False
    mailbox = Mailbox(app)
    _game(app, ["Vera <vera@example.org>", "random"])
    answers = [_ask(app, "vera@example.org", "203.0.113.5").status_code for _ in range(4)]
    assert answers == [200, 200, 200, 429], "the requester is limited"
    refused = _ask(app, "vera@example.org", "203.0.113.5").get_data(as_text=True)
    assert "still works" in refused
    assert "still works" in app.test_client().get("/me").get_data(as_text=True)
    before = len(mailbox.to("vera@example.org"))
    own = _ask(app, "vera@example.org", "192.0.2.44")
    assert own.status_code == 200, "the owner, from their own network, is not locked out"
    assert len(mailbox.to("vera@example.org")) == before + 1


@pytest.mark.parametrize("network", ["198.51.100.{}", "2001:db8:7:9::{:x}"])
def test_the_per_network_limit_counts_a_whole_24_or_64(app, network):
    app.config["GAMES_LINK_REQUESTS_PER_IP"] = 5
    answers = [_ask(app, f"someone{i}@example.org", network.format(i + 10)).status_code
               for i in range(7)]
    assert answers == [200] * 5 + [429] * 2
    assert _ask(app, "someone@example.org", "192.0.2.1").status_code == 200


def test_a_known_and_an_unknown_address_cost_the_same_statements(app):
    """The time an answer takes must not tell whether an address plays here: the same
    statements run for both (only the savepoint's end differs)."""
    app.config["MAIL_BOARD_PICTURE"] = False
    _game(app, ["Kim <kim@example.org>", "random"])
    engine = get_engine(app)
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        seen.append(re.sub(r"\s+", " ", statement.split(" VALUES")[0].split(" WHERE")[0]))

    def statements(address: str, client_address: str) -> list[str]:
        seen.clear()
        event.listen(engine, "before_cursor_execute", record)
        try:
            assert _ask(app, address, client_address).status_code == 200
        finally:
            event.remove(engine, "before_cursor_execute", record)
        return [s for s in seen if "SAVEPOINT" not in s.upper()
                and not s.upper().startswith(("SELECT PG_ADVISORY", "RELEASE", "ROLLBACK"))]

    # The app's first request checks the schema once (issue 43, point 15): not part of either.
    assert _ask(app, "first@example.org", "198.51.100.1").status_code == 200
    known = statements("kim@example.org", "192.0.2.7")
    unknown = statements("nobody@example.org", "192.0.2.8")
    assert any("playerkey" in s.lower() for s in unknown), unknown
    assert known == unknown


def _save_name(app, email: str, name: str):
    with app.app_context(), writing() as session:
        token = mail.mint_player_key(session, email)
    client = app.test_client()
    page = client.get(f"/me/{token}/profile").get_data(as_text=True)
    return client.post(f"/me/{token}/profile", data={
        "csrf_token": field(page, "csrf_token"), "name": name, "language": "en",
        "timezone": "", "notify": "every", "talk_notify": "each"})


def _finish_rated(app, game_id: int) -> None:
    from pbem.services.moves import submit_move

    rules = rules_for(KIND)
    while True:
        with reading(app) as db:
            game = db.get(Game, game_id)
            state = rules.loads(game.state_json)
            if rules.to_move(state) is None:
                return
            seat_id = db.exec(select(Seat.id).where(Seat.game_id == game_id,
                                                    Seat.number == rules.to_move(state))).one()
        with app.app_context():
            submit_move(None, rules.legal(state)[0], game.turn, seat_id=seat_id)


def test_display_names_are_unique_among_rated_players_and_computers_names_reserved(app):
    app.config.update(MAIL_BOARD_PICTURE=False, GAMES_RATING_NEW_HOURS=0)
    # Two people who both call themselves "Honest 0" are rated: the second keeps no copy.
    rated = _game(app, ["Honest 0 <h1@example.org>", "Honest 0 <h2@example.org>"], rated=True)
    _finish_rated(app, rated)
    with reading(app) as db:
        names = {p.email: p.name for p in db.exec(select(Profile))}
    assert sorted(names.values()).count("Honest 0") == 1, names
    for copy in ("Нonest 0", "honest  O", "HONEST0", "Computer (strong)", "computer(STRONG)",
                 "Ordenador (fuerte)", "Computer (stark)"):
        refused = _save_name(app, "h3@example.org", copy)
        assert refused.status_code == 422 and "is taken" in refused.get_data(as_text=True), copy
    assert _save_name(app, "h3@example.org", "Honest Three").status_code == 303
    holder = next(e for e, n in names.items() if n == "Honest 0")
    assert _save_name(app, holder, "Honest 0").status_code == 303, "one's own name stays"


def test_the_public_page_lists_finished_games_a_page_at_a_time(app):
    app.config["MAIL_BOARD_PICTURE"] = False
    long_ago = utcnow() - timedelta(days=30)
    ids = [_game(app, ["Pia <pia@example.org>", "random"], when=long_ago) for _ in range(23)]
    for n, game_id in enumerate(ids):
        finish_game(app, game_id, f"f{n}")
    with app.app_context(), writing() as session:
        for n, game in enumerate(session.exec(select(Game).where(Game.id.in_(ids)))):
            game.finished_at = long_ago + timedelta(hours=game.id)
            session.add(game)
        profile = Profile(email="pia@example.org", name="Pia")
        session.add(profile)
        session.flush()
        public_id = profile.public_id
    client = app.test_client()
    first = client.get(f"/players/{public_id}").get_data(as_text=True)
    second = client.get(f"/players/{public_id}?page=2").get_data(as_text=True)
    shown = [int(n) for n in re.findall(r"#(\d+)</a>", first)]
    assert shown == sorted(ids, reverse=True)[:20], "the newest 20 first"
    assert [int(n) for n in re.findall(r"#(\d+)</a>", second)] == sorted(ids, reverse=True)[20:]
    assert "?page=2" in first and "Page 1 of 2" in first and "?page=1" in second
    assert client.get(f"/players/{public_id}?page=3").status_code == 404
    bad = client.get(f"/players/{public_id}?page=x")
    assert bad.status_code == 400 and "whole number" in bad.get_data(as_text=True)
