"""SQLite's WAL checkpoints, made by a thread of each process instead of inside a request's
COMMIT (pbem.ground.checkpoints.Checkpoints).

What the WAL holds is read from its wal-index header in the -shm file (SQLite's file format,
https://www.sqlite.org/walformat.html: mxFrame, the frames in the WAL, at byte 16; nBackfill,
the frames of them already copied into the database file, at byte 96; native byte order),
without taking part: `PRAGMA wal_checkpoint` answers only after checkpointing itself, so its
answer would show a checkpoint whoever else made one. Waits are bounded polls.
"""

from __future__ import annotations

import gc
import os
import signal
import struct
import threading
import time
import traceback

import pytest
from server import Databases, new_game, play_moves
from sqlalchemy import update
from sqlmodel import select

from pbem.ground import checkpoints as db
from pbem.ground.checkpoints import AUTOCHECKPOINT_PAGES, checkpoints_for
from pbem.ground.db import (
    get_engine,
    make_engine,
    reading,
    reading_rows,
    writing,
    writing_rows,
)
from pbem.ground.models import Game

pytestmark = [pytest.mark.usefixtures("database"),
              pytest.mark.only_sqlite]  # checkpoints are SQLite's


def database_file(app) -> str:
    return os.path.abspath(app.config["DATABASE_URL"].split("///", 1)[1])


def wal(path: str) -> tuple[int, int]:
    """(frames in the WAL, frames of them copied into the database file)."""
    with open(path + "-shm", "rb") as shm:
        header = shm.read(136)
    return struct.unpack_from("=I", header, 16)[0], struct.unpack_from("=I", header, 96)[0]


def all_copied(path: str) -> bool:
    frames, copied = wal(path)
    return frames > 0 and copied == frames


def copied_and_counted(path: str, checkpoints, made: int) -> bool:
    """The WAL all copied and at least `made` checkpoints counted: the thread counts one just
    after SQLite has copied the frames, so a test that saw the copy alone could read the count
    before it (seen on a busy machine: 0 where 1 was due)."""
    return all_copied(path) and checkpoints.checkpoints >= made


def threads(path: str) -> list[threading.Thread]:
    """This process's checkpoint threads for the file."""
    name = checkpoints_for(path).name
    return [thread for thread in threading.enumerate() if thread.name == name]


