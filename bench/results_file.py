"""Saving a benchmark's figures as JSON under bench/results/, for comparison between commits.

Each run writes `<benchmark>-<UTC time>-<commit>.json`: the figures, the commit they were
measured on (with "+" when the worktree had changes), the interpreter, the machine and its load
average at the end of the run (other work on a shared machine skews absolute times; the ratios
against a floor measured in the same run are what to compare).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path

FOLDER = Path(__file__).resolve().parent / "results"


def _commit() -> str:
    root = FOLDER.parent.parent
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+" if dirty else "")


def save(benchmark: str, figures: dict, folder: Path | None = None) -> Path:
    """Write the figures of one run; returns the file's path."""
    folder = folder or FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    commit = _commit()
    document = {
        "benchmark": benchmark,
        "at": now.isoformat(timespec="seconds"),
        "commit": commit,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "figures": figures,
    }
    path = folder / f"{benchmark}-{now:%Y%m%dT%H%M%SZ}-{commit.rstrip('+')}.json"
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    return path
