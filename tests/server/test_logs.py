"""The logs of every process (issue 29, point 10; issue 34, point 7): time, level and logger on
every line, the `[log] level` setting, the settings each process read, an INFO line for each
move and timeout, and no live key in any line whatever logger wrote it.

The request logs of the real servers (`pbem serve`'s werkzeug, gunicorn's access log, nginx's)
are checked in tests/processes/test_deploy_processes.py.
"""

from __future__ import annotations

import io
import logging
import os
import re
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from server import game_state, new_game
from test_pbem_cli import environment, pbem_here

from pbem.ground import logs
from pbem.ground.db import utcnow
from pbem.ground.tokens import new_token
from pbem.scheduler.jobs import run_jobs
from pbem.services.moves import submit_move

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) "
                  r"[\w.]+: ")


# --- what is masked -------------------------------------------------------------------------------

def test_every_kind_of_key_is_masked_and_nothing_else():
    key, other = new_token(), new_token()
    lines = {
        f'127.0.0.1 - - "GET /seat/{key} HTTP/1.1" 200': '"GET /seat/[hidden] HTTP/1.1"',
        f"POST /seat/{key}/move": "POST /seat/[hidden]/move",
        f"GET /me/{key}": "GET /me/[hidden]",
        f"GET /invite/{key}/accept": "GET /invite/[hidden]/accept",
        f"POST /new/game/{key}/confirm": "POST /new/game/[hidden]/confirm",
        f"GET /api/v1/seat/{key}/messages": "GET /api/v1/seat/[hidden]/messages",
        f"GET /feeds/{key}/moves.atom": "GET /feeds/[hidden]/moves.atom",
        f'"https://games.example.org/seat/{key}" "Mozilla/5.0"':
            '"https://games.example.org/seat/[hidden]" "Mozilla/5.0"',
        f"reply from play+{key}@games.example.org": "reply from play+[hidden]@games.example.org",
        f"to msg+{key}@games.example.org": "to msg+[hidden]@games.example.org",
        f"could not handle a mail for key {other}.": "could not handle a mail for key [hidden].",
    }
    for line, part in lines.items():
        hidden = logs.hide_secrets(line)
        assert part in hidden, line
        assert key not in hidden and other not in hidden
    # Not keys: a Message-ID's hex, a spectator page's id, a short path, an admin's game.
    for line in ("sent <pbem.0123456789abcdef0123456789abcdef@games.example.org>",
                 "GET /watch/AbCdEfGhIjKlMnOp", "GET /seat/short", "GET /admin/games/12",
                 "bounce+1234@games.example.org"):
        assert logs.hide_secrets(line) == line