def poll(condition, seconds: float = 120.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def retitle(app, game_id: int, title: str, rows: bool = True) -> None:
    """One write transaction: through writing_rows (the move path's) or writing (an ORM
    session on the writer engine)."""
    statement = update(Game).where(Game.id == game_id).values(title=title)
    with app.app_context():
        if rows:
            with writing_rows() as writer:
                writer.connection().execute(statement)
        else:
            with writing() as session:
                session.exec(statement)


@pytest.fixture
def only_count(monkeypatch):
    """Checkpoints when the commits say so, never on time (unless a test says otherwise)."""
    monkeypatch.setattr(db, "CHECKPOINT_COMMITS", 10**6)
    monkeypatch.setattr(db, "CHECKPOINT_SECONDS", 3600.0)


def test_moves_are_checkpointed_by_the_thread_not_in_a_request(app, monkeypatch, only_count):
    _, tokens = new_game(app, 3, "checkpoints")
    play_moves(app, tokens, 6)
    path = database_file(app)
    checkpoints = checkpoints_for(path)
    frames, copied = wal(path)
    # Below SQLite's default 1,000 pages too: no request would have checkpointed them anyway.
    assert 0 < frames < 1000 and copied < frames and checkpoints.checkpoints == 0
    assert threads(path)  # started by a commit, waiting
    monkeypatch.setattr(db, "CHECKPOINT_COMMITS", checkpoints.commits + 1)
    play_moves(app, tokens, 1)
    assert poll(lambda: copied_and_counted(path, checkpoints, 1))
    assert checkpoints.checkpoints == 1
    # The requests' connections leave it to the thread: their own checkpoint waits for
    # AUTOCHECKPOINT_PAGES, far beyond this WAL.
    assert wal(path)[0] < AUTOCHECKPOINT_PAGES
    with get_engine(app).connect() as connection:
        assert (connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar()
                == AUTOCHECKPOINT_PAGES)


def test_a_quiet_process_checkpoints_a_while_after_a_commit_once_for_several(app,
                                                                             monkeypatch):
    monkeypatch.setattr(db, "CHECKPOINT_COMMITS", 10**6)
    monkeypatch.setattr(db, "CHECKPOINT_SECONDS", 0.5)
    path = database_file(app)
    checkpoints = checkpoints_for(path)
    # The game's commits, 0.5 s after the first: one checkpoint, however long making the game
    # takes, since the thread cannot look at the time while the lock is held here (below).
    with checkpoints._lock:
        created, _ = new_game(app, 3, "quiet")
    assert poll(lambda: copied_and_counted(path, checkpoints, 1))
    made = checkpoints.checkpoints
    assert made == 1
    start = time.monotonic()
    # Both commits inside the 0.5 s, however slow a busy machine makes them: the thread cannot
    # look at the time while its lock is held here (an RLock: this thread's commits count).
    with checkpoints._lock:
        retitle(app, created.game_id, "one")
        retitle(app, created.game_id, "two")
    assert poll(lambda: copied_and_counted(path, checkpoints, made + 1))
    assert time.monotonic() - start >= 0.5  # not copied before: the poll would have ended
    assert checkpoints.checkpoints == made + 1  # both commits in one checkpoint


def test_commits_of_both_write_paths_count_and_reads_do_not(app, monkeypatch, only_count):
    created, _ = new_game(app, 3, "paths")
    path = database_file(app)
    checkpoints = checkpoints_for(path)
    before = checkpoints.commits
    monkeypatch.setattr(db, "CHECKPOINT_COMMITS", before + 2)
    retitle(app, created.game_id, "session", rows=False)
    assert checkpoints.commits == before + 1
    with app.app_context():
        with reading() as session:
            assert session.get(Game, created.game_id).title == "session"
        with reading_rows() as connection:
            assert connection.execute(select(Game.title)).scalar() == "session"
    assert checkpoints.commits == before + 1 and checkpoints.checkpoints == 0
    retitle(app, created.game_id, "rows")  # the second commit: now a checkpoint is due
    assert poll(lambda: copied_and_counted(path, checkpoints, 1))
    assert checkpoints.checkpoints == 1


def test_the_thread_ends_when_idle_and_the_next_commit_starts_another(app, monkeypatch):
    monkeypatch.setattr(db, "CHECKPOINT_SECONDS", 0.05)
    monkeypatch.setattr(db, "CHECKPOINT_IDLE_SECONDS", 0.3)
    created, _ = new_game(app, 3, "idle")
    path = database_file(app)
    checkpoints = checkpoints_for(path)
    assert poll(lambda: checkpoints.checkpoints >= 1)
    assert poll(lambda: not threads(path))
    made = checkpoints.checkpoints
    retitle(app, created.game_id, "again")
    assert poll(lambda: checkpoints.checkpoints == made + 1)  # only a new thread makes it
    assert all_copied(path)
    assert poll(lambda: not threads(path))


def open_files(path: str) -> list[str]:
    """The files of this process's open descriptors that are the database or its WAL."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith(path):
            found.append(target)
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="no /proc to list open files")
def test_the_thread_ends_and_closes_its_connection_when_the_engine_is_disposed(
        app, monkeypatch, only_count):
    monkeypatch.setattr(db, "CHECKPOINT_COMMITS", 1)
    new_game(app, 3, "dispose")
    path = database_file(app)
    assert poll(lambda: all_copied(path))  # the thread holds a connection now
    assert threads(path)
    get_engine(app).dispose()
    assert poll(lambda: not threads(path))
    assert open_files(path) == []


def test_the_thread_ends_when_its_engine_is_collected(tmp_path):
    path = str(tmp_path / "collected.sqlite3")
    engine = make_engine(f"sqlite:///{path}")
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE t (a INTEGER)")
    assert threads(path)
    Databases.scopes[-1]["engines"].pop(id(engine))  # the test's clean-up would keep it
    del engine, connection
    gc.collect()
    assert poll(lambda: not threads(path))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this system")
def test_a_process_forked_after_the_thread_started_starts_its_own(app, monkeypatch,
                                                                   only_count):
    monkeypatch.setattr(db, "CHECKPOINT_COMMITS", 1)
    created, _ = new_game(app, 3, "fork")
    path = database_file(app)
    checkpoints = checkpoints_for(path)
    assert poll(lambda: all_copied(path))  # the parent's thread is waiting again
    assert threads(path)
    pid = os.fork()
    if pid == 0:  # the child: report through the exit code only
        code = 1
        try:
            get_engine(app).dispose(close=False)  # the parent's connections stay the parent's
            retitle(app, created.game_id, "child")
            code = 0 if poll(lambda: threads(path) and all_copied(path)
                             and checkpoints.checkpoints == 1, 120) else 2
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    deadline = time.monotonic() + 180
    while not (done := os.waitpid(pid, os.WNOHANG))[0]:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked process did not end")
        time.sleep(0.01)
    assert os.waitstatus_to_exitcode(done[1]) == 0


def test_a_failing_checkpoint_is_logged_once_and_no_request_sees_it(app, monkeypatch,
                                                                    only_count, caplog):
    monkeypatch.setattr(db, "CHECKPOINT_COMMITS", 1)
    created, _ = new_game(app, 3, "moved")
    path = database_file(app)
    checkpoints = checkpoints_for(path)
    assert poll(lambda: all_copied(path))
    checkpoints.stop()  # its next thread opens a connection of its own anew
    assert poll(lambda: not threads(path))
    with app.app_context(), reading_rows():
        pass  # a connection in the pool: written on after the file has moved away
    os.rename(path, path + ".moved")
    try:
        for title in ("a", "b", "c"):
            retitle(app, created.game_id, title)  # each wakes the thread, which fails
            assert poll(lambda: checkpoints.commits == 0)
    finally:
        os.rename(path + ".moved", path)
    warnings = [r for r in caplog.records if r.name == "pbem.ground.checkpoints"]
    assert len(warnings) == 1 and path in warnings[0].getMessage()
    assert "unable to open database file" in warnings[0].getMessage()
    made = checkpoints.checkpoints
    retitle(app, created.game_id, "back")
    assert poll(lambda: checkpoints.checkpoints == made + 1)  # a new connection
    assert all_copied(path)
