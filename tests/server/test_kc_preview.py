"""The Knights & Castles seat page and preview in the reader's words (issue 32, points 4, 5 and
14): the choices are buttons in the seat's language, the preview says in the future tense what
the move will do and shows the tableaus after it (or as they are, when the move draws or rolls),
and ending a phase needs no preview."""

from __future__ import annotations

import random
import re

import pytest
from server import field, make_app
from sqlmodel import select

import engine.knights_castles as kc
from pbem.ground.db import reading
from pbem.ground.models import Game
from pbem.services.creating import create_game
from pbem.services.moves import submit_move
from pbem.services.players import PlayerSpec

pytestmark = pytest.mark.usefixtures("database")

PLAYERS = [PlayerSpec("Anna", "anna@example.org", language="en"),
           PlayerSpec("Bernd", "bernd@example.org", language="de"),
           PlayerSpec("Carmen", "carmen@example.org", language="es")]


def _state(app):
    with app.app_context(), reading() as session:
        game = session.exec(select(Game)).one()
        return game, kc.from_json(game.state_json)


def _until(app, tokens, wanted):
    """Seeded random moves until `wanted(state, legal)` holds for the seat to move."""
    chooser = random.Random(1)
    for _ in range(2000):
        game, state = _state(app)
        legal = [str(m) for m in kc.legal_moves(state).moves]
        if wanted(state, legal):
            return game, state, legal
        with app.app_context():
            submit_move(tokens[state.to_move], chooser.choice(legal), game.turn)
    raise AssertionError("never came")


def _words(html: str) -> str:
    html = re.sub(r"(?s)<(script|style|svg)\b.*?</\1>", " ", html)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.fixture
def game(tmp_path):
    app = make_app(tmp_path / "instance", MAIL_BOARD_PICTURE=False)
    with app.app_context():
        created = create_game(PLAYERS, "kc-preview-1", kind="knights-castles", start=0)
    return app, [link.rsplit("/", 1)[1] for _, _, link in created.links]


def test_a_build_preview_in_german_shows_the_tableaus_after_it(game):
    app, tokens = game
    game_row, state, legal = _until(app, tokens, lambda s, legal: s.to_move == 1 and any(
        m.startswith("build ") for m in legal))
    build = next(m for m in legal if m.startswith("build "))
    card = build.split()[1]
    german = kc.moves.CARD_NAMES[card][0]
    client = app.test_client()
    page = client.get(f"/seat/{tokens[1]}").get_data(as_text=True)
    buttons = re.findall(r'<button type="submit" name="move" value="([^"]+)"[^>]*>([^<]+)<', page)
    assert (build, f"baue {german}") in buttons, buttons
    assert ("done", "fertig") in buttons
    assert f"<code>baue {german}</code>" in page  # the list of legal moves
    answer = client.post(f"/seat/{tokens[1]}/preview", data={
        "csrf_token": field(page, "csrf_token"), "turn": str(game_row.turn), "action": "move",
        "move": build})
    text = _words(answer.get_data(as_text=True))
    assert answer.status_code == 200
    assert f"Du baust {german}." in text, text
    assert "Die Auslagen, wie sie sein werden" in text
    assert "built" not in text and "baute" not in text  # no past tense, no English
    # The picture is the position after the move, as the seat sees it.
    from pbem.games import rules_for
    from pbem.ground import i18n

    shown = re.search(r"(?s)<svg\b.*?</svg>", answer.get_data(as_text=True)).group(0)
    with app.test_request_context():
        i18n.use("de")
        rules = rules_for("knights-castles")
        after = kc.apply_move(state, kc.parse_move(build))
        assert shown == rules.board_picture(after, 1, False, move=kc.parse_move(build))
        assert f"nach deinem Zug baue {german}" in shown
        assert shown != rules.board_picture(state, 1, False)


def test_a_buy_preview_in_spanish_names_no_card_and_shows_the_tableaus_now(game):
    app, tokens = game
    game_row, __, __ = _until(app, tokens, lambda s, legal: s.to_move == 2
                                    and "buy" in legal)
    client = app.test_client()
    page = client.get(f"/seat/{tokens[2]}").get_data(as_text=True)
    assert ">comprar<" in page and ">listo<" in page
    answer = client.post(f"/seat/{tokens[2]}/preview", data={
        "csrf_token": field(page, "csrf_token"), "turn": str(game_row.turn), "action": "move",
        "move": "buy"})
    text = _words(answer.get_data(as_text=True))
    assert "Comprarás una carta más por 5 de oro." in text, text
    assert "Lo que robes o saques en el dado lo verás al confirmar" in text
    assert "Las mesas como están ahora" in text
    assert "<code>comprar</code>" in answer.get_data(as_text=True)


