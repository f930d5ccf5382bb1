"""The command line: `playout` JSON, `score` on the rule books' examples, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.__main__ import MAX_POSITION_BYTES, main

ROOT = Path(__file__).resolve().parent.parent.parent
COLOURS = ["yellow", "red", "green", "purple", "blue"]


def run(*args: str, hash_seed: str | None = None) -> subprocess.CompletedProcess:
    """`python -m engine ...` in a fresh interpreter started in the repository root."""
    env = dict(os.environ)
    if hash_seed is not None:
        env["PYTHONHASHSEED"] = hash_seed
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, env=env,
                          capture_output=True, encoding="utf-8", timeout=120,
                          check=False)


def playout(players: int, seed: int, **kwargs) -> dict:
    done = run("playout", "--players", str(players), "--seed", str(seed), **kwargs)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.count("\n") == 1, "one JSON object on one line"
    return json.loads(done.stdout)


def score(tmp_path: Path, capsys, position: dict) -> dict:
    """Score a position through main(), as `python -m engine score FILE` does."""
    path = tmp_path / "position.json"
    path.write_text(json.dumps(position, ensure_ascii=False), encoding="utf-8")
    assert main(["score", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    return json.loads(out)


# --- playout ----------------------------------------------------------------------------------

@pytest.mark.parametrize("players", [3, 4, 5])
def test_playout_prints_the_whole_game_as_one_json_object(players):
    """playout names the seats, counts the moves and gives scores, winners and breakdowns."""
    result = playout(players, 11)
    assert set(result) == {"players", "moves", "scores", "winners", "breakdown", "intermediate",
                           "end_reason"}
    assert result["players"] == COLOURS[:players]
    assert isinstance(result["moves"], int) and result["moves"] > 0
    assert list(result["scores"]) == result["players"]
    assert all(isinstance(points, int) for points in result["scores"].values())
    assert set(result["breakdown"]) == {"monasteries", "alliances", "chains", "total"}
    assert set(result["breakdown"]["total"]) == set(result["players"])
    assert isinstance(result["end_reason"], str) and result["end_reason"]


@pytest.mark.parametrize("players,seed", [(3, 1), (4, 2), (5, 3), (5, 4)])
def test_playout_scores_add_up_and_winners_lead(players, seed):
    """Scores are the final breakdown plus the intermediate scoring; winners have the top score."""
    result = playout(players, seed)
    final, middle = result["breakdown"], result["intermediate"]
    middle_total = middle["total"] if middle else {}
    for colour in result["players"]:
        assert result["scores"][colour] == final["total"][colour] + middle_total.get(colour, 0)
        parts = (sum(country.get(colour, 0) for country in final["monasteries"].values())
                 + sum(alliance.get(colour, 0) for alliance in final["alliances"].values())
                 + final["chains"].get(colour, 0))
        assert final["total"][colour] == parts, f"{colour}: the parts add up to the total"
    top = max(result["scores"].values())
    assert result["winners"], "somebody wins"
    assert set(result["winners"]) <= set(result["players"])
    assert all(result["scores"][colour] == top for colour in result["winners"])


def test_playout_is_reproducible_from_its_seed():
    """The same seed gives the same output, whatever the interpreter's hash seed."""
    first = run("playout", "--players", "5", "--seed", "42", hash_seed="1")
    second = run("playout", "--players", "5", "--seed", "42", hash_seed="2")
    assert first.returncode == second.returncode == 0
    assert first.stdout == second.stdout


def test_playout_differs_between_seeds(capsys):
    """Different seeds play different games."""
    outputs = []
    for seed in (1, 2):
        assert main(["playout", "--players", "4", "--seed", str(seed)]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] != outputs[1]


def test_playout_in_process_matches_the_command_line(capsys):
    """main([...]) prints exactly what `python -m engine` prints."""
    assert main(["playout", "--players", "3", "--seed", "9"]) == 0
    assert capsys.readouterr().out == run("playout", "--players", "3", "--seed", "9").stdout


# --- score on the rule books' examples --------------------------------------------------------

def no_points(section: dict, *except_keys: str) -> bool:
    return all(points == {} for key, points in section.items() if key not in except_keys)


def test_score_monastery_majority_with_three_ranks(tmp_path, capsys):
    """Monasteries, Frankreich: green 4, red 2, blue 1 score 7, 4 and 2."""
    result = score(tmp_path, capsys, {"monasteries": {
        # Chosen so that no colour has four fields joined by roads (no chain points).
        "Rouen": "green", "Chartres": "green", "Bourges": "green", "Poitiers": "green",
        "Saint-Denis": "red", "Limoges": "red", "Tours": "blue"}})
    assert result["monasteries"]["Frankreich"] == {"green": 7, "red": 4, "blue": 2}
    assert no_points(result["monasteries"], "Frankreich")
    assert no_points(result["alliances"])
    assert result["chains"] == {}
    assert result["total"] == {"red": 4, "green": 7, "blue": 2}


