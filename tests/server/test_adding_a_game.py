"""docs/adding-a-game.md lists every place a new game touches; this walks the one list of games
(`engine.games.GAMES`) and checks each game has them, and plays a toy third game
(tests/stones_game) registered at run time through the real services and the seat page."""

from __future__ import annotations

import ast
import html
import importlib
import re
from pathlib import Path

import pytest
from flask_babel import force_locale
from server import field, make_app, new_game
from sqlmodel import select
from stones_game import KIND, REGISTRATION

from engine import games as engine_games
from pbem.games import Rules, RulesBase, Shown, ShownBase, game_kinds, rules_for
from pbem.ground.db import reading
from pbem.ground.models import FINISHED, Game, MoveRecord

ROOT = Path(__file__).resolve().parent.parent.parent
DOC = (ROOT / "docs" / "adding-a-game.md").read_text(encoding="utf-8")
TEMPLATES = ("board.html", "hand.html", "legal.html", "move.html", "picture.html",
             "mail_board.html", "admin_state.html")


def _members(protocol) -> set[str]:
    names = set(getattr(protocol, "__annotations__", {}))
    return names | {name for name, value in vars(protocol).items()
                    if callable(value) and not name.startswith("_")}


def problems_of(kind: str, app=None, languages: tuple[str, ...] = ("de", "es")) -> list[str]:
    """What game `kind` lacks of the places docs/adding-a-game.md lists (its words in
    `languages`, read in `app`)."""
    entry = engine_games.GAMES[kind]
    found = []
    importlib.import_module(entry.package)  # 1. the engine package
    rules = rules_for(kind)  # 2. the entry names the adapter, 3. which is the game's
    if rules.kind != kind or not isinstance(rules, RulesBase) or not isinstance(rules, ShownBase):
        found.append(f"{kind}: the adapter inherits RulesBase and ShownBase, with kind {kind}")
    found += [f"{kind}: the adapter lacks {name}" for name in sorted(_members(Rules)
              | _members(Shown)) if not hasattr(rules, name)]
    folder = Path(rules.templates or ROOT / "templates" / "games" / kind)  # 4. the templates
    found += [f"{kind}: no template {folder / name}" for name in TEMPLATES
              if not (folder / name).is_file()]
    state = rules.new_state(list(rules.colours[:rules.min_players]), "words", None)
    for language in languages:  # 5. the words in the catalogs
        with app.test_request_context(), force_locale("en"):
            english = [rules.summary(), *rules.how_to_play(state),
                       *(rules.variant_label(v) for v in rules.variants)]
        with app.test_request_context(), force_locale(language):
            said = [rules.summary(), *rules.how_to_play(state),
                    *(rules.variant_label(v) for v in rules.variants)]
        found += [f"{kind}: {en!r} is not translated to {language}"
                  for en, there in zip(english, said) if en == there]
    if type(rules).picture_pieces is not ShownBase.picture_pieces:  # 6. a layered picture
        from pbem.games.picture_palettes import PALETTES

        if kind not in PALETTES:
            found.append(f"{kind}: its picture is drawn in layers but has no palette")
    return found


def test_the_doc_lists_what_the_walk_checks():
    """Each template the walk asks for is in the doc's table, and each of the doc's places is
    one the walk checks."""
    assert set(re.findall(r"^\s*\| `(\w+\.html)` \|", DOC, re.MULTILINE)) == set(TEMPLATES)
    for place in ("engine/games.py", "RulesBase", "ShownBase", "templates/games/<kind>/",
                  "messages.po", "picture_palettes.py"):
        assert place in DOC, place


def test_no_adapter_keeps_sentences_by_language():
    """The rule summaries were dictionaries of German and Spanish in the adapters; every
    sentence is in the catalogs now (pbem/ground/i18n.py), none keyed by a language."""
    found = []
    for path in sorted((ROOT / "pbem" / "games").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict) and any(
                    isinstance(k, ast.Constant) and k.value in ("de", "es") for k in node.keys):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def test_the_engine_and_the_server_read_one_list_of_games():
    assert list(game_kinds()) == list(engine_games.GAMES) == list(engine_games.NAMES)
    for kind in game_kinds():
        assert type(rules_for(kind)).__module__ + ":" + type(rules_for(kind)).__name__ \
            == engine_games.GAMES[kind].adapter


@pytest.mark.parametrize("kind", list(engine_games.GAMES))
def test_every_game_of_the_list_has_every_place_the_doc_lists(kind, tmp_path):
    assert problems_of(kind, make_app(tmp_path / "instance")) == []


def test_the_walk_finds_what_a_game_lacks(tmp_path, monkeypatch):
    """A game without a template or a translation is named (the walk can fail)."""
    with engine_games.registered(REGISTRATION):
        rules = rules_for(KIND)
        monkeypatch.setattr(type(rules), "templates", str(tmp_path))
        found = problems_of(KIND, make_app(tmp_path / "instance"), ("de",))
    assert f"{KIND}: no template {tmp_path / 'board.html'}" in found
    assert any("is not translated to de" in line for line in found)


@pytest.mark.usefixtures("database")
def test_a_toy_third_game_registered_at_run_time_is_played_through_the_seat_page(tmp_path):
    """The toy game is an engine package, one registration, an adapter and its templates
    (English only: the tests' words are not in the catalogs), and nothing else."""
    with engine_games.registered(REGISTRATION):
        assert problems_of(KIND, languages=()) == []
        app = make_app(tmp_path / "instance", MAIL_BOARD_PICTURE=False)
        client = app.test_client()
        home = html.unescape(re.sub(r"<[^>]+>", "", client.get("/").get_data(as_text=True)))
        assert "Take the Last Stone (2 to 2 players)" in home
        created, tokens = new_game(app, 2, "stones", kind=KIND, colours=["red", "blue"])
        for _ in range(12):  # at most 12 stones, one at least a move
            with reading(app) as db:
                game = db.get(Game, created.game_id)
            if game.status == FINISHED:
                break
            state = rules_for(KIND).loads(game.state_json)
            token = tokens[state.current]
            page = client.get(f"/seat/{token}").get_data(as_text=True)
            assert f"{state.heap} stones are left in the heap." in page
            assert 'id="heap"' in page and "<circle" in page
            move = f"take {min(3, state.heap)}"
            assert f'value="{move}"' in page  # move.html's button
            answer = client.post(f"/seat/{token}/move", data={
                "csrf_token": field(page, "csrf_token"), "turn": field(page, "turn"),
                "action": "move", "move": move})
            assert answer.status_code == 303, answer.get_data(as_text=True)
        with reading(app) as db:
            game = db.get(Game, created.game_id)
            log = db.exec(select(MoveRecord.notation).where(
                MoveRecord.game_id == game.id).order_by(MoveRecord.number)).all()
        assert game.status == FINISHED
        final = rules_for(KIND).loads(game.state_json)
        assert final.heap == 0 and sum(int(n.split()[1]) for n in log) == \
            rules_for(KIND).replay(final, []).heap
        page = client.get(f"/seat/{tokens[final.winner]}").get_data(as_text=True)
        assert "took the last stone and wins." in page
        watched = client.get(f"/watch/{game.watch_id}").get_data(as_text=True)
        assert "0 stones are left in the heap." in watched
    assert KIND not in game_kinds()
