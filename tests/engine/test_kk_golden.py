"""A golden playthrough: one seeded game written out move by move with what each seat sees.

Regenerate after an intended rules change with `python3 -m pytest tests/engine/test_kk_golden.py
--update-golden`, and read the diff before committing it.
"""

import json
from pathlib import Path

from engine import describe, new_game, outcome, view_for
from engine.kardinal_koenig.playout import random_playout

from helpers import check_golden

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "kk-4p-seed-2026.txt"


def playthrough(players: int = 4, seed: int = 2026) -> str:
    state = final = new_game(players, seed)
    out = [f"# Kardinal & König, {players} players, seed {seed}; moves chosen at random as by `python -m engine playout`",
           f"setup: players {', '.join(state.players)}; {state.players[state.start]} starts",
           *(f"  {state.players[s]} hand {''.join(state.hands[s])}" for s in state.seats),
           f"  face up {''.join(state.face_up)}; deck {len(state.deck)} cards", ""]
    for state, moves, move, after in random_playout(players, seed):
        actor, final = state.current, after
        out.append(f"{after.ply:3d} {state.players[actor]}: {move}   ({len(moves)} legal)")
        out.extend(f"      {line}" for line in describe(state, move, after, actor))
        view = view_for(after, actor).to_dict()
        out.append(f"      view of {state.players[actor]}: hand {''.join(view['hand'])}, "
                   f"face up {''.join(view['face_up'])}, deck {view['deck_size']}, "
                   f"scores {json.dumps(view['scores'])}")
    out.append("")
    out.append("outcome: " + json.dumps(outcome(final).to_dict(final.players), ensure_ascii=False))
    return "\n".join(out) + "\n"


def test_golden_playthrough(request):
    """The seeded game plays exactly as recorded, move by move and view by view."""
    check_golden(request, GOLDEN, playthrough())
