"""The one list of games: each game's name, its engine package and where the server finds the
game's adapter. The engine (the arena, the command line) and the server (`pbem.games`) both read
it, so a new game is one entry here (docs/adding-a-game.md lists the other places it touches).

Each package has the same shape (see `engine`); this module only maps a name to it, so shared
code never imports one game's modules by name. The adapter is named, not imported: the engine
knows nothing of the server, which imports it (`pbem.games.rules_for`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Registration:
    """One game: `name` is its kind everywhere (command line, database, templates folder),
    `package` its engine package, `adapter` the server's adapter as "module:Class"."""

    name: str
    package: str
    adapter: str


GAMES: dict[str, Registration] = {game.name: game for game in (
    Registration("kardinal-koenig", "engine.kardinal_koenig",
                 "pbem.games.kardinal_koenig:KardinalKoenig"),
    Registration("knights-castles", "engine.knights_castles",
                 "pbem.games.knights_castles:KnightsCastles"),
)}
PACKAGES = {name: game.package for name, game in GAMES.items()}  # the games of the source
NAMES = tuple(GAMES)
DEFAULT = NAMES[0]


def game_package(name: str) -> ModuleType:
    """The package of game `name`; ValueError names the games there are."""
    if name not in GAMES:
        raise ValueError(f"unknown game {name!r}; the games are {', '.join(GAMES)}")
    return importlib.import_module(GAMES[name].package)


def register(game: Registration) -> None:
    """Add `game` to the list while the process runs (a test's toy game); ValueError when a
    game of that name is there already."""
    if game.name in GAMES:
        raise ValueError(f"a game {game.name!r} is registered already")
    GAMES[game.name] = game


def unregister(name: str) -> None:
    """Take game `name`, registered with `register`, off the list again."""
    if name in PACKAGES:
        raise ValueError(f"{name!r} is one of the games of the source")
    GAMES.pop(name, None)


@contextmanager
def registered(game: Registration) -> Iterator[Registration]:
    """`game` on the list inside the `with` block only."""
    register(game)
    try:
        yield game
    finally:
        unregister(game.name)
