"""The programs some tests need besides Python's packages, and what happens when one is missing.

A test (or a test module, or a fixture) that needs one asks for it by name:

    from parts import require

    nginx = require("nginx")  # the path of the program

`require` gives the program's path (for "postgresql", {"initdb": path, "pg_ctl": path}). When
the part is missing the test is skipped, saying what is missing and how to install it, and the
suite's summary at the end names each missing part, what went untested and the install command
(tests/conftest.py, `pytest_terminal_summary`). With `CI` set (CI=true, as .ci/run and CI
services set it) a missing part fails the test instead, and the run fails: CI installs them
all (.ci/run), so a missing one there is a broken install, not a reason to test less.

Parts are looked for on PATH and in Debian's places (/usr/sbin, /usr/lib/postgresql/*/bin):
`PATH` of a non-root user often lacks /usr/sbin.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass

import pytest


def _program(name: str, *places: str) -> Callable[[], str | None]:
    def find() -> str | None:
        found = shutil.which(name)
        if found:
            return found
        return next((place for place in places if os.access(place, os.X_OK)), None)
    return find


def _postgresql() -> dict[str, str] | None:
    from databases import find_binaries

    return find_binaries()


def _playwright() -> str | None:
    import importlib.util

    try:
        spec = importlib.util.find_spec("playwright.sync_api")
    except ModuleNotFoundError:
        return None
    return spec.origin if spec else None


@dataclass(frozen=True)
class Part:
    name: str
    what: str  # what is looked for
    untested: str  # what goes untested without it
    install: str  # the command that installs it (Debian)
    find: Callable[[], object]


PARTS = {part.name: part for part in [
    Part("chromium", "/usr/bin/chromium (Debian's chromium, driven by Playwright)",
         "the pages in a real browser: clicks on the map, scripts, layout, accessibility "
         "(tests/test_*_browser.py)", "apt-get install chromium",
         _program("chromium", "/usr/bin/chromium")),
    Part("playwright", "the playwright Python package",
         "the pages in a real browser (tests/test_*_browser.py)",
         "python3 -m pip install -e '.[test]'", _playwright),
    Part("postgresql", "PostgreSQL's server programs (initdb and pg_ctl, on PATH or in "
         "/usr/lib/postgresql/*/bin)",
         "every database test on PostgreSQL: they ran on SQLite only",
         "apt-get install postgresql", _postgresql),
    Part("dovecot", "dovecot (an IMAP server)",
         "reading replies from an IMAP mailbox (tests/processes/test_mail_in.py)",
         "apt-get install dovecot-imapd", _program("dovecot", "/usr/sbin/dovecot")),
    Part("nginx", "nginx", "the server behind nginx as docs/deploy.md sets it up",
         "apt-get install nginx", _program("nginx", "/usr/sbin/nginx")),
    Part("postfix", "postfix (the mail server)",
         "mail in through Postfix piping replies to `pbem ingest-mail`",
         "apt-get install postfix", _program("postfix", "/usr/sbin/postfix")),
]}

# The start of the reason of a test skipped or failed for a missing part (read back by the
# summary, from every xdist worker's reports).
MARK = "part missing:"
MARKED = re.compile(rf"{re.escape(MARK)} (\w[\w-]*)\b")


def in_ci() -> bool:
    """Whether this is a CI run (CI set to anything but empty, 0 or false)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing() -> list[Part]:
    """The parts not found here."""
    return [part for part in PARTS.values() if not part.find()]


def require(name: str):
    """The path of the part `name` (see PARTS); skips the calling test (or module, or the tests
    of a fixture) when it is missing, or fails it with CI set."""
    part = PARTS[name]
    found = part.find()
    if found:
        return found
    reason = (f"{MARK} {name} ({part.what} not found): untested here: {part.untested}. "
              f"Install it: {part.install}")
    if in_ci():
        pytest.fail(f"{reason} (CI: a missing part fails the run)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def reason_of(report) -> str:
    """The text of a skipped or failed report (a test's or a module's)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr or "")


def summary(reports: list, parts_missing: list[Part]) -> list[str]:
    """The lines the suite ends with: each missing part, what went untested (the tests and
    files that asked for it), and how to install it."""
    asked: dict[str, list[str]] = {}
    for report in reports:
        match = MARKED.search(reason_of(report))
        if match:
            asked.setdefault(match.group(1), []).append(report.nodeid.split("::", 1)[0])
    lines = []
    for part in parts_missing:
        files = list(dict.fromkeys(asked.get(part.name, [])))
        tests = len(asked.get(part.name, []))
        lines.append(f"MISSING {part.name}: {part.what} not found.")
        lines.append(f"  untested: {part.untested}")
        if files:
            lines.append(f"  skipped: {tests} test(s) or module(s) in {', '.join(files)}")
        lines.append(f"  install: {part.install}")
    return lines


def pytest_terminal_summary(terminalreporter, config):
    """Each missing part named at the end, with what went untested and how to install it
    (imported into tests/conftest.py)."""
    if hasattr(config, "workerinput"):
        return
    parts_missing = missing()
    if not parts_missing:
        return
    reports = [report for key in ("skipped", "failed", "error")
               for report in terminalreporter.stats.get(key, []) if hasattr(report, "nodeid")]
    terminalreporter.section("parts missing here: what went untested", sep="=", red=True,
                             bold=True)
    for line in summary(reports, parts_missing):
        terminalreporter.line(line, red=line.startswith("MISSING"))
    if in_ci():
        terminalreporter.line("CI: a missing part fails the tests that need it (.ci/run "
                              "installs them all).", red=True)
