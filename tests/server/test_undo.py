"""Undo by agreement (issue 33): a player asks to take back their last turn; it is taken back
only when every other player agrees before anyone moves on (pbem.services.undo)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from server import field, game_state, new_game, play_moves, text_of
from sqlmodel import select

from pbem.ground.db import reading, utcnow
from pbem.ground.models import (
    UNDO_ASKED,
    UNDO_DECLINED,
    UNDO_DONE,
    UNDO_MOVED_ON,
    AuditEntry,
    UndoRequest,
)
from pbem.services import undo
from pbem.services.errors import Rejected

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL


def _draw_first(legal):
    return next((m for m in legal if str(m) == "draw deck"), legal[0])


def _after_first_turn(app, seed: str, **kwargs):
    """A game of three where seat 0 made the first move of its turn (its placement; it has
    drawn nothing yet, so its turn showed it no card): the tokens, the game id and the state
    before that turn."""
    created, tokens = new_game(app, players=3, seed=seed, start=0, **kwargs)
    game_id = created.game_id
    before = game_state(app, game_id)[1]
    play_moves(app, tokens, 1, game_id=game_id)
    game, state = game_state(app, game_id)
    assert state.current == 0 and state.phase == "draw" and game.turn == 1
    return tokens, game_id, before


def _post(client, token: str, path: str, **data):
    page = client.get(f"/seat/{token}").get_data(as_text=True)
    return client.post(f"/seat/{token}{path}", data={"csrf_token": field(page, "csrf_token"),
                                                     **data})


def _requests(app) -> list[UndoRequest]:
    with app.app_context(), reading() as session:
        return list(session.exec(select(UndoRequest).order_by(UndoRequest.id)))


def _subjects(mailbox, address: str) -> list[str]:
    return [str(m["Subject"]) for m in mailbox.to(address)]


def test_a_turn_every_other_player_agrees_to_is_taken_back(app, client, mailbox):
    """Asked on the page, agreed on one page and through the API: the state is as before the
    turn, the audit log says so, everyone is mailed, and the drawer is told of the card."""
    tokens, game_id, before = _after_first_turn(app, "undo-all")
    asked = _post(client, tokens[0], "/undo")
    assert asked.status_code == 303
    assert [r.status for r in _requests(app)] == [UNDO_ASKED]
    for address in ("p1@example.org", "p2@example.org"):
        assert "[Kardinal & König #1] Player 0 asks to take back their turn" \
            in _subjects(mailbox, address)
    page1 = client.get(f"/seat/{tokens[1]}").get_data(as_text=True)
    assert "Player 0 (" in page1 and "asks to take back their last turn" in page1
    asker_page = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    assert "You asked to take back your last turn" in asker_page
    assert "Player 1, Player 2" in asker_page

    assert _post(client, tokens[1], "/undo/answer", answer="agree").status_code == 303
    assert game_state(app, game_id)[1] != before, "one agreement is not enough"
    answer = client.post(f"/api/v1/seat/{tokens[2]}/undo/answer", json={"answer": "agree"})
    assert answer.status_code == 200 and answer.get_json() == {"status": "done"}

    game, state = game_state(app, game_id)
    assert state == before and game.turn == 0
    assert [r.status for r in _requests(app)] == [UNDO_DONE]
    with app.app_context(), reading() as session:
        audit = session.exec(select(AuditEntry)).all()
    assert [(a.action, a.admin_id) for a in audit] == [("undo by agreement", None)]
    assert "by seat 1" in audit[0].detail
    for number in range(3):
        mails = [m for m in mailbox.to(f"p{number}@example.org")
                 if "A turn was taken back" in str(m["Subject"])]
        assert len(mails) == 1
        told = text_of(mails[0])
        assert "Every player agreed" in told
        assert ("back on top of the deck" in told) == (number == 0)
    # The same turn, made again, cannot be asked about again.
    play_moves(app, tokens, 1, game_id=game_id)
    again = client.post(f"/api/v1/seat/{tokens[0]}/undo")
    assert again.status_code == 422 and "once" in again.get_json()["error"]


def test_one_decline_ends_the_request_and_the_asker_is_told(app, client, mailbox):
    tokens, game_id, __ = _after_first_turn(app, "undo-decline")
    after = game_state(app, game_id)[1]
    assert client.post(f"/api/v1/seat/{tokens[0]}/undo").get_json()["status"] == "asked"
    assert client.post(f"/api/v1/seat/{tokens[2]}/undo/answer",
                       json={"answer": "decline"}).get_json() == {"status": "declined"}
    assert [r.status for r in _requests(app)] == [UNDO_DECLINED]
    assert game_state(app, game_id)[1] == after
    assert "[Kardinal & König #1] Your turn stays as it was" in _subjects(mailbox,
                                                                         "p0@example.org")
    late = client.post(f"/api/v1/seat/{tokens[1]}/undo/answer", json={"answer": "agree"})
    assert late.status_code == 422 and "No request" in late.get_json()["error"]
    assert game_state(app, game_id)[1] == after
    # Not twice: the declined turn cannot be asked about again.
    assert client.post(f"/api/v1/seat/{tokens[0]}/undo").status_code == 422


def test_a_move_before_everyone_agreed_ends_the_request(app, client, mailbox):
    tokens, game_id, __ = _after_first_turn(app, "undo-moved")
    assert client.post(f"/api/v1/seat/{tokens[0]}/undo").status_code == 200
    assert client.post(f"/api/v1/seat/{tokens[2]}/undo/answer",
                       json={"answer": "agree"}).get_json() == {"status": "asked"}
    play_moves(app, tokens, 1, game_id=game_id)  # seat 0 draws instead of waiting
    assert [r.status for r in _requests(app)] == [UNDO_MOVED_ON]
    moved = game_state(app, game_id)
    refused = client.post(f"/api/v1/seat/{tokens[1]}/undo/answer", json={"answer": "agree"})
    assert refused.status_code == 422
    assert game_state(app, game_id)[1] == moved[1]
    told = [m for m in mailbox.to("p0@example.org")
            if "Your turn stays as it was" in str(m["Subject"])]
    assert len(told) == 1 and "A move was made" in text_of(told[0])


def test_a_request_expires_after_a_day_or_at_the_deadline(app):
    tokens, game_id, __ = _after_first_turn(app, "undo-expiry")
    game = game_state(app, game_id)[0]
    now = utcnow()
    with app.app_context():
        request = undo.ask(tokens[0], now=now)
    assert request.expires_at == min(now + timedelta(hours=24), game.deadline_at)
    with app.app_context(), pytest.raises(Rejected, match="expired"):
        undo.answer(tokens[1], "agree", now=request.expires_at + timedelta(seconds=1))
    with app.app_context():  # still standing a moment before
        assert undo.answer(tokens[1], "agree",
                           now=request.expires_at - timedelta(seconds=1)) == UNDO_ASKED
    app.config["GAMES_UNDO_HOURS"] = 1
    tokens, game_id, __ = _after_first_turn(app, "undo-expiry-2")
    with app.app_context():
        assert undo.ask(tokens[0], now=now).expires_at == now + timedelta(hours=1)


def test_only_the_last_turn_of_ones_own_and_gets_never_act(app, client):
    """Another seat cannot ask about seat 0's turn; nobody can ask before the first move; a
    GET of the actions is refused and the page's GET changes nothing; forms need CSRF."""
    __, fresh = new_game(app, players=3, seed="undo-none", start=0)
    assert client.post(f"/api/v1/seat/{fresh[0]}/undo").status_code == 422
    tokens, __, __ = _after_first_turn(app, "undo-own")
    refused = client.post(f"/api/v1/seat/{tokens[1]}/undo")
    assert refused.status_code == 422 and "not yours" in refused.get_json()["error"]
    assert "Ask to take back my last turn" in client.get(f"/seat/{tokens[0]}").get_data(
        as_text=True)
    assert "Ask to take back my last turn" not in client.get(f"/seat/{tokens[1]}").get_data(
        as_text=True)
    for path in ("/undo", "/undo/answer?answer=agree"):
        assert client.get(f"/seat/{tokens[0]}{path}").status_code == 405
    assert client.post(f"/seat/{tokens[0]}/undo").status_code == 400  # no CSRF token
    assert _requests(app) == []
    assert client.post(f"/api/v1/seat/{tokens[0]}/undo").status_code == 200
    assert client.post(f"/api/v1/seat/{tokens[0]}/undo/answer",
                       json={"answer": "agree"}).status_code == 422  # not one's own
    for body in ({"answer": "yes"}, {}, {"answer": "agree", "x": 1}, ["agree"]):
        assert client.post(f"/api/v1/seat/{tokens[1]}/undo/answer",
                           json=body).status_code == 400
    assert [r.status for r in _requests(app)] == [UNDO_ASKED]
    app.config["GAMES_UNDO"] = False
    assert client.post(f"/api/v1/seat/{tokens[1]}/undo").status_code == 422


