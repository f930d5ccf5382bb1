"""Issue 42, point 1: ratings farmed with sock puppets. The attack replayed through the real
routes (puppets mallory+N@ post rated two-player Knights & Castles games in the lobby, the
main address joins, the puppet plays its first legal move by the API, all from one client
address) leaves the main address unlisted and its rating unchanged, the games kept and
flagged for the organisers; and each rule on its own: one mailbox however written, an address
made for the game, first-legal-move play and fast games flagged, the admin's void (ratings
computed again, audited), and the provisional rule (N rated games against N distinct
established opponents)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from server import Mailbox, field, make_app, token_in
from sqlmodel import select

from pbem.games import rules_for
from pbem.ground.db import reading, utcnow, writing
from pbem.ground.models import AuditEntry, Game, MoveRecord, RatedResult, Rating, Seat
from pbem.services import mail
from pbem.services.creating import create_game
from pbem.services.players import bot_player, parse_player
from pbem.services.ratings import MODEL
from pbem.services.stewardship import create_admin

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

KIND = "knights-castles"
ATTACKER = "198.51.100.7"
MAIN = "mallory@example.org"


def test_networks_and_mailboxes_are_told_apart_as_people_are():
    from pbem.services.players import network_of, person_of

    assert network_of("198.51.100.7") == network_of("198.51.100.200") == "198.51.100.0/24"
    assert network_of("198.51.101.7") != network_of("198.51.100.7")
    assert network_of("2001:db8:1:2::5") == network_of("2001:db8:1:2:ffff::1") \
        == "2001:db8:1:2::/64"
    assert network_of("::ffff:198.51.100.9") == "198.51.100.0/24"
    assert network_of("::1") == "::1/128"
    assert person_of("Mallory+1@Example.org") == person_of("mallory@example.org")
    assert person_of("a.n.na+x@googlemail.com") == person_of("anna@gmail.com")
    assert person_of("a.nna@example.org") != person_of("anna@example.org")


def _earlier_game(app, email: str, days: int = 3) -> None:
    """One unrated game against a computer player, `days` ago (the puppets' cover)."""
    with app.app_context():
        create_game([parse_player(f"Someone <{email}>"), bot_player("random", KIND)], "old",
                    kind=KIND, now=utcnow() - timedelta(days=days))


def _key(app, email: str) -> str:
    with app.app_context(), writing() as session:
        return mail.mint_player_key(session, email)


def _seat_token(mailbox: Mailbox, email: str) -> str:
    for message in reversed(mailbox.to(email)):  # the newest invitation: this game's
        if "You are invited to play" in str(message["Subject"]):
            return token_in(message)
    raise AssertionError(f"no invitation to {email}")


def _play(app, clients, tokens: dict[int, str], game_id: int, puppet: int) -> None:
    """The puppet plays its first legal move each time (read by the API), the main address
    the greedy computer player's choice; every move by the API."""
    rules = rules_for(KIND)
    n = 0
    while True:
        with reading(app) as db:
            game = db.get(Game, game_id)
        state = rules.loads(game.state_json)
        seat = rules.to_move(state)
        if seat is None:
            return
        client = clients[seat]
        if seat == puppet:
            move = client.get(f"/api/v1/seat/{tokens[seat]}").get_json()["legal"][0]
        else:
            with app.app_context():
                move = rules.bot_move(state, "greedy", f"main {n}")
        answer = client.post(f"/api/v1/seat/{tokens[seat]}/move",
                             json={"move": move, "moves_played": game.turn})
        assert answer.status_code == 200, answer.get_data(as_text=True)
        n += 1


def _attack(app, puppets: int, spread: bool = False,
            address: str = "mallory+{}@example.org") -> list[int]:
    """The sock-puppet attack of issue 42 through the lobby's pages and the API, all from one
    client address (`spread`: each puppet from a network of its own); the games' ids."""
    main_client = app.test_client()
    main_client.environ_base["REMOTE_ADDR"] = ATTACKER
    mailbox = Mailbox(app)
    main = _key(app, MAIN)
    games = []
    for n in range(1, puppets + 1):
        puppet = address.format(n)
        client = app.test_client()
        client.environ_base["REMOTE_ADDR"] = f"192.0.{n}.9" if spread else ATTACKER
        _earlier_game(app, puppet)
        token = _key(app, puppet)
        page = client.get(f"/me/{token}/lobby").get_data(as_text=True)
        posted = client.post(f"/me/{token}/lobby", data={
            "csrf_token": field(page, "csrf_token"), "game": KIND, "players": "2",
            "deadline_hours": "72", "timezone": "UTC", "rated": "on"})
        assert posted.status_code == 303, posted.get_data(as_text=True)
        open_id = int(re.findall(r"/lobby/(\d+)/", main_client.get(f"/me/{main}/lobby")
                                 .get_data(as_text=True))[0])
        page = main_client.get(f"/me/{main}/lobby").get_data(as_text=True)
        joined = main_client.post(f"/me/{main}/lobby/{open_id}/join",
                             data={"csrf_token": field(page, "csrf_token")})
        assert joined.status_code == 303, joined.get_data(as_text=True)
        with reading(app) as db:
            game = db.exec(select(Game).order_by(Game.id.desc())).first()
        assert game.rated
        tokens = {0: _seat_token(mailbox, puppet), 1: _seat_token(mailbox, MAIN)}
        _play(app, {0: client, 1: main_client}, tokens, game.id, puppet=0)
        games.append(game.id)
    return games


@pytest.fixture
def lobby_app(tmp_path):
    return make_app(tmp_path / "instance", GAMES_LOBBY=True, MAIL_BOARD_PICTURE=False,
                    GAMES_RATING_NEW_HOURS=0)


def test_the_sock_puppet_attack_leaves_the_main_address_unrated_and_its_games_flagged(
        lobby_app):
    """Three puppets' games won from one client address: no rating moves, nobody listed,
    every game kept, not counted, flagged (one network, first legal moves, fast)."""
    app = lobby_app
    _earlier_game(app, MAIN)
    games = _attack(app, 3)
    with reading(app) as db:
        main = db.exec(select(Rating).where(Rating.kind == KIND, Rating.player == MAIN)).first()
    start = MODEL.rating().ordinal()
    ranking = app.test_client().get(f"/ratings/{KIND}").get_data(as_text=True)
    print(f"main address after {len(games)} puppet games: ordinal "
          f"{main.ordinal if main else start:.2f}, counted games {main.games if main else 0}, "
          f"listed: {'/players/' in ranking}")
    assert main is None or (main.ordinal, main.games) == (start, 0), \
        f"the puppets' games moved the main address's rating to {main.ordinal:.2f}"
    assert "/players/" not in ranking, "nobody is listed: the main address is not"
    from pbem.ground.models import RatedGame

    with reading(app) as db:
        rated = {r.game_id: r for r in db.exec(select(RatedGame))}
        results = db.exec(select(RatedResult).where(RatedResult.player == MAIN)).all()
        networks = set(db.exec(select(MoveRecord.client).where(MoveRecord.game_id.in_(games))))
    assert networks == {"198.51.100.0/24"}, "each move keeps its network"
    assert sorted(rated) == games and len(results) == len(games)
    for game_id in games:
        flags = rated[game_id].flags.split()
        assert not rated[game_id].counted
        assert {"same_network", "first_moves", "fast"} <= set(flags), flags


def test_puppets_on_networks_of_their_own_still_leave_the_main_address_unlisted(lobby_app):
    """Puppets of other mailboxes, each on a network of its own: what the server cannot tell
    apart counts, but the puppets are not established opponents, so the main address stays
    provisional, not listed; the games are flagged."""
    app = lobby_app
    _earlier_game(app, MAIN)
    games = _attack(app, 2, spread=True, address="sock{}@example.net")
    ranking = app.test_client().get(f"/ratings/{KIND}").get_data(as_text=True)
    from pbem.ground.models import RatedGame

    with reading(app) as db:
        main = db.exec(select(Rating).where(Rating.kind == KIND, Rating.player == MAIN)).one()
        rated = [db.get(RatedGame, game_id) for game_id in games]
    assert "/players/" not in ranking and "provisional rating" in ranking
    print(f"spread puppets: main address ordinal {main.ordinal:.2f} after {main.games} counted "
          "games, not listed")
    assert all(r.counted and {"first_moves", "fast"} <= set(r.flags.split()) for r in rated)


def _rated(app, people: list[str], seed: str, now=None) -> int:
    with app.app_context():
        return create_game([parse_player(p) for p in people], seed, kind=KIND, start=0,
                           rated=True, now=now).game_id


def _finish(app, game_id: int, pick_first: bool = False) -> None:
    """Play a game to its end through submit_move (no client address: by mail, as it were)."""
    from pbem.services.moves import submit_move

    rules = rules_for(KIND)
    n = 0
    while True:
        with reading(app) as db:
            game = db.get(Game, game_id)
            state = rules.loads(game.state_json)
            seat = rules.to_move(state)
            if seat is None:
                return
            seat_id = db.exec(select(Seat.id).where(Seat.game_id == game_id,
                                                    Seat.number == seat)).one()
        with app.app_context():
            move = rules.legal(state)[0] if pick_first else rules.bot_move(
                state, "random", f"{game_id} {n}")
            submit_move(None, move, game.turn, seat_id=seat_id)
        n += 1


def _flags(app, game_id) -> tuple[bool, list[str]]:
    from pbem.ground.models import RatedGame

    with reading(app) as db:
        row = db.get(RatedGame, game_id)
    return row.counted, row.flags.split()


def test_one_mailbox_and_an_address_made_for_the_game_do_not_count(app):
    app.config.update(MAIL_BOARD_PICTURE=False, GAMES_RATING_FAST_MINUTES=0)
    long_ago = utcnow() - timedelta(days=5)
    _rated(app, ["A <anna@example.org>", "B <bruno@example.org>"], "x", now=long_ago)
    same = _rated(app, ["A <a.n.na+farm@googlemail.com>", "B <Anna@gmail.com>"], "s1")
    _finish(app, same)
    assert _flags(app, same)[0] is False and "same_address" in _flags(app, same)[1]
    new = _rated(app, ["A <anna@example.org>", "N <newcomer@example.org>"], "s2")
    _finish(app, new)
    assert _flags(app, new) == (False, ["new_address"])
    honest = _rated(app, ["A <anna@example.org>", "B <bruno@example.org>"], "s3")
    _finish(app, honest)
    assert _flags(app, honest) == (True, [])
    with reading(app) as db:
        counted = {r.player: r.games for r in db.exec(select(Rating).where(Rating.kind == KIND))}
    assert counted["anna@example.org"] == 1 and counted["newcomer@example.org"] == 0
    assert counted.get("anna@gmail.com", 0) == 0


def test_flags_the_void_and_the_provisional_rule(app):
    """First-legal-move play and a fast game are flagged on the admin's page; voiding a
    result computes every rating again without it and is audited; a player is listed only
    after rated games against N distinct established opponents."""
    app.config.update(MAIL_BOARD_PICTURE=False, GAMES_RATING_NEW_HOURS=0,
                      GAMES_RATING_OPPONENTS=2, GAMES_RATING_FAST_MINUTES=0)
    people = [f"P{i} <p{i}@example.org>" for i in range(4)]
    ids = []
    for a, b in ((0, 1), (1, 2), (2, 3), (3, 0), (0, 2)):
        ids.append(_rated(app, [people[a], people[b]], f"g{a}{b}"))
        app.config["GAMES_RATING_FAST_MINUTES"] = 10 if (a, b) == (0, 2) else 0
        _finish(app, ids[-1], pick_first=(a, b) == (0, 2))
    assert set(_flags(app, ids[-1])[1]) == {"first_moves", "fast"}
    assert _flags(app, ids[-1])[0] is True
    client = app.test_client()
    ranking = client.get(f"/ratings/{KIND}").get_data(as_text=True)
    for i in range(4):  # each played two distinct opponents who did the same
        assert f"P{i}" in ranking
    with app.app_context():
        admin = create_admin("org@example.org", "a long enough password")
    page = client.get("/admin/login").get_data(as_text=True)
    client.post("/admin/login", data={"csrf_token": field(page, "csrf_token"),
                                      "email": "org@example.org",
                                      "password": "a long enough password"})
    listing = client.get("/admin/ratings").get_data(as_text=True)
    assert f'data-game="{ids[-1]}"' in listing and 'data-flag="first_moves"' in listing
    assert f'data-game="{ids[0]}"' not in listing, "only the flagged games at first"
    before = {r.player: (r.mu, r.games) for r in _ratings(app)}
    # Voiding the first game: the same as if it had never counted, computed again in order.
    refused = client.post(f"/admin/ratings/{ids[0]}/void", data={
        "csrf_token": field(listing, "csrf_token"), "reason": ""})
    assert refused.status_code == 422 and {r.player: (r.mu, r.games) for r in _ratings(app)} \
        == before
    voided = client.post(f"/admin/ratings/{ids[0]}/void", data={
        "csrf_token": field(listing, "csrf_token"), "reason": "a friend's second account"})
    assert voided.status_code == 303
    with reading(app) as db:
        results = db.exec(select(RatedResult).order_by(RatedResult.id)).all()
        audit = db.exec(select(AuditEntry).where(AuditEntry.action == "void_rating")).one()
    assert audit.game_id == ids[0] and audit.reason == "a friend's second account"
    assert "p0@example.org" in audit.detail
    expected: dict[str, object] = {}
    games: dict[str, int] = {}
    for game_id in ids[1:]:
        rows = [r for r in results if r.game_id == game_id]
        teams = [[expected.get(r.player) or MODEL.rating()] for r in rows]
        for r, [after] in zip(rows, MODEL.rate(teams, ranks=[r.rank for r in rows])):
            expected[r.player], games[r.player] = after, games.get(r.player, 0) + 1
    after = {r.player: r for r in _ratings(app)}
    for player, rating in expected.items():
        assert after[player].mu == pytest.approx(rating.mu)
        assert after[player].games == games[player]
    assert client.post(f"/admin/ratings/{ids[0]}/void", data={
        "csrf_token": field(listing, "csrf_token"), "reason": "again"}).status_code == 422
    from pbem.services.errors import NotFound
    from pbem.services.ratings import void_result

    with app.app_context(), pytest.raises(NotFound):
        void_result(admin, 999999, "none such")
    # P1 now played P2 only (counted): provisional, not listed; the page says how many.
    ranking = client.get(f"/ratings/{KIND}").get_data(as_text=True)
    assert "P1" not in ranking and "provisional rating" in ranking


def _ratings(app) -> list[Rating]:
    with reading(app) as db:
        return list(db.exec(select(Rating).where(Rating.kind == KIND)))
