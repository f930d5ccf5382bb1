"""Helpers for the server's tests: an app on a temporary database, and its sent mail.

The database is the one of the module's `database` fixture (tests/conftest.py): an SQLite file
in the instance folder, or a PostgreSQL database of the test server named after the instance
folder, so that every app and process opening one instance shares one database.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from email import policy
from email.parser import BytesParser
from pathlib import Path
from typing import ClassVar

from jinja2 import BytecodeCache
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import select

from pbem import create_app
from pbem.ground import schema
from pbem.ground.db import get_engine
from pbem.scheduler.outbox import deliver_all_due

LINK = re.compile(r"https?://[^\s<>\"']+/seat/([A-Za-z0-9_-]{32})")


class Databases:
    """Which database the running test uses; the engines it used and the PostgreSQL databases
    it made, closed and dropped after it (tests/conftest.py opens and closes the scopes)."""

    backend = "sqlite"
    postgres = None  # databases.PostgresServer while a module runs on PostgreSQL
    scopes: ClassVar[list[dict]] = []  # per open scope (module, test): {"engines": {...}, "names": [...]}
    migrated: ClassVar[set[str]] = set()  # URLs of databases just copied from a migrated template

    @classmethod
    def url(cls, instance: Path, empty: bool = False) -> str:
        """The database URL of a test instance folder for the current backend: a copy of the
        migrated template when the folder has no database yet (an SQLite file, or a
        PostgreSQL database), or `empty` (what `init-db` finds on a new server)."""
        if cls.backend == "postgresql":
            from databases import database_name

            name = database_name(instance)
            known = name in cls.postgres.created
            url = cls.postgres.create(name, empty)
            if not known:
                if cls.scopes:
                    cls.scopes[-1]["names"].append(name)
                if not empty:
                    cls.migrated.add(url)
            return url
        path = Path(instance) / "pbem.sqlite3"
        url = f"sqlite:///{path}"
        if not empty and not path.exists():
            from databases import copy_sqlite_template

            copy_sqlite_template(path)
            cls.migrated.add(url)
        return url

    @classmethod
    def open_scope(cls) -> None:
        cls.scopes.append({"engines": {}, "names": []})

    @classmethod
    def close_scope(cls) -> None:
        """Close the connections of every engine used in the scope (an engine stays usable: it
        connects again when next used), then drop the scope's PostgreSQL databases."""
        scope = cls.scopes.pop()
        for engine in scope["engines"].values():
            engine.dispose()
        if cls.postgres is not None:
            for name in scope["names"]:
                cls.postgres.drop(name)


@event.listens_for(Engine, "engine_connect")
def _seen(connection) -> None:
    if Databases.scopes:
        Databases.scopes[-1]["engines"].setdefault(id(connection.engine), connection.engine)


def database_url(instance: Path, empty: bool = False) -> str:
    return Databases.url(instance, empty)


_catalogs: Path | None = None


def seed_catalogs(instance: Path) -> None:
    """A new instance folder gets the compiled translation catalogs (pbem.ground.i18n compiles them
    into each instance folder that has none: ~45 ms a test app). They are compiled once per
    process, by the app's own compile_catalogs, and copied with their times, so the app finds
    them up to date; an app on an existing folder compiles what is stale as before."""
    global _catalogs
    import shutil
    import tempfile

    from pbem.ground.i18n import compile_catalogs

    target = Path(instance) / "translations"
    if target.exists():
        return
    if _catalogs is None:
        import atexit

        folder = Path(tempfile.mkdtemp(prefix="pbem-catalogs-"))
        atexit.register(shutil.rmtree, folder, True)
        _catalogs = compile_catalogs(folder / "translations")
    Path(instance).mkdir(mode=0o700, parents=True, exist_ok=True)  # as the app makes it
    # Whole or not at all: several processes of one test may make apps on one folder at once.
    copy = Path(tempfile.mkdtemp(prefix=".translations-", dir=instance))
    shutil.copytree(_catalogs, copy, dirs_exist_ok=True)
    try:
        copy.rename(target)
    except OSError:  # another process put its copy there first
        shutil.rmtree(copy, ignore_errors=True)


class _CompiledTemplates(BytecodeCache):
    """Templates compiled once per test process and shared by its apps, as one server process
    compiles each template once: every test makes a new app, and with it a new Jinja
    environment that would compile every template it renders again (most of a short page
    test's time). Jinja checks each template's source against the stored code's checksum."""

    def __init__(self):
        self.code: dict[str, bytes] = {}

    def load_bytecode(self, bucket) -> None:
        if bucket.key in self.code:
            bucket.bytecode_from_string(self.code[bucket.key])

    def dump_bytecode(self, bucket) -> None:
        self.code[bucket.key] = bucket.bytecode_to_string()


