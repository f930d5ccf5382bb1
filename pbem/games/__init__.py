"""Floor 1, the games: the one interface between the server and the engine's games.

Owns the interface (pbem.games.interface: the rules the server plays by and how a game is
shown), the two games behind it (kardinal_koenig, knights_castles: thin layers over
`engine/`), the registry here (`rules_for`, `game_kinds`) and the mail's board picture
(picture, picture_palettes). Imports `engine` and pbem.ground only; nothing here touches the
database or mail.
"""

from __future__ import annotations

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
    from .kardinal_koenig import KardinalKoenig
    from .knights_castles import KnightsCastles

    games: list[GameRules] = [KardinalKoenig(), KnightsCastles()]
    return {g.kind: g for g in games}


_GAMES: dict[str, GameRules] | None = None


def game_kinds() -> dict[str, str]:
    """Every game the server hosts: kind -> title, the default first."""
    rules_for(DEFAULT_KIND)
    return {kind: rules.title for kind, rules in _GAMES.items()}


def rules_for(kind: str) -> GameRules:
    """The rules of game `kind`; KeyError names the known kinds."""
    global _GAMES
    if _GAMES is None:
        _GAMES = registry()
    try:
        return _GAMES[kind]
    except KeyError:
        raise KeyError(f"unknown game {kind!r}; known: {', '.join(sorted(_GAMES))}") from None


DEFAULT_KIND = "kardinal-koenig"
