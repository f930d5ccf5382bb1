"""The game interface in two parts: the rules the server plays by (`Rules`) and how a game is
shown (`Shown`), each a Protocol whose optional members are methods with defaults in one base
(`RulesBase`, `ShownBase`) that every game's adapter inherits; callers call them and never
probe for them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pbem.games import Rules, RulesBase, Shown, ShownBase, game_kinds, rules_for

ROOT = Path(__file__).resolve().parent.parent.parent


def _members(protocol) -> set[str]:
    names = set(getattr(protocol, "__annotations__", {}))
    names |= {name for name, value in vars(protocol).items()
              if callable(value) and not name.startswith("_")}
    return names


# Described in comments before the interface had its bases; now methods with defaults.
OPTIONAL = {"foretell", "foretold_state", "result_table", "position_summary", "picture_pieces",
            "picture_board", "picture_samples", "continues_turn", "starts_turn", "mid_turn",
            "in_words", "templates"}


def test_the_two_parts_are_apart_and_hold_the_optional_members():
    rules, shown = _members(Rules), _members(Shown)
    assert not rules & shown, "a member is in both parts"
    assert {"new_state", "to_move", "legal", "parse", "apply", "view", "outcome",
            "default_move", "bot_move", "bots", "in_words"} <= rules
    assert {"board_picture", "position_lines", "result_table", "move_from_form",
            "variant_question", "foretell", "picture_pieces"} <= shown
    assert OPTIONAL <= rules | shown
    for name in OPTIONAL:
        assert hasattr(RulesBase if name in rules else ShownBase, name), name


@pytest.mark.parametrize("kind", game_kinds())
def test_every_game_inherits_both_bases_and_has_every_member(kind):
    adapter = rules_for(kind)
    assert isinstance(adapter, RulesBase) and isinstance(adapter, ShownBase)
    for name in _members(Rules) | _members(Shown):
        assert hasattr(adapter, name), f"{kind} lacks {name}"


def test_the_defaults_say_what_a_game_without_the_member_gets():
    class Plain(RulesBase, ShownBase):
        def position_lines(self, state, seat):
            return [f"position for {seat}"]

    plain = Plain()
    assert plain.foretell("before", "move", "after") is None
    assert plain.foretold_state("before", "move", "after") == "after"
    assert plain.result_table("state") is None
    assert plain.position_summary("state", 2) == ["position for 2"]
    assert plain.picture_pieces("state", 1.0) is None and plain.picture_samples() == []
    assert plain.starts_turn("anything") and not plain.mid_turn("state")
    assert plain.in_words("take 2") == "take 2"
    with pytest.raises(NotImplementedError):
        plain.picture_board(0.0)


def test_no_caller_probes_the_interface_for_a_member():
    """getattr(rules, "foretell", None) and hasattr(rules, "result_table") were how callers
    asked for the optional members: every game has them now."""
    probes = []
    for path in sorted((ROOT / "pbem").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2
                    and isinstance(node.args[1], ast.Constant)
                    and node.args[1].value in OPTIONAL | {"bots"}):
                probes.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert probes == []
