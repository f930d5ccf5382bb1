"""The web server on the previous release's database (issue 43, point 15): gunicorn started as
deploy/systemd/pbem-web.service starts it (wsgi:app) refuses to start before `pbem init-db`,
with one CRITICAL line that says what to do and gunicorn's "Worker failed to boot", as `pbem
serve` refuses; after `pbem init-db` it starts and opens the release's links. The club is
tests/processes/test_upgrade.py's. On SQLite only: the check reads the schema's version the same way on
both databases (tests/processes/test_upgrade.py runs the rest on both), and two gunicorn starts are the
most expensive part of the upgrade tests."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import requests
from test_deploy_processes import alive, health, process, unit_service, wait_for
from test_pbem_cli import free_port, pbem_here
from test_upgrade import OLD_SCHEMA, SETTINGS, env_for, old_club

from pbem.ground import schema

ROOT = Path(__file__).resolve().parent.parent.parent


def gunicorn_command(port: int) -> list[str]:
    """The web unit's ExecStart with this test's interpreter, port and one worker."""
    command = unit_service("pbem-web.service")["ExecStart"]
    for old, new in {"/srv/pbem/venv/bin/gunicorn": f"{sys.executable} -m gunicorn",
                     "-w 4": "-w 1", "127.0.0.1:8000": f"127.0.0.1:{port}"}.items():
        assert old in command
        command = command.replace(old, new)
    return shlex.split(command)


def test_the_web_server_refuses_to_start_before_init_db_and_starts_after(tmp_path):
    instance = tmp_path / "instance"
    url, tokens, _ = old_club(instance)
    env = env_for(instance, url)
    log = tmp_path / "gunicorn.log"
    port = free_port()
    with process(gunicorn_command(port), log, env) as gunicorn:
        code = gunicorn.wait(180)
    said = log.read_text()
    assert code != 0, said[-3000:]
    assert "Worker failed to boot" in said, said[-3000:]
    assert f"CRITICAL pbem.ground.schema: web (gunicorn worker): not starting: the database " \
           f"is at schema version {OLD_SCHEMA}, this server needs " \
           f"{schema.head_revision(None)}: back up the database, then run `pbem init-db`" \
        in said, said[-3000:]
    assert "Traceback" not in said, said[-3000:]
    served = pbem_here(instance, "serve", "--port", str(free_port()), "--no-scheduler",
                       PBEM_DATABASE_URL=url, **SETTINGS)
    assert served.returncode == 1 and "run `pbem init-db`" in served.stderr, served.stderr

    done = pbem_here(instance, "init-db", PBEM_DATABASE_URL=url, **SETTINGS)
    assert done.returncode == 0, done.stderr
    log.write_text("")
    with process(gunicorn_command(port), log, env) as gunicorn:
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: alive(gunicorn, log) and health(base) is not None, what="gunicorn")
        answer = health(base)
        assert answer.json()["database"] == "ok"  # 503 only for the scheduler not yet run
        page = requests.get(f"{base}/seat/{tokens[0]}", timeout=30)
        assert page.status_code == 200 and "Demo game" in page.text
    assert "not starting" not in log.read_text()