def test_done_is_made_at_once_without_a_preview(game):
    app, tokens = game
    game_row, __, __ = _until(app, tokens, lambda s, legal: s.to_move == 0
                                    and "done" in legal)
    client = app.test_client()
    page = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    button = re.search(r'<button type="submit" name="move" value="done"[^>]*>', page).group(0)
    action = re.search(r'formaction="([^"]+)"', button).group(1)
    assert action.endswith(f"/seat/{tokens[0]}/move")
    form = re.search(r'(?s)<form[^>]*id="choices-form".*?</form>', page).group(0)
    data = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form))
    answer = client.post(action, data={**data, "move": "done"})
    assert answer.status_code == 303
    after_row, __ = _state(app)
    assert after_row.turn == game_row.turn + 1


@pytest.mark.parametrize("seat, language, opening, verb, at, colours", [
    (1, "de", "Dein Zug: ", "spiele", "gegen", {"red": "Rot", "green": "Grün", "yellow": "Gelb"}),
    (2, "es", "Tu jugada: ", "jugar", "contra", {"red": "rojo", "green": "verde",
                                                 "yellow": "amarillo"})])
def test_a_confirm_page_names_the_move_once_in_german_and_spanish(game, seat, language, opening,
                                                                  verb, at, colours):
    """The confirm page said "Vas a jugar jugar Vikingos contra rojo" and "spiele Mongolen gegen
    gelb zu spielen": the move's own verb is the only one, and a German player's colour is a
    noun."""
    app, tokens = game
    game_row, _, legal = _until(app, tokens, lambda s, legal: s.to_move == seat and any(
        m.startswith("play ") and " at " in m for m in legal))
    move = next(m for m in legal if m.startswith("play ") and " at " in m)
    card, target = move.split()[1], move.split()[-1]
    name = kc.moves.CARD_NAMES[card][("de", "es").index(language)]
    client = app.test_client()
    page = client.get(f"/seat/{tokens[seat]}").get_data(as_text=True)
    buttons = re.findall(r'<button type="submit" name="move" value="([^"]+)"[^>]*>([^<]+)<', page)
    assert (move, f"{verb} {name} {at} {colours[target]}") in buttons, buttons
    answer = client.post(f"/seat/{tokens[seat]}/preview", data={
        "csrf_token": field(page, "csrf_token"), "turn": str(game_row.turn), "action": "move",
        "move": move})
    text = _words(answer.get_data(as_text=True))
    assert f"{opening}{verb} {name} {at} {colours[target]} ." in text, text
    assert f"{verb} {verb}" not in text.lower() and "zu spielen" not in text


def test_a_disasters_preview_says_what_it_does_to_its_target(game):
    """Issue 43, point 6: the preview of a disaster or invasion said only "You will play Famine
    against green"; it now says, from the rules, that the target loses a die roll of DP of its
    cards in play, its choice, and how many DP it has."""
    app, tokens = game
    harmful = {k.id for k in kc.KINDS if k.type in ("disaster", "invasion")}
    game_row, state, legal = _until(app, tokens, lambda s, legal: s.to_move == 0 and any(
        m.split()[1] in harmful and " at " in m for m in legal if m.startswith("play ")))
    move = next(m for m in legal if m.startswith("play ") and m.split()[1] in harmful
                and " at " in m)
    target = move.split()[-1]
    dp = kc.rules.dp_total(state, state.players.index(target))
    client = app.test_client()
    page = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    answer = client.post(f"/seat/{tokens[0]}/preview", data={
        "csrf_token": field(page, "csrf_token"), "turn": str(game_row.turn), "action": "move",
        "move": move})
    text = _words(answer.get_data(as_text=True))
    if dp:
        assert (f"A die is rolled: {target} must give up cards in play worth at least that many "
                f"defence points (DP), choosing which") in text, text
        assert f"{dp} DP in play" in text
    else:
        assert f"{target} has no card in play with defence points (DP)" in text, text


def test_the_targets_choice_shows_each_losses_defence_points(game):
    """Issue 43, point 6: the target's choice ("lose castle / lose mine / lose village") showed
    no defence points: each button says the DP it gives up, in the seat's words."""
    from engine.knights_castles.cards import GUN_POWDER, INDEX, MASONRY, dp_of
    from pbem.ground.db import writing
    from pbem.ground.models import Seat

    app, tokens = game
    game_row, state, legal = _until(app, tokens, lambda s, legal: s.loss is not None
                                    and len(legal) > 1)
    seat = state.to_move
    for language, dp in (("en", "DP"), ("de", "VP"), ("es", "PD")):
        with writing(app) as session:
            row = session.exec(select(Seat).where(Seat.game_id == game_row.id,
                                                  Seat.number == seat)).one()
            row.language = language
            session.add(row)
        page = app.test_client().get(f"/seat/{tokens[seat]}").get_data(as_text=True)
        buttons = dict(re.findall(
            r'<button type="submit" name="move" value="([^"]+)"[^>]*>([^<]+)<', page))
        for move in legal:
            points = sum(dp_of(INDEX[c], state.has(seat, GUN_POWDER), state.has(seat, MASONRY))
                         for c in kc.parse_move(move).cards)
            assert buttons[move].endswith(f" ({points} {dp})"), (move, buttons[move])
