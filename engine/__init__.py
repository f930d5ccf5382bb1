"""The rules of the games this project hosts, and nothing else: no web, no database, no mail, no
clock, no global random.

Vocabulary, used the same way everywhere in this project:
- engine: these rules, as pure functions over immutable values;
- board: the map as data (countries, cloister fields, roads, alliances, card colours);
- state: one position of one game (`GameState`), secrets included;
- view: what one seat, or a spectator, may see of a state (`SeatView`);
- move: one action, with a text notation that round-trips;
- seat: a player's place at the table, 0..n-1 clockwise, shown by the player's colour;
- Game: one hosted playthrough (a database row, in `pbem`); it is not part of the engine.

Each game is a package of the same shape (`state`, `moves`, `rules`, `view`, `outcome`,
`narrate`, `serialize`, `svg`, `playout`, `bots`): `engine.kardinal_koenig` and
`engine.knights_castles`, listed in `engine.games`. Shared by all games are only the errors
(`engine.errors`), counted words (`engine.words`), the folding of typed names (`engine.names`),
looking a computer player up by name (`engine.players`), the bots' arena (`engine.arena`), the
strong computer player's review of a finished game (`engine.review`) and
the command line (`python -m engine`).

The names below are Kardinal & König's, the project's first game, kept here as its documented
public interface (`import engine; engine.new_game(4, seed)`); new code imports the game's package.
"""

from .errors import BoardError, IllegalMoveError, NotationError, SetupError, StateError
from .kardinal_koenig import (
                              ADVISOR,
                              DECK,
                              PLAYER_COLOURS,
                              Board,
                              Breakdown,
                              Draw,
                              Exchange,
                              GameState,
                              Move,
                              Outcome,
                              Pass,
                              Place,
                              Position,
                              SeatView,
                              apply_move,
                              default_board,
                              describe,
                              final_breakdown,
                              foretell,
                              from_json,
                              intermediate_breakdown,
                              legal_moves,
                              load_board,
                              new_game,
                              outcome,
                              parse_move,
                              parse_moves,
                              parse_position,
                              replay,
                              to_json,
                              view_for,
)

__all__ = [
    "ADVISOR", "DECK", "PLAYER_COLOURS", "Board", "BoardError", "Breakdown", "Draw", "Exchange",
    "GameState", "IllegalMoveError", "Move", "NotationError", "Outcome", "Pass", "Place",
    "Position", "SeatView", "SetupError", "StateError", "apply_move", "default_board", "describe",
    "final_breakdown", "foretell", "from_json", "intermediate_breakdown", "legal_moves", "load_board",
    "new_game", "outcome", "parse_move", "parse_moves", "parse_position", "replay", "to_json",
    "view_for",
]
