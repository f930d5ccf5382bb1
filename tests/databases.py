"""The databases the tests run on: SQLite files, and a throwaway PostgreSQL server.

On both, the migrations run once per test session (per xdist worker), into a template; each
test instance gets a copy of it, which takes a fraction of running the migrations again (the
migrations themselves are tested in tests/server/test_schema.py, from an empty database up).

The PostgreSQL server is started once per test session (per xdist worker) from the installed
server binaries (`initdb`, `pg_ctl`: on PATH, or Debian's /usr/lib/postgresql/<version>/bin) in
a temporary folder, listening on a free port of 127.0.0.1, without durability (fsync off: a
crash of a test server loses nothing anyone needs). The migrations run once, into a template
database; each test instance gets a copy of it (`CREATE DATABASE ... TEMPLATE`), which takes a
fraction of running the migrations again. As root the server runs as the `postgres` user
(PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import glob
import hashlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

SQLITE, POSTGRESQL = "sqlite", "postgresql"
BACKENDS = (SQLITE, POSTGRESQL)
TEMPLATE = "pbem_template"
BINARIES = ("initdb", "pg_ctl")


def find_binaries() -> dict[str, str] | None:
    """The paths of initdb and pg_ctl, or None when they are not installed."""
    found = {name: shutil.which(name) for name in BINARIES}
    if all(found.values()):
        return found
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True,
                         key=lambda f: int(Path(f).parent.name) if Path(f).parent.name
                         .isdigit() else 0):
        paths = {name: os.path.join(folder, name) for name in BINARIES}
        if all(os.access(p, os.X_OK) for p in paths.values()):
            return paths
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """A PostgreSQL server in a temporary folder; `stop()` removes it with its data."""

    def __init__(self, binaries: dict[str, str]):
        self.binaries = binaries
        self.folder = Path(tempfile.mkdtemp(prefix="pbem-postgres-"))
        self.data = self.folder / "data"
        self.port = free_port()
        self.user = None
        if os.geteuid() == 0:
            try:
                self.user = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError("running as root, and there is no `postgres` user to run "
                                   "the PostgreSQL test server as") from None
            os.chown(self.folder, self.user.pw_uid, self.user.pw_gid)
        self._admin = None
        self.created: set[str] = set()

    def _run(self, *args: str) -> None:
        command = list(args)
        if self.user is not None:
            command = ["runuser", "-u", self.user.pw_name, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, cwd=self.folder,
                              timeout=120, check=False)
        if done.returncode:
            log = self.folder / "server.log"
            extra = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(args)} failed: {done.stderr or done.stdout}{extra}")

    def start(self) -> None:
        self._run(self.binaries["initdb"], "-D", str(self.data), "-U", "postgres",
                  "--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync")
        options = " ".join([
            f"-p {self.port}", "-c listen_addresses=127.0.0.1",
            f"-c unix_socket_directories={self.folder}", "-c fsync=off",
            "-c synchronous_commit=off", "-c full_page_writes=off", "-c max_connections=300",
            "-c shared_buffers=64MB"])
        self._run(self.binaries["pg_ctl"], "-D", str(self.data), "-o", options, "-w",
                  "-t", "60", "-l", str(self.folder / "server.log"), "start")

    def stop(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        if self.data.exists():
            try:
                self._run(self.binaries["pg_ctl"], "-D", str(self.data), "-m", "immediate",
                          "-w", "stop")
            except RuntimeError:
                pass  # not running (start failed): there is only the folder to remove
        shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, database: str) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def admin(self):
        """An autocommit connection to the server's maintenance database."""
        import psycopg

        if self._admin is None or self._admin.closed:
            self._admin = psycopg.connect(host="127.0.0.1", port=self.port, user="postgres",
                                          dbname="postgres", autocommit=True)
        return self._admin

    def make_template(self, migrate) -> None:
        """The template database, with the schema `migrate(url)` puts into it."""
        self.admin().execute(f'CREATE DATABASE "{TEMPLATE}"')
        migrate(self.url(TEMPLATE))

    def create(self, name: str, empty: bool = False) -> str:
        """A database `name` copied from the template (once), or `empty` without tables;
        returns its URL."""
        import psycopg

        if name not in self.created:
            template = "template0" if empty else TEMPLATE
            for attempt in range(50):
                try:
                    self.admin().execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
                    break
                except psycopg.errors.DuplicateDatabase:
                    break  # made by another process of the same test
                except psycopg.errors.ObjectInUse:
                    # "source database is being accessed by other users": another copy of
                    # the template is being made at this moment
                    time.sleep(0.05 * (attempt + 1))
            else:
                raise RuntimeError(f"could not copy the template database into {name}")
            self.created.add(name)
        return self.url(name)

    def drop(self, name: str) -> None:
        self.admin().execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.created.discard(name)


def database_name(instance: Path) -> str:
    """The PostgreSQL database of a test instance folder: the same folder, the same database,
    in every process of the test."""
    digest = hashlib.sha1(str(Path(instance).resolve()).encode()).hexdigest()[:24]
    return f"t_{digest}"


_sqlite_template: Path | None = None


def copy_sqlite_template(path: Path) -> None:
    """A new SQLite database file at `path`, a copy of one the migrations made (once per
    process), private as the server makes its own (pbem.ground.db.create_private)."""
    global _sqlite_template
    from pbem.ground.db import create_private

    if _sqlite_template is None:
        import atexit
        import sqlite3

        folder = Path(tempfile.mkdtemp(prefix="pbem-sqlite-template-"))
        atexit.register(shutil.rmtree, folder, True)
        template = folder / "pbem.sqlite3"
        migrate_template(f"sqlite:///{template}")
        with sqlite3.connect(template) as connection:  # everything in the file, no -wal left
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.close()
        _sqlite_template = template
    create_private(path)
    shutil.copyfile(_sqlite_template, path)


def migrate_template(url: str) -> None:
    """The schema of the migrations in the (empty) database at `url`."""
    from pbem import create_app
    from pbem.ground import schema
    from pbem.ground.db import get_engine

    with tempfile.TemporaryDirectory() as folder:
        app = create_app({"INSTANCE_PATH": folder, "SECRET_KEY": "template",
                          "DATABASE_URL": url, "TESTING": True})
        schema.upgrade(app)
        get_engine(app).dispose()
