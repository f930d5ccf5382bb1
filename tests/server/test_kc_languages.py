"""Knights & Castles in three languages: a game with an English, a German and a Spanish seat,
played to its end. The German and the Spanish seat each play a turn by replying with orders in
their own words (docs/notation.md), and every mail and page each of them gets is in its language
with no English sentence of the server's or the engine's left in it (the method of
tests/server/test_three_languages.py); a turn file in Spanish words is applied too."""

from __future__ import annotations

import re

import pytest
from server import Mailbox, field, make_app, text_of
from sqlmodel import select
from test_three_languages import (
    _newest_key,
    _reply,
    _unwanted,
    english_fragments,  # noqa: F401  (a fixture)
    mails_in_own_language,
)

import engine.knights_castles as kc
from engine.knights_castles.moves import CARD_NAMES
from pbem.ground.db import reading
from pbem.ground.models import Game, MoveRecord
from pbem.mailin.inbox import handle_incoming
from pbem.services.creating import create_game
from pbem.services.moves import submit_move
from pbem.services.players import PlayerSpec

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

DOMAIN = "games.example.org"
PLAYERS = [PlayerSpec("Anna", "anna@example.org", language="en"),
           PlayerSpec("Bernd", "bernd@example.org", language="de"),
           PlayerSpec("Carmen", "carmen@example.org", language="es")]
VERBS = {"de": {"done": "fertig", "buy": "kaufe", "build": "baue", "keep": "behalte",
                "pay": "zahle", "abandon": "aufgeben", "research": "erforsche", "share": "teile",
                "play": "spiele", "at": "gegen", "lose": "verliere", "accept": "annehmen",
                "decline": "ablehnen", "discard": "abwerfen", "war": "Krieg"},
         "es": {"done": "listo", "buy": "comprar", "build": "construir", "keep": "quedarse",
                "pay": "pagar", "abandon": "abandonar", "research": "investigar",
                "share": "compartir", "play": "jugar", "at": "a", "lose": "perder",
                "accept": "aceptar", "decline": "rechazar", "discard": "descartar",
                "war": "guerra"}}
COLOURS = {"de": {"yellow": "gelb", "red": "rot", "green": "grün"},
           "es": {"yellow": "amarillo", "red": "rojo", "green": "verde"}}


def in_words(notation: str, language: str) -> str:
    """A move of the notation in `language`'s words and card names ('build village' ->
    'baue Dorf')."""
    column = ("de", "es").index(language)
    words = []
    for word in notation.replace(",", " ,").split():
        if word in VERBS[language]:
            words.append(VERBS[language][word])
        elif word in COLOURS[language]:
            words.append(COLOURS[language][word])
        elif word in CARD_NAMES:
            words.append(CARD_NAMES[word][column])
        else:
            words.append(word)
    return " ".join(words).replace(" ,", ",")


def _state(app):
    with app.app_context(), reading() as session:
        game = session.exec(select(Game)).one()
        return game, kc.from_json(game.state_json)


def _a_turn(state, seat: int) -> list[str]:
    """Moves of `seat`'s turn while it is to move: anything naming a card first, else 'done'
    (never an offer, which would hand the decision to another seat)."""
    orders = []
    while state.to_move == seat and not state.is_over and len(orders) < 6:
        moves = [str(m) for m in kc.legal_moves(state).moves]
        named = [m for m in moves if m.split()[0] in ("build", "research", "keep", "discard",
                                                       "pay", "abandon")]
        move = (named or [m for m in moves if m == "done"] or moves)[0]
        orders.append(move)
        state = kc.apply_move(state, kc.parse_move(move))
    return orders