def test_score_monastery_majority_shared_by_two(tmp_path, capsys):
    """Monasteries, Lothringen: red 2 and purple 2 tie for first with 5 each; blue 1 scores 2."""
    result = score(tmp_path, capsys, {"monasteries": {
        "Aachen": "red", "Toul": "red", "Trier": "purple", "Verdun": "purple", "Metz": "blue"}})
    assert result["monasteries"]["Lothringen"] == {"red": 5, "purple": 5, "blue": 2}
    assert no_points(result["monasteries"], "Lothringen")
    assert result["chains"] == {}
    assert result["total"] == {"red": 5, "purple": 5, "blue": 2}


def test_score_alliances_need_both_majorities(tmp_path, capsys):
    """Alliances 14 and 15: blue holds both majorities of 14 (6 points); nobody holds both of 15."""
    # Yellow's monasteries make room on the crests (the cap) and score nothing for the others.
    result = score(tmp_path, capsys, {"advisors": {
        "Italien": ["blue", "blue", "red", "green"], "Burgund": ["blue", "red"],
        "Bayern": ["red", "red", "green"]}, "monasteries": {
        f: "yellow" for f in ("Milano", "Pavia", "Pisa", "Roma", "Cluny", "Arles",
                              "Passau", "Melk", "Freising")}})
    assert result["alliances"]["14"] == {"blue": 6}
    assert result["alliances"]["15"] == {}
    assert no_points(result["alliances"], "14")
    assert set(result["alliances"]) == {str(n) for n in range(1, 16)}
    assert result["total"]["blue"] == 6 and result["total"]["red"] == 0


def test_score_chain_counts_the_longest_road_path(tmp_path, capsys):
    """Chains: purple at Cluny, Lyon, Milano, Verona, Firenze and Tegernsee has a chain of 5."""
    result = score(tmp_path, capsys, {"monasteries": {
        name: "purple" for name in ("Cluny", "Lyon", "Milano", "Verona", "Firenze", "Tegernsee")}})
    assert result["chains"] == {"purple": 5}
    assert result["monasteries"]["Burgund"] == {"purple": 2}
    assert result["monasteries"]["Italien"] == {"purple": 3}
    assert result["monasteries"]["Bayern"] == {"purple": 1}
    assert result["total"] == {"purple": 2 + 3 + 1 + 5}


def test_score_from_the_command_line_accepts_other_spellings(tmp_path):
    """`python -m engine score FILE` prints the breakdown; names match as players type them."""
    path = tmp_path / "chain.json"
    path.write_text(json.dumps({"monasteries": {
        "cluny": "purple", "LYON": "purple", "Milano": "purple", "Verona": "purple",
        "Firenze": "purple", "Tegernsee": "purple"}}), encoding="utf-8")
    done = run("score", str(path))
    assert done.returncode == 0 and done.stderr == ""
    result = json.loads(done.stdout)
    assert result["chains"] == {"purple": 5}
    assert result["total"] == {"purple": 11}


def test_score_accepts_a_utf8_byte_order_mark(tmp_path):
    """A UTF-8 file saved with a byte-order mark (as some editors write) is read."""
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + '{"monasteries": {"Cîteaux": "red"}}'.encode())
    done = run("score", str(path))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["monasteries"]["Burgund"] == {"red": 1}


# --- score on bad files -----------------------------------------------------------------------

def as_json(data) -> bytes:
    return json.dumps(data, ensure_ascii=False).encode()


TWENTY_ONE_FIELDS = ["Rouen", "Saint-Denis", "Chartres", "Fleury", "Tours", "Bourges", "Poitiers",
                     "Limoges", "Aachen", "Trier", "Verdun", "Metz", "Toul", "Milano", "Pavia",
                     "Verona", "Pisa", "Firenze", "Roma", "Cluny", "Lyon"]

