"""No English word on a German or Spanish player's pages and mails (issue 32): a whole game of
each kind played through the server with an English, a German and a Spanish seat and a computer
player the server named (`Computer (strong)`, which must read as "Computer (stark)"), every page
each seat sees (its page, previews, history, turn file, the spectator page, its games) and every
mail (text and HTML) read for English words.

An English word is a word of the server's English messages or of the notation ('build',
'village', 'advisor', 'strong') that the reader's own catalog does not use too; names are not
words here: players', countries', fields', the games' and the languages' names. This catches
what tests/server/test_three_languages.py's fragments (14 characters or more of a message) cannot: a
move written in the notation's English ('build village') or a word put into a sentence
('Computer (strong)')."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from server import Mailbox, field, html_of, make_app, text_of
from sqlmodel import select

from engine.knights_castles.cards import KINDS
from pbem.games import rules_for
from pbem.ground.db import reading
from pbem.ground.models import Game
from pbem.scheduler.jobs import run_jobs
from pbem.services.creating import create_game
from pbem.services.moves import submit_move
from pbem.services.players import PlayerSpec, bot_player

pytestmark = pytest.mark.usefixtures("database")

ROOT = Path(__file__).resolve().parent.parent.parent
PLAYERS = [PlayerSpec("Anna", "anna@example.org", language="en"),
           PlayerSpec("Bernd", "bernd@example.org", language="de"),
           PlayerSpec("Carmen", "carmen@example.org", language="es"),
           bot_player("strong")]
PEOPLE = [p for p in PLAYERS if p.bot is None]
WORD = re.compile(r"[A-Za-zÀ-ÿ]{3,}")
# The notation's English words, which no message holds whole.
NOTATION = {"done", "buy", "build", "keep", "pay", "abandon", "research", "share", "play",
            "lose", "offer", "accept", "decline", "discard", "war", "advisor", "exchange",
            "draw", "deck", "pass", "yellow", "red", "green", "purple", "blue", "cream",
            "orange", "strong", "greedy", "random", "nothing",
            *(k.name.lower() for k in KINDS), *(k.id for k in KINDS)}
# Words that are the same in the reader's language as in English, and names.
SAME = {"de": {"invasion", "gold", "mine", "hand", "inventor", "war", "orange"},
        "es": {"inventor"}}
NAMES = {"anna", "bernd", "carmen", "dora", "knights", "castles", "kardinal", "könig",
         "michael", "schacht",
         "english", "deutsch", "español", "utc", "pbem", "svg", "png"}


@pytest.fixture(scope="module")
def english_words(tmp_path_factory) -> dict[str, set[str]]:
    pot = tmp_path_factory.mktemp("pot") / "messages.pot"
    subprocess.run([sys.executable, "-m", "babel.messages.frontend", "extract", "-F",
                    "babel.cfg", "-k", "N_", "-k", "L_", "-k", "say", "-k", "say_n:1,2",
                    "-o", str(pot), "."], cwd=ROOT, check=True, capture_output=True)
    english = set(NOTATION)
    with pot.open("rb") as f:
        for message in read_po(f):
            for text in (message.id if isinstance(message.id, tuple) else (message.id,)):
                text = re.sub(r"%\(\w+\)[sd]|<[^>]+>", " ", text or "")
                english |= {w.lower() for w in WORD.findall(text)}
    found = {}
    for language in ("de", "es"):
        path = ROOT / "pbem/translations" / language / "LC_MESSAGES/messages.po"
        with path.open("rb") as f:
            own = set()
            for message in read_po(f, locale=language):
                text = message.string
                text = " ".join(text) if isinstance(text, tuple) else (text or "")
                own |= {w.lower() for w in WORD.findall(text)}
        # A catalog quotes the notation's English where it says it is read too ("or village,
        # trade-route"): that does not make those words the reader's.
        found[language] = english - (own - NOTATION) - SAME[language] - NAMES
    return found


# The attributes whose words a reader sees (a box's hint, a tooltip, a screen reader's name).
SEEN_ATTRIBUTES = re.compile(r'\b(?:placeholder|title|aria-label|alt)="([^"]*)"')


def _readable(text: str, is_html: bool) -> str:
    if is_html:
        text = re.sub(r"(?s)<(script|style|svg)\b.*?</\1>", " ", text)
        seen = " ".join(SEEN_ATTRIBUTES.findall(text))
        text = html.unescape(re.sub(r"<[^>]+>", " ", text) + " " + seen)
    return re.sub(r"https?://\S+", " ", text)


def english_in(text: str, words: set[str], names: set[str], is_html: bool = True) -> list[str]:
    readable = _readable(text, is_html)
    for name in names:  # a field or country name of several words ("Saint-Denis")
        readable = readable.replace(name, " ")
    return sorted({w for w in WORD.findall(readable) if w.lower() in words})


def _game(app, rules):
    with app.app_context(), reading() as session:
        game = session.exec(select(Game)).one()
        return game, rules.loads(game.state_json)


@pytest.mark.parametrize("kind", ["knights-castles", "kardinal-koenig"])
def test_a_whole_game_in_german_and_spanish_has_no_english_word(tmp_path, english_words, kind):
    app = make_app(tmp_path / "instance", MAIL_REPLY_DOMAIN="games.example.org",
                   MAIL_BOARD_PICTURE=False)
    box = Mailbox(app)
    now = datetime.now(UTC)
    with app.app_context():
        created = create_game(PLAYERS, f"words-{kind}", kind=kind, start=0, now=now)
    tokens = [link and link.rsplit("/", 1)[1] for _, _, link in created.links]
    rules = rules_for(kind)
    names = set()
    if kind == "kardinal-koenig":
        names = {c.name for c in rules.board.countries} | {
            f.name for f in rules.board.fields}
    client = app.test_client()
    pages: list[tuple[int | str, str, str]] = []  # (seat or language, what, text)
    for number in range(2000):
        game, state = _game(app, rules)
        seat = rules.to_move(state)
        if seat is None:
            break
        if tokens[seat] is None:  # the computer player's move, by the scheduler
            now += timedelta(minutes=1)
            run_jobs(app, now)
            assert _game(app, rules)[0].turn > game.turn, "the computer player did not move"
            continue
        with app.app_context():
            move = rules.bot_move(state, "greedy", f"w{number}")
        if number % 13 == 3 and PLAYERS[seat].language != "en":
            page = client.get(f"/seat/{tokens[seat]}").get_data(as_text=True)
            pages.append((seat, "page", page))
            preview = client.post(f"/seat/{tokens[seat]}/preview", data={
                "csrf_token": field(page, "csrf_token"), "turn": str(game.turn),
                "action": "move", "move": move, "notation": move})
            pages.append((seat, f"preview of {move}", preview.get_data(as_text=True)))
            pages.append((seat, "turn file", client.get(
                f"/seat/{tokens[seat]}/turnfile").get_data(as_text=True)))
        with app.app_context():
            submit_move(tokens[seat], move, game.turn, now=now)
    assert rules.to_move(_game(app, rules)[1]) is None, "the game did not end"
    for seat, player in enumerate(PLAYERS):
        if player.language == "en" or player.bot:
            continue
        pages.append((seat, "final page", client.get(f"/seat/{tokens[seat]}").get_data(
            as_text=True)))
        pages.append((seat, "history", client.get(
            f"/seat/{tokens[seat]}/history?at=7").get_data(as_text=True)))
        mine = [m for message in box.to(player.email)
                for m in re.findall(r"https?://\S+?(/me/[A-Za-z0-9_-]+)", text_of(message))]
        if mine:
            pages.append((seat, "my games", client.get(mine[-1]).get_data(as_text=True)))
    game, _ = _game(app, rules)
    for language in ("de", "es"):
        for at in ("", "?at=9"):
            pages.append((language, "spectator", client.get(
                f"/watch/{game.watch_id}{at}",
                headers={"Accept-Language": language}).get_data(as_text=True)))
    found = []
    for who, what, text in pages:
        language = who if isinstance(who, str) else PLAYERS[who].language
        left = english_in(text, english_words[language], names,
                          is_html=not what.startswith("turn file"))
        if left:
            found.append((language, what, left))
    mails = 0
    for player in PEOPLE:
        if player.language == "en":
            continue
        for message in box.to(player.email):
            mails += 1
            for is_html, body in ((False, text_of(message)), (True, html_of(message))):
                left = english_in(body, english_words[player.language], names, is_html)
                if left:
                    found.append((player.language, str(message["Subject"]), left))
    assert mails > 40 and len(pages) > 20
    german = [text for who, _, text in pages
              if (who if isinstance(who, str) else PLAYERS[who].language) == "de"]
    assert any("Computer (stark)" in text for text in german)
    assert not found, found[:12]


def test_the_check_finds_what_players_tripped_on(english_words):
    """The check is precise enough: a move in the notation's English and a bot's level are
    English; country names, the notation's card letters and German words are not."""
    german = english_words["de"]
    assert english_in("<p>Vas a jugar build village</p>", english_words["es"], set()) == [
        "build", "village"]
    assert english_in("<td>Computer (strong)</td>", german, set()) == ["strong"]
    assert english_in("<p>GG Franken: Würzburg, Rat; Dorf ×2, Gold 5</p>", german,
                      {"Franken", "Würzburg"}) == []
    assert english_in('<input name="give_cards" placeholder="village, town">', german,
                      set()) == ["town", "village"]


