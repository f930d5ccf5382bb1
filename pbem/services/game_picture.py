"""The whole game as a picture (issue 46): an animated PNG of a finished game's still picture
turn by turn, as a spectator sees it (pbem.games.picture.whole_game draws it).

Made from the game's log, replayed through its rules, once per finished game and language:
when the final mail is built for sending or the spectator page first asks for it, never in
a move's transaction. Kept as a file under the instance folder (`pictures/`), written whole
and then renamed, so a reader never gets half of one; one process makes one at a time.
Owns nothing else: the mail and the page only ask for the bytes.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from flask import current_app
from sqlmodel import col, select

from ..games import picture, rules_for
from ..ground.db import reading
from ..ground.i18n import gettext
from ..ground.models import FINISHED, Game, MoveRecord
from . import turns
from .errors import NotFound

logger = logging.getLogger(__name__)

FOLDER = "pictures"
MAX_MOVES = 2000  # more than any game of ours takes; a log past it gets no picture
_making = threading.Lock()  # a process makes one picture at a time (a second waits)


def _not_over() -> NotFound:
    return NotFound(gettext("The whole game's picture is made when the game is over; come "
                            "back then."))


@dataclass(frozen=True)
class GamePicture:
    """The picture's bytes and a name for them that changes whenever they could (an ETag)."""

    png: bytes
    tag: str


def frames(kind: str, state_json: str, log: list[tuple[int, str, str | None]]) -> list:
    """The states a game's picture shows: the set-up, then the position after each turn (as
    players count them, pbem.services.turns) of `log` ((number, notation, lines_json), oldest
    first), replayed through the rules from the set-up of the stored state `state_json`.
    ValueError when the replay does not end where the stored game is."""
    rules = rules_for(kind)
    final = rules.loads(state_json)
    state = rules.history_state(final, [])
    numbers = turns.numbered(rules, 0, log)
    shown = [state]
    for at, (_number, notation, _lines) in enumerate(log):
        state = rules.apply(state, rules.parse(state, notation))
        if at + 1 == len(log) or numbers[at + 1] != numbers[at]:
            shown.append(state)
    if rules.dumps(state) != rules.dumps(final):
        raise ValueError("the game's log does not replay to its stored position")
    return shown


def whole_game(watch_id: str, language: str) -> GamePicture:
    """The picture of the finished game `watch_id`, its words in `language`: the kept one, else
    made now and kept. NotFound for a game that is not (or not yet) over."""
    with reading() as session:
        game = session.exec(select(Game).where(Game.watch_id == watch_id)).first()
        if game is None or game.status != FINISHED:
            raise _not_over()
        # (number, notation, lines_json) rows
        log = cast("list[tuple[int, str, str | None]]", [tuple(row) for row in session.exec(
            select(MoveRecord.number, MoveRecord.notation, MoveRecord.lines_json)
            .where(col(MoveRecord.game_id) == game.id).order_by(col(MoveRecord.number))
            .limit(MAX_MOVES + 1))])
        kind, state_json, game_id = game.kind, game.state_json, game.id
    if len(log) > MAX_MOVES:
        raise _not_over()
    tag = hashlib.sha256(f"{kind}\n{state_json}\n{len(log)}\n{language}".encode()).hexdigest()
    path = Path(current_app.config["INSTANCE_PATH"]) / FOLDER / f"game-{game_id}-{tag[:16]}.png"
    if not path.exists():
        with _making:
            if not path.exists():
                png = picture.whole_game(kind, frames(kind, state_json, log), language)
                path.parent.mkdir(parents=True, exist_ok=True)
                part = path.with_suffix(f".{os.getpid()}.part")
                part.write_bytes(png)
                os.replace(part, path)
                logger.info("game %s: its whole picture is made (%d bytes)", game_id, len(png))
    return GamePicture(path.read_bytes(), tag[:32])
