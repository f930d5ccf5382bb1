"""Knights & Castles through the whole server: created by `pbem create-game --game
knights-castles`, played through the seat pages (buttons, the offer form, the preview and the
confirm), decisions of other seats (a loss to choose, an offer to answer) asked of those seats by
mail, the JSON API, and a game nobody touches finished by timeouts."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta

import pytest
from server import LINK, Mailbox, field, legal_in, make_app, new_game, text_of
from sqlmodel import select

import engine.knights_castles as kc
from engine.knights_castles.cards import DISASTER, INDEX, INVASION, KINDS
from pbem.games import rules_for
from pbem.ground.db import reading
from pbem.ground.models import Game, MoveRecord
from pbem.scheduler.jobs import run_jobs

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

T0 = datetime(2026, 11, 24, 12, tzinfo=UTC)
HARMFUL = {k.id for k in KINDS if k.type in (DISASTER, INVASION)}


def state_of(app, game_id: int = 1):
    with app.app_context(), reading() as session:
        game = session.get(Game, game_id)
        return game, kc.from_json(game.state_json)


def confirm(client, token: str, form: dict) -> str:
    """Preview a move built on the page, check the preview, confirm it; the notation played."""
    page = client.get(f"/seat/{token}").get_data(as_text=True)
    assert "It is your move." in page
    base = {"csrf_token": field(page, "csrf_token"), "turn": field(page, "turn")}
    preview = client.post(f"/seat/{token}/preview", data={**base, **form})
    body = preview.get_data(as_text=True)
    assert preview.status_code == 200 and "Confirm this move" in body, body[:3000]
    move = field(body, "move")
    done = client.post(f"/seat/{token}/move", data={**base, "move": move})
    assert done.status_code == 303, done.get_data(as_text=True)[:3000]
    return move


def test_create_game_from_the_command_line(tmp_path):
    """`pbem create-game --game knights-castles`: 2-6 players, a variant by --rules."""
    app = make_app(tmp_path / "instance")
    runner = app.test_cli_runner()
    players = [f"--player=P{i} <p{i}@example.org>" for i in range(4)]
    # The rule page's variants are for a two-player game only (issue 32, point 17).
    refused = runner.invoke(args=["create-game", "--game", "knights-castles", *players,
                                  "--seed", "kc", "--rules", "catch-up+no-buying"])
    assert refused.exit_code != 0
    assert "for a two-player game only" in refused.output, refused.output
    result = runner.invoke(args=["create-game", "--game", "knights-castles", *players[:2],
                                 "--seed", "kc", "--rules", "catch-up+no-buying"])
    assert result.exit_code == 0, result.output
    game, state = state_of(app)
    assert game.kind == "knights-castles" and state.variants == ("catch-up", "no-buying")
    assert len(state.players) == 2 and state.card_total() == 106
    result = runner.invoke(args=["create-game", "--game", "knights-castles", *players,
                                 "--seed", "kc2"])
    assert result.exit_code == 0, result.output
    too_many = runner.invoke(args=["create-game", "--game", "knights-castles",
                                   *[f"--player=Q{i} <q{i}@example.org>" for i in range(7)]])
    assert too_many.exit_code != 0 and "2 to 6 players" in too_many.output
    bad = runner.invoke(args=["create-game", "--game", "knights-castles", *players,
                              "--rules", "german"])
    assert bad.exit_code != 0 and "variant must be one of" in bad.output


def test_a_game_through_the_pages_with_a_chosen_loss_and_an_accepted_trade(tmp_path):
    """The issue's Done-when: a 4-player game created with `pbem create-game --game
    knights-castles`, played on the seat pages (a disaster whose target chooses its losses on
    its own page after its own mail, a trade offered with the form and accepted by the other
    seat; nobody's page shows another's hand), then by replies to the mails, then through the
    API to its end, and the final mails."""
    from test_mail_replies import DOMAIN, fill, ingest, newest_with_key, reply_key

    app = make_app(tmp_path / "instance", MAIL_REPLY_DOMAIN=DOMAIN)
    mailbox = Mailbox(app)
    created = app.test_cli_runner().invoke(args=[
        "create-game", "--game", "knights-castles", "--seed", "kc-pages",
        *[f"--player=Player {i} <p{i}@example.org>" for i in range(4)]])
    assert created.exit_code == 0, created.output
    tokens = LINK.findall(created.output)
    assert len(tokens) == 4
    client = app.test_client()
    rng = random.Random(1)
    chosen_loss = accepted = 0
    for _ in range(400):
        game, state = state_of(app)
        if state.is_over or (chosen_loss and accepted and game.turn > 60):
            break
        seat = state.to_move
        token = tokens[seat]
        page = client.get(f"/seat/{token}").get_data(as_text=True)
        assert "It is your move." in page
        for other in state.seats:  # a page shows its own hand, never another's
            if other != seat and sum(state.hands[other]):
                hidden = kc.view_for(state, other).hand
                assert all(f"<li class=\"card\">{kc.cards.KINDS[kc.cards.INDEX[c]].name}</li>"
                           not in page for c in set(hidden) - set(kc.view_for(state, seat).hand))
        plain = legal_in(page)
        assert plain and not any("<" in m for m in plain)  # moves only, no offer patterns
        if state.step == "loss":
            if len(plain) > 1:
                chosen_loss += 1
                assert any(str(m["Subject"]).endswith("Your turn")
                           for m in mailbox.to(f"p{seat}@example.org"))
            confirm(client, token, {"action": "move", "move": rng.choice(plain)})
        elif state.step == "answer":
            choice = "accept" if "accept" in plain else "decline"
            accepted += choice == "accept"
            confirm(client, token, {"action": "move", "move": choice})
        elif state.step == "trade" and not accepted and 'id="offer-form"' in page:
            target = next(o for o in state.seats if o != seat and o not in state.offered
                          and sum(state.hands[o]))
            mine = kc.view_for(state, seat).hand
            theirs = kc.view_for(state, target).hand  # the test peeks to make a fair offer
            played = confirm(client, token, {
                "action": "offer", "target": state.players[target], "give_gold": "0",
                "give_cards": rng.choice(mine) if mine else "", "ask_gold": "0",
                "ask_cards": rng.choice(theirs)} if mine else {
                "action": "offer", "target": state.players[target],
                "give_gold": str(min(1, state.gold[seat])), "ask_cards": rng.choice(theirs)})
            assert played.startswith(f"offer {state.players[target]}:")
        else:
            harm = [m for m in plain if m.startswith("play ") and m.split()[1] in HARMFUL]
            pick = harm[0] if harm else rng.choice(plain)
            confirm(client, token, {"action": "text", "notation": pick})
    assert chosen_loss >= 1 and accepted >= 1
    game, state = state_of(app)
    seat = state.to_move
    document = client.get(f"/api/v1/seat/{tokens[seat]}").get_json()
    assert document["view"]["game"] == "knights-castles"
    assert document["view"]["hand"] == list(kc.view_for(state, seat).hand)
    assert document["legal"] == rules_for("knights-castles").legal(state)
    assert document["patterns"] == rules_for("knights-castles").move_patterns(state)
    other = (seat + 1) % 4
    assert rules_for("knights-castles").legal(state) and \
        client.get(f"/api/v1/seat/{tokens[other]}").get_json()["legal"] == []
    # Then by replies to the mails: the seat to move answers its newest mail with one move.
    rules = rules_for("knights-castles")
    by_mail = game.turn
    for _ in range(15):
        seat = state.to_move
        newest = newest_with_key(mailbox, f"p{seat}@example.org")
        handled = ingest(app, fill("thunderbird_plain.eml", reply_key(newest),
                                   [rules.default_move(state)], text_of(newest)))
        assert handled.outcome == "applied", handled
        game, state = state_of(app)
    with app.app_context(), reading() as session:
        assert {r.via for r in session.exec(select(MoveRecord).where(
            MoveRecord.number >= by_mail))} == {"email"}
    # The rest of the game through the API, as a client program would play it (buying cards
    # whenever it can, so that the deck runs out sooner), to the end and everyone's final mail.
    while not state.is_over:
        document = client.get(f"/api/v1/seat/{tokens[state.to_move]}").get_json()
        assert document["to_move"] and document["turn"] == game.turn
        move = "buy" if "buy" in document["legal"] else rules.default_move(state)
        answer = client.post(f"/api/v1/seat/{tokens[state.to_move]}/move",
                             json={"move": move, "turn": game.turn})
        assert answer.status_code == 200, answer.get_json()
        game, state = state_of(app)
    assert game.status == "finished"
    for i in range(4):
        finals = [m for m in mailbox.to(f"p{i}@example.org")
                  if str(m["Subject"]).endswith("The game is over")]
        assert len(finals) == 1 and "(winner)" in text_of(finals[0])  # the result table
    assert client.get(f"/api/v1/seat/{tokens[0]}").get_json()["outcome"]["winners"]
    # The spectator page and the history show the tableaus and no hand.
    watch = client.get(f"/watch/{game.watch_id}").get_data(as_text=True)
    assert "The tableaus" in watch and "Your hand" not in watch
    early = client.get(f"/watch/{game.watch_id}?at=5").get_data(as_text=True)
    assert "The tableaus" in early
    history = client.get(f"/seat/{tokens[0]}/history?at=3")
    assert history.status_code == 200 and "Your hand" in history.get_data(as_text=True)
    assert client.get(f"/watch/{game.watch_id}/board.svg").data.startswith(b"<svg")
    # The stored game is its seed and its log: a replay gives it back exactly (the history
    # pages and taking a move back depend on it).
    game, state = state_of(app)
    with app.app_context(), reading() as session:
        log = [r.notation for r in session.exec(select(MoveRecord)
                                                .order_by(MoveRecord.number)).all()]
    assert rules_for("knights-castles").replay(state, log) == state


def test_a_game_nobody_touches_finishes_by_timeouts(tmp_path):
    """Timeouts: the default moves of the readings play a whole game to its final mails."""
    app = make_app(tmp_path / "instance", SCHEDULER_OUTAGE_MINUTES=100000)
    mailbox = Mailbox(app)
    new_game(app, 4, "kc-timeouts", kind="knights-castles", now=T0)
    now = T0
    run_jobs(app, now)
    for _ in range(3000):
        game, state = state_of(app)
        if state.is_over:
            break
        now += timedelta(hours=200)
        run_jobs(app, now)
    game, state = state_of(app)
    assert state.is_over and game.status == "finished"
    with app.app_context(), reading() as session:
        actors = {r.actor for r in session.exec(select(MoveRecord)).all()}
    assert actors <= {"timeout", "absent", "server"} and actors
    for i in range(4):
        finals = [m for m in mailbox.to(f"p{i}@example.org")
                  if str(m["Subject"]).endswith("The game is over")]
        assert len(finals) == 1 and "(winner)" in text_of(finals[0])  # the result table
    assert json.loads(game.state_json)["format"] == "knights-castles/1"


def test_a_turn_file_plays_several_moves_of_a_turn(tmp_path):
    """Turn files: the seat to move downloads its file (this game's examples and position) and
    uploads orders; they are applied one by one through the same path as the page."""
    app = make_app(tmp_path / "instance")
    _, tokens = new_game(app, 2, "kc-file", kind="knights-castles")
    client = app.test_client()
    game, state = state_of(app)
    token = tokens[state.to_move]
    text = client.get(f"/seat/{token}/turnfile").get_data(as_text=True)
    assert "#   build village" in text and "Franken" not in text
    assert f"Your hand ({state.players[state.to_move]})" in text
    page = client.get(f"/seat/{token}").get_data(as_text=True)
    plain = [m for m in legal_in(page) if not m.startswith("offer ")]
    first = next(m for m in plain if m != "done")  # seed kc-file: the starter can build
    orders = [first, "done"]
    filled = text + "\n" + "\n".join(orders) + "\n"
    done = client.post(f"/seat/{token}/turnfile", data={
        "csrf_token": field(page, "csrf_token"), "orders": filled})
    assert done.status_code == 303, done.get_data(as_text=True)[:2000]
    after, _ = state_of(app)
    assert after.turn == game.turn + len(orders)
    with app.app_context(), reading() as session:
        logged = [r.notation for r in session.exec(select(MoveRecord)
                                                    .order_by(MoveRecord.number)).all()]
    assert logged == orders


def test_the_log_hides_a_kept_card_and_an_offers_cards_from_other_seats():
    """Hidden information in the API's log: 'keep <card>' and an offer's cards are seen by the
    seats concerned only."""
    rules = rules_for("knights-castles")
    state = kc.new_game(3, 1)
    assert rules.notation_for(state, "keep town", 0, 0) == "keep town"
    assert rules.notation_for(state, "keep town", 0, 1) == "keep"
    assert rules.notation_for(state, "keep town", 0, None) == "keep"
    offer = "offer green: village for town"
    assert rules.notation_for(state, offer, 0, 2) == offer
    assert rules.notation_for(state, offer, 0, 1) == "offer green"
    assert rules.notation_for(state, "build village", 0, 1) == "build village"


def test_an_offer_too_long_for_the_log_is_refused_with_a_reason():
    """The move log keeps 200 characters of notation: a longer offer is refused, not cut."""
    from pbem.games import MoveError

    rules = rules_for("knights-castles")
    state = kc.new_game(2, 1)
    long = kc.Offer("red", 5, tuple(k.id for k in KINDS[13:20]), 3,
                    tuple(k.id for k in KINDS[20:30]))
    assert len(str(long)) > 200
    import pytest

    with pytest.raises(MoveError, match="at most 200"):
        rules.apply(state, long)


def test_the_admin_form_creates_a_knights_and_castles_game_and_shows_its_state(tmp_path):
    """Admin pages: the create form offers each game; a Knights & Castles game with variants is
    created from it, and its admin page shows the whole state."""
    from test_admin import add_admin, csrf_of, login

    app = make_app(tmp_path / "instance")
    client = app.test_client()
    add_admin(app)
    assert login(client).status_code == 303
    plain = client.get("/admin/games/new").get_data(as_text=True)
    assert "/admin/games/new?game=knights-castles" in plain
    page = client.get("/admin/games/new?game=knights-castles").get_data(as_text=True)
    assert "Create a game of Knights &amp; Castles" in page and "catch-up+no-buying" in page
    form = {"csrf_token": csrf_of(client, "/admin/games/new?game=knights-castles"),
            "game": "knights-castles", "start": "random", "deadline_hours": "72",
            "reminders": "24,2", "timezone": "UTC", "seed": "7", "variant": "knights-from-hand"}
    for i, colour in enumerate(kc.COLOURS):
        name, email = (f"P{i}", f"p{i}@example.org") if i < 2 else ("", "")
        form.update({f"name{i}": name, f"email{i}": email, f"colour{i}": colour})
    response = client.post("/admin/games/new", data=form)
    assert response.status_code == 303, response.get_data(as_text=True)[:2000]
    game, state = state_of(app)
    assert game.kind == "knights-castles" and state.variants == ("knights-from-hand",)
    assert len(state.players) == 2
    admin_page = client.get(f"/admin/games/{game.id}").get_data(as_text=True)
    assert "Deck (" in admin_page and "top first" in admin_page


def test_replies_by_mail_play_a_turn_and_answer_an_offer(tmp_path):
    """Replies: the starter plays by replying to its invitation; an offer asks the other seat
    by mail, and its reply 'accept' answers it; then the starter is told it is its move again."""
    from test_mail_replies import DOMAIN, answers, fill, ingest, moves, newest_with_key, reply_key

    app = make_app(tmp_path / "instance", MAIL_REPLY_DOMAIN=DOMAIN)
    box = Mailbox(app)
    _, _tokens = new_game(app, 3, "kc-reply", kind="knights-castles", start=0)
    invitation = newest_with_key(box, "p0@example.org")
    _game, state = state_of(app)
    orders, ahead = [], state
    while ahead.step != "trade":  # 'done' to the trade phase, as many as this deal asks
        orders.append("done")
        ahead = kc.apply_move(ahead, kc.Done())
    handled = ingest(app, fill("thunderbird_plain.eml", reply_key(invitation), orders,
                               text_of(invitation)))
    assert handled.outcome == "applied", handled
    _game, state = state_of(app)
    assert state.step == "trade" and state.to_move == 0
    assert [m for _, _, m, via in moves(app) if via == "email"] == orders
    assert len(answers(box, "p0@example.org", "Your orders were applied")) == 1
    give = kc.view_for(state, 0).hand[0]
    ask = kc.view_for(state, 1).hand[0]
    offer = f"offer red: {give} for {ask}"
    handled = ingest(app, fill("gmail_top.eml", reply_key(newest_with_key(
        box, "p0@example.org")), [offer], ""))
    assert handled.outcome == "applied", handled
    asked = [m for m in box.to("p1@example.org") if str(m["Subject"]).endswith("Your turn")]
    # red reads the offer in its mail, in words (card names as printed)
    words = (f"Open offer from yellow to red: {KINDS[INDEX[give]].name} for "
             f"{KINDS[INDEX[ask]].name}.")
    assert asked and words in text_of(asked[-1]), text_of(asked[-1])
    handled = ingest(app, fill("outlook.eml", reply_key(asked[-1]), ["accept"],
                               text_of(asked[-1])))
    assert handled.outcome == "applied", handled
    _game, after = state_of(app)
    assert after.to_move == 0 and after.step == "trade"
    assert kc.view_for(after, 1).hand.count(give) == kc.view_for(state, 1).hand.count(give) + 1
    again = [m for m in box.to("p0@example.org") if str(m["Subject"]).endswith("Your turn")]
    assert again, "the starter is told the game waits for it again"


def test_your_turn_mails_tell_everything_since_the_seats_last_move(tmp_path, monkeypatch):
    """A your-turn mail's news is every move since the seat last moved, however many moves the
    turns between were and whoever made them (a Knights & Castles turn is many moves; a loss
    or an answer is another seat's move within it)."""
    from pbem.services import moves
    from pbem.services.mail import kinds
    from pbem.services.moves import submit_move

    app = make_app(tmp_path / "instance")
    _, tokens = new_game(app, 3, "kc-news", kind="knights-castles")
    sent = []
    original = moves.send

    def recording(session, kind, **kwargs):
        if kind is kinds.YOUR_TURN:
            # The news as stored (message ids and parameters), each written when the mail is.
            sent.append((kwargs["seat"].number, kwargs["game"].turn,
                         [getattr(line, "data", line) for line in kwargs["news"]]))
        return original(session, kind, **kwargs)

    monkeypatch.setattr(moves, "send", recording)
    rng = random.Random(3)
    for _ in range(160):
        game, state = state_of(app)
        legal = kc.legal_moves(state)
        move = rng.choice(legal.moves)
        if len(legal) > len(legal.moves) and rng.random() < 0.3:  # an offer, now and then
            move = min((legal[rng.randrange(len(legal))] for _ in range(5)), key=str)
        with app.app_context():
            submit_move(tokens[state.to_move], str(move), game.turn)
    with app.app_context(), reading() as session:
        records = session.exec(select(MoveRecord).order_by(MoveRecord.number)).all()
    longest = 0
    for seat, turn, news in sent:
        before = [r for r in records if r.number < turn]
        last = max((r.number for r in before[:-1] if r.seat == seat), default=-1)
        expected = [line for r in before if r.number > last
                    for line in json.loads(r.lines_json)[str(seat)]]
        assert news == expected, (seat, turn)
        longest = max(longest, sum(1 for r in before if r.number > last))
    assert len(sent) > 20 and longest > 4 * 3 + 4  # beyond what a fixed window of 4n+4 reads


def test_every_move_the_api_lists_is_accepted(tmp_path):
    """The API's `legal` lists only moves it accepts as written (offers, too many to list, come
    as `patterns`, which are refused as written): at every position of a game played through
    the API, every listed move passes the same checks a submitted move does, and the move
    played, a random one of them, is answered 200."""
    app = make_app(tmp_path / "instance")
    _, tokens = new_game(app, 3, "kc-api-legal", kind="knights-castles")
    client = app.test_client()
    rules = rules_for("knights-castles")
    rng = random.Random(5)
    steps, patterns = set(), 0
    for _ in range(250):
        game, state = state_of(app)
        if state.is_over:
            break
        token = tokens[state.to_move]
        document = client.get(f"/api/v1/seat/{token}").get_json()
        legal = document["legal"]
        assert legal and all("<" not in m for m in legal)
        for move in legal:
            rules.apply(state, rules.parse(state, move))  # raises MoveError if refused
        if document["patterns"]:
            patterns += 1
            refused = client.post(f"/api/v1/seat/{token}/move",
                                  json={"move": document["patterns"][0], "turn": game.turn})
            assert refused.status_code == 422
        steps.add(state.step)
        answer = client.post(f"/api/v1/seat/{token}/move",
                             json={"move": rng.choice(legal), "turn": game.turn})
        assert answer.status_code == 200, answer.get_json()
    assert patterns and {"build", "event", "trade", "loss"} <= steps


def test_mails_tell_what_happened_not_each_phase_change(tmp_path):
    """A your-turn mail's news leaves out the phase changes (some forty lines a round, issue
    32) and says whose move it is once, at the end; what was done stays, every move of it."""
    from pbem.services.moves import submit_move

    app = make_app(tmp_path / "instance")
    box = Mailbox(app)
    _, tokens = new_game(app, 3, "kc-quiet", kind="knights-castles")
    rules = rules_for("knights-castles")
    rng = random.Random(5)
    for _ in range(120):
        game, state = state_of(app)
        legal = kc.legal_moves(state)
        with app.app_context():
            submit_move(tokens[state.to_move], str(rng.choice(legal.moves)), game.turn)
    checked = 0
    for seat in range(3):
        for message in box.to(f"p{seat}@example.org"):
            if not str(message["Subject"]).endswith("Your turn"):
                continue
            news = [line for line in text_of(message).splitlines() if line.startswith("- ")]
            assert not [line for line in news if " ended the " in line], news
            assert sum(line.startswith("- Now ") for line in news) <= 1, news
            checked += bool(news)
    assert checked > 10
    with app.app_context(), reading() as session:
        lines = [json.loads(r.lines_json)["0"] for r in session.exec(select(MoveRecord))]
    assert any(line["t"].endswith("ended the %(phase)s.") for ls in lines for line in ls), \
        "the log itself keeps every phase change"
    assert rules.news([]) == []


def test_the_dice_line_says_when_it_shows_only_the_latest_rolls():
    """'Dice so far' listed the last ten rolls of many without saying so (issue 32)."""
    from dataclasses import replace

    rules = rules_for("knights-castles")
    state = rules.new_state(["red", "blue", "green"], "dice", 0)
    many = replace(state, dice=tuple(range(1, 7)) * 3)  # 18 rolls
    few = replace(state, dice=(3, 5))
    assert "Dice rolled in play (caravans, disasters, wars): the last 10 of 18, the latest " \
        "last: 3 4 5 6 1 2 3 4 5 6." in rules.position_lines(many, 0)
    assert "Dice rolled in play (caravans, disasters, wars), the latest last: 3 5." in \
        rules.position_lines(few, 0)


def test_the_start_roll_is_explained_apart_from_the_dice_in_play():
    """Issue 43, point 12: the invitation showed "Dice so far: 2 4 4 4 6 4 4" unexplained; it
    says which were the roll for the start seat (and the tied seats' second roll), and which
    were rolled in play."""
    from dataclasses import replace

    from pbem.games.knights_castles import start_rolls

    rules = rules_for("knights-castles")
    colours = ["yellow", "red", "green", "purple"]
    state = next(s for s in (rules.new_state(colours, f"roll{n}", None) for n in range(200))
                 if len(s.dice) > 4)  # a tie: some seats rolled twice
    rounds = start_rolls(state)
    assert len(rounds) >= 2 and [s for s, _ in rounds[0]] == [0, 1, 2, 3]
    assert sum(len(one) for one in rounds) == len(state.dice)
    first = ", ".join(f"{c} {r}" for c, r in zip(colours, state.dice[:4], strict=True))
    lines = rules.position_lines(state, 0)
    line = next(x for x in lines if x.startswith("Start roll"))
    assert line.startswith("Start roll (each player rolls a die, the highest starts, tied "
                           f"players roll again): {first}; ")
    assert line.endswith(f"; {colours[state.start]} starts.")
    assert not any(x.startswith("Dice rolled in play") for x in lines)
    later = replace(state, dice=(*state.dice, 5))
    assert "Dice rolled in play (caravans, disasters, wars), the latest last: 5." in \
        rules.position_lines(later, 0)
    chosen = rules.new_state(colours, "roll", 2)
    assert not any("Start roll" in x for x in rules.position_lines(chosen, 0))


def test_the_rules_line_and_the_whole_rules_are_our_own(tmp_path):
    """Issue 43, point 12: the rules line says plainly which rules a game plays, and "the whole
    rules" lead to this server's own rules page (in the reader's language), not to a search on
    another site."""
    app = make_app(tmp_path / "instance", BASE_URL="https://games.example.org")
    box = Mailbox(app)
    _, tokens = new_game(app, 3, "rules", kind="knights-castles")
    client = app.test_client()
    page = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    assert "Rules: the standard rules, no variant." in page
    assert "referee" not in page and "boardgamegeek" not in page
    assert 'href="/rules/knights-castles"' in page
    mail = text_of(box.to("p0@example.org")[0])
    assert "The whole rules: https://games.example.org/rules/knights-castles" in mail
    assert "boardgamegeek" not in mail
    rules = client.get("/rules/knights-castles")
    text = rules.get_data(as_text=True)
    assert rules.status_code == 200 and "Trade Route" in text and "two players only" in text
    assert "<td>30</td>" in text  # 30 villages in the deck
    german = client.get("/rules/knights-castles", headers={"Accept-Language": "de"})
    assert "Handelsroute" in german.get_data(as_text=True)
    assert client.get("/rules/chess").status_code == 404
    assert client.get("/rules/kardinal-koenig").status_code == 404  # it has its rule books