def _post(client, page: str, path: str, **data) -> str:
    """The page a form's POST leads to (its redirect followed), from a browser that asks for
    English: what the seat reads must be in the seat's language all the same."""
    answer = client.post(path, data={"csrf_token": field(page, "csrf_token"), **data},
                         headers={"Accept-Language": "en"}, follow_redirects=True)
    assert answer.status_code == 200, (path, answer.status_code)
    return answer.get_data(as_text=True)


def test_what_a_seats_own_actions_answer_is_in_its_language(tmp_path, english_words):
    """The answers to a German or Spanish seat's forms (settings, feed and calendar links,
    messages, vacation, taking back a turn) and the Knights & Castles offer form have no English
    word, though the browser asks for English (issue 43: "Your new calendar link is below",
    "Everyone agreed: the turn is taken back." and the offer form's hints "village, town" were
    English on German pages)."""
    app = make_app(tmp_path / "instance", MAIL_REPLY_DOMAIN="games.example.org",
                   MAIL_BOARD_PICTURE=False)
    box = Mailbox(app)
    now = datetime.now(UTC)
    with app.app_context():
        created = create_game(PEOPLE, "words-actions", kind="knights-castles", start=0, now=now)
    tokens = [link.rsplit("/", 1)[1] for _, _, link in created.links]
    rules = rules_for("knights-castles")
    client = app.test_client()
    seen: list[tuple[str, str, str]] = []  # (language, what, page)

    def act(seat: int, what: str, path: str, **data) -> str:
        page = client.get(f"/seat/{tokens[seat]}").get_data(as_text=True)
        answer = _post(client, page, path.format(token=tokens[seat]), **data)
        seen.append((PEOPLE[seat].language, what, answer))
        return answer

    def play_until(wanted) -> None:
        for number in range(500):
            game, state = _game(app, rules)
            if wanted(state):
                return
            with app.app_context():
                move = rules.bot_move(state, "greedy", f"a{number}")
                submit_move(tokens[rules.to_move(state)], move, game.turn, now=now)
        raise AssertionError("never came")

    for seat in (1, 2):
        act(seat, "mail setting", "/seat/{token}/settings", notify="turn")
        act(seat, "time zone", "/seat/{token}/timezone", timezone="Europe/Berlin")
        act(seat, "new feed link", "/seat/{token}/feed")
        act(seat, "message", "/seat/{token}/talk", text="Hallo", to="")
        act(seat, "talk setting", "/seat/{token}/talk/settings", talk_notify="none")
        act(seat, "vacation", "/seat/{token}/vacation", days="1")
        act(seat, "vacation over", "/seat/{token}/vacation/end")
        mine = [m for message in box.to(PEOPLE[seat].email)
                for m in re.findall(r"https?://\S+?(/me/[A-Za-z0-9_-]+)", text_of(message))]
        page = client.get(mine[-1]).get_data(as_text=True)
        seen.append((PEOPLE[seat].language, "new calendar link",
                     _post(client, page, f"{mine[-1]}/calendar")))
    # Carmen (es) plays a move of her turn that shows her no card (a turn that drew from the
    # deck is not taken back by agreement: issue 42); she asks to take it back, Anna agrees,
    # Bernd (de) agrees last.
    def a_move_that_shows_no_card(seat: int) -> None:
        play_until(lambda state: state.to_move == seat and state.current == seat)
        game, state = _game(app, rules)
        after = {m: rules.apply(state, rules.parse(state, m)) for m in sorted(rules.legal(state))}
        unseen = [m for m, then in after.items()
                  if then.deck == state.deck and rules.to_move(then) == seat]
        assert unseen, "a move that draws no card and leaves the seat to move"
        with app.app_context():
            submit_move(tokens[seat], unseen[0], game.turn, now=now)

    a_move_that_shows_no_card(2)
    act(2, "asked to take back", "/seat/{token}/undo")
    act(0, "agreed", "/seat/{token}/undo/answer", answer="agree")
    done = act(1, "everyone agreed", "/seat/{token}/undo/answer", answer="agree")
    # The German undo says "Zug", as the page does, not "Runde".
    assert "Alle haben zugestimmt: der Zug ist zurückgenommen." in done
    # Bernd plays a move of his turn and asks; Carmen declines.
    a_move_that_shows_no_card(1)
    act(1, "asked to take back", "/seat/{token}/undo")
    act(2, "declined", "/seat/{token}/undo/answer", answer="decline")
    # The offer form, in the trade phase of a German and a Spanish turn.
    for seat in (1, 2):
        play_until(lambda state, seat=seat: state.to_move == seat and any(
            m.startswith("offer") for m in rules.move_patterns(state)))
        seen.append((PEOPLE[seat].language, "offer form",
                     client.get(f"/seat/{tokens[seat]}").get_data(as_text=True)))
        assert 'id="offer-form"' in seen[-1][2]
    found = [(language, what, left) for language, what, text in seen
             if language != "en" and (left := english_in(text, english_words[language], set()))]
    assert not found, found