_templates = _CompiledTemplates()


def _share_url_builders() -> None:
    """Each app's URL rules compiled once per test process: werkzeug compiles every rule of a
    new app's URL map into two Python functions (its `_compile_builder`: an AST, then
    `compile`), some 30 ms of CPU an app, most of what making a test app costs. A builder is a
    function of its rule's text, parts, defaults and `append_unknown` alone (the rule itself is
    its first argument when called: bound to each rule as werkzeug binds it), so the apps of a
    process share them."""
    from werkzeug.routing.rules import Rule

    compile_builder = Rule._compile_builder
    built: dict = {}

    def shared(self, append_unknown: bool = True):
        key = (self.rule, tuple(self._trace), repr(sorted((self.defaults or {}).items())),
               append_unknown)
        builder = built.get(key)
        if builder is None:
            builder = built[key] = compile_builder(self, append_unknown)
        return builder

    Rule._compile_builder = shared


_share_url_builders()


def _test_app(settings: dict):
    app = create_app(settings)
    app.jinja_env.bytecode_cache = _templates
    return app


# Admin passwords hashed at argon2id's lowest cost in the tests' apps: the real cost takes
# ~0.2 s of CPU a hash or check, and the page and browser tests make admins and log in often.
# The hashes are still argon2id, checked the same way; tests/server/test_password_cost.py checks the
# real cost (the defaults, which the servers and commands the process tests start keep).
QUICK_PASSWORDS = {"ADMIN_PASSWORD_TIME_COST": 1, "ADMIN_PASSWORD_MEMORY_KIB": 1024}


def bare_app(instance: Path):
    """An app on a database nobody has set up yet (what `pbem` sees before `init-db`)."""
    seed_catalogs(instance)
    return _test_app({"INSTANCE_PATH": str(instance), "SECRET_KEY": "test-secret",
                       "BASE_URL": "http://localhost", "TESTING": True, **QUICK_PASSWORDS,
                       "DATABASE_URL": database_url(instance, empty=True)})


def make_app(instance: Path, **config):
    # The tests' seeds deal known cards: the seed alone deals (tests/server/test_hardening.py checks
    # the default, seeds mixed with the secret key).
    settings = {"INSTANCE_PATH": str(instance), "SECRET_KEY": "test-secret",
                "BASE_URL": "http://localhost", "TESTING": True, "GAMES_SECRET_SEEDS": False,
                # No reviews of finished games unless a test asks (tests/server/test_reviews.py): a
                # review's play-outs would cost every test that runs the scheduler after a game.
                "SCHEDULER_REVIEW_TURNS": 0,
                # No whole game's picture in final mails unless a test asks
                # (tests/server/test_game_picture.py): it costs seconds a finished game.
                "MAIL_GAME_PICTURE": False,
                **QUICK_PASSWORDS, **config}
    if "DATABASE_URL" not in settings:
        settings["DATABASE_URL"] = database_url(instance)
    seed_catalogs(instance)
    app = _test_app(settings)
    if settings["DATABASE_URL"] in Databases.migrated:
        Databases.migrated.discard(settings["DATABASE_URL"])  # a copy of the migrated template
    else:
        schema.upgrade(app)
    return app


# What every test process started through `fresh_processes` imports anyway, imported once:
# with the pages (pbem.web, which create_app imports: ~0.25 s of CPU a process), the scheduler's
# jobs and the `pbem` command.
PRELOAD = ["pytest", "engine", "pbem.app", "pbem.command", "pbem.cli", "pbem.ground.schema",
           "pbem.ground.logs", "pbem.scheduler.jobs", "pbem.scheduler.senders", "server",
           "psycopg", "sqlalchemy.dialects.postgresql.psycopg", "sqlalchemy.dialects.sqlite"]


def _preload() -> list[str]:
    """PRELOAD and every module of pbem.web."""
    import pkgutil

    import pbem.web

    return PRELOAD + [f"pbem.web.{module.name}"
                      for module in pkgutil.iter_modules(pbem.web.__path__)]