def test_knights_and_castles_in_three_languages(tmp_path, english_fragments):
    app = make_app(tmp_path / "instance", MAIL_REPLY_DOMAIN=DOMAIN, MAIL_BOARD_PICTURE=False)
    box = Mailbox(app)
    with app.app_context():
        created = create_game(PLAYERS, "kc-lang-1", kind="knights-castles", start=0)
    tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]

    # German and Spanish replies: a whole turn in the seat's words, logged in the notation.
    replied: dict[str, list[str]] = {}
    while set(replied) != {"de", "es"}:
        game, state = _state(app)
        seat = state.to_move
        language = PLAYERS[seat].language
        if language in ("de", "es") and language not in replied and state.current == seat:
            orders = _a_turn(state, seat)
            written = [in_words(o, language) for o in orders]
            with app.app_context():
                handled = handle_incoming(_reply(_newest_key(box, PLAYERS[seat].email),
                                                 PLAYERS[seat].email, written), None)
            assert handled.outcome == "applied", (written, handled)
            with app.app_context(), reading() as session:
                logged = [r.notation for r in session.exec(
                    select(MoveRecord).order_by(MoveRecord.number)).all()][-len(orders):]
            assert logged == orders
            replied[language] = written
            continue
        with app.app_context():
            submit_move(tokens[seat], str(kc.default_move(state)), game.turn)
    said = " ".join(replied["de"] + replied["es"])
    assert re.search(r"\b(baue|fertig|behalte|abwerfen)\b", " ".join(replied["de"])), said
    assert re.search(r"\b(construir|listo|quedarse|descartar)\b", " ".join(replied["es"])), said
    answers = {lang: [m for m in box.to(PLAYERS[n].email) if str(m["Subject"]).startswith("Re:")]
               for n, lang in ((1, "de"), (2, "es"))}
    assert "Deine Befehle wurden ausgeführt" in text_of(answers["de"][-1])
    assert "Se han aplicado tus órdenes" in text_of(answers["es"][-1])

    # The rest of the game, to its end, by each seat's default move.
    while True:
        game, state = _state(app)
        if state.is_over:
            break
        with app.app_context():
            submit_move(tokens[state.to_move], str(kc.default_move(state)), game.turn)
    assert game.status == "finished"

    # Every mail to each seat greets in its language and, for German and Spanish, holds no
    # English piece of any message whose translation differs.
    for seat, player in enumerate(PLAYERS):
        final = text_of(mails_in_own_language(box, player, english_fragments)[-1])
        # The result table (issue 32: it was a box of outcome lines) marks the winner.
        assert {"en": "red = Bernd (winner)", "de": "Rot = Bernd (Sieger)",
                "es": "rojo = Bernd (ganador)"}[player.language] in final
        assert {"en": "the most gold wins", "de": "das meiste Gold gewinnt",
                "es": "gana quien tenga más oro"}[player.language] in final
    german = "\n".join(text_of(m) for m in box.to(PLAYERS[1].email))
    assert "Deine Hand (Rot):" in german and "Ertrag" in german
    spanish = "\n".join(text_of(m) for m in box.to(PLAYERS[2].email))
    assert "Tu mano (verde):" in spanish
    assert "Knights & Castles es un juego de cartas" in spanish  # the rules summary

    # And so is each seat's page: the finished game, its log and the tableaus.
    client = app.test_client()
    for seat, player in enumerate(PLAYERS):
        text = client.get(f"/seat/{tokens[seat]}",
                          headers={"Accept-Language": "en"}).get_data(as_text=True)
        assert f'<html lang="{player.language}">' in text
        if player.language != "en":
            assert not _unwanted(text, english_fragments[player.language])
    assert "Die Auslagen" in client.get(f"/seat/{tokens[1]}").get_data(as_text=True)


def test_a_spanish_turn_file_and_a_german_typo(tmp_path):
    """A turn file with Spanish orders is applied; a German seat's unknown card is answered
    in German, naming the German card names."""
    app = make_app(tmp_path / "instance", MAIL_BOARD_PICTURE=False)
    players = [PLAYERS[2], PLAYERS[1]]
    with app.app_context():
        created = create_game(players, "kc-lang-2", kind="knights-castles", start=0)
    tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]
    client = app.test_client()
    game, state = _state(app)
    orders = _a_turn(state, 0)
    text = client.get(f"/seat/{tokens[0]}/turnfile").get_data(as_text=True)
    assert "Tu mano (amarillo)" in text
    assert "#   construir Aldea\n#   listo\n" in text  # the examples in Spanish words
    page = client.get(f"/seat/{tokens[0]}").get_data(as_text=True)
    filled = text + "\n" + "\n".join(in_words(o, "es") for o in orders) + "\n"
    done = client.post(f"/seat/{tokens[0]}/turnfile",
                       data={"csrf_token": field(page, "csrf_token"), "orders": filled})
    assert done.status_code == 303, done.get_data(as_text=True)[:2000]
    with app.app_context(), reading() as session:
        logged = [r.notation for r in session.exec(select(MoveRecord)
                                                    .order_by(MoveRecord.number)).all()]
    assert logged == orders

    game, state = _state(app)
    while state.to_move != 1:
        with app.app_context():
            submit_move(tokens[state.to_move], str(kc.default_move(state)), game.turn)
        game, state = _state(app)
    page = client.get(f"/seat/{tokens[1]}").get_data(as_text=True)
    answer = client.post(f"/seat/{tokens[1]}/move", headers={"Accept-Language": "en"},
                         data={"csrf_token": field(page, "csrf_token"),
                               "turn": str(game.turn), "move": "baue Schloss"})
    body = answer.get_data(as_text=True)
    assert answer.status_code == 422
    assert "&#39;schloss&#39; ist keine Karte; Karten schreibt man wie Dorf" in body, body[-3000:]


@pytest.mark.parametrize("kind", ["kardinal-koenig", "knights-castles"])
def test_the_turn_files_examples_read_in_every_language(kind, tmp_path):
    """The whole-turn example a turn file shows, in each language's words, reads as the English
    example's moves."""
    from flask_babel import force_locale

    from pbem.games import rules_for

    app = make_app(tmp_path / "instance")
    rules = rules_for(kind)
    english = rules.order_notation
    for language in ("de", "es"):
        with app.test_request_context(), force_locale(language):
            examples = rules.order_examples
        assert examples != english
        if kind == "knights-castles":
            assert [str(kc.parse_move(e)) for e in examples] == list(english)
        else:
            import engine

            board = rules.board
            assert [engine.parse_move(e, board) for e in examples] == \
                [engine.parse_move(e, board) for e in english]