def test_computer_players_agree_at_once(app, client):
    from pbem.services.creating import create_game
    from pbem.services.players import bot_player, parse_player

    with app.app_context():
        created = create_game([parse_player("Anna <anna@example.org>"),
                               bot_player("random"), bot_player("greedy")],
                              "undo-bots", start=0)
    token = created.links[0][2].rsplit("/", 1)[1]
    before = game_state(app, created.game_id)[1]
    play_moves(app, [token, None, None], 1, game_id=created.game_id)
    answer = client.post(f"/api/v1/seat/{token}/undo")
    assert answer.status_code == 200 and answer.get_json()["status"] == "done"
    assert game_state(app, created.game_id)[1] == before


def test_knights_castles_a_turn_another_seat_decided_in_is_not_taken_back(app, client):
    """Random legal moves until a seat moves on in its turn after another seat decided
    something in it (an offer answered, losses chosen): that seat's request is refused, and
    nothing is written."""
    import random

    from pbem.games import rules_for
    from pbem.ground.models import Game
    from pbem.services.moves import submit_move

    rules = rules_for("knights-castles")
    created, tokens = new_game(app, 3, "kc-undo-2", kind="knights-castles", start=0)
    rng = random.Random("kc-undo-2")
    movers, turn_players = [], []
    for __ in range(400):
        with app.app_context(), reading() as session:
            game = session.get(Game, created.game_id)
            state, turn = rules.loads(game.state_json), game.turn
        seat = rules.to_move(state)
        movers.append(seat)
        turn_players.append(state.current)
        with app.app_context():
            submit_move(tokens[seat], rng.choice(sorted(rules.legal(state))), turn)
        first = len(movers)
        while first > 0 and movers[first - 1] == movers[-1]:
            first -= 1
        if first > 0 and turn_players[first - 1] == movers[-1]:
            break
    else:
        pytest.fail("no decision of another seat within a turn in 400 moves")
    refused = client.post(f"/api/v1/seat/{tokens[movers[-1]]}/undo")
    assert refused.status_code == 422
    assert "Another player already decided something" in refused.get_json()["error"]
    assert _requests(app) == []