BAD_FILES = {
    "empty": (b"", "the file is empty"),
    "only spaces": (b"  \n\t ", "the file is empty"),
    "not JSON": (b'{"monasteries": {"Cluny": "red",}}', "not valid JSON: Expecting"),
    "cut short": (b'{"monasteries": {"Cluny": ', "not valid JSON"),
    "latin-1": ('{"monasteries": {"Cîteaux": "red"}}'.encode("latin-1"), "not UTF-8"),
    "UTF-16": ('{"monasteries": {"Cluny": "red"}}'.encode("utf-16"), "not UTF-8"),
    "nested too deeply": (b"[" * 100_000, "nested too deeply"),
    "NaN": (b'{"monasteries": {"Cluny": NaN}}', "NaN is not a JSON value"),
    "huge number": (b'{"advisors": {"Italien": [' + b"7" * 5000 + b"]}}", "5000 digits"),
    "a list": (as_json(["red"]), "must be a JSON object"),
    "a text": (as_json("Cluny"), "must be a JSON object"),
    "unknown key": (as_json({"monastery": {}}), "unknown key 'monastery'"),
    "monasteries a list": (as_json({"monasteries": ["Cluny"]}), "'monasteries' must be an object"),
    "advisors a list": (as_json({"advisors": ["red"]}), "'advisors' must be an object"),
    "advisors not a list": (as_json({"advisors": {"Italien": "red"}}),
                            "Italien must have a list of colours"),
    "unknown field": (as_json({"monasteries": {"Paris": "red"}}),
                      "'Paris' is not a cloister field"),
    "unknown country": (as_json({"advisors": {"Atlantis": ["red"]}}),
                        "'Atlantis' is not a country"),
    "country as a field": (as_json({"monasteries": {"Burgund": "red"}}),
                           "'Burgund' is not a cloister field"),
    "unknown colour": (as_json({"monasteries": {"Cluny": "orange"}}),
                       "'orange' is not a player colour"),
    "colour as a number": (as_json({"advisors": {"Italien": [3]}}), "3 is not a player colour"),
    "colour as a list": (as_json({"monasteries": {"Cluny": ["red"]}}),
                         "['red'] is not a player colour"),
    "same key twice": (b'{"monasteries": {"Cluny": "red", "Cluny": "blue"}}',
                       "'Cluny' appears twice"),
    "same section twice": (b'{"advisors": {}, "advisors": {"Italien": ["red"]}}',
                           "'advisors' appears twice"),
    "same field spelt twice": (as_json({"monasteries": {"Cîteaux": "red", "Citeaux": "blue"}}),
                               "Cîteaux is listed twice"),
    "same country spelt twice": (as_json({"advisors": {"Italien": ["red"], "italien": ["red"]}}),
                                 "Italien is listed twice"),
    "too many monasteries": (as_json({"monasteries": {f: "purple" for f in TWENTY_ONE_FIELDS}}),
                             "purple has 21 monasteries; a player has only 20"),
    "too many advisors": (as_json({"advisors": {"Italien": ["red"] * 5, "Bayern": ["red"] * 4}}),
                          "red has 9 advisors; a player has only 8"),
    "advisor without a monastery": (as_json({"advisors": {"Italien": ["red"]}}),
                                    "impossible position: Italien has no monastery"),
    "advisors over the cap": (as_json({"monasteries": {"Cluny": "red", "Lyon": "red",
                                                       "Arles": "blue"},
                                       "advisors": {"Burgund": ["blue", "blue", "red"]}}),
                              ("Burgund holds 3 advisors, but the most monasteries one player "
                              "has there is 2")),
    "huge file": (b'{"monasteries": {}}' + b" " * MAX_POSITION_BYTES, "larger than"),
    "long unknown name": (as_json({"monasteries": {"x" * 100_000: "red"}}),
                          "is not a cloister field"),
}


def assert_one_line_error(done: subprocess.CompletedProcess, expected: str) -> str:
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert done.stderr.endswith("\n") and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: ")
    assert expected in done.stderr
    assert len(done.stderr) < 400, "the message stays short enough to read"
    return done.stderr


@pytest.mark.parametrize("kind", list(BAD_FILES))
def test_score_bad_file_gets_one_line_and_status_2(tmp_path, kind):
    """A bad position file gets one line on stderr naming the problem, and exit status 2."""
    content, expected = BAD_FILES[kind]
    path = tmp_path / "position.json"
    path.write_bytes(content)
    line = assert_one_line_error(run("score", str(path)), expected)
    assert str(path) in line, "the message names the file"


@pytest.mark.parametrize("kind", ["not JSON", "same key twice", "too many advisors",
                                  "advisor without a monastery"])
def test_score_bad_file_in_process(tmp_path, capsys, kind):
    """main() returns 2 and writes the one line to stderr, without raising."""
    content, expected = BAD_FILES[kind]
    path = tmp_path / "position.json"
    path.write_bytes(content)
    assert main(["score", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and expected in err


def test_score_missing_file(tmp_path):
    """A file that does not exist is named as such."""
    assert_one_line_error(run("score", str(tmp_path / "nowhere.json")), "No such file or directory")


def test_score_directory(tmp_path):
    """A directory is not a position file."""
    assert_one_line_error(run("score", str(tmp_path)), "Is a directory")


def test_score_path_through_a_file(tmp_path):
    """A path that runs through a plain file is refused."""
    (tmp_path / "plain").write_text("{}")
    assert_one_line_error(run("score", str(tmp_path / "plain" / "position.json")),
                          "Not a directory")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="file permissions do not stop root")
def test_score_file_without_read_permission(tmp_path):
    """A file we may not read is named as such."""
    path = tmp_path / "secret.json"
    path.write_text("{}")
    path.chmod(0)
    assert_one_line_error(run("score", str(path)), "Permission denied")


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux /proc")
def test_score_file_that_fails_while_reading():
    """A file that opens but cannot be read (an I/O error) still gets one line."""
    assert_one_line_error(run("score", "/proc/self/mem"), "Input/output error")


def test_score_file_name_with_a_line_break(tmp_path):
    """Even a file name holding a line break gives a one-line message."""
    assert_one_line_error(run("score", str(tmp_path / "two\nlines.json")),
                          "No such file or directory")
