"""Where the test suite's CPU goes: the CPU time of each test and each test file.

    python3 bench/suite_profile.py                       # the whole suite, as the README runs it
    python3 bench/suite_profile.py tests/engine/test_kk_cli.py     # some files (any pytest arguments)
    python3 bench/suite_profile.py --top 40 -- -n 4      # more lines; pytest options after --
    python3 bench/suite_profile.py --report FOLDER       # print the figures of an earlier run

The suite is CPU-bound on the project's 2-core machine, so its wall time follows its CPU time;
and CPU time, unlike wall time, hardly moves when other work runs beside it. Each pytest
process (every xdist worker) loads this file as a plugin (`-p suite_profile`) and measures,
around each test (set-up, call and tear-down: a module's fixtures are made in its first test
and removed in its last), the CPU time of:

- the worker itself (getrusage RUSAGE_SELF),
- every process it started and waited for (RUSAGE_CHILDREN: `pbem` commands, gunicorn, ...),
- every process it started that still runs, with what they waited for (their utime, stime,
  cutime and cstime in /proc: a server a module keeps across its tests, chromium under
  Playwright's driver),
- its PostgreSQL test server (the postmaster runs apart, as pg_ctl starts it; its backends'
  time is in its cutime once they end, and the live ones are read as above).

Programs that leave their starter to run on their own (a daemon: Postfix's master, ...) are
not seen, apart from the PostgreSQL test server. Each worker writes a line per test to a file in
the result folder; the figures are printed at the end and saved under bench/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FOLDER_VARIABLE = "SUITE_PROFILE_DIR"
TICK = os.sysconf("SC_CLK_TCK")


# --- the measurement (in each pytest process) ---------------------------------------------------

def _stat(pid: int) -> tuple[int, float] | None:
    """The parent pid and the CPU seconds (own and waited-for children) of process `pid`."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rindex(b")") + 2:].split()  # after "pid (command) "
    ppid = int(fields[1])
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return ppid, (utime + stime + cutime + cstime) / TICK


def _descendants_cpu(root: int, extra: set[int]) -> float:
    """The CPU seconds of the live descendants of `root` and of the processes `extra` (with
    their live descendants), each with what it waited for."""
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            found = _stat(int(name))
            if found is not None:
                parents[int(name)], cpu[int(name)] = found
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    total, seen = 0.0, set()
    todo = list(children.get(root, [])) + [pid for pid in extra if pid in cpu]
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += cpu[pid]
        todo.extend(children.get(pid, []))
    return total


class Meter:
    """The CPU seconds used so far by this process and everything it started."""

    def __init__(self):
        self.postmasters: list[Path] = []  # postmaster.pid files of the PostgreSQL servers

    def _postgres(self) -> set[int]:
        pids = set()
        for path in self.postmasters:
            try:
                pids.add(int(path.read_text().split("\n", 1)[0]))
            except (OSError, ValueError):
                pass
        return pids

    def read(self) -> dict[str, float]:
        me = resource.getrusage(resource.RUSAGE_SELF)
        waited = resource.getrusage(resource.RUSAGE_CHILDREN)
        postgres = self._postgres()
        live = _descendants_cpu(os.getpid(), set())
        servers = _descendants_cpu(-1, postgres) if postgres else 0.0
        return {"self": me.ru_utime + me.ru_stime,
                "children": waited.ru_utime + waited.ru_stime + live,
                "postgres": servers}


