"""The server is game-neutral: outside `pbem/games/` and `templates/games/<kind>/` nothing says
which game it serves, and the pages name a game only through its game module."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from server import make_app, new_game

from pbem.games import game_kinds, rules_for

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parent.parent.parent
# Words only one game uses: its title, and what its board or cards are made of (a game not
# listed here is checked by its title: docs/adding-a-game.md).
GAME_WORDS = {
    "kardinal-koenig": ["Kardinal", "König", "Koenig", "monaster", "cloister", "advisor",
                        "Franken", "face-up", "draw deck", "joker"],
    "knights-castles": ["Knights", "Castles", "village", "tableau", "disaster"],
}


# In pbem/games/ the interface and the mail's picture serve every game alike (the registry,
# pbem/games/__init__.py, names the games it holds).
SHARED_IN_GAMES = ("pbem/games/interface.py", "pbem/games/picture.py")


def _shared_files():
    for top in ("pbem", "templates"):
        for path in sorted((ROOT / top).rglob("*")):
            parts = path.relative_to(ROOT).parts
            if (path.is_file() and path.suffix in {".py", ".html", ".txt", ".js", ".css", ".svg"}
                    and "games" not in parts and "translations" not in parts
                    and "migrations" not in parts and "__pycache__" not in parts):
                yield path
    for name in SHARED_IN_GAMES:
        yield ROOT / name


def test_no_shared_file_names_a_game():
    """No file of the server outside the games' own folders names a game or its pieces."""
    assert set(GAME_WORDS) <= set(game_kinds())
    every = {kind: GAME_WORDS.get(kind, [rules_for(kind).title]) for kind in game_kinds()}
    found = []
    for path in _shared_files():
        text = path.read_text(encoding="utf-8")
        for words in every.values():
            for word in words:
                for line_number, line in enumerate(text.splitlines(), 1):
                    if word.lower() in html.unescape(line).lower() and "advisory" not in line:
                        found.append(f"{path.relative_to(ROOT)}:{line_number}: {word}")
    assert not found, "\n".join(found)


def test_pages_name_the_games_from_their_modules(tmp_path):
    """The front page lists every game with its title and player counts from its module; a
    game's pages name that game in the header, the others' pages not at all."""
    app = make_app(tmp_path / "instance")
    client = app.test_client()
    home = html.unescape(re.sub(r"<[^>]+>", "", client.get("/").get_data(as_text=True)))
    assert "Board games by post" in home
    for kind in game_kinds():
        rules = rules_for(kind)
        assert f"{rules.title} ({rules.min_players} to {rules.max_players} players)" in home
    _, tokens = new_game(app, 2, "neutral", kind="knights-castles")
    page = html.unescape(client.get(f"/seat/{tokens[0]}").get_data(as_text=True))
    header = page.split('<header class="site">')[1].split("</header>")[0]
    assert "Knights & Castles" in header and "Kardinal" not in page
