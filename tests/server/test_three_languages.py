"""A game with an English, a German and a Spanish seat, played to its end: every mail and page a
seat gets is in its own language with no English sentence of the server's left in it, German
and Spanish replies with orders in their own words are applied, and plural forms follow each
language. The move log stays language-neutral in the database."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from server import Mailbox, game_state, html_of, make_app, text_of
from sqlmodel import select

import engine
from pbem.ground.db import reading
from pbem.ground.models import MoveRecord
from pbem.mailin.inbox import KEY_ADDRESS, handle_incoming
from pbem.services.creating import create_game
from pbem.services.moves import submit_move
from pbem.services.players import PlayerSpec

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parent.parent.parent
DOMAIN = "games.example.org"
SEED = "lang-1"
PLAYERS = [PlayerSpec("Anna", "anna@example.org", language="en"),
           PlayerSpec("Bernd", "bernd@example.org", language="de"),
           PlayerSpec("Carmen", "carmen@example.org", language="es")]
GREETING = {"en": "Hello Anna,", "de": "Hallo Bernd,", "es": "Hola, Carmen:"}
# A seat's orders in its own words (docs/notation.md), from the neutral notation.
WORDS = {"de": {"exchange": "tausche", "draw": "ziehe", "deck": "Stapel", "pass": "passe",
                "advisor": "Rat"},
         "es": {"exchange": "cambiar", "draw": "robar", "deck": "mazo", "pass": "pasar",
                "advisor": "consejero"}}


def in_words(notation: str, language: str) -> str:
    words = WORDS[language]
    return re.sub(r"\b(exchange|draw|deck|pass|advisor)\b", lambda m: words[m.group(1)],
                  notation)


@pytest.fixture(scope="module")
def english_fragments(tmp_path_factory) -> dict[str, set[str]]:
    """For each of de and es: the English pieces (between placeholders, 14 characters or more)
    of every message whose translation differs, which a reader of that language must never
    meet in a mail or on a page."""
    pot = tmp_path_factory.mktemp("pot") / "messages.pot"
    subprocess.run([sys.executable, "-m", "babel.messages.frontend", "extract", "-F",
                    "babel.cfg", "-k", "N_", "-k", "L_", "-k", "say", "-k", "say_n:1,2",
                    "-o", str(pot), "."], cwd=ROOT, check=True, capture_output=True)
    with pot.open("rb") as f:
        ids = [m.id for m in read_po(f) if m.id]
    found = {}
    for language in ("de", "es"):
        with (ROOT / "pbem/translations" / language / "LC_MESSAGES/messages.po").open("rb") as f:
            catalog = read_po(f, locale=language)
        pieces = set()
        for key in ids:
            english = key if isinstance(key, tuple) else (key,)
            translated = catalog[key].string
            translated = " ".join(translated) if isinstance(translated, tuple) else translated
            for text in english:
                for piece in re.split(r"%\(\w+\)[sd]|<[^>]+>|&amp;", text):
                    piece = piece.strip(" .,:;()")
                    if len(piece) >= 14 and piece not in translated:
                        pieces.add(piece)
        found[language] = pieces
    return found


def _reply(to_key: str, sender: str, orders: list[str]) -> bytes:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to_key
    message["Subject"] = "Re: your turn"
    message["Message-ID"] = make_msgid(domain="example.org")
    message.set_content("\n".join(orders) + "\n\n-- \nsent from my phone\n")
    return bytes(message)


def _newest_key(box: Mailbox, email: str) -> str:
    newest = [m for m in box.to(email) if m["Reply-To"]][-1]
    match = KEY_ADDRESS.search(str(newest["Reply-To"]))
    return f"play+{match.group(1)}@{DOMAIN}"


def _whole_turn(state, language: str) -> list[str]:
    """The first legal placement or exchange of the seat to move and its draws (from the
    deck), in `language`'s words."""
    first = str(engine.legal_moves(state)[0])
    after = engine.apply_move(state, engine.parse_move(first, state.board))
    orders = [first] + ["draw deck"] * after.draws_left
    return [in_words(order, language) for order in orders]


def _unwanted(text: str, fragments: set[str]) -> list[str]:
    return sorted(f for f in fragments if f in text)


def mails_in_own_language(box: Mailbox, player: PlayerSpec, fragments) -> list:
    """Every mail to `player` (more than five), each part greeting in the player's language and,
    for German and Spanish, holding none of that language's English `fragments`."""
    mails = box.to(player.email)
    assert len(mails) > 5, " ".join(str(m["Subject"]) for m in mails)
    for message in mails:
        for body in (text_of(message), html_of(message)):
            assert GREETING[player.language] in body, (player.language, message["Subject"])
            if player.language != "en":
                left = _unwanted(body, fragments[player.language])
                assert not left, (player.language, str(message["Subject"]), left)
    return mails


