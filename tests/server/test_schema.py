"""The database schema: the migrations build exactly the models' tables, `problem()` tells a
command what is missing, running `init-db` again leaves games playable, and SQLite runs in WAL
mode with foreign keys enforced. On SQLite and on PostgreSQL."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from server import bare_app, database_url, fresh_processes, make_app
from sqlalchemy import Column, Integer, MetaData, Table, inspect
from sqlalchemy.exc import IntegrityError
from sqlmodel import SQLModel, select

from pbem.games import rules_for
from pbem.ground import models as _models  # noqa: F401  (the tables register on SQLModel.metadata)
from pbem.ground import schema
from pbem.ground.db import get_engine, reading, writing
from pbem.ground.models import Game, MoveRecord, Seat
from pbem.services.creating import create_game
from pbem.services.moves import submit_move
from pbem.services.players import parse_player
from pbem.services.seats import load_seat

ROOT = Path(__file__).resolve().parent.parent.parent
TABLES = {"game", "seat", "seatkey", "moverecord", "digestitem", "outboxmessage"}

pytestmark = pytest.mark.usefixtures("database")


def differences(app, metadata: MetaData = SQLModel.metadata) -> list:
    with get_engine(app).connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return compare_metadata(context, metadata)


def tables(app) -> set[str]:
    return set(inspect(get_engine(app)).get_table_names())


def test_the_migrations_build_exactly_the_models(app):
    assert TABLES <= tables(app)
    assert differences(app) == []


def test_the_comparison_would_notice_a_difference(app):
    """The test above can fail: a model with one more table and one more column is noticed."""
    changed = MetaData()
    for table in SQLModel.metadata.tables.values():
        table.to_metadata(changed)
    changed.tables["game"].append_column(Column("variant", Integer, nullable=True))
    Table("made_up_table", changed, Column("id", Integer, primary_key=True))
    found = {(d[0], d[3].name if d[0] == "add_column" else d[1].name)
             for d in differences(app, changed)}
    assert found == {("add_column", "variant"), ("add_table", "made_up_table")}


def test_problem_names_init_db_until_the_database_is_migrated(tmp_path):
    app = bare_app(tmp_path / "instance")
    assert schema.current_revision(app) is None
    assert "run `pbem init-db`" in schema.problem(app)
    schema.upgrade(app)
    assert schema.problem(app) is None
    assert schema.current_revision(app) == schema.head_revision(app) is not None


def test_problem_refuses_a_schema_version_it_does_not_know(app):
    with writing(app) as session:
        session.connection().exec_driver_sql("UPDATE alembic_version SET version_num = 'f00d'")
    message = schema.problem(app)
    assert "f00d" in message and "does not know" in message


def _token(link: str) -> str:
    return link.rsplit("/", 1)[1]


def _play(app, tokens: list[str], moves: int) -> list[str]:
    """Play `moves` legal moves (each the first one listed) for whoever is to move."""
    played = []
    rules = rules_for("kardinal-koenig")
    with app.app_context():
        for _ in range(moves):
            with reading(app) as session:
                game = session.exec(select(Game)).one()
            state = rules.loads(game.state_json)
            seat = rules.to_move(state)
            move = rules.legal(state)[0]
            result = submit_move(tokens[seat], move, game.turn)
            assert result.turn == game.turn + 1
            played.append(result.notation)
    return played


def test_init_db_again_leaves_a_running_game_playable(tmp_path):
    instance = tmp_path / "instance"
    app = make_app(instance)
    players = [parse_player(f"Player {i} <p{i}@example.org>") for i in range(3)]
    with app.app_context():
        created = create_game(players, "schema-seed")
    tokens = [_token(link) for _, _, link in created.links]
    played = _play(app, tokens, 5)

    schema.upgrade(app)  # init-db on the same server: nothing to do, nothing lost
    restarted = make_app(instance)  # and after a restart, which runs the upgrade once more
    assert schema.problem(restarted) is None
    assert differences(restarted) == []

    with restarted.app_context():
        seat = load_seat(tokens[0])
        assert seat.game.id == created.game_id and seat.game.turn == 5
        assert [record.notation for record in reversed(seat.log)] == played
    assert len(_play(restarted, tokens, 1)) == 1
    with reading(restarted) as session:
        assert session.exec(select(Game)).one().turn == 6
        assert len(session.exec(select(MoveRecord)).all()) == 6


def test_down_to_base_and_up_again_on_an_empty_database(tmp_path):
    app = make_app(tmp_path / "instance")
    schema.downgrade(app, "base")
    assert tables(app) & TABLES == set()
    assert schema.current_revision(app) is None
    assert "run `pbem init-db`" in schema.problem(app)
    schema.upgrade(app)
    assert TABLES <= tables(app)
    assert schema.problem(app) is None
    assert differences(app) == []


@pytest.mark.only_sqlite
def test_sqlite_runs_in_wal_mode(app):
    with get_engine(app).connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    # WAL is kept in the file itself: any other program opening it sees it too.
    path = app.config["DATABASE_URL"].split("///", 1)[1]
    raw = sqlite3.connect(path)
    try:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        raw.close()


def test_foreign_keys_are_enforced(app):
    with pytest.raises(IntegrityError, match="(?i)foreign key"), writing(app) as session:
        session.add(Seat(game_id=999, number=0, name="Nobody", email="n@example.org",
                         colour="red"))


def _init_db(environ: dict[str, str], folder: str, barrier, results) -> None:
    """`pbem init-db` through its entry (server.in_process), in a new process of its own."""
    from server import in_process

    from pbem.command import main

    try:
        barrier.wait(60)
        done = in_process(lambda: main(["init-db"]), environ, Path(folder), ["pbem", "init-db"])
        results.put((done.returncode, done.stdout, done.stderr))
    except BaseException as exc:
        results.put((-1, "", f"{type(exc).__name__}: {exc}"[:300]))


def test_init_db_started_several_times_at_once_succeeds(tmp_path):
    """Several `init-db` at the same moment (a deploy script, a second terminal) all succeed:
    the migrations take the write lock first, so the others wait and find nothing to do. Each
    runs in a new process (server.fresh_processes: forked from one that has imported the
    project), released together."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PBEM_", "FLASK_"))}
    env["PBEM_INSTANCE_PATH"] = str(tmp_path / "instance")
    env["PBEM_DATABASE_URL"] = database_url(tmp_path / "instance", empty=True)
    context = fresh_processes()
    barrier, queue = context.Barrier(4), context.Queue()
    runs = [context.Process(target=_init_db, args=(env, str(tmp_path), barrier, queue))
            for _ in range(4)]
    for run in runs:
        run.start()
    results = [queue.get(timeout=180) for _ in runs]
    for run in runs:
        run.join(30)
    for code, out, err in results:
        assert code == 0 and err == "", err
        assert out.startswith("Database ready")
    app = bare_app(tmp_path / "instance")
    assert schema.problem(app) is None
    with get_engine(app).connect() as connection:
        assert connection.exec_driver_sql("SELECT count(*) FROM alembic_version").scalar() == 1
