"""The scheduler while its PostgreSQL server is down (issue 43, point 18): the real `pbem
scheduler` process, started as deploy/systemd/pbem-scheduler.service starts it, against a
throwaway PostgreSQL server of its own that the test stops under it. Each tick while the
database is down is one line in its log, saying so, and no traceback; the process runs on."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from databases import PostgresServer
from parts import require
from test_deploy_processes import process, unit_service, wait_for
from test_pbem_cli import environment

ROOT = Path(__file__).resolve().parent.parent.parent
FAILED = "the scheduler job failed"
TICKS = 3  # failed ticks to see


@pytest.fixture
def postgres():
    server = PostgresServer(require("postgresql"))
    try:
        server.start()
        server.admin().execute('CREATE DATABASE "club"')
        yield server
    finally:
        server.stop()


def test_a_tick_while_the_database_is_down_is_one_line(tmp_path, postgres):
    instance = tmp_path / "instance"
    env = environment(instance, PBEM_DATABASE_URL=postgres.url("club"),
                      PBEM_SCHEDULER_TICK_SECONDS="1", PBEM_SECRET_KEY="outage-test")
    done = subprocess.run([sys.executable, "-m", "pbem", "init-db"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    command = unit_service("pbem-scheduler.service")["ExecStart"].split()
    assert command[1:] == ["scheduler"]
    log = tmp_path / "scheduler.log"
    with process([sys.executable, "-m", "pbem", *command[1:]], log, env) as running:
        # Its first run records itself (the heartbeat /health reads): the database is used.
        wait_for(lambda: "running the job every 1 s" in log.read_text(), what="the start")
        connection = postgres.admin()
        wait_for(lambda: connection.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = 'club'").fetchone()[0]
            and _ran(postgres), what="a run of the scheduler")
        postgres.admin().close()
        postgres._admin = None
        before = len(log.read_text().splitlines())
        postgres._run(postgres.binaries["pg_ctl"], "-D", str(postgres.data), "-m", "fast",
                      "-w", "stop")
        wait_for(lambda: log.read_text().count(FAILED) >= TICKS,
                 what=lambda: f"{TICKS} failed ticks in:\n{log.read_text()[-3000:]}")
        assert running.poll() is None, log.read_text()[-3000:]
        running.send_signal(signal.SIGTERM)
        running.wait(60)
    lines = log.read_text().splitlines()[before:]
    failed = [line for line in lines if FAILED in line]
    assert "Traceback" not in "\n".join(lines), "\n".join(lines)[-3000:]
    for line in failed:
        assert re.match(r"\d{4}-\d\d-\d\d [\d:,]+ ERROR ", line), line
        assert "the database failed" in line and "tried again in 1 s" in line, line
    # Nothing else but the failed ticks (and the stop) while the database was down.
    others = [line for line in lines if FAILED not in line and "Scheduler stopped" not in line]
    assert others == [], "\n".join(others)


def _ran(postgres) -> bool:
    import psycopg

    with psycopg.connect(host="127.0.0.1", port=postgres.port, user="postgres",
                         dbname="club", autocommit=True) as connection:
        return connection.execute("SELECT count(*) FROM jobstate").fetchone()[0] > 0
