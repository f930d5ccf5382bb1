"""Floor 1, the games: the one interface between the server and the engine's games.

Owns the interface (pbem.games.interface: the rules the server plays by and how a game is
shown), the adapters of the games behind it (kardinal_koenig, knights_castles: thin layers over
`engine/`), reading the one list of games (`engine.games.GAMES`, which names each game's
adapter) here (`rules_for`, `game_kinds`) and the mail's board picture
(picture, picture_palettes). Imports `engine` and pbem.ground only; nothing here touches the
database or mail.
"""

from __future__ import annotations

import importlib

from engine import games as engine_games

from .interface import (
    ByState,
    GameRules,
    MoveError,
    ResultTable,
    Rules,
    RulesBase,
    SetupProblem,
    Shown,
    ShownBase,
    StateCache,
    choices,
)

__all__ = ["DEFAULT_KIND", "ByState", "GameRules", "MoveError", "ResultTable", "Rules",
           "RulesBase", "SetupProblem", "Shown", "ShownBase", "StateCache", "choices",
           "game_kinds", "games_help", "registry", "rules_for"]


def games_help(what: str) -> str:
    """A line of command-line help about every game: their `titles`, `kinds`, `players`
    counts, `bots` or `variants` (each game's own words, `variant_help`)."""
    games = [rules_for(kind) for kind in game_kinds()]
    if what == "titles":
        return ", ".join(g.title for g in games)
    if what == "kinds":
        return " or ".join(g.kind for g in games)
    if what == "players":
        return ", ".join(f"{g.title} {g.min_players} to {g.max_players}" for g in games)
    if what == "bots":
        return "; ".join(f"{g.title}: {', '.join(g.bots)}" for g in games if g.bots)
    return "; ".join(f"{g.title}: {g.variant_help}" for g in games)


def registry() -> dict[str, GameRules]:
    """Every game of the engine's list (`engine.games.GAMES`) with its adapter, by kind."""
    return {kind: rules_for(kind) for kind in engine_games.GAMES}


# The adapter of each kind, with the entry it was made for (a kind registered again, as a test
# does, gets a new one): one instance per process.
_ADAPTERS: dict[str, tuple[engine_games.Registration, GameRules]] = {}


def game_kinds() -> dict[str, str]:
    """Every game the server hosts: kind -> title, the default first."""
    return {kind: rules_for(kind).title for kind in engine_games.GAMES}


def rules_for(kind: str) -> GameRules:
    """The rules of game `kind`, its adapter as the engine's list names it; KeyError names the
    known kinds."""
    entry = engine_games.GAMES.get(kind)
    if entry is None:
        raise KeyError(f"unknown game {kind!r}; known: {', '.join(sorted(engine_games.GAMES))}")
    held = _ADAPTERS.get(kind)
    if held is not None and held[0] is entry:
        return held[1]
    module, _, name = entry.adapter.partition(":")
    adapter = getattr(importlib.import_module(module), name)()
    if adapter.kind != kind:
        raise ValueError(f"the adapter {entry.adapter} is for {adapter.kind!r}, not {kind!r}")
    _ADAPTERS[kind] = (entry, adapter)
    return adapter


DEFAULT_KIND = engine_games.DEFAULT
