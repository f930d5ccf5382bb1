"""The seconds each test file took, which the suite uses to start the longest files first.

With `--dist loadfile` each file runs whole on one xdist worker, and a long file started last
keeps one worker busy while the other has finished: tests/conftest.py orders the files longest
first (from tests/file_times.json; a file not listed counts as a median one), and pyproject.toml
tells xdist to keep that order (`--no-loadscope-reorder`; its own order is by the number of
tests, which put the few long multi-process tests last).

The suite keeps the figures itself (tests/conftest.py, `pytest_sessionfinish`): at the end of
a run, each file that ran whole (none of its tests deselected or left out by -k, --lf, a node
id; on every database of the default `--databases`; the run not stopped early) gets the seconds
its tests took (set-up, call and tear-down, as the xdist workers report them). The other files
keep theirs, so a run of a few files changes only theirs; files that no longer exist are
dropped. A figure moves only when it changed by more than a quarter and a second (a busy
machine's noise would rewrite every line each run). Only the process that reports (xdist's
controller, or pytest alone) writes, under a lock (two suites run at once in one checkout
merge their figures), through a new file moved into place.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import statistics
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

TIMES = Path(__file__).resolve().parent / "file_times.json"
CHANGE = 0.25  # a figure moves when it changed by more than this share...
MARGIN = 1.0  # ... and by more than this many seconds


def load(path: Path = TIMES) -> dict[str, float]:
    try:
        times = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return times if isinstance(times, dict) else {}


def longest_first(paths: list[str], path: Path = TIMES) -> list[str]:
    """`paths` (relative to the project, as in test ids) sorted by their recorded time (in
    the figures at `path`), the longest first; equal times keep their order."""
    times = load(path)
    default = statistics.median(times.values()) if times else 0.0
    return sorted(paths, key=lambda name: -times.get(name, default))


def merged(old: dict[str, float], measured: dict[str, float], root: Path) -> dict[str, float]:
    """`old` with the files of `measured` updated (where they moved enough) or added, and
    files that no longer exist under `root` dropped; sorted by name."""
    times = {name: value for name, value in old.items() if (root / name).exists()}
    for name, seconds in measured.items():
        seconds = round(seconds, 1)
        before = times.get(name)
        if before is None or abs(seconds - before) > max(MARGIN, CHANGE * before):
            times[name] = seconds
    return dict(sorted(times.items()))


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """The figures at `path` locked against other runs (the lock file in the system's temporary
    folder, named after the path: none left in the project)."""
    name = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"pbem-file-times-{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def record(measured: dict[str, float], root: Path, path: Path = TIMES) -> bool:
    """Merge `measured` (seconds per file) into the figures at `path`, under a lock, writing a
    new file moved into place; whether the file changed."""
    if not measured:
        return False
    with _locked(path):
        old = load(path)
        times = merged(old, measured, root)
        if times == old:
            return False
        handle, temporary = tempfile.mkstemp(prefix=".file_times-", dir=path.parent)
        try:
            with os.fdopen(handle, "w") as out:
                out.write(json.dumps(times, indent=1) + "\n")
            os.chmod(temporary, 0o644)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    return True


class Recorder:
    """Collects the seconds per file of one run from its test reports (in the reporting
    process), and which files did not run whole."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.partial: set[str] = set()  # files some of whose tests were left out or skipped
        self.collected: dict[str, int] = {}  # tests per file
        self.finished: dict[str, int] = {}  # tests per file that ran to their tear-down

    @staticmethod
    def file_of(nodeid: str) -> str:
        return nodeid.split("::", 1)[0]

    def collect(self, nodeids: list[str]) -> None:
        """The run's tests (once: every xdist worker collects them all)."""
        if not self.collected:
            for nodeid in nodeids:
                name = self.file_of(nodeid)
                self.collected[name] = self.collected.get(name, 0) + 1

    def leave_out(self, nodeids) -> None:
        self.partial.update(self.file_of(nodeid) for nodeid in nodeids)

    def report(self, report, missing_part: bool = False) -> None:
        name = self.file_of(report.nodeid)
        self.seconds[name] = self.seconds.get(name, 0.0) + report.duration
        if report.when == "teardown":
            self.finished[name] = self.finished.get(name, 0) + 1
        if missing_part:  # a test skipped for a missing program: not its usual time
            self.partial.add(name)

    def whole_files(self) -> dict[str, float]:
        """The seconds of the files all of whose tests ran to their end."""
        return {name: seconds for name, seconds in self.seconds.items()
                if name not in self.partial and self.collected.get(name)
                and self.finished.get(name) == self.collected[name]}


# --- the hooks (imported into tests/conftest.py) -----------------------------------------------

DEFAULT_DATABASES = "sqlite,postgresql"
_recorder: Recorder | None = None  # in the process that reports, when the run is recorded


def times_path(config) -> Path:
    """The figures of the project the run is in: tests/file_times.json under its root."""
    return Path(config.rootpath) / "tests" / TIMES.name


def pytest_configure(config):
    """The process that reports (xdist's controller, or pytest alone) records the files'
    times, unless the run leaves tests out (-k, -m, --lf, --deselect) or runs on other
    databases than the default."""
    global _recorder
    _recorder = None
    if hasattr(config, "workerinput") or config.option.collectonly:
        return
    narrowed = (getattr(config.option, "keyword", "") or getattr(config.option, "markexpr", "")
                or getattr(config.option, "deselect", None) or getattr(config.option, "lf", False)
                or config.getoption("databases", DEFAULT_DATABASES) != DEFAULT_DATABASES)
    if not narrowed:
        _recorder = Recorder()
        _recorder.leave_out(arg for arg in config.args if "::" in arg)  # one test of a file


def pytest_collection_finish(session):
    if _recorder is not None:  # pytest alone (no xdist): the run's tests are these
        _recorder.collect([item.nodeid for item in session.items])


def pytest_deselected(items):
    if _recorder is not None:
        _recorder.leave_out(item.nodeid for item in items)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's
def pytest_xdist_node_collection_finished(node, ids):
    if _recorder is not None:  # the controller: what each worker collected (all the same)
        _recorder.collect(ids)


def pytest_runtest_logreport(report):
    if _recorder is not None:
        from parts import MARK, reason_of

        _recorder.report(report, bool(report.skipped and MARK in reason_of(report)))


def pytest_sessionfinish(session, exitstatus):
    if _recorder is not None and exitstatus in (pytest.ExitCode.OK,
                                                pytest.ExitCode.TESTS_FAILED):
        record(_recorder.whole_files(), Path(session.config.rootpath),
               times_path(session.config))
