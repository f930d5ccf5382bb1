"""What a `pbem` command costs before it does its work: the CPU time of a whole run of each
command in a fresh interpreter (`python3 -m pbem ...`, as operators, cron, Postfix and the
tests start it), and which heavy libraries it imported.

    python3 bench/cli_start.py               # 5 runs of each command, the median
    python3 bench/cli_start.py --runs 9

Each command runs on an instance folder of its own with an SQLite database already set up
(`init-db` once, not measured), so what is measured is start-up, imports, the app and the
command's own (small) work: `--help`, `init-db` on an up-to-date database, `send-mail` and
`mail-status` on an empty outbox, `ingest-mail` with a mail for no seat (no listener runs: it
loads the app and handles the mail itself). CPU time (user + system, of the process and what
it waited for) hardly moves when other work runs beside it, unlike wall time. The imports are
read from a separate run with `-X importtime` (which slows a run down).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ["alembic", "mako", "flask", "sqlalchemy", "sqlmodel", "pbem.web", "pbem.cli",
         "pbem.ground.models", "apscheduler"]
MAIL = (b"From: Someone <someone@example.org>\r\nTo: play+nobody@example.org\r\n"
        b"Subject: hello\r\nMessage-ID: <bench@example.org>\r\n\r\nHello.\r\n")
COMMANDS = {
    "--help": (["--help"], None),
    "init-db (up to date)": (["init-db"], None),
    "send-mail (nothing due)": (["send-mail"], None),
    "mail-status": (["mail-status"], None),
    "ingest-mail (no listener)": (["ingest-mail", "play+nobody@example.org"], MAIL),
}


def environment(instance: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PBEM_", "FLASK_"))}
    env.update({"PBEM_INSTANCE_PATH": str(instance), "PBEM_SECRET_KEY": "bench",
                "PYTHONPATH": str(ROOT)})
    return env


def run(instance: Path, args: list[str], stdin: bytes | None,
        options: tuple[str, ...] = ()) -> tuple[int, bytes]:
    """The exit status and standard error of one `python3 -m pbem ARGS`."""
    process = subprocess.Popen([sys.executable, *options, "-m", "pbem", *args],
                               cwd=instance.parent, env=environment(instance),
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    _, err = process.communicate(stdin)
    # communicate has reaped it: its rusage is in RUSAGE_CHILDREN now
    return process.returncode, err


def cpu_of(instance: Path, args: list[str], stdin: bytes | None) -> tuple[float, int]:
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    status, _ = run(instance, args, stdin)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), status


def imported(instance: Path, args: list[str], stdin: bytes | None) -> tuple[int, list[str]]:
    """How many modules the command imported, and which of HEAVY."""
    _, err = run(instance, args, stdin, ("-X", "importtime"))
    names = [line.rsplit("|", 1)[1].strip() for line in err.decode(errors="replace")
             .splitlines() if line.startswith("import time:") and "|" in line]
    names = [n for n in names if n != "imported package"]
    heavy = [h for h in HEAVY if any(n == h or n.startswith(h + ".") for n in names)]
    return len(names), heavy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-save", action="store_true", help="don't save under bench/results")
    options = parser.parse_args()
    figures: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="pbem-cli-start-") as folder:
        instance = Path(folder) / "instance"
        status, err = run(instance, ["init-db"], None)
        assert status == 0, err
        print(f"{'cpu s':>6} {'min':>6} {'modules':>7}  command: heavy libraries imported")
        for name, (args, stdin) in COMMANDS.items():
            cpus = []
            for _ in range(options.runs):
                cpu, status = cpu_of(instance, args, stdin)
                cpus.append(cpu)
            count, heavy = imported(instance, args, stdin)
            figures[name] = {"cpu_median": round(statistics.median(cpus), 3),
                             "cpu_min": round(min(cpus), 3), "exit": status,
                             "modules": count, "heavy": heavy}
            print(f"{statistics.median(cpus):6.2f} {min(cpus):6.2f} {count:7d}  {name} "
                  f"(exit {status}): {', '.join(heavy) or '-'}")
    print(f"load average at the end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if not options.no_save:
        import results_file

        print(f"saved {results_file.save('cli_start', figures)}")


if __name__ == "__main__":
    main()
