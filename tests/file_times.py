"""The seconds each test file took, which the suite uses to start the longest files first.

With `--dist loadfile` each file runs whole on one xdist worker, and a long file started last
keeps one worker busy while the other has finished: tests/conftest.py orders the files longest
first (from tests/file_times.json; a file not listed counts as a median one), and pyproject.toml
tells xdist to keep that order (`--no-loadscope-reorder`; its own order is by the number of
tests, which put the few long multi-process tests last). Refresh the figures after a change
that moves a file's time much:

    python3 -m pytest --junitxml=/tmp/suite.xml && python3 tests/file_times.py /tmp/suite.xml
"""

from __future__ import annotations

import json
import statistics
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

TIMES = Path(__file__).resolve().parent / "file_times.json"


def load() -> dict[str, float]:
    try:
        return json.loads(TIMES.read_text())
    except (OSError, ValueError):
        return {}


def longest_first(paths: list[str]) -> list[str]:
    """`paths` (relative to the project, as in test ids) sorted by their recorded time, the
    longest first; equal times keep their order."""
    times = load()
    default = statistics.median(times.values()) if times else 0.0
    return sorted(paths, key=lambda path: -times.get(path, default))


def from_junit(report: Path) -> dict[str, float]:
    """Seconds per file (setup, call and teardown of its tests) in a pytest JUnit report."""
    seconds: dict[str, float] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")  # tests.test_x or tests.test_x.Class
        while len(parts) > 1 and parts[-1][:1].isupper():
            parts.pop()
        path = "/".join(parts) + ".py"
        seconds[path] = seconds.get(path, 0.0) + float(case.get("time", 0))
    return {path: round(value, 1) for path, value in sorted(seconds.items())}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 tests/file_times.py REPORT.xml (from pytest --junitxml)")
    TIMES.write_text(json.dumps(from_junit(Path(sys.argv[1])), indent=1) + "\n")
    print(f"wrote {TIMES}")
