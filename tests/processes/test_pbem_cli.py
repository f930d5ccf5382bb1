"""The `pbem` command: init-db, create-game, demo, send-mail and serve, through Flask's test
runner, through the command's own entry in this process (`pbem_here`: its settings from the
environment, its exit status and its output, as a process gets them) and as real processes
(`pbem`: the entry point in a fresh interpreter, as operators run it, for the ways it is run:
errors and exit statuses, serving, help); every failure one line on stderr and a non-zero
status."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from email import policy
from email.parser import BytesParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from server import LINK, bare_app, database_url
from sqlalchemy import func, inspect
from sqlmodel import select

from pbem.ground.db import get_engine, reading, writing
from pbem.ground.models import Game, OutboxMessage, Seat
from pbem.services.creating import game_seed

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parent.parent.parent
COMMANDS = ["create-game", "demo", "init-db", "send-mail", "serve"]
THREE = ["--player", "Anna <anna@example.org>", "--player", "Bruno <bruno@example.org>",
         "--player", "Chiara <chiara@example.org>"]
INIT_DB = "run `pbem init-db`"


def count(app, model) -> int:
    with reading(app) as session:
        return session.exec(select(func.count()).select_from(model)).one()


def one_line_error(result) -> str:
    """The single error line of a failed command."""
    assert result.exit_code != 0, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def links_in(output: str) -> list[str]:
    return [word for line in output.splitlines() for word in line.split()
            if LINK.fullmatch(word)]


def environment(instance: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PBEM_", "FLASK_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**env, "PBEM_INSTANCE_PATH": str(instance),
            "PBEM_DATABASE_URL": database_url(instance, empty=True), **extra}


def pbem(instance: Path, *args: str, input: str | None = None,
         **extra: str) -> subprocess.CompletedProcess:
    """`python3 -m pbem ...` in a fresh interpreter on the instance folder `instance`."""
    return subprocess.run([sys.executable, "-m", "pbem", *args], cwd=instance.parent,
                          env=environment(instance, **extra), capture_output=True, text=True,
                          timeout=120, check=False, input=input)


def pbem_here(instance: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    """`pbem ...` as `pbem` runs it, in this process: `pbem.command.main` with the same
    environment and working folder, its exit status and output returned as a process's
    (server.in_process). For what a command says and does; `pbem` (a fresh interpreter) for
    how it runs."""
    from server import in_process

    from pbem.command import main

    return in_process(lambda: main(list(args)), environment(instance, **extra),
                      instance.parent, ["pbem", *args])


# --- init-db and create-game ------------------------------------------------------------------

def test_init_db_then_create_game_prints_the_links_that_open_the_seats(tmp_path):
    app = bare_app(tmp_path / "instance")
    runner = app.test_cli_runner()
    result = runner.invoke(args=["init-db"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"Database ready: {app.config['DATABASE_URL']}"
    assert runner.invoke(args=["init-db"]).exit_code == 0, "safe to run again"

    result = runner.invoke(args=["create-game", *THREE, "--seed", "cli-1", "--title", "Club"])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    with reading(app) as session:
        game = session.exec(select(Game)).one()
        seats = session.exec(select(Seat).order_by(Seat.number)).all()
    assert lines[0].startswith(f"Game {game.id} created")
    with app.app_context():  # mixed with the secret key (GAMES_SECRET_SEEDS, the default)
        assert game.title == "Club" and game.seed == game_seed("cli-1") != "cli-1"
    assert [(s.name, s.colour) for s in seats] == [
        ("Anna", "yellow"), ("Bruno", "red"), ("Chiara", "green")]
    links = links_in(result.stdout)
    assert len(links) == 3 and len(set(links)) == 3
    client = app.test_client()
    for seat, line, link in zip(seats, lines[1:], links, strict=True):
        assert line.strip().startswith(f"{seat.name} ({seat.colour}): http://localhost/seat/")
        page = client.get(urlsplit(link).path)
        assert page.status_code == 200
        assert seat.name in page.get_data(as_text=True)
    assert count(app, OutboxMessage) == 3, "one invitation per player, queued"


def test_create_game_takes_colours_and_the_starting_seat(app, runner):
    result = runner.invoke(args=["create-game", *THREE, "--colour", "blue", "--colour", "red",
                                 "--colour", "purple", "--start", "2"])
    assert result.exit_code == 0, result.output
    with reading(app) as session:
        game = session.exec(select(Game)).one()
        seats = session.exec(select(Seat).order_by(Seat.number)).all()
    assert [s.colour for s in seats] == ["blue", "red", "purple"]
    assert game.start_seat == 1
    assert "Bruno (red): http://localhost/seat/" in result.stdout


def test_create_game_with_the_english_rule_book_shows_it_on_the_pages(app, runner):
    """--rules english: the English and Spanish books' joker, stored in the game and named on
    its pages; without the flag a game follows the German book."""
    result = runner.invoke(args=["create-game", *THREE, "--rules", "english", "--seed", "e"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(args=["create-game", *THREE, "--seed", "g"])
    assert result.exit_code == 0, result.output
    with reading(app) as session:
        games = session.exec(select(Game).order_by(Game.id)).all()
    assert [json.loads(g.state_json)["joker"] for g in games] == ["any", "other"]
    client = app.test_client()
    english, german = (links_in(r)[0] for r in (
        runner.invoke(args=["create-game", *THREE, "--rules", "english"]).stdout,
        runner.invoke(args=["create-game", *THREE]).stdout))
    page = client.get(urlsplit(english).path).get_data(as_text=True)
    assert "Rules: English (v1.3) and Spanish rule books" in page
    page = client.get(urlsplit(german).path).get_data(as_text=True)
    assert "Rules: German rule book" in page


def players(n: int) -> list[str]:
    return [arg for i in range(n) for arg in ("--player", f"P{i} <p{i}@example.org>")]


CREATE_ERRORS = [
    (players(2), "for 3 to 5 players, not 2"),
    (players(6), "for 3 to 5 players, not 6"),
    (players(2) + ["--player", "Chiara <not-an-address>"], "'not-an-address' is not an email"),
    (players(2) + ["--player", "Chiara"], "write each player as 'Name <email>'"),
    (players(2) + ["--player", "Chiara <P1@Example.org>"], "their own email address"),
    (players(3) + ["--colour", "red", "--colour", "pink", "--colour", "blue"],
     "unknown player colour 'pink'"),
    (players(3) + ["--colour", "red", "--colour", "red", "--colour", "blue"],
     "a different colour"),
    (players(3) + ["--colour", "red", "--colour", "blue"], "one --colour per player (3)"),
    (players(3) + ["--colour", "red"] * 4, "one --colour per player (3)"),
    (players(3) + ["--start", "0"], "--start must be a seat from 1 to 3"),
    (players(3) + ["--start", "4"], "--start must be a seat from 1 to 3"),
    (players(3) + ["--title", "x" * 201], "--title must be 1 to 200 characters"),
    (players(3) + ["--seed", ""], "the seed must be 1 to 100 printable characters"),
    (players(3) + ["--game", "chess"], "unknown game 'chess'"),
    (players(3) + ["--rules", "french"], "the rules variant must be one of german, english"),
]


@pytest.mark.parametrize("args,words", CREATE_ERRORS)
def test_create_game_refuses_in_one_line_and_creates_nothing(app, runner, args, words):
    line = one_line_error(runner.invoke(args=["create-game", *args]))
    assert words in line
    assert count(app, Game) == 0 and count(app, Seat) == 0 and count(app, OutboxMessage) == 0


def test_create_game_before_init_db_says_to_run_it(tmp_path):
    app = bare_app(tmp_path / "instance")
    line = one_line_error(app.test_cli_runner().invoke(args=["create-game", *THREE]))
    assert INIT_DB in line
    assert "game" not in inspect(get_engine(app)).get_table_names(), "no tables made on the way"


def test_the_real_command_reports_in_one_line(tmp_path):
    """The same through the entry point: `python3 -m pbem`, a fresh interpreter."""
    instance = tmp_path / "instance"
    before = pbem(instance, "create-game", *THREE)
    assert before.returncode == 1 and before.stdout == ""
    assert before.stderr.splitlines() == [
        ("Error: the database has no tables yet: run `pbem init-db` (or `python3 -m pbem "
         "init-db`) first")]
    assert pbem(instance, "init-db").returncode == 0
    done = pbem(instance, "create-game", *players(2))
    assert done.returncode == 1
    assert done.stderr.splitlines() == ["Error: Kardinal & König is for 3 to 5 players, not 2"]
    done = pbem(instance, "create-game", *THREE, "--seed", "s")
    assert done.returncode == 0 and done.stderr == ""
    assert len(links_in(done.stdout)) == 3


def test_init_db_refuses_a_schema_it_does_not_know(app, runner):
    with writing(app) as session:
        session.connection().exec_driver_sql("UPDATE alembic_version SET version_num = 'f00d'")
    line = one_line_error(runner.invoke(args=["init-db"]))
    assert "f00d" in line and "does not know" in line


def test_a_database_that_cannot_be_opened_is_one_line(tmp_path):
    folder = tmp_path / "a-folder"
    folder.mkdir()
    done = pbem_here(tmp_path / "instance", "init-db", PBEM_DATABASE_URL=f"sqlite:///{folder}")
    assert done.returncode == 1
    assert done.stderr.splitlines() == ["Error: the database failed: unable to open database file"]


def test_a_postgresql_server_that_cannot_be_reached_is_one_line_without_the_password(tmp_path):
    url = f"postgresql+psycopg://pbem:hunter2-secret@127.0.0.1:{free_port()}/pbem"
    done = pbem_here(tmp_path / "instance", "init-db", PBEM_DATABASE_URL=url)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: the database failed: "), lines
    assert "127.0.0.1" in lines[0] and "hunter2" not in done.stderr + done.stdout


def test_init_db_names_the_database_without_its_password(tmp_path, database):
    instance = tmp_path / "instance"
    url = database_url(instance, empty=True)
    if database == "postgresql":  # the test server trusts any password
        url = url.replace("postgres@", "postgres:hunter2-secret@")
    done = pbem_here(instance, "init-db", PBEM_DATABASE_URL=url)
    assert done.returncode == 0, done.stderr
    assert "hunter2" not in done.stdout
    assert done.stdout.strip() == f"Database ready: {url.replace('hunter2-secret', '***')}"


def test_a_database_url_of_another_kind_is_refused_by_name(tmp_path):
    done = pbem_here(tmp_path / "instance", "init-db",
                     PBEM_DATABASE_URL="mysql://pbem:hunter2-secret@db/pbem")
    assert done.returncode == 2
    assert "PBEM_DATABASE_URL" in done.stderr and "postgresql+psycopg://" in done.stderr
    assert "hunter2" not in done.stderr


# --- demo ---------------------------------------------------------------------------------------

def test_demo_sets_up_once_and_again_only_with_new(tmp_path):
    app = bare_app(tmp_path / "instance")  # demo also makes the database
    runner = app.test_cli_runner()
    first = runner.invoke(args=["demo", "--players", "3", "--seed", "demo"])
    assert first.exit_code == 0, first.output
    assert len(links_in(first.stdout)) == 3
    assert "http://localhost/mailbox/" in first.stdout
    assert "start it with python3 -m pbem serve" in first.stdout
    assert count(app, Game) == 1
    mail = Path(app.config["MAIL_FOLDER"])
    assert len(list(mail.glob("*.eml"))) == 3, "the invitations are delivered at once"

    again = runner.invoke(args=["demo"])
    assert again.exit_code == 0, again.output
    assert "already running (3 players)" in again.stdout
    assert links_in(again.stdout) == []
    assert count(app, Game) == 1

    new = runner.invoke(args=["demo", "--new", "--players", "5"])
    assert new.exit_code == 0, new.output
    assert len(links_in(new.stdout)) == 5
    assert count(app, Game) == 2
    assert len(list(mail.glob("*.eml"))) == 8



def test_demo_new_beside_a_running_server_says_it_runs_and_names_the_starter(tmp_path):
    """`demo --new` while the server answers at BASE_URL does not say it is not running; the
    starting player's invitation says so in its subject, the others' do not."""
    from browser_support import live_server

    app = bare_app(tmp_path / "instance")
    runner = app.test_cli_runner()
    assert runner.invoke(args=["demo", "--players", "3"]).exit_code == 0
    with live_server(app) as base:
        new = runner.invoke(args=["demo", "--new", "--players", "4", "--seed", "starter"])
    assert new.exit_code == 0, new.output
    assert "not running yet" not in new.stdout
    assert f"The server at {base} shows the game now" in new.stdout
    with app.app_context(), reading() as session:
        game = session.exec(select(Game).order_by(Game.id.desc())).first()
        seats = session.exec(select(Seat).where(Seat.game_id == game.id)).all()
    starter = next(s.email for s in seats if s.number == json.loads(game.state_json)["current"])
    subjects = {}
    for path in Path(app.config["MAIL_FOLDER"]).glob("*.eml"):
        mail = BytesParser(policy=policy.default).parsebytes(path.read_bytes())
        if f"#{game.id}]" in str(mail["Subject"]):
            subjects[str(mail["To"]).split("<")[-1].rstrip(">")] = str(mail["Subject"])
    assert len(subjects) == 4
    assert subjects.pop(starter).endswith("You are invited to play, and you start")
    assert all(s.endswith("] You are invited to play") for s in subjects.values()), subjects


def test_demo_refuses_a_player_count_out_of_range(app, runner):
    result = runner.invoke(args=["demo", "--players", "6"])
    assert result.exit_code == 2 and "Error: Invalid value for '--players'" in result.stderr
    assert "Kardinal & König is for 3 to 5 players" in result.stderr
    result = runner.invoke(args=["demo", "--game", "knights-castles", "--players", "7"])
    assert result.exit_code == 2 and "Knights & Castles is for 2 to 6 players" in result.stderr
    result = runner.invoke(args=["demo", "--game", "chess"])
    assert result.exit_code == 2 and "unknown game 'chess'" in result.stderr
    assert count(app, Game) == 0


def test_demo_of_knights_and_castles_is_played_from_the_mailbox_links(tmp_path):
    """`pbem demo --game knights-castles`: a game of the second game beside a running demo of
    the first; its invitations are in the mailbox, and the seat to move plays on its page."""
    app = bare_app(tmp_path / "instance")
    runner = app.test_cli_runner()
    assert runner.invoke(args=["demo", "--players", "3"]).exit_code == 0
    done = runner.invoke(args=["demo", "--game", "knights-castles", "--players", "2",
                               "--seed", "demo"])
    assert done.exit_code == 0, done.output
    links = links_in(done.stdout)
    assert len(links) == 2 and count(app, Game) == 2
    with app.app_context(), reading() as session:
        game = session.exec(select(Game).where(Game.kind == "knights-castles")).one()
    client = app.test_client()
    mails = [m.read_text(errors="replace") for m in Path(app.config["MAIL_FOLDER"]).glob("*.eml")]
    assert all(any(urlsplit(link).path in m for m in mails) for link in links)
    assert client.get("/mailbox/").status_code == 200
    for link in links:
        page = client.get(urlsplit(link).path).get_data(as_text=True)
        assert "Knights &amp; Castles" in page and "Your hand" in page
        if "It is your move." in page:
            mover = link
    page = client.get(urlsplit(mover).path).get_data(as_text=True)
    token = urlsplit(mover).path.rsplit("/", 1)[1]
    form = {"csrf_token": page.split('name="csrf_token" value="')[1].split('"')[0],
            "turn": str(game.turn), "move": "done"}
    preview = client.post(f"/seat/{token}/preview", data={**form, "action": "move"})
    assert preview.status_code == 200 and "Confirm this move" in preview.get_data(as_text=True)
    assert client.post(f"/seat/{token}/move", data=form).status_code == 303
    with app.app_context(), reading() as session:
        assert session.get(Game, game.id).turn == game.turn + 1


# --- send-mail ----------------------------------------------------------------------------------

def test_send_mail_delivers_the_queue_into_the_folder(app, runner):
    assert runner.invoke(args=["create-game", *THREE, "--seed", "mail"]).exit_code == 0
    folder = Path(app.config["MAIL_FOLDER"])
    assert not folder.exists() or not list(folder.glob("*.eml")), "nothing sent before"

    result = runner.invoke(args=["send-mail"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "sent 3, to retry later 0, failed 0, unknown (no answer after the message) 0"
    files = sorted(folder.glob("*.eml"))
    assert len(files) == 3
    recipients = set()
    for path in files:
        with path.open("rb") as f:
            message = BytesParser(policy=policy.default).parse(f)
        recipients.add(message["To"].addresses[0].addr_spec)
    assert recipients == {"anna@example.org", "bruno@example.org", "chiara@example.org"}

    again = runner.invoke(args=["send-mail"])
    assert again.stdout.strip() == "sent 0, to retry later 0, failed 0, unknown (no answer after the message) 0"
    assert len(list(folder.glob("*.eml"))) == 3, "nothing is sent twice"


def test_send_mail_before_init_db_says_to_run_it(tmp_path):
    app = bare_app(tmp_path / "instance")
    assert INIT_DB in one_line_error(app.test_cli_runner().invoke(args=["send-mail"]))


# --- serve --------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


LOG_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ [\w.]+: ")


def test_serve_refuses_an_empty_database(tmp_path):
    done = pbem_here(tmp_path / "instance", "serve", "--port", str(free_port()))
    assert done.returncode == 1
    assert done.stdout == ""
    # A service logs what settings it read first (pbem.ground.logs); its error is one line.
    lines = [line for line in done.stderr.splitlines() if not LOG_LINE.match(line)]
    assert len(lines) == 1 and INIT_DB in lines[0]


def test_serve_refuses_a_port_out_of_range(tmp_path):
    done = pbem_here(tmp_path / "instance", "serve", "--port", "70000")
    assert done.returncode == 2 and "'--port': 70000 is not in the range" in done.stderr


def run_until_healthy(command: list[str], cwd: Path, env: dict[str, str], port: int,
                      wait: float = 180) -> str:
    """Start `command` (a server), wait until /health answers ok (the web server and the
    scheduler beside it are well), stop it; its output."""
    server = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + wait
        while True:
            assert server.poll() is None, server.communicate()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30) as r:
                    # 503 (an HTTPError, so an OSError) until the scheduler beside it has run
                    assert r.status == 200
                    answer = json.load(r)
                    assert (answer["status"], answer["problems"]) == ("ok", [])
                    break
            except OSError:
                assert time.monotonic() < deadline, "the server did not answer"
                time.sleep(0.1)
    finally:
        server.terminate()
        out, err = server.communicate(timeout=60)
    return out + err  # what a person at the terminal reads


def test_serve_answers_health_until_stopped(tmp_path):
    instance = tmp_path / "instance"
    assert pbem_here(instance, "init-db").returncode == 0
    port = free_port()
    out = run_until_healthy([sys.executable, "-m", "pbem", "serve", "--port", str(port)],
                            tmp_path, environment(instance), port)
    assert f"Serving on http://127.0.0.1:{port}/" in out
    assert out.count("serve: no settings file") + out.count("serve (process") == 1, out


def test_demo_with_serve_starts_the_server_without_telling_to_start_it(tmp_path):
    """`demo --serve` sets up the demo and serves it; it does not say to start the server."""
    instance = tmp_path / "instance"
    port = free_port()
    out = run_until_healthy([sys.executable, "-m", "pbem", "demo", "--serve", "--players", "3"],
                            tmp_path, environment(instance, PBEM_SERVE_PORT=str(port)), port)
    assert f"Serving on http://127.0.0.1:{port}/" in out
    assert len(links_in(out)) == 3
    assert "start it with" not in out and "Start the server" not in out


@pytest.mark.parametrize("how", ["environment", "option"])
def test_demo_on_another_port_links_to_that_port(tmp_path, how):
    """Issue 32, point 2: PBEM_SERVE_PORT or `demo --port` without a base URL of its own: the
    printed and mailed links lead to the port it serves on, not to :5000."""
    instance = tmp_path / "instance"
    port = free_port()
    extra = {"PBEM_SERVE_PORT": str(port)} if how == "environment" else {}
    command = [sys.executable, "-m", "pbem", "demo", "--serve", "--players", "3"]
    if how == "option":
        command += ["--port", str(port)]
    out = run_until_healthy(command, tmp_path, environment(instance, **extra), port)
    links = links_in(out)
    assert len(links) == 3 and all(link.startswith(f"http://127.0.0.1:{port}/") for link in links)
    assert f"http://127.0.0.1:{port}/mailbox/" in out
    for mail in (instance / "mail").glob("*.eml"):
        assert ":5000/" not in mail.read_text(errors="replace"), mail


def test_every_process_of_a_demo_on_another_port_links_to_that_port(tmp_path):
    """Issue 43, point 2: with `demo --serve --port P` running, the scheduler beside it (which
    answers replies and sends reminders) and the commands run beside it (`create-admin`,
    `demo` again) write links to port P, not to :5000; once the server stops, they go back to
    the settings' address."""
    instance = tmp_path / "instance"
    port = free_port()
    env = environment(instance)
    server = subprocess.Popen([sys.executable, "-m", "pbem", "demo", "--serve", "--players", "3",
                               "--port", str(port)], cwd=tmp_path, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        said = []
        for line in server.stdout:  # the lines it prints as it starts
            said.append(line)
            if "Scheduler running beside it" in line:
                break
        child = int(re.search(r"process (\d+)", said[-1])[1])
        deadline = time.monotonic() + 60
        while b"scheduler" not in Path(f"/proc/{child}/cmdline").read_bytes():  # exec'd yet?
            assert time.monotonic() < deadline, "the scheduler did not start"
            time.sleep(0.01)
        # The scheduler's settings: its mails' links lead to the port the server listens on.
        environ = dict(item.split("=", 1) for item in Path(f"/proc/{child}/environ")
                       .read_bytes().decode().split("\0") if "=" in item)
        assert environ["PBEM_BASE_URL"] == f"http://127.0.0.1:{port}"
        done = pbem(instance, "create-admin", "organiser@example.org", "--password-stdin",
                    input="a long enough password\n")
        assert done.returncode == 0, done.stderr
        assert f"can log in at http://127.0.0.1:{port}/admin/" in done.stdout, done.stdout
        done = pbem(instance, "demo")  # the demo again, beside the running server
        assert f"http://127.0.0.1:{port}/mailbox/" in done.stdout, done.stdout
        assert ":5000" not in done.stdout
    finally:
        server.terminate()
        server.communicate(timeout=60)
    assert not (instance / "serving.json").exists()  # a stopped server leads no link there


def test_serve_on_a_taken_port_says_so_before_claiming_to_serve(tmp_path):
    """With the port taken, `serve` says it cannot listen there, and never 'Serving on' or
    'Scheduler running' first."""
    import socket

    instance = tmp_path / "instance"
    assert pbem_here(instance, "init-db").returncode == 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = pbem(instance, "serve", "--port", str(port))
    assert done.returncode != 0
    assert f"Port {port} is in use by another program" in done.stderr, done.stderr
    assert "Serving on" not in done.stdout and "Scheduler running" not in done.stdout


# --- help -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [
    [sys.executable, "-m", "pbem", "--help"],
    [sys.executable, "-m", "flask", "--app", "pbem", "--help"],
])
def test_help_lists_the_commands(tmp_path, command):
    done = subprocess.run(command, cwd=tmp_path, env=environment(tmp_path / "instance"),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    listed = done.stdout.split("Commands:", 1)[1].split()
    for name in COMMANDS:
        assert name in listed


def test_each_command_has_help(app, runner):
    for name in COMMANDS:
        result = runner.invoke(args=[name, "--help"])
        assert result.exit_code == 0 and f"{name} [OPTIONS]" in result.stdout


def test_mail_status_counts_the_outbox_and_lists_failures(app, runner):
    """`mail-status` counts mail by state and shows each failed mail with its error."""
    from server import new_game
    from sqlmodel import select

    from pbem.ground.db import writing
    from pbem.ground.models import OutboxMessage

    new_game(app, 3, "status")
    with app.app_context(), writing() as session:
        row = session.exec(select(OutboxMessage)).first()
        row.status, row.attempts, row.last_error = "failed", 8, "SMTPDataError: 554 no"
        session.add(row)
    result = runner.invoke(args=["mail-status"])
    assert result.exit_code == 3, result.output  # mail failed (docs/deploy.md's exit statuses)
    assert "queued 2, sending 0, sent 0, failed 1, unknown 0" in result.output
    assert "SMTPDataError: 554 no" in result.output and "after 8 attempts" in result.output
