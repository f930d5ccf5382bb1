"""SQLite's WAL checkpoints, made by a daemon thread of each process with its own connection
instead of inside a request's COMMIT (`Checkpoints`, one per database file: `checkpoints_for`).

pbem.ground.db's engines count their commits here (`CountingConnection`). Imports nothing of
pbem.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
import weakref
from pathlib import Path

# How long an SQLite connection waits for a lock (every connection of pbem.ground.db too).
BUSY_TIMEOUT_SECONDS = 30

# When a process's checkpoint thread checkpoints (see Checkpoints): after this many commits
# of the process since its last checkpoint, which is about SQLite's own 1,000 WAL pages at the
# move path's mix (a move that keeps the seat writes ~4 pages, one that ends a turn ~38). A
# checkpoint copies each page once however often it changed since the last, and costs two
# disk flushes, so rarer is cheaper; even if every commit ended a turn (~3,800 pages) the WAL
# stays well below AUTOCHECKPOINT_PAGES.
CHECKPOINT_COMMITS = 100
# ... or this many seconds after the first of fewer commits: a burst of moves on a quiet
# server shares one checkpoint, and, since a checkpoint begins by flushing the WAL to the disk,
# a commit is on the disk within about this time even with synchronous = "normal".
CHECKPOINT_SECONDS = 10.0
# The thread ends after this long without a commit to checkpoint (the next commit starts
# another), so that a process holds no thread and no connection for a database it left.
CHECKPOINT_IDLE_SECONDS = 60.0
# SQLite's own checkpoint, in the COMMIT of the write that takes the WAL past this many pages
# (~40 MB at 4 KiB a page; SQLite's default is 1,000): only a safety net for a checkpoint
# thread that is not running, is slow or failed, so that the WAL stays bounded regardless.
AUTOCHECKPOINT_PAGES = 10_000

logger = logging.getLogger(__name__)


class Checkpoints:
    """The checkpoints of one SQLite database file in this process, made by a daemon thread
    of their own with their own connection instead of inside a request's COMMIT.

    With WAL, SQLite's automatic checkpoint runs in the COMMIT of the write that takes the WAL
    past its limit: that request paid for copying ~1,000 pages into the database file and two
    disk flushes (7-12 ms, against ~1.4 ms for a move). Here each commit of the process is
    counted (`committed`, called after the COMMIT), and the thread runs
    `PRAGMA wal_checkpoint(PASSIVE)` after CHECKPOINT_COMMITS of them or CHECKPOINT_SECONDS
    after the first of fewer. A PASSIVE checkpoint never waits for readers or writers and never
    makes them wait: it copies what no reader still needs from the WAL, and leaves the rest
    for the next one. The connections of the server keep SQLite's own checkpoint, at
    AUTOCHECKPOINT_PAGES instead of 1,000, in case the thread is not running, slow or failed.
    What remains on the request path is the WAL's restart: the first write after a complete
    checkpoint begins the WAL anew and flushes its header (a median 0.3 ms on the development
    machine, against 0.01 ms for a small commit).

    A checkpoint changes nothing any reader sees (a reader takes each page from the WAL while
    the WAL has it; a checkpoint only copies the same page into the file) and weakens no
    promise of durability: a crash of the server loses nothing either way, and with
    synchronous = "normal" the WAL is flushed to the disk at each checkpoint, wherever it runs
    (so the time condition also bounds what a power cut can lose on a quiet server).

    The thread starts at a commit (not when the engine is made), ends after
    CHECKPOINT_IDLE_SECONDS without commits, when an engine on the file is disposed or
    collected (the next commit starts another), and in a process forked from this one belongs
    to the parent only: the child starts its own. It never raises into a request: an error
    (the file moved away, ...) is logged once per file and process, and the next checkpoint
    opens a new connection. The thread holds this object, never an engine."""

    def __init__(self, path: str):
        self.path = path
        self.name = f"pbem-checkpoints {path}"
        self._renew()

    def _renew(self) -> None:
        """A fresh start: no thread, nothing counted (also in a forked child, where a lock the
        parent's thread held at the fork would stay held for good)."""
        # Reentrant: stop() may run from the garbage collector on a thread that holds it.
        self._lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self.commits = 0  # this process's commits since the last checkpoint began
        self._first = 0.0  # when the first of them was made (time.monotonic)
        self.checkpoints = 0  # made by the thread, for tests and curious operators
        self._failed = False  # an error was logged

    def committed(self) -> None:
        """Count a commit that has just been made, and wake the thread (or start one) when a
        checkpoint is due. Called on the committing thread: a few microseconds, and the rare
        start of a thread."""
        with self._lock:
            self.commits += 1
            if self.commits == 1:
                self._first = time.monotonic()
            if self._thread is None:
                self._start()
            elif self.commits == 1 or self.commits >= CHECKPOINT_COMMITS:
                self._wake.notify()  # the first: it waits for the time from now on

    def stop(self) -> None:
        """End the thread (it closes its connection); a later commit starts another."""
        with self._lock:
            self._thread = None
            self._wake.notify_all()

    def _start(self) -> None:
        thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        try:
            thread.start()
        except RuntimeError as exc:  # no thread to be had now: SQLite's own checkpoint stays
            self._log_once(exc)
            return
        self._thread = thread

    def _due(self) -> bool:
        """Wait (lock held) until a checkpoint is due: True; False when this thread is to end
        (stopped, replaced, or idle for CHECKPOINT_IDLE_SECONDS)."""
        idle_since = time.monotonic()
        while self._thread is threading.current_thread():
            now = time.monotonic()
            if self.commits:
                if (self.commits >= CHECKPOINT_COMMITS
                        or now - self._first >= CHECKPOINT_SECONDS):
                    return True
                wait = self._first + CHECKPOINT_SECONDS - now
            else:
                wait = idle_since + CHECKPOINT_IDLE_SECONDS - now
                if wait <= 0:
                    self._thread = None
                    return False
            self._wake.wait(wait)
        return False

    def _run(self) -> None:
        connection = None
        try:
            while True:
                with self._lock:
                    if not self._due():
                        return
                    self.commits = 0
                try:
                    if connection is None:
                        connection = self._connect()
                    connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.checkpoints += 1
                except Exception as exc:  # noqa: BLE001 (logged; the next one tries again)
                    self._log_once(exc)
                    if connection is not None:
                        _close_quietly(connection)
                        connection = None
        finally:
            if connection is not None:
                _close_quietly(connection)
            with self._lock:  # however it ended, the next commit starts another
                if self._thread is threading.current_thread():
                    self._thread = None

    def _connect(self) -> sqlite3.Connection:
        # mode=rw: where the file went missing, fail instead of making a new, empty database.
        connection = sqlite3.connect(f"{Path(self.path).as_uri()}?mode=rw", uri=True,
                                     isolation_level=None, timeout=BUSY_TIMEOUT_SECONDS)
        try:
            # A checkpoint flushes the WAL before copying and the file after it under NORMAL
            # as under FULL (which only adds a flush at each commit); set so that a build of
            # SQLite with another default cannot make it skip them.
            connection.execute("PRAGMA synchronous=NORMAL")
        except BaseException:
            connection.close()
            raise
        return connection

    def _log_once(self, exc: BaseException) -> None:
        if not self._failed:
            self._failed = True
            logger.warning("background checkpoints of %s failed (SQLite checkpoints the WAL "
                           "itself at %d pages): %s: %s", self.path, AUTOCHECKPOINT_PAGES,
                           type(exc).__name__, exc)


def _close_quietly(connection: sqlite3.Connection) -> None:
    try:
        connection.close()
    except sqlite3.Error:
        pass  # what closing a broken connection can say adds nothing to the error logged


_checkpoints: weakref.WeakValueDictionary[str, Checkpoints] = weakref.WeakValueDictionary()
_checkpoints_lock = threading.Lock()


def checkpoints_for(path: str) -> Checkpoints:
    """The checkpoints of the database file at `path` (absolute) in this process, shared by
    every engine on it; kept while an engine, a connection or the thread holds them."""
    with _checkpoints_lock:
        checkpoints = _checkpoints.get(path)
        if checkpoints is None:
            checkpoints = _checkpoints[path] = Checkpoints(path)
        return checkpoints


def _after_fork_in_child() -> None:
    global _checkpoints_lock
    _checkpoints_lock = threading.Lock()
    for checkpoints in list(_checkpoints.values()):
        checkpoints._renew()


os.register_at_fork(after_in_child=_after_fork_in_child)


class CountingConnection(sqlite3.Connection):
    """An SQLite connection that counts its commits for its file's Checkpoints, after the
    COMMIT. (SQLAlchemy's `commit` event comes before it: the checkpoint it woke would take
    the GIL as soon as the COMMIT let go of it, and mostly ran before that commit's pages were
    in the WAL.)"""

    checkpoints: Checkpoints | None = None  # set when the engine connects

    def commit(self) -> None:
        super().commit()
        if self.checkpoints is not None:
            self.checkpoints.committed()