def fresh_processes():
    """multiprocessing's "forkserver" context, for the tests that race several processes: each
    process is new (no thread, app, engine, connection or setting of the test's process), forked
    from a server process that has only imported the project (`PRELOAD`). A "spawn"ed process
    imports it all again: ~1.5 s of CPU each, most of what a race of six processes cost. The
    server starts once per test process, without the developer's PBEM_* settings (the tests' own
    processes run without them, tests/conftest.py)."""
    import multiprocessing
    import os
    from multiprocessing import forkserver

    import pytest

    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_preload())
    with pytest.MonkeyPatch.context() as patch:
        for key in [k for k in os.environ if k.startswith("PBEM_")]:
            patch.delenv(key)
        forkserver.ensure_running()
    return context


@contextmanager
def _logging_kept():
    """This process's logging as it was: a command run in it sets up logging for its process
    (pbem.ground.logs: a handler on standard error, levels, filters). Meanwhile the root logger
    has no handler of pbem.ground.logs, as in a new process: the command's set-up makes its
    own, on the standard error of the moment."""
    import logging

    from pbem.ground.logs import _OurHandler

    def loggers() -> list:
        return [logging.getLogger(), *(one for one in logging.Logger.manager.loggerDict
                                       .values() if isinstance(one, logging.Logger))]

    kept = {id(one): (one.level, list(one.handlers), list(one.filters), one.disabled)
            for one in loggers()}
    handlers_kept = {handler: list(handler.filters) for one in loggers()
                     for handler in one.handlers}
    root = logging.getLogger()
    root.handlers[:] = [h for h in root.handlers if not isinstance(h, _OurHandler)]
    try:
        yield
    finally:
        for handler, filters in handlers_kept.items():
            handler.filters[:] = filters
        for one in loggers():
            level, handlers, filters, disabled = kept.get(id(one), (logging.NOTSET, [], [],
                                                                    False))
            for handler in one.handlers:
                if handler not in handlers:
                    handler.close()
            one.setLevel(level)
            one.handlers[:], one.filters[:], one.disabled = handlers, filters, disabled


def in_process(call, environ: dict[str, str], folder: Path, args: list[str],
               stdin: bytes | None = None, binary: bool = False):
    """What a process running `call` (a command's entry, which may exit) would give, in this
    process: `call()` with the environment `environ` alone, in `folder`, reading `stdin`; its
    exit status, standard output and standard error (text, or bytes with `binary`) as a
    subprocess.CompletedProcess for `args`. The environment, folder, standard streams and
    logging are as they were afterwards. A command's logic costs a fraction of a fresh
    interpreter here (~1 s of CPU each, most of it imports); the tests that run a command as
    operators do keep a real process."""
    import io
    import os
    import subprocess
    import sys
    from contextlib import redirect_stderr, redirect_stdout

    saved_environment, saved_folder, saved_stdin = dict(os.environ), os.getcwd(), sys.stdin
    out, err = io.StringIO(), io.StringIO()
    status = 0
    try:
        os.environ.clear()
        os.environ.update(environ)
        os.chdir(folder)
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin or b""))
        with _logging_kept(), redirect_stdout(out), redirect_stderr(err):
            try:
                call()
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    finally:
        os.environ.clear()
        os.environ.update(saved_environment)
        os.chdir(saved_folder)
        sys.stdin = saved_stdin
    output, errors = out.getvalue(), err.getvalue()
    if binary:
        output, errors = output.encode(), errors.encode()
    return subprocess.CompletedProcess(args, status, output, errors)


def assert_intact(app) -> None:
    """The database file passes SQLite's own check (PostgreSQL keeps no file of ours to check)."""
    with get_engine(app).connect() as connection:
        if connection.dialect.name == "sqlite":
            assert connection.exec_driver_sql("PRAGMA integrity_check").all() == [("ok",)]


class Mailbox:
    """The mail the local backend wrote, read back as a player's mail program would."""

    def __init__(self, app):
        self.app = app
        self.folder = Path(app.config["MAIL_FOLDER"])
        self._parsed: dict[str, object] = {}

    def deliver(self) -> dict:
        return deliver_all_due(self.app)

    def messages(self) -> list:
        self.deliver()
        if not self.folder.is_dir():
            return []
        for path in sorted(self.folder.glob("*.eml")):
            if path.name not in self._parsed:
                with path.open("rb") as f:
                    self._parsed[path.name] = BytesParser(policy=policy.default).parse(f)
        return [self._parsed[name] for name in sorted(self._parsed)]

    def to(self, address: str) -> list:
        return [m for m in self.messages() if address.lower() in str(m["To"]).lower()]