class Plugin:
    def __init__(self, folder: Path, worker: str):
        self.meter = Meter()
        self.out = open(folder / f"{worker}.jsonl", "a", buffering=1)  # noqa: SIM115 (closed at the end)
        self.worker = worker
        self.start = self.meter.read()
        self.started = time.monotonic()
        self.postgres_ended = 0.0  # the CPU of PostgreSQL servers already stopped
        self._watch_postgres()

    def _watch_postgres(self) -> None:
        """The PostgreSQL test servers are seen from their start (tests/databases.py)."""
        meter = self

        def patch():
            try:
                import databases
            except ImportError:
                return
            server = getattr(databases, "PostgresServer", None)
            if server is None or getattr(server, "_profiled", False):
                return
            start, stop = server.start, server.stop

            def started(self):
                start(self)
                meter.meter.postmasters.append(self.data / "postmaster.pid")

            def stopped(self):
                before = meter.meter.read()["postgres"]
                stop(self)
                path = self.data / "postmaster.pid"
                if path in meter.meter.postmasters:
                    meter.meter.postmasters.remove(path)
                meter.postgres_ended += before

            server.start, server.stop, server._profiled = started, stopped, True

        self._patch = patch

    def pytest_collection_finish(self, session):
        self._patch()

    def _now(self) -> dict[str, float]:
        figures = self.meter.read()
        figures["postgres"] += self.postgres_ended
        return figures

    def pytest_runtest_logreport(self, report):
        if report.failed or (report.when == "call" and report.outcome != "passed"):
            self.outcome = report.outcome if report.when == "call" else f"{report.when} error"

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self._patch()
        self.outcome = "passed"
        before, wall = self._now(), time.monotonic()
        yield
        after = self._now()
        line = {"test": item.nodeid, "wall": round(time.monotonic() - wall, 4),
                "outcome": self.outcome}
        for key in before:
            line[key] = round(after[key] - before[key], 4)
        self.out.write(json.dumps(line) + "\n")

    def pytest_unconfigure(self, config):
        end = self._now()
        line = {"worker": self.worker, "wall": round(time.monotonic() - self.started, 3)}
        for key in end:
            line[key] = round(end[key] - self.start[key], 3)
            line["total_" + key] = round(end[key], 3)
        self.out.write(json.dumps(line) + "\n")
        self.out.close()


def pytest_configure(config):
    folder = os.environ.get(FOLDER_VARIABLE)
    if folder:
        worker = getattr(config, "workerinput", {}).get("workerid", "main")
        config.pluginmanager.register(Plugin(Path(folder), worker), "suite_profile_meter")


# --- the report ------------------------------------------------------------------------------------

def load(folder: Path) -> tuple[list[dict], list[dict]]:
    tests, workers = [], []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            (workers if "worker" in record else tests).append(record)
    return tests, workers


def cpu_of(record: dict) -> float:
    return record["self"] + record["children"] + record["postgres"]


def report(folder: Path, top: int, outer: dict | None = None) -> dict:
    tests, workers = load(folder)
    files: dict[str, dict[str, float]] = {}
    for record in tests:
        name = record["test"].split("::", 1)[0]
        entry = files.setdefault(name, {"tests": 0, "cpu": 0.0, "self": 0.0, "children": 0.0,
                                        "postgres": 0.0, "wall": 0.0})
        entry["tests"] += 1
        entry["cpu"] += cpu_of(record)
        for key in ("self", "children", "postgres", "wall"):
            entry[key] += record[key]
    in_tests = sum(cpu_of(r) for r in tests)
    # xdist's controller ("main") started the workers: its figures hold theirs, apart from
    # their PostgreSQL servers
    main = [w for w in workers if w["worker"] == "main"]
    in_workers = cpu_of(main[0]) + sum(w["postgres"] for w in workers) if main \
        else sum(cpu_of(w) for w in workers)
    print(f"{len(tests)} tests, {len(workers)} pytest processes")
    failed = [r["test"] for r in tests if r.get("outcome", "passed") not in ("passed", "skipped")]
    for name in failed:
        print(f"NOT PASSED: {name}")
    print(f"CPU in tests: {in_tests:.1f} s (worker {sum(r['self'] for r in tests):.1f}, "
          f"its processes {sum(r['children'] for r in tests):.1f}, "
          f"PostgreSQL {sum(r['postgres'] for r in tests):.1f})")
    print(f"CPU of the pytest processes from start to end: {in_workers:.1f} s "
          f"(outside tests: {in_workers - in_tests:.1f} s: start-up, collection, sessions)")
    if outer:
        print(f"the whole run: wall {outer['wall']:.1f} s, CPU {outer['cpu']:.1f} s "
              f"(user {outer['user']:.1f}, sys {outer['sys']:.1f}; the PostgreSQL servers not "
              f"included), load average before {outer['load_before']}, after "
              f"{outer['load_after']}")
    print(f"\nfiles by CPU (top {top}):")
    print(f"{'cpu s':>8} {'worker':>7} {'procs':>7} {'pg':>6} {'wall s':>7} {'tests':>5}  file")
    ranked = sorted(files.items(), key=lambda kv: -kv[1]["cpu"])
    for name, entry in ranked[:top]:
        print(f"{entry['cpu']:8.1f} {entry['self']:7.1f} {entry['children']:7.1f} "
              f"{entry['postgres']:6.1f} {entry['wall']:7.1f} {entry['tests']:5d}  {name}")
    print(f"\ntests by CPU (top {top}):")
    for record in sorted(tests, key=lambda r: -cpu_of(r))[:top]:
        print(f"{cpu_of(record):8.2f} {record['self']:7.2f} {record['children']:7.2f} "
              f"{record['postgres']:6.2f} {record['wall']:7.2f}  {record['test']}")
    return {"tests": len(tests), "not_passed": failed, "cpu_in_tests": round(in_tests, 1),
            "cpu_of_workers": round(in_workers, 1),
            "files": {name: {k: round(v, 2) for k, v in entry.items()}
                      for name, entry in ranked},
            "outer": outer or {}}


