"""The toy game behind the server's game interface: only what `pbem.games.GameRules` asks for
beyond the defaults of `RulesBase` and `ShownBase`, and the folder of its templates."""

from __future__ import annotations

import html
import json
import random
from dataclasses import asdict
from pathlib import Path
from typing import Any, ClassVar

from engine.errors import IllegalMoveError, NotationError, SetupError
from pbem.games import MoveError, RulesBase, SetupProblem, ShownBase

from . import COLOURS, KIND, MOST, State, Take, apply_move, legal_moves, new_game, parse_move


class Stones(RulesBase, ShownBase):
    kind = KIND
    title = "Take the Last Stone"
    min_players = max_players = 2
    colours = COLOURS
    variants: ClassVar[dict[str, str]] = {"standard": "the standard rules"}
    bots = ("greedy",)
    rules_url = "https://en.wikipedia.org/wiki/Nim"
    order_examples = ("take 2",)
    variant_question = "There is only one way to play."
    variant_help = "standard (the only one)"
    templates = str(Path(__file__).parent / "templates")

    # --- rules ----------------------------------------------------------------------------

    def new_state(self, colours: list[str], seed: str, start: int | None,
                  variant: str | None = None) -> State:
        if variant not in (None, "standard"):
            raise SetupProblem(f"the only variant is standard, not {variant!r}")
        try:
            return new_game(tuple(colours), seed, start)
        except SetupError as exc:
            raise SetupProblem(str(exc)) from None

    def variant_of(self, state: State) -> str:
        return "standard"

    def dumps(self, state: State) -> str:
        return json.dumps(asdict(state))

    def loads(self, text: str) -> State:
        data = json.loads(text)
        return State(**{**data, "players": tuple(data["players"])})

    def ply(self, state: State) -> int:
        return state.ply

    def to_move(self, state: State) -> int | None:
        return None if state.is_over else state.current

    def start_seat(self, state: State) -> int:
        return state.start

    def legal(self, state: State) -> list[str]:
        return [str(m) for m in legal_moves(state)]

    def move_patterns(self, state: State) -> list[str]:
        return []

    def parse(self, state: State, text: str) -> Take:
        try:
            move = parse_move(text)
            apply_move(state, move)
        except (NotationError, IllegalMoveError) as exc:
            raise MoveError(str(exc)) from None
        return move

    def apply(self, state: State, move: Take) -> State:
        return apply_move(state, move)

    def notation(self, move: Take) -> str:
        return str(move)

    def replay(self, state: State, notations: list[str]) -> State:
        now = new_game(state.players, state.seed, state.start)
        for text in notations:
            now = apply_move(now, parse_move(text))
        return now

    history_state = replay

    def view(self, state: State, seat: int | None) -> State:
        return state  # nothing is hidden

    def view_dict(self, state: State, seat: int | None) -> dict:
        return asdict(state)

    def scores(self, state: State) -> dict[str, int]:
        return {c: int(state.winner == i) for i, c in enumerate(state.players)}

    def outcome(self, state: State) -> dict | None:
        if not state.is_over:
            return None
        return {"reason": "the last stone is taken", "scores": self.scores(state),
                "winners": [state.players[state.winner]]}

    def default_move(self, state: State) -> str:
        return "take 1"

    def bot_move(self, state: State, bot: str, seed: str) -> str:
        winning = state.heap % (MOST + 1)  # leave a multiple of four when one can
        return f"take {winning or random.Random(seed).randint(1, min(MOST, state.heap))}"

    # --- how it is shown ------------------------------------------------------------------

    def summary(self) -> str:
        return "Two players take one to three stones from a heap; the last stone wins."

    def how_to_play(self, state: State) -> list[str]:
        return [f"Take 1 to {MOST} stones on your turn; who takes the last stone wins."]

    def variant_label(self, variant: str) -> str:
        return self.variants[variant]

    def variant_note(self, state: State) -> str:
        return "Rules: standard."

    def notation_for(self, state: State, notation: str, mover: int, reader: int | None) -> str:
        return notation

    def describe(self, before: State, move: Take, after: State, reader: int | None) -> list[str]:
        return [f"{before.players[before.current]} takes {move.stones}; {after.heap} left."]

    def outcome_lines(self, state: State) -> list[str]:
        if not state.is_over:
            return []
        return [f"{state.players[state.winner]} took the last stone and wins."]

    def position_lines(self, state: State, seat: int | None) -> list[str]:
        return [f"{state.heap} stones are left in the heap."]

    def move_from_form(self, state: State, form: Any) -> str:
        text = str(form.get("move") or form.get("notation") or "").strip()
        if not text:
            raise MoveError("choose how many stones to take")
        return text[:20]

    def board_picture(self, state: State, seat: int | None, interactive: bool = False,
                      move: Take | None = None) -> str:
        stones = "".join(f'<circle cx="{10 + 20 * i}" cy="10" r="8"/>' for i in range(state.heap))
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{20 * state.heap + 20}" '
                f'height="20" role="img"><title>{html.escape(self.title)}</title>{stones}</svg>')