def test_an_organisers_take_back_ends_a_request_that_stands(app, client):
    from pbem.services.stewardship import create_admin, take_back

    tokens, game_id, before = _after_first_turn(app, "undo-admin")
    assert client.post(f"/api/v1/seat/{tokens[0]}/undo").status_code == 200
    with app.app_context():
        admin = create_admin("admin@example.org", "a long enough password")
        take_back(admin, game_id, "asked by the players")
    assert [r.status for r in _requests(app)] == [UNDO_MOVED_ON]
    game, state = game_state(app, game_id)
    assert state == before and game.undo_turn is None
    assert client.post(f"/api/v1/seat/{tokens[1]}/undo/answer",
                       json={"answer": "agree"}).status_code == 422


def test_a_player_who_chose_the_digest_finds_the_request_there(app, client, mailbox):
    from pbem.ground.i18n import digest_lines
    from pbem.ground.models import DigestItem
    from pbem.services.seat_settings import set_notify

    tokens, __, __ = _after_first_turn(app, "undo-digest")
    with app.app_context():
        set_notify(tokens[2], "digest")
    assert client.post(f"/api/v1/seat/{tokens[0]}/undo").status_code == 200
    assert "[Kardinal & König #1] Player 0 asks to take back their turn" \
        in _subjects(mailbox, "p1@example.org")
    assert not any("take back" in s for s in _subjects(mailbox, "p2@example.org"))
    with app.app_context(), reading() as session:
        items = session.exec(select(DigestItem)).all()
        lines = [digest_lines(item.text) for item in items]
    assert [line[0] for line in lines] == ["Player 0 asks to take back their turn"]


# --- no free look at the deck, no free time (issue 42, point 4) ---------------------------------

def _against_computers(app, seed: str, rated: bool = False):
    """Anna against two computer players: her token and the game's id."""
    from pbem.services.creating import create_game
    from pbem.services.players import bot_player, parse_player

    with app.app_context():
        created = create_game([parse_player("Anna <anna@example.org>"), bot_player("random"),
                               bot_player("greedy")], seed, start=0, rated=rated)
    return created.links[0][2].rsplit("/", 1)[1], created.game_id


def test_a_turn_that_showed_a_deck_card_is_not_taken_back_even_against_computers(app, client):
    """Anna draws from the deck and asks: refused (computer players would have agreed at
    once, and the same card would be on top again), in her language; nothing is written. The
    page says so beside the button."""
    from pbem.services.seat_settings import set_language

    token, game_id = _against_computers(app, "undo-peek")
    play_moves(app, [token, None, None], 6, game_id=game_id, pick=_draw_first,
               until=lambda s: s.current != 0)
    after = game_state(app, game_id)
    refused = client.post(f"/api/v1/seat/{token}/undo")
    assert refused.status_code == 422
    assert "showed you a card from the deck" in refused.get_json()["error"]
    assert _requests(app) == [] and game_state(app, game_id)[1] == after[1]
    page = client.get(f"/seat/{token}").get_data(as_text=True)
    assert "Not for a turn that showed you a card from the deck" in page
    for language, words in (("de", "Karte vom Stapel"), ("es", "carta del mazo")):
        with app.app_context():
            set_language(token, language)
        said = client.post(f"/api/v1/seat/{token}/undo").get_json()["error"]
        assert words in said, said
    assert _requests(app) == []


