"""The games the engine knows, by the names the command line and the server use for them.

Each is a package of the same shape (see `engine`); this module only maps a name to it, so shared
code (the arena, the command line) never imports one game's modules by name.
"""

from __future__ import annotations

import importlib
from types import ModuleType

PACKAGES = {
    "kardinal-koenig": "engine.kardinal_koenig",
    "knights-castles": "engine.knights_castles",
}
NAMES = tuple(PACKAGES)
DEFAULT = NAMES[0]


def game_package(name: str) -> ModuleType:
    """The package of game `name`; ValueError names the games there are."""
    if name not in PACKAGES:
        raise ValueError(f"unknown game {name!r}; the games are {', '.join(NAMES)}")
    return importlib.import_module(PACKAGES[name])