def text_of(message) -> str:
    return message.get_body(("plain",)).get_content()


def html_of(message) -> str:
    return message.get_body(("html",)).get_content()


def token_in(message) -> str:
    """The seat token in a mail's link (the text part and the HTML part must agree)."""
    tokens = set(LINK.findall(text_of(message))) | set(LINK.findall(html_of(message)))
    assert len(tokens) == 1, f"expected one seat link in {message['Subject']!r}, got {tokens}"
    return tokens.pop()


def field(html: str, name: str) -> str:
    """The value of the first input called `name` in a page."""
    match = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert match, f"no input {name!r} in the page"
    return match.group(1)


def legal_in(html: str) -> list[str]:
    """The legal moves listed on a seat page."""
    import html as html_lib

    return [html_lib.unescape(m) for m in re.findall(r"<li><code>([^<]*)</code></li>", html)]


def new_game(app, players: int = 3, seed: str = "1", **kwargs):
    """A game created through the service; returns (CreatedGame, tokens in seat order)."""
    from pbem.services.creating import create_game
    from pbem.services.players import parse_player

    with app.app_context():
        created = create_game([parse_player(f"Player {i} <p{i}@example.org>")
                               for i in range(players)], seed, **kwargs)
    return created, [link.rsplit("/", 1)[1] for _, _, link in created.links]


def game_state(app, game_id: int = 1):
    """The stored Game row and its engine state."""
    import engine
    from pbem.ground.db import reading
    from pbem.ground.models import Game

    with app.app_context(), reading() as session:
        game = session.get(Game, game_id)
    return game, engine.from_json(game.state_json)


def play_moves(app, tokens: list[str], count: int, game_id: int = 1, pick=None,
               until=None):
    """Play `count` moves through submit_move (the first legal move, or `pick(legal)`),
    stopping early when `until(state)` holds or the game ends. Returns the results."""
    import engine
    from pbem.services.moves import submit_move

    results = []
    for _ in range(count):
        game, state = game_state(app, game_id)
        if state.is_over or (until and until(state)):
            break
        legal = engine.legal_moves(state)
        move = pick(legal) if pick else legal[0]
        with app.app_context():
            results.append(submit_move(tokens[state.current], str(move), game.turn))
    return results


def module_app(tmp_path_factory, name: str):
    """An app shared by a whole test module (each test makes its own game in it), built without
    the developer's PBEM_* settings, as the autouse fixture does for single tests."""
    import os

    import pytest

    with pytest.MonkeyPatch.context() as patch:
        for key in [k for k in os.environ if k.startswith("PBEM_")]:
            patch.delenv(key)
        return make_app(tmp_path_factory.mktemp(name) / "instance")


def finish_game(app, game_id: int, seed: str) -> None:
    """Play a stored game of any kind to its end with random legal moves, through its rules,
    and mark it finished."""
    import random

    from pbem.games import rules_for
    from pbem.ground.db import writing
    from pbem.ground.models import FINISHED, Game

    chooser = random.Random(seed)
    with app.app_context(), writing() as session:
        game = session.get(Game, game_id)
        rules = rules_for(game.kind)
        state = rules.loads(game.state_json)
        while rules.to_move(state) is not None:
            state = rules.apply(state, rules.parse(state, chooser.choice(rules.legal(state))))
        game.state_json, game.status = rules.dumps(state), FINISHED
        game.turn, game.deadline_at = rules.ply(state), None
        session.add(game)


# --- what the scheduler's timeouts leave (tests/processes/test_processes.py, tests/processes/test_scheduler_race.py)

def rows(app, model, *where, order=None) -> list:
    """The rows of `model` matching `where`, by id (or by `order`)."""
    from pbem.ground.db import reading

    with reading(app) as session:
        query = select(model).where(*where) if where else select(model)
        return list(session.exec(query.order_by(order if order is not None else model.id)))


def default_turn(rules, state) -> tuple[list[str], object]:
    """The moves the server plays for the seat to move that missed its deadline, and the
    state after them."""
    seat, moves = rules.to_move(state), []
    while rules.to_move(state) == seat and len(moves) < 8:
        move = rules.parse(state, rules.default_move(state))
        moves.append(rules.notation(move))
        state = rules.apply(state, move)
    return moves, state


