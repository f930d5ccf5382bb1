"""A golden playthrough of Knights & Castles: one seeded game written out move by move with the
spectator's words, the mover's view (its hand, everyone's gold, the deck), and every die, as tests/engine/test_kk_golden.py does for
Kardinal & König.

Regenerate after an intended rules change with `python3 -m pytest tests/engine/test_kc_golden.py
--update-golden`, and read the diff before committing it.
"""

import json
from pathlib import Path

from engine.knights_castles import describe, new_game, outcome, random_playout, view_for

from helpers import check_golden

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "kc-4p-seed-2026.txt"


def _cards(cards) -> str:
    return ", ".join(cards) or "-"


def playthrough(players: int = 4, seed: int = 2026) -> str:
    state = final = new_game(players, seed)
    p = state.players
    out = [(f"# Knights & Castles, {players} players, seed {seed}; moves chosen at random as by "
           f"`python -m engine playout --game knights-castles`"),
           (f"setup: players {', '.join(p)}; start roll {list(state.dice)}, {p[state.start]} "
           f"starts; deck {len(state.deck)} cards")]
    for s in state.seats:
        out.append(f"  {p[s]} hand {_cards(view_for(state, s).hand)}")
    out.append("")
    for state, moves, move, after in random_playout(players, seed):
        actor, final = state.to_move, after
        dice = after.dice[len(state.dice):]
        out.append(f"{after.ply:3d} {p[actor]} ({state.step}): {move}   ({len(moves)} legal)"
                   + (f"   dice {list(dice)}" if dice else ""))
        out.append(f"      {' '.join(describe(state, move, after, None))}")
        view = view_for(after, actor)
        out.append(f"      {p[actor]} sees: hand {_cards(view.hand)}; gold "
                   f"{'/'.join(map(str, view.gold))}; deck {view.deck_size}")
    out.append("")
    for s in final.seats:
        out.append(f"{p[s]} in play: {_cards(view_for(final, None).tableau[s])}")
    out.append("outcome: " + json.dumps(outcome(final).to_dict(p), ensure_ascii=False))
    return "\n".join(out) + "\n"


def test_golden_playthrough(request):
    """The seeded game plays exactly as recorded, move by move and view by view."""
    check_golden(request, GOLDEN, playthrough())