@pytest.fixture
def root_logging():
    """The root logger as the test found it, after the test set it up."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield root
    for handler in root.handlers:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


def test_any_loggers_line_is_masked_and_formatted_once_set_up(root_logging, monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    for handler in [h for h in root_logging.handlers if isinstance(h, logs._OurHandler)]:
        root_logging.removeHandler(handler)
    logs.setup({"LOG_LEVEL": "info"}, "test")
    key = new_token()
    logging.getLogger("somebody.else").warning("a link: https://x.example/invite/%s", key)
    try:
        raise ValueError(f"/new/game/{key}/start")
    except ValueError:
        logging.getLogger("pbem.x").exception("failed")
    logging.getLogger("pbem.y").debug("below the level")
    text = stream.getvalue()
    assert key not in text
    lines = [line for line in text.splitlines() if LINE.match(line)]
    assert [line.split(" ", 3)[2:] for line in lines] == [
        ["INFO", (f"pbem.ground.logs: test (process {os.getpid()}): no settings file (PBEM_CONFIG "
                  "is not set): built-in defaults and PBEM_* variables; log level INFO")],
        ["WARNING", "somebody.else: a link: https://x.example/invite/[hidden]"],
        ["ERROR", "pbem.x: failed"]]
    assert "ValueError: /new/game/[hidden]/start" in text
    assert "below the level" not in text
    logs.setup({"LOG_LEVEL": "INFO"}, "again")  # a second set-up adds no second handler
    assert sum(isinstance(h, logs._OurHandler) for h in root_logging.handlers) == 1


# --- every process says what it read, at the level set ---------------------------------------------

def _pbem(tmp_path, *args, **env):
    """`python3 -m pbem ARGS` in a fresh interpreter, as cron or a person runs it."""
    instance = tmp_path / "instance"
    return subprocess.run([sys.executable, "-m", "pbem", *args], cwd=tmp_path,
                          env=environment(instance, **env), capture_output=True, text=True,
                          timeout=120, check=False)


def _pbem_here(tmp_path, *args, **env):
    """The same command through its entry in this process (tests/processes/test_pbem_cli.py)."""
    return pbem_here(tmp_path / "instance", *args, **env)


def test_a_command_logs_time_level_logger_and_the_settings_it_read(tmp_path):
    done = _pbem_here(tmp_path, "init-db")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # typed by a person: its answer only (DEBUG says more)
    done = _pbem(tmp_path, "run-jobs")  # as cron runs it
    assert done.returncode == 0, done.stderr
    first = done.stderr.splitlines()[0]
    assert LINE.match(first), first
    assert all(LINE.match(line) for line in done.stderr.splitlines() if "INFO" in line)
    assert re.search(r" INFO pbem\.ground\.logs: run-jobs \(process \d+\): no settings file "
                     r"\(PBEM_CONFIG is not set\)", first)
    done = _pbem_here(tmp_path, "pause", "1", PBEM_LOG_LEVEL="DEBUG")
    assert re.search(r" DEBUG pbem\.ground\.logs: pause \(process \d+\): no settings file", done.stderr)
    config = tmp_path / "config.toml"
    config.write_text('[log]\nlevel = "DEBUG"\n')
    done = _pbem_here(tmp_path, "run-jobs", PBEM_CONFIG=str(config))
    assert done.returncode == 0, done.stderr
    assert "run-jobs (process " in done.stderr
    assert f"settings from {config} (PBEM_CONFIG) and PBEM_* variables; log level DEBUG" \
        in done.stderr


def test_the_level_setting_leaves_out_the_lines_below_it(tmp_path):
    assert _pbem_here(tmp_path, "init-db").returncode == 0
    done = _pbem_here(tmp_path, "run-jobs", PBEM_LOG_LEVEL="warning")
    assert done.returncode == 0, done.stderr
    assert " INFO " not in done.stderr


def test_a_bad_level_is_refused_by_name(tmp_path):
    done = _pbem_here(tmp_path, "init-db", PBEM_LOG_LEVEL="LOUD")
    assert done.returncode == 2
    assert "LOG_LEVEL (from PBEM_LOG_LEVEL) must be one of DEBUG, INFO, WARNING, ERROR, " \
           "CRITICAL; it is 'LOUD'" in done.stderr


# --- an INFO line for each move and each timeout, without a key -------------------------------------

def test_each_move_and_timeout_is_logged_at_info_without_its_key(app, caplog):
    _, tokens = new_game(app, start=0)
    game, _ = game_state(app)
    caplog.set_level(logging.INFO)
    with app.app_context():
        import engine

        move = str(engine.legal_moves(game_state(app)[1])[0])
        submit_move(tokens[0], move, game.turn, via="web")
    moves = [r.getMessage() for r in caplog.records if r.name == "pbem.services.moves"]
    assert moves == [f"move: game 1 seat 1 {move} (player, via web)"]
    caplog.clear()
    run_jobs(app, utcnow() + timedelta(days=30), simulated=True)
    lines = [r.getMessage() for r in caplog.records if r.name in ("pbem.scheduler.jobs",
                                                                  "pbem.services.moves")]
    assert any(re.fullmatch(r"timeout: game 1 seat \d missed its deadline; \d+ default "
                            r"move\(s\) played", line) for line in lines), lines
    assert any(re.fullmatch(r"move: game 1 seat \d .+ \(timeout, via scheduler\)", line)
               for line in lines), lines
    assert not any(token in record.getMessage() for token in tokens
                   for record in caplog.records)


def test_the_schedulers_mail_helpers_log_as_it_does(tmp_path):
    """A helper sender is a fresh interpreter (spawned): it sets up its logging too, so that
    what it says (each mail it delivers) has a time, a level and no key."""
    assert _pbem(tmp_path, "init-db").returncode == 0
    log = tmp_path / "scheduler.log"
    with log.open("wb") as out:
        scheduler = subprocess.Popen([sys.executable, "-m", "pbem", "scheduler"], cwd=tmp_path,
                                     env=environment(tmp_path / "instance",
                                                     PBEM_MAIL_SENDERS="2"),
                                     stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 600  # a busy machine: the helpers start slowly
        while not re.search(r" INFO pbem\.ground\.logs: mail helper \(process \d+\): no settings file",
                            log.read_text()):
            assert scheduler.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
    finally:
        scheduler.terminate()
        scheduler.wait(60)
    assert re.search(r" INFO pbem\.ground\.logs: scheduler \(process \d+\): no settings file",
                     log.read_text())


def test_apschedulers_lines_of_every_run_are_left_out(root_logging, monkeypatch):
    """At INFO the scheduler's log does not repeat APScheduler's 'Running job ...' and
    '... executed successfully' every 30 seconds (issue 32); its warnings stay."""
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    for handler in [h for h in root_logging.handlers if isinstance(h, logs._OurHandler)]:
        root_logging.removeHandler(handler)
    logs.setup({"LOG_LEVEL": "info"}, "scheduler")
    chatty = logging.getLogger("apscheduler.executors.default")
    chatty.info('Job "run_jobs" executed successfully')
    chatty.warning("Run time of job was missed")
    logging.getLogger("pbem.scheduler").info("ran the due jobs")
    text = stream.getvalue()
    assert "executed successfully" not in text
    assert "was missed" in text and "ran the due jobs" in text