class Hang:
    """A trigger that holds the transaction that next updates one game's row (a timeout's
    move) where it stands: the process in it is seen in the middle of its work however fast or
    busy the machine. On PostgreSQL the trigger waits for an advisory lock held until `release`.
    On SQLite, which has no lock another process can hold for one row, it counts: without end
    (the process stays until it is killed), or `steps` steps (a few seconds of the held
    process's own CPU: a busy machine slows its count as much as the test that watches it).
    `release` lets it go on and drops the trigger."""

    KEY = 424242  # the advisory lock's key
    NAME = "test_hang"

    def __init__(self, app, game_id: int, steps: int | None = None):
        from pbem.ground.models import Game

        self.engine = get_engine(app)
        self.table = Game.__table__.name
        self.held, self.released = None, False
        with self.engine.begin() as connection:
            if connection.dialect.name == "sqlite":
                bound = f" WHERE x < {int(steps)}" if steps else ""
                connection.exec_driver_sql(
                    f"CREATE TRIGGER {self.NAME} BEFORE UPDATE ON {self.table} "
                    f"WHEN old.id = {int(game_id)} BEGIN SELECT count(*) FROM "
                    f"(WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n{bound}) "
                    "SELECT x FROM n); END")
                return
            self.held = self.engine.connect()
            self.held.exec_driver_sql(f"SELECT pg_advisory_lock({self.KEY})")
            self.held.commit()
            connection.exec_driver_sql(
                f"CREATE FUNCTION {self.NAME}() RETURNS trigger AS $$ BEGIN "
                f"PERFORM pg_advisory_xact_lock({self.KEY}); RETURN NEW; END $$ "
                "LANGUAGE plpgsql")
            connection.exec_driver_sql(
                f"CREATE TRIGGER {self.NAME} BEFORE UPDATE ON {self.table} FOR EACH ROW "
                f"WHEN (old.id = {int(game_id)}) EXECUTE FUNCTION {self.NAME}()")

    def release(self) -> None:
        """Let the held transaction go on, and drop the trigger once it has ended (an SQLite
        count without end ends only with its process). Once."""
        if self.released:
            return
        self.released = True
        if self.held is not None:
            self.held.exec_driver_sql(f"SELECT pg_advisory_unlock({self.KEY})")
            self.held.close()
        with self.engine.begin() as connection:
            if self.held is None:
                connection.exec_driver_sql(f"DROP TRIGGER {self.NAME}")
            else:
                connection.exec_driver_sql(f"DROP TRIGGER {self.NAME} ON {self.table}")
                connection.exec_driver_sql(f"DROP FUNCTION {self.NAME}()")


def check_timed_out_logs(app, games: list[int] | None = None) -> dict[int, list[list]]:
    """Every move of `games` (of every game when None; Kardinal & König) was the scheduler's
    timeout, each timed-out turn was the default turn played once, and each stored state is
    the replay of the log. Returns each game's turns (runs of consecutive moves of one seat)."""
    import engine
    from pbem.games import rules_for
    from pbem.ground.models import Game, MoveRecord, Seat

    rules = rules_for("kardinal-koenig")

    def of_games(column) -> list:
        return [] if games is None else [column.in_(games)]

    records: dict[int, list[MoveRecord]] = {}
    for record in rows(app, MoveRecord, *of_games(MoveRecord.game_id), order=MoveRecord.number):
        records.setdefault(record.game_id, []).append(record)
    colours: dict[int, list[str]] = {}
    for seat in rows(app, Seat, *of_games(Seat.game_id), order=Seat.number):
        colours.setdefault(seat.game_id, []).append(seat.colour)
    turns: dict[int, list[list[MoveRecord]]] = {}
    for game in rows(app, Game, *of_games(Game.id)):
        log = records.get(game.id, [])
        assert [r.number for r in log] == list(range(game.turn)), f"game {game.id}"
        assert all(r.actor == "timeout" and r.via == "scheduler" for r in log)
        state = rules.new_state(colours[game.id], game.seed, None)
        assert rules.start_seat(state) == game.start_seat
        replayed = engine.replay(state.players, game.seed, [r.notation for r in log],
                                 start=game.start_seat)
        assert game.state_json == engine.to_json(replayed), f"game {game.id}"
        turns[game.id] = []
        position = 0
        while position < len(log):
            moves, after = default_turn(rules, state)
            played = log[position:position + len(moves)]
            assert [r.notation for r in played] == moves, f"game {game.id}, move {position}"
            assert {r.seat for r in played} == {rules.to_move(state)}
            turns[game.id].append(played)
            position += len(moves)
            state = after
    assert games is None or sorted(turns) == sorted(games), "a game is missing"
    return turns