def test_knights_castles_a_turn_that_drew_from_the_deck_is_not_taken_back(app, client):
    """The same in Knights & Castles: its turns draw from the deck too."""
    import random

    from pbem.games import rules_for
    from pbem.ground.models import Game
    from pbem.services.moves import submit_move

    rules = rules_for("knights-castles")
    created, tokens = new_game(app, 3, "kc-undo-peek", kind="knights-castles", start=0)
    rng = random.Random("kc-undo-peek")

    def current():
        with app.app_context(), reading() as session:
            game = session.get(Game, created.game_id)
            return game, rules.loads(game.state_json)

    first = current()[1]
    with app.app_context():
        while rules.to_move(current()[1]) == 0:
            game, state = current()
            submit_move(tokens[0], rng.choice(sorted(rules.legal(state))), game.turn)
    assert rules.reveals_hidden(first, current()[1])
    refused = client.post(f"/api/v1/seat/{tokens[0]}/undo")
    assert refused.status_code == 422
    assert "showed you a card from the deck" in refused.get_json()["error"]
    assert _requests(app) == []


def test_computer_players_do_not_agree_in_a_rated_or_tournament_game(app, client):
    """Refused at once in a rated game and in a tournament's (two seats handed to computer
    players), where they would have agreed before; nothing changes."""
    from pbem.ground.db import writing
    from pbem.ground.models import Seat, TournamentTable
    from pbem.services import stewardship, tournaments
    from pbem.services.deadlines import time_control
    from pbem.services.mail import mint_key
    from pbem.services.players import parse_player

    token, game_id = _against_computers(app, "undo-rated", rated=True)
    with app.app_context():
        admin = stewardship.create_admin("boss@example.org", "a long enough password")
        tid = tournaments.create_tournament(admin, tournaments.Setup(
            "Cup", "kardinal-koenig", None, "round-robin", time_control(72, "24", False, "UTC"),
            [parse_player(f"P{i} <t{i}@example.org>") for i in range(3)], 3))
        with reading() as session:
            cup = session.exec(select(TournamentTable.game_id)
                               .where(TournamentTable.tournament_id == tid)).one()
        for number in (1, 2):
            stewardship.hand_to_bot(admin, cup, number, "random", "they left")
        with writing() as session:
            own = mint_key(session, session.exec(select(Seat).where(
                Seat.game_id == cup, Seat.number == 0)).one())
    for asker, game in ((token, game_id), (own, cup)):
        play_moves(app, [asker, None, None], 1, game_id=game)
        after = game_state(app, game)[1]
        assert after.current == 0, "the asker's placement, before its draws"
        refused = client.post(f"/api/v1/seat/{asker}/undo")
        assert refused.status_code == 422
        assert "Computer players do not agree" in refused.get_json()["error"]
        assert game_state(app, game)[1] == after
    assert _requests(app) == []


def test_a_turn_the_server_played_at_a_timeout_does_not_win_a_fresh_deadline(app, client):
    """Anna misses her deadline; the server plays her turn (its draw shows her a card), and
    her request to take it back is refused: the deadline stays where the timeout put it,
    rather than 72 hours from the request."""
    from pbem.scheduler.jobs import run_jobs

    token, game_id = _against_computers(app, "undo-timeout")
    deadline = game_state(app, game_id)[0].deadline_at
    run_jobs(app, deadline + timedelta(seconds=1))
    game, state = game_state(app, game_id)
    assert game.turn >= 2 and state.current != 0
    asked = client.post(f"/api/v1/seat/{token}/undo")
    assert asked.status_code == 422
    assert game_state(app, game_id)[0].deadline_at == game.deadline_at


def test_a_take_back_that_keeps_the_deadline_leaves_it_where_it_was(app):
    """takeback's `keep_deadline` (an agreed take-back of a turn the server played): the
    turn goes back to its seat with the deadline unchanged, not a fresh turn's."""
    from pbem.ground.db import writing
    from pbem.ground.models import Game
    from pbem.services import takeback

    created, tokens = new_game(app, 3, "undo-keep", start=0)
    play_moves(app, tokens, 6, game_id=created.game_id, until=lambda s: s.current != 0)
    kept = game_state(app, created.game_id)[0].deadline_at
    later = utcnow() + timedelta(hours=5)
    for keep, expected in ((True, kept), (False, None)):
        with app.app_context(), writing() as session:
            game = session.get(Game, created.game_id, with_for_update=True)
            records = takeback.records_of(session, game)
            takeback.take_back(session, game, records, takeback.last_run(records), later,
                               keep_deadline=keep)
            session.flush()
            deadline = game.deadline_at
            session.rollback()
        if keep:
            assert deadline == expected
        else:
            assert deadline > later + timedelta(hours=71)