@pytest.mark.parametrize("language", ["de", "es"])
def test_starting_a_game_reads_in_the_browsers_language(tmp_path, english_words, language):
    """The pages of a game started by a player (the form, the starter's page, a friend's
    invitation, before and after the answer) and the mails they bring have no English word
    for a German or Spanish browser."""
    app = make_app(tmp_path / "instance", GAMES_OPEN_CREATION=True,
                   MAIL_REPLY_DOMAIN="games.example.org")
    box = Mailbox(app)
    client = app.test_client()
    head = {"Accept-Language": language}
    pages = [("new", client.get("/new", headers=head).get_data(as_text=True))]
    answer = client.post("/new", headers=head, data={
        "csrf_token": field(pages[0][1], "csrf_token"), "game": "kardinal-koenig",
        "name": "Anna", "email": "anna@example.org", "colour0": "blue",
        "deadline_hours": "48", "timezone": "Europe/Berlin",
        "email1": "bernd@example.org", "name1": "Bernd", "colour1": "red",
        "email2": "carmen@example.org", "name2": "", "colour2": "green"})
    pages.append(("proposed", answer.get_data(as_text=True)))
    manage = re.search(r"/new/game/([A-Za-z0-9_-]{32})", text_of(box.messages()[-1]))[1]
    page = client.get(f"/new/game/{manage}", headers=head).get_data(as_text=True)
    pages.append(("starter's page", page))
    client.post(f"/new/game/{manage}/confirm", headers=head,
                data={"csrf_token": field(page, "csrf_token")})
    pages.append(("starter's page, sent", client.get(f"/new/game/{manage}",
                                                     headers=head).get_data(as_text=True)))
    invite = re.search(r"/invite/([A-Za-z0-9_-]{32})", text_of(box.to("bernd@example.org")[-1]))[1]
    page = client.get(f"/invite/{invite}", headers=head).get_data(as_text=True)
    pages.append(("invitation", page))
    client.post(f"/invite/{invite}/accept", headers=head,
                data={"csrf_token": field(page, "csrf_token"), "name": "Bernd"})
    pages.append(("invitation, accepted", client.get(f"/invite/{invite}",
                                                     headers=head).get_data(as_text=True)))
    assert "Bernd" in pages[-1][1]
    found = [(what, left) for what, text in pages
             if (left := english_in(text, english_words[language], set()))]
    for message in box.to("anna@example.org") + box.to("bernd@example.org"):
        for is_html, body in ((False, text_of(message)), (True, html_of(message))):
            if left := english_in(body, english_words[language], set(), is_html):
                found.append((str(message["Subject"]), left))
    assert not found, found
