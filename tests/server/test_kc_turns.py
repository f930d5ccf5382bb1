"""Knights & Castles counts turns as its players do (issue 32, point 3): a turn is a dozen moves
in phases, so the seat page, the log, the mails and the API number turns as the engine does,
never moves; and players name them by rounds of the table (issue 43, point 3): "round 12, red's
turn", not "turn 45 of red"."""

from __future__ import annotations

import re

import pytest
from server import Mailbox, make_app, text_of
from sqlmodel import select

import engine.knights_castles as kc
from pbem.ground.db import reading
from pbem.ground.models import Game
from pbem.services.creating import create_game
from pbem.services.moves import submit_move
from pbem.services.players import PlayerSpec

pytestmark = pytest.mark.usefixtures("database")


def _state(app):
    with app.app_context(), reading() as session:
        game = session.exec(select(Game)).one()
        return game, kc.from_json(game.state_json)


def test_turns_are_the_engines_turns_not_moves(tmp_path):
    app = make_app(tmp_path / "instance", MAIL_BOARD_PICTURE=False)
    box = Mailbox(app)
    players = [PlayerSpec("Anna", "anna@example.org", language="en"),
               PlayerSpec("Bernd", "bernd@example.org", language="de")]
    with app.app_context():
        created = create_game(players, "kc-turns-1", kind="knights-castles", start=0)
    tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]
    game, state = _state(app)
    while state.turn < 5:
        with app.app_context():
            submit_move(tokens[state.to_move], str(kc.default_move(state)), game.turn)
        game, state = _state(app)
    assert game.turn > 2 * state.turn  # many moves a turn: the two counts differ
    client = app.test_client()
    seat = state.to_move
    page = client.get(f"/seat/{tokens[seat]}", headers={"Accept-Language": "en"})
    text = page.get_data(as_text=True)
    header = re.search(r"Round (\d+), (\w+)(?:'|&#39;)s turn\.</p>", text)
    assert header and int(header.group(1)) == state.round, text[:3000]
    assert header.group(2) == state.players[state.current]
    # The log: each entry's turn is the engine's turn it was played in, 1 to the current one.
    answer = client.get(f"/api/v1/seat/{tokens[seat]}").get_json()
    assert answer["turn_number"] == state.turn
    numbers = [item["turn_number"] for item in answer["log"]]
    assert max(numbers) == state.turn and min(numbers) == 1, numbers
    assert sorted(numbers, reverse=True) == numbers
    # Each turn's announcement ("Round 2: red draws ...") is in the entry numbered that turn.
    for item in answer["log"]:
        for line in item["lines"]:
            announced = re.search(r"Round (\d+): ", line)
            if announced:
                assert int(announced.group(1)) == kc.round_of(item["turn_number"], 2), item
    # And the mails: "your turn (round N)" never names a move count.
    for message in box.to("anna@example.org"):
        assert not re.search(r"\(turn \d+\)", text_of(message))
        for said in re.findall(r"\(round (\d+)\)", text_of(message)):
            assert int(said) <= state.round, (said, message["Subject"])


# How each language names the round and whose turn it is (the colour in the reader's words).
ROUND = {"en": ("Round {round}, {colour}'s turn", "(round {round})",
                "Round {round}: {colour} draws and collects tax."),
         "de": ("Runde {round}, {colour} ist am Zug", "(Runde {round})",
                "Runde {round}: {colour} zieht und nimmt Steuern ein."),
         "es": ("Ronda {round}, turno de {colour}", "(ronda {round})",
                "Ronda {round}: {colour} roba y cobra impuestos.")}
COLOUR = {"en": {}, "de": {"yellow": "Gelb", "red": "Rot", "green": "Grün"},
          "es": {"yellow": "amarillo", "red": "rojo", "green": "verde"}}
OLD = {"en": "Turn {turn}", "de": "Zug {turn}", "es": "Turno {turn}"}
YOU = {"en": "you", "de": "du", "es": "tú"}


