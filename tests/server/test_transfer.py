"""Moving a club between databases with `pbem export-db` and `pbem import-db`: a club on an
SQLite file, exported in the middle of its games, imported into a new database (PostgreSQL, and
SQLite too) plays on: the same rows, the same links, the queued mail still sent, new ids after
the old ones. A broken file or a database that is not empty changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from server import Mailbox, bare_app, game_state, make_app, new_game, play_moves
from sqlalchemy import func, select
from sqlmodel import select as select_rows

import engine
from pbem.ground import schema, transfer
from pbem.ground.db import reading
from pbem.ground.models import QUEUED, SENT, AuditEntry, Game, OutboxMessage
from pbem.services.clock_controls import pause_game
from pbem.services.stewardship import create_admin

pytestmark = pytest.mark.usefixtures("database")  # the target: SQLite, and PostgreSQL


def _club(tmp_path: Path):
    """A club on an SQLite file: two games part-way, one of them paused, mail partly sent, an
    admin; returns (app, tokens of game 1, tokens of game 2)."""
    source = make_app(tmp_path / "old", DATABASE_URL=f"sqlite:///{tmp_path / 'old.sqlite3'}")
    _, first = new_game(source, 3, seed="club-1", title="First")
    _, second = new_game(source, 4, seed="club-2", title="Second")
    play_moves(source, first, 6, game_id=1)
    Mailbox(source).deliver()  # the mail so far is sent ...
    play_moves(source, first, 3, game_id=1)
    play_moves(source, second, 5, game_id=2)  # ... the mail of these moves is still queued
    with source.app_context():
        create_admin("organiser@example.org", "a long enough password")
        pause_game(2)
    return source, first, second


def _everything(app) -> dict[str, list[dict]]:
    """Every row of every table, in key order."""
    with reading(app) as session:
        connection = session.connection()
        return {table.name: [dict(row) for row in connection.execute(
            select(table).order_by(*table.primary_key.columns)).mappings()]
            for table in transfer.tables()}


def _target(tmp_path: Path):
    """A new, empty database of the module's kind, set up with `init-db`."""
    app = bare_app(tmp_path / "new")
    result = app.test_cli_runner().invoke(args=["init-db"])
    assert result.exit_code == 0, result.output
    return app


