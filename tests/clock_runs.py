"""Run tests with the clock of every process set to an awkward moment (issue 47).

    python3 tests/clock_runs.py                      # the date tests at every moment below
    python3 tests/clock_runs.py --moments new-year,eu-dst-autumn
    python3 tests/clock_runs.py --moments first-of-month --whole   # the whole suite
    python3 tests/clock_runs.py --list

Each run is `python3 -m pytest` with the wall clock of every Python process it starts (the
xdist workers, schedulers, gunicorn, `pbem` commands) shifted by one offset, by time-machine
started from tests/clock_shift/sitecustomize.py: they agree with each other, and the clock goes
on ticking from the moment chosen, so a run started at 23:50 on 31 December crosses into the new
year while it runs. The monotonic clock and sleeps are left alone. The programs that are not
Python (PostgreSQL, Postfix, nginx, chromium) keep the real clock: the server never asks them
the time (no SQL `now()`), and every date it writes comes from Python. libfaketime, which
would shift them too, cannot be used with Python 3.11: its clock_nanosleep turns every
`time.sleep` into EINVAL (libfaketime 0.9.10, Debian 12; its issue 426). A machine time zone
far from UTC is set with TZ for the runs that name one.

It prints a line a run (passed, failed, skipped, seconds) and the failures' names, and exits 1
when any run failed. The in-process checks of the same moments, which run in the ordinary suite,
are tests/server/test_clock_moments.py.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# name: (the moment in UTC, the machine's time zone for the run). Those before a change of day,
# year or daylight-saving time start a minute or two before it, so a run crosses it.
MOMENTS: dict[str, tuple[str, str]] = {
    "first-of-month": ("2027-02-01T08:00:00", "UTC"),
    "last-of-month": ("2027-04-30T21:30:00", "UTC"),
    "new-year": ("2026-12-31T23:58:30", "UTC"),
    "leap-day": ("2028-02-29T11:00:00", "UTC"),
    # Europe leaves and enters summer time at 01:00 UTC on the last Sunday of March / October.
    "eu-dst-spring": ("2027-03-28T00:58:30", "Europe/Berlin"),
    "eu-dst-autumn": ("2027-10-31T00:58:30", "Europe/Berlin"),
    # The United States at 02:00 local time on the second Sunday of March and the first of
    # November (07:00 / 06:00 UTC in New York).
    "us-dst-spring": ("2027-03-14T06:58:30", "America/New_York"),
    "us-dst-autumn": ("2027-11-07T05:58:30", "America/New_York"),
    "before-midnight-utc": ("2027-06-15T23:59:00", "UTC"),
    "after-midnight-utc": ("2027-06-16T00:02:00", "UTC"),
    # Machine zones far from UTC: UTC+14 (the next day already) and UTC-10/-9 (the day before).
    "kiritimati": ("2027-01-01T09:30:00", "Pacific/Kiritimati"),
    "adak": ("2027-03-14T11:50:00", "America/Adak"),
}

# The tests that touch dates: deadlines, reminders, digests, clocks, calendars, tournaments,
# mail contents, feeds.
DATE_TESTS = [
    "tests/server/test_clock.py", "tests/server/test_clock_moments.py",
    "tests/server/test_seat_times.py",
    "tests/server/test_scheduler.py", "tests/engine/test_kk_turns.py", "tests/server/test_mail_content.py",
    "tests/processes/test_mail_delivery.py", "tests/server/test_feeds.py", "tests/server/test_my_games.py",
    "tests/server/test_tournaments.py", "tests/server/test_tournament_pages.py", "tests/server/test_pairings.py",
    "tests/server/test_lobby.py", "tests/server/test_undo.py", "tests/server/test_profiles.py",
    "tests/server/test_admin.py", "tests/server/test_watch.py", "tests/server/test_kc_turns.py",
]

SUMMARY = re.compile(r"^(?:=+ )?(\d+ (?:passed|failed|errors?|skipped)\b.* in [\d.]+s[^=\n]*)", re.MULTILINE)
FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)


def offset_to(moment: str) -> int:
    """Seconds from now to `moment` (UTC): the one shift every process of a run takes."""
    target = datetime.fromisoformat(moment).replace(tzinfo=UTC)
    return round(target.timestamp() - time.time())


def run(name: str, tests: list[str], extra: list[str]) -> dict:
    moment, zone = MOMENTS[name]
    paths = [str(ROOT / "tests" / "clock_shift"), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, paths)),
               CLOCK_RUNS_SHIFT=str(offset_to(moment)), TZ=zone)
    # time-machine is imported before pytest starts, so pytest cannot rewrite its plugin's asserts.
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
               "-W", "ignore::pytest.PytestAssertRewriteWarning", "-q", *extra, *tests]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False)
    found = SUMMARY.findall(done.stdout)
    return {"moment": name, "at": moment, "tz": zone, "status": done.returncode,
            "summary": found[-1] if found else done.stdout[-400:] + done.stderr[-400:],
            "failed": FAILED.findall(done.stdout),
            "seconds": round(time.monotonic() - started)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moments", default="all",
                        help="names separated by commas (default: all; --list shows them)")
    parser.add_argument("--whole", action="store_true", help="the whole suite, not the date tests")
    parser.add_argument("--list", action="store_true", help="list the moments and stop")
    parser.add_argument("pytest_args", nargs="*", help="more arguments for pytest (after --)")
    args = parser.parse_args(argv)
    if args.list:
        for name, (moment, zone) in MOMENTS.items():
            print(f"{name:22} {moment} UTC, TZ={zone}")
        return 0
    names = list(MOMENTS) if args.moments == "all" else args.moments.split(",")
    unknown = [n for n in names if n not in MOMENTS]
    if unknown:
        parser.error(f"unknown moment(s) {', '.join(unknown)}; --list shows them")
    tests = [] if args.whole else DATE_TESTS
    bad = 0
    for name in names:
        result = run(name, tests, args.pytest_args)
        bad += result["status"] != 0
        print(f"{result['moment']:22} {result['at']} TZ={result['tz']:18} "
              f"{result['summary']} ({result['seconds']} s)", flush=True)
        for failure in result["failed"]:
            print(f"    {failure}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