def test_players_count_rounds_of_the_table_in_every_language(tmp_path):
    """After two whole rounds of three players the page said "turn 7 of yellow" and the mails
    "(turn 7)": every page, mail, history and feed says "round 3, yellow's turn" (issue 43)."""
    from html import unescape

    app = make_app(tmp_path / "instance", MAIL_BOARD_PICTURE=False)
    box = Mailbox(app)
    players = [PlayerSpec("Anna", "anna@example.org", language="en"),
               PlayerSpec("Bernd", "bernd@example.org", language="de"),
               PlayerSpec("Carmen", "carmen@example.org", language="es")]
    with app.app_context():
        created = create_game(players, "kc-rounds-1", kind="knights-castles", start=0)
    tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]
    game, state = _state(app)
    while state.turn < 7:
        with app.app_context():
            submit_move(tokens[state.to_move], str(kc.default_move(state)), game.turn)
        game, state = _state(app)
    assert (state.turn, state.round) == (7, 3)
    client = app.test_client()
    for seat, player in enumerate(players):
        language = player.language
        colour = COLOUR[language].get(state.players[state.current], state.players[state.current])
        # The log names the player, "you" on their own page (issue 43, point 11).
        mover = players[state.current].name
        who = (f"{mover} ({YOU[language]}, {colour})" if seat == state.current
               else f"{mover} ({colour})")
        label, short = (f.format(round=3, colour=colour) for f in ROUND[language][:2])
        begun = ROUND[language][2].format(round=3, colour=who)
        page = unescape(client.get(f"/seat/{tokens[seat]}").get_data(as_text=True))
        history = unescape(client.get(f"/seat/{tokens[seat]}/history?at={game.turn}")
                           .get_data(as_text=True))
        for what, text in (("page", page), ("history", history)):
            assert f"{label}." in text, (what, language)
            assert begun in text, (what, language)
            assert OLD[language].format(turn=7) not in text, (what, language)
            assert "turn 7 of" not in text.lower(), (what, language)
        assert f">{label} (" in history  # the list of every move: "Round 3, ...'s turn (move 80)"
        mails = [text_of(m) for m in box.to(player.email)]
        said = [int(n) for text in mails
                for n in re.findall(re.escape(short).replace("3", r"(\d+)"), text)]
        assert said and max(said) <= 3, (language, said)  # "(round 2)", never a turn's number
        assert not any(re.search(r"\((turn|Zug|turno) \d+\)", text) for text in mails)
    feed = unescape(client.get(f"/watch/{game.watch_id}/feed.atom").get_data(as_text=True))
    colour = state.players[state.current]
    assert f"<title>Round 3, {colour}'s turn: " in feed
    assert "<title>Turn " not in feed
    watch = unescape(client.get(f"/watch/{game.watch_id}").get_data(as_text=True))
    assert f"Round 3, {colour}'s turn:" in watch


def test_a_game_logged_before_rounds_still_counts_its_turns(tmp_path):
    """The logs of games begun before issue 43 hold "Turn %(turn)d: ..." as the sentence that
    begins a turn: their turns are counted the same, by either sentence."""
    from pbem.ground.db import writing
    from pbem.ground.models import MoveRecord

    app = make_app(tmp_path / "instance", MAIL_BOARD_PICTURE=False)
    players = [PlayerSpec("Anna", "anna@example.org"), PlayerSpec("Bernd", "bernd@example.org")]
    with app.app_context():
        created = create_game(players, "kc-turns-old", kind="knights-castles", start=0)
    tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]
    game, state = _state(app)
    while state.turn < 4:
        with app.app_context():
            submit_move(tokens[state.to_move], str(kc.default_move(state)), game.turn)
        game, state = _state(app)
    client = app.test_client()
    before = client.get(f"/api/v1/seat/{tokens[0]}").get_json()
    new = "Round %(round)d: %(who)s draws and collects tax."
    with writing(app) as session:
        rows = session.exec(select(MoveRecord).where(MoveRecord.lines_json.contains(new))).all()
        assert len(rows) == 3
        for row in rows:
            row.lines_json = row.lines_json.replace(new, "Turn %(turn)d: %(who)s draws and "
                                                         "collects tax.")
            session.add(row)
    after = client.get(f"/api/v1/seat/{tokens[0]}").get_json()
    assert after["turn_number"] == before["turn_number"] == 4
    assert [i["turn_number"] for i in after["log"]] == [i["turn_number"] for i in before["log"]]