def _export(source, path: Path) -> None:
    result = source.test_cli_runner().invoke(args=["export-db", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Exported ") and "game: 2, " in result.stdout


def test_a_club_exported_mid_game_plays_on_in_the_new_database(tmp_path, database):
    source, first, _second = _club(tmp_path)
    before = _everything(source)
    queued = [r for r in before["outboxmessage"] if r["status"] == QUEUED]
    assert queued and any(r["status"] == SENT for r in before["outboxmessage"])
    assert before["auditentry"] == [] and len(before["admin"]) == 1

    path = tmp_path / "club.jsonl"
    _export(source, path)
    target = _target(tmp_path)
    result = target.test_cli_runner().invoke(args=["import-db", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Imported ")
    assert "game: 2, " in result.stdout and "seat: 7, " in result.stdout

    # Every row arrived as it was: games, seats, seat keys, moves, mail, timers, admins.
    assert _everything(target) == before
    assert schema.problem(target) is None

    # The players' links open the same seats; the game goes on where it stood, and it goes on
    # as it would have on the old database.
    play_moves(target, first, 4, game_id=1)
    play_moves(source, first, 4, game_id=1)
    assert game_state(target, 1)[0].state_json == game_state(source, 1)[0].state_json
    assert game_state(target, 1)[0].turn == 13
    assert game_state(target, 2)[0].status == "paused"

    # The mail that was queued at the export is sent from the new database, links and all.
    mailbox = Mailbox(target)
    mailbox.deliver()
    with reading(target) as session:
        rows = {r.id: r for r in session.exec(select_rows(OutboxMessage))}
    for row in queued:
        assert rows[row["id"]].status == SENT
    sent_files = list(Path(target.config["MAIL_FOLDER"]).glob("*.eml"))
    assert len(sent_files) == sum(1 for r in rows.values()
                                  if r.status == SENT and r.id not in
                                  {b["id"] for b in before["outboxmessage"]
                                   if b["status"] == SENT})

    # New rows get new ids after the imported ones (on PostgreSQL: the sequences moved on).
    _, _third = new_game(target, 3, seed="club-3", title="Third")
    assert game_state(target, 3)[0].title == "Third"
    with target.app_context():
        pause_game(3)
    with reading(target) as session:
        assert session.exec(select(func.max(Game.id))).one()[0] == 3
        assert session.exec(select(func.count()).select_from(AuditEntry)).one()[0] == 0
    state = game_state(target, 1)[1]
    assert not state.is_over and engine.legal_moves(state)


def test_the_export_goes_to_standard_output_too(tmp_path):
    source, _, _ = _club(tmp_path)
    result = source.test_cli_runner().invoke(args=["export-db", "-"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = json.loads(lines[0])
    assert header["format"] == "pbem-export" and header["schema"] == schema.head_revision(source)
    assert {json.loads(line)["table"] for line in lines[1:]} >= {"game", "seat", "seatkey",
                                                                  "moverecord", "outboxmessage"}
    assert result.stderr.startswith("Exported ") and "game: 2, " in result.stderr


def _import_fails(target, path: Path, words: str) -> None:
    before = _everything(target)
    result = target.test_cli_runner().invoke(args=["import-db", str(path)])
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and words in lines[0], lines
    assert _everything(target) == before, "a refused import changed the database"


def test_an_import_into_a_database_with_games_is_refused(tmp_path):
    source, _, _ = _club(tmp_path)
    path = tmp_path / "club.jsonl"
    _export(source, path)
    target = _target(tmp_path)
    new_game(target, 3, seed="already-here")
    _import_fails(target, path, "not empty")


def test_a_broken_file_changes_nothing(tmp_path):
    source, _, _ = _club(tmp_path)
    path = tmp_path / "club.jsonl"
    _export(source, path)
    lines = path.read_text().splitlines()
    target = _target(tmp_path)

    broken = tmp_path / "broken.jsonl"
    cut = len(lines) * 2 // 3  # rows of the first tables are inserted by then
    broken.write_text("\n".join(lines[:cut] + ["{not json"] + lines[cut:]) + "\n")
    _import_fails(target, broken, f"line {cut + 1} is not JSON")

    row = json.loads(lines[-1])
    row["row"][next(iter(row["row"]))] = {"a": "dict"}
    broken.write_text("\n".join(lines[:-1] + [json.dumps(row)]) + "\n")
    _import_fails(target, broken, f"line {len(lines)}")

    header = json.loads(lines[0])
    broken.write_text("\n".join([json.dumps({**header, "schema": "f00d"}), *lines[1:]]) + "\n")
    _import_fails(target, broken, "schema version f00d")

    broken.write_text("\n".join([lines[0], json.dumps({"table": "secrets", "row": {}})]) + "\n")
    _import_fails(target, broken, "unknown table 'secrets'")

    broken.write_text("")
    _import_fails(target, broken, "the file is empty")
    broken.write_text("id,name\n1,Anna\n")
    _import_fails(target, broken, "is not JSON")
    _import_fails(target, tmp_path / "missing.jsonl", "missing.jsonl")


def test_import_into_a_database_without_tables_says_to_run_init_db(tmp_path):
    source, _, _ = _club(tmp_path)
    path = tmp_path / "club.jsonl"
    _export(source, path)
    target = bare_app(tmp_path / "new")
    result = target.test_cli_runner().invoke(args=["import-db", str(path)])
    assert result.exit_code == 1
    assert "run `pbem init-db`" in result.stderr