# Written into the run's folder for --processes: each Python process started with it on its
# path notes its command, and at its end (a normal exit) its CPU time.
SITECUSTOMIZE = """
import atexit, json, os, resource, sys, time

def _note():
    me = resource.getrusage(resource.RUSAGE_SELF)
    line = json.dumps({"pid": os.getpid(), "argv": sys.argv, "orig": _ORIG,
                       "cpu": round(me.ru_utime + me.ru_stime, 3)})
    with open(os.path.join(os.path.dirname(__file__), "processes.jsonl"), "a") as f:
        f.write(line + "\\n")

_ORIG = list(getattr(sys, "orig_argv", []))
atexit.register(_note)
"""


def processes(folder: Path, top: int) -> dict:
    """The Python processes of the run, grouped by what they ran."""
    path = folder / "site" / "processes.jsonl"
    groups: dict[str, list[float]] = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        record = json.loads(line)
        orig = record["orig"][1:]
        if orig[:1] == ["-m"]:
            what = " ".join(orig[1:3])
        elif orig[:1] == ["-c"]:
            what = "-c " + orig[1][:40].replace("\n", " ")
        else:
            what = " ".join(Path(a).name for a in orig[:2])
        if "pytest" in what or "exec(eval" in what:
            what = "pytest (xdist worker)"
        groups.setdefault(what, []).append(record["cpu"])
    print(f"\nPython processes that ended normally, by command (top {top}):")
    print(f"{'cpu s':>8} {'count':>6} {'each':>6}  command")
    ranked = sorted(groups.items(), key=lambda kv: -sum(kv[1]))
    for what, cpus in ranked[:top]:
        print(f"{sum(cpus):8.1f} {len(cpus):6d} {sum(cpus) / len(cpus):6.2f}  {what}")
    return {what: {"count": len(cpus), "cpu": round(sum(cpus), 1)} for what, cpus in ranked}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=30, help="lines per table (default 30)")
    parser.add_argument("--report", type=Path, help="print the figures of an earlier run's "
                        "folder instead of running the suite")
    parser.add_argument("--keep", type=Path, help="the folder for the per-test lines "
                        "(default: a new temporary folder)")
    parser.add_argument("--no-save", action="store_true", help="don't save under bench/results")
    parser.add_argument("--processes", action="store_true", help="also list the Python "
                        "processes the tests start, by command, with their CPU time (through "
                        "a sitecustomize module put on PYTHONPATH)")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest")
    args = parser.parse_args()
    if args.report:
        report(args.report, args.top)
        return
    folder = args.keep or Path(tempfile.mkdtemp(prefix="suite-profile-"))
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, **{FOLDER_VARIABLE: str(folder)})
    paths = [str(Path(__file__).parent), env.get("PYTHONPATH")]
    if args.processes:
        (folder / "site").mkdir(exist_ok=True)
        (folder / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
        paths.insert(0, str(folder / "site"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    command = [sys.executable, "-m", "pytest", "-p", "suite_profile", *args.pytest_args]
    load_before = " ".join(f"{v:.2f}" for v in os.getloadavg())
    before, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    status = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    outer = {"wall": round(time.monotonic() - wall, 1),
             "user": round(after.ru_utime - before.ru_utime, 1),
             "sys": round(after.ru_stime - before.ru_stime, 1),
             "load_before": load_before,
             "load_after": " ".join(f"{v:.2f}" for v in os.getloadavg()),
             "command": " ".join(command[1:]), "exit": status}
    outer["cpu"] = round(outer["user"] + outer["sys"], 1)
    print(f"\nper-test lines in {folder}\n")
    figures = report(folder, args.top, outer)
    if args.processes:
        figures["processes"] = processes(folder, args.top)
    if not args.no_save:
        import results_file

        print(f"saved {results_file.save('suite_profile', figures)}")
    sys.exit(status)


if __name__ == "__main__":
    main()
