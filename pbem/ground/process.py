"""What every pbem process does once it has started and warmed up, before it serves
(`started`): the web workers (wsgi.py), `pbem serve`, the scheduler and its helper senders; and
the note `pbem serve` leaves of where it listens (`record_serving`, `serving_now`).
Imports nothing of pbem."""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path

YOUNG_OBJECTS = 10_000


def started() -> None:
    """Call once a server, scheduler or helper sender process has made its app and warmed up,
    before it serves: what start-up made (modules, templates, the schema, the boards) is left
    out of the garbage collector's full passes from then on (gc.freeze), which otherwise go
    over all of it again every few hundred requests, 60-80 ms in the middle of one. Garbage
    made until now is collected first.

    The collector's youngest generation is also collected less often (every 10,000 new
    objects instead of 700): a request makes a few thousand (a long game's more, its position
    being larger), so with Python's default a move late in a game paid for more collections
    than an early one, and the collections cost more than the little garbage they freed."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_OBJECTS, *gc.get_threshold()[1:])


# --- where `pbem serve` listens, for the other commands of the same instance ----------------------

SERVING_FILE = "serving.json"


def record_serving(instance: str | os.PathLike, url: str) -> None:
    """Note in the instance folder that this process serves at `url` (`pbem serve` without a
    base URL of its own, listening where it was told): the scheduler, the mail listener and
    the commands of the same instance then write links that lead there (`serving_now`)."""
    path = Path(instance) / SERVING_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps({"url": url, "pid": os.getpid()}), encoding="utf-8")
    partial.replace(path)


def forget_serving(instance: str | os.PathLike) -> None:
    """Remove this process's note (`record_serving`) as it stops; another's stays."""
    path = Path(instance) / SERVING_FILE
    if _read_serving(path).get("pid") == os.getpid():
        path.unlink(missing_ok=True)


def serving_now(instance: str | os.PathLike) -> str | None:
    """The address a `pbem serve` of this instance listens at, if one runs; None otherwise
    (no note, a note left by a server that was killed, or one that is not ours to read)."""
    note = _read_serving(Path(instance) / SERVING_FILE)
    url, pid = note.get("url"), note.get("pid")
    if not (isinstance(url, str) and url.startswith(("http://", "https://")) and len(url) < 300
            and isinstance(pid, int) and pid > 0):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # another user's process: alive
    except OverflowError:
        return None
    return url


def _read_serving(path: Path) -> dict:
    try:
        note = json.loads(path.read_text(encoding="utf-8")[:1000])
    except (OSError, ValueError):
        return {}
    return note if isinstance(note, dict) else {}