def test_three_languages_to_the_end(tmp_path, english_fragments):
    app = make_app(tmp_path / "instance", MAIL_REPLY_DOMAIN=DOMAIN, MAIL_BOARD_PICTURE=False)
    box = Mailbox(app)
    with app.app_context():
        created = create_game(PLAYERS, SEED, start=0)
    tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]

    # A German and a Spanish reply, each a whole turn in its own words, are applied; the
    # answers say so in the seat's language.
    replied = {}
    while set(replied) != {"de", "es"}:
        game, state = game_state(app)
        seat = state.current
        language = PLAYERS[seat].language
        if language in ("de", "es") and language not in replied and state.phase == "play":
            orders = _whole_turn(state, language)
            with app.app_context():
                handled = handle_incoming(_reply(_newest_key(box, PLAYERS[seat].email),
                                                 PLAYERS[seat].email, orders), None)
            assert handled.outcome == "applied", (orders, handled)
            replied[language] = orders
            continue
        move = str(engine.legal_moves(state)[0])
        with app.app_context():
            submit_move(tokens[seat], move, game.turn)
    assert any(w in " ".join(replied["de"]) for w in ("tausche", "Rat", "ziehe"))
    assert "robar mazo" in replied["es"] or "cambiar" in " ".join(replied["es"])
    answers = {lang: [m for m in box.to(PLAYERS[n].email) if str(m["Subject"]).startswith("Re:")]
               for n, lang in ((1, "de"), (2, "es"))}
    assert "Deine Befehle wurden ausgeführt" in text_of(answers["de"][-1])
    assert "Ausgeführt:" in text_of(answers["de"][-1])
    assert "Se han aplicado tus órdenes" in text_of(answers["es"][-1])

    # The rest of the game, to its end.
    while True:
        game, state = game_state(app)
        if state.is_over:
            break
        with app.app_context():
            submit_move(tokens[state.current], str(engine.legal_moves(state)[0]), game.turn)
    game, _ = game_state(app)
    assert game.status == "finished"

    # The log is stored without a language: message ids and parameters.
    with app.app_context(), reading() as session:
        first = session.exec(select(MoveRecord).order_by(MoveRecord.number)).first()
    stored = json.loads(first.lines_json)["-1"][0]
    assert stored["t"] == "%(who)s played %(cards)s and placed %(pieces)s." \
        or stored["t"].startswith("%(who)s")

    # Every mail to each seat is in its language, invitation to final scoring.
    for seat, player in enumerate(PLAYERS):
        mails = mails_in_own_language(box, player, english_fragments)
        final = mails[-1]
        assert {"en": "The game is over", "de": "Das Spiel ist zu Ende",
                "es": "La partida ha terminado"}[player.language] in str(final["Subject"])
        assert {"en": "Chains of monasteries", "de": "Klosterketten",
                "es": "Cadenas de monasterios"}[player.language] in text_of(final)

    # And so is each seat's page (the finished game, its log and its result).
    client = app.test_client()
    marks = {"en": ("Game log", "Language:"), "de": ("Spielverlauf", "Sprache:"),
             "es": ("Registro de la partida", "Idioma:")}
    for seat, player in enumerate(PLAYERS):
        page = client.get(f"/seat/{tokens[seat]}", headers={"Accept-Language": "en"})
        assert page.status_code == 200
        text = page.get_data(as_text=True)
        assert f'<html lang="{player.language}">' in text
        assert all(mark in text for mark in marks[player.language])
        if player.language != "en":
            assert not _unwanted(text, english_fragments[player.language])


@pytest.mark.parametrize("language, one, two, zero", [
    ("en", "1 card", "2 cards", "0 cards"),
    ("de", "1 Karte", "2 Karten", "0 Karten"),
    ("es", "1 carta", "2 cartas", "0 cartas"),
])
def test_plural_forms(app, language, one, two, zero):
    """Counted words follow each language's plural rule, in the server's words and in the
    engine's sentences it writes."""
    from flask_babel import force_locale, ngettext

    from engine.words import say_n
    from pbem.ground import i18n

    with app.app_context(), force_locale(language):
        assert [ngettext("%(num)d card", "%(num)d cards", n) for n in (1, 2, 0)] == \
            [one, two, zero]
        points = [i18n.render(say_n("%(num)d point", "%(num)d points", n)) for n in (1, 5)]
        assert points == {"en": ["1 point", "5 points"], "de": ["1 Punkt", "5 Punkte"],
                          "es": ["1 punto", "5 puntos"]}[language]


def test_grammar_of_the_sentences_players_tripped_on(app):
    """Issue 32, point 9: Spanish colour adjectives agree with 'carta' ('de color rojo'),
    'antes del domingo', 'ninguna segunda pieza'; German: no comma before 'aus' after a joker,
    no 'war 0 Mal aufgebraucht', no 'der' for a player who may be a woman."""
    from datetime import UTC, datetime

    from engine.words import say
    from pbem.ground import i18n

    sunday = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    with app.app_context():
        with i18n.in_language("es"):
            card = i18n.ngettext("%(num)d %(colour)s card (%(countries)s)",
                                 "%(num)d %(colour)s cards (%(countries)s)", 1,
                                 colour=i18n.colour("red"), countries="Franken")
            assert card == "1 carta de color rojo (Franken)"
            deadline = i18n.gettext("Please move by %(deadline)s.",
                                    deadline=i18n.format_local(sunday, None))
            assert deadline.startswith("Por favor, juega antes del domingo"), deadline
            assert i18n.gettext("no second piece") == "ninguna segunda pieza"
        with i18n.in_language("de"):
            joker = i18n.render(say("%(cards)s as a joker,", cards="zwei Karten Grün"))
            assert joker == "zwei Karten Grün als Joker"
            ran_out = i18n.ngettext("The deck has run out %(num)d time.",
                                    "The deck has run out %(num)d times.", 0)
            assert "0 Mal" not in ran_out and ran_out.endswith(": 0."), ran_out
            waiting = i18n.gettext("Waiting for %(name)s (%(colour)s), who has until "
                                   "%(deadline)s.", name="Chiara", colour="Lila",
                                   deadline="Sonntag")
            assert ", der" not in waiting, waiting
