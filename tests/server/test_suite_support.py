"""The suite's own upkeep, run as a user runs it (pytest in a process of its own, on a small
project of test files): a missing program is named at the end with what went untested and how
to install it, and fails the run with CI set (tests/parts.py); tests/file_times.json is kept
by the runs themselves, a partial run changing only its own files (tests/file_times.py)."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import file_times
import parts
import pytest

TESTS = Path(__file__).resolve().parent.parent

CONFTEST = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})

import parts
from file_times import (pytest_collection_finish, pytest_configure, pytest_deselected,
                        pytest_runtest_logreport, pytest_sessionfinish,
                        pytest_xdist_node_collection_finished)
from parts import pytest_terminal_summary

# One part, missing everywhere (the real ones may all be installed here).
parts.PARTS.clear()
parts.PARTS["teleporter"] = parts.Part(
    "teleporter", "a teleporter", "beaming the players to the table",
    "apt-get install teleporter", lambda: None)
"""

NEEDS_IT = """
from parts import require

def test_beams():
    require("teleporter")

def test_plain():
    assert True
"""

MODULE_NEEDS_IT = """
from parts import require

require("teleporter")

def test_in_a_module_that_needs_it():
    assert True
"""

PLAIN = """
def test_one():
    assert True

def test_two():
    assert True
"""


def project(tmp_path: Path, **files: str) -> Path:
    root = tmp_path / "project"
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.pytest.ini_options]\ntestpaths = ['tests']\n")
    (root / "tests" / "conftest.py").write_text(CONFTEST)
    for name, text in files.items():
        (root / "tests" / f"{name}.py").write_text(text)
    return root


def run(root: Path, *args: str, ci: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the installed plugins' imports: seconds of CPU
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p",
                           "xdist", *args],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.mark.parametrize("workers", [["-n", "2"], []])
def test_a_missing_part_is_named_at_the_end_with_what_went_untested_and_how_to_install_it(
        tmp_path, workers):
    root = project(tmp_path, test_a=NEEDS_IT, test_b=MODULE_NEEDS_IT, test_c=PLAIN)
    kept = {"tests/test_a.py": 90.0, "tests/test_b.py": 90.0, "tests/test_c.py": 90.0}
    (root / "tests" / "file_times.json").write_text(json.dumps(kept))
    done = run(root, *workers)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "3 passed, 2 skipped" in out
    summary = out[out.index("parts missing here"):]
    assert "MISSING teleporter: a teleporter not found." in summary
    assert "untested: beaming the players to the table" in summary
    assert "install: apt-get install teleporter" in summary
    assert "tests/test_a.py" in summary and "tests/test_b.py" in summary
    assert "tests/test_c.py" not in summary
    # The files skipped (in part) for want of it keep their usual times; the others' update.
    assert times(root) == {**kept, "tests/test_c.py": times(root)["tests/test_c.py"]}
    assert times(root)["tests/test_c.py"] < 60


def test_with_ci_set_a_missing_part_fails_the_run(tmp_path):
    root = project(tmp_path, test_a=NEEDS_IT)
    done = run(root, "-n", "2", ci="true")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "1 failed, 1 passed" in out
    assert "part missing: teleporter" in out and "apt-get install teleporter" in out
    assert "CI: a missing part fails" in out[out.index("parts missing here"):]
    # ... and a module that needs it fails to load: the run stops, saying why.
    root = project(tmp_path / "module", test_b=MODULE_NEEDS_IT, test_c=PLAIN)
    done = run(root, ci="true")
    assert done.returncode != 0
    assert "part missing: teleporter" in done.stdout


def test_ci_unset_or_false_skips(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    assert parts.in_ci() is False
    for value, expected in [("", False), ("false", False), ("0", False), ("true", True),
                            ("1", True)]:
        monkeypatch.setenv("CI", value)
        assert parts.in_ci() is expected, value


def times(root: Path) -> dict[str, float]:
    return json.loads((root / "tests" / "file_times.json").read_text())


def test_a_whole_run_writes_each_files_time_and_a_partial_run_only_its_own(tmp_path):
    root = project(tmp_path, test_a=PLAIN, test_b=PLAIN)
    assert run(root, "-n", "2").returncode == 0
    first = times(root)
    assert set(first) == {"tests/test_a.py", "tests/test_b.py"}
    assert all(0 <= seconds < 60 for seconds in first.values())

    kept = {"tests/test_a.py": 500.0, "tests/test_b.py": 7.0, "tests/test_gone.py": 3.0}
    (root / "tests" / "file_times.json").write_text(json.dumps(kept))
    for narrowed in (["-k", "one"], ["tests/test_a.py::test_one"]):
        assert run(root, *narrowed).returncode == 0, narrowed
        assert times(root) == kept, f"{narrowed}: a partial file's time is not its own"
    assert run(root, "-n", "2", "tests/test_a.py").returncode == 0
    after = times(root)
    assert after["tests/test_a.py"] < 60, "the file that ran whole, updated"
    assert after["tests/test_b.py"] == 7.0, "the file that did not run, kept"
    assert "tests/test_gone.py" not in after, "a file that no longer exists, dropped"


def test_a_time_moves_only_when_it_changed_by_a_quarter_and_a_second(tmp_path):
    (tmp_path / "tests").mkdir()
    for name in ("a", "b", "c", "d"):
        (tmp_path / "tests" / f"test_{name}.py").touch()
    old = {"tests/test_a.py": 10.0, "tests/test_b.py": 10.0, "tests/test_c.py": 2.0}
    measured = {"tests/test_a.py": 12.4, "tests/test_b.py": 13.0, "tests/test_c.py": 2.9,
                "tests/test_d.py": 0.04}
    assert file_times.merged(old, measured, tmp_path) == {
        "tests/test_a.py": 10.0, "tests/test_b.py": 13.0, "tests/test_c.py": 2.0,
        "tests/test_d.py": 0.0}


def _record_many(path: str, name: str, count: int) -> None:
    for step in range(count):
        file_times.record({name: 2.0 ** (step + 1)}, Path(path).parent.parent, Path(path))


def test_runs_recording_at_once_lose_none_of_each_others_files(tmp_path):
    """Two suites run at once in one checkout (or a run and a partial one): each merges its
    files under the lock, none is lost, and the file is whole JSON whenever read."""
    (tmp_path / "tests").mkdir()
    names = [f"tests/test_{n}.py" for n in range(4)]
    for name in names:
        (tmp_path / name).touch()
    path = tmp_path / "tests" / "file_times.json"
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_record_many, args=(str(path), name, 20))
               for name in names]
    for writer in writers:
        writer.start()
    readings = 0
    while any(writer.is_alive() for writer in writers):
        if path.exists():
            json.loads(path.read_text())  # never a half-written file
            readings += 1
    for writer in writers:
        writer.join(120)
        assert writer.exitcode == 0
    assert readings > 0
    assert file_times.load(path) == {name: 2.0 ** 20 for name in names}
