"""Upgrading a club from the previous release (issue 43, points 15 and 17), on SQLite and
PostgreSQL.

The previous release is b57f441 (2026-11-25, schema 4e4047aa641e), the last before the
deployment recipes of docs/deploy.md ("Upgrading" lists what changed since). Its club is
tests/data/release_b57f441.jsonl: that release's own `pbem export-db` of its demo game with a
reply domain, the first turn played and its mail queued unsent, and the seats' link tokens of
its mails (tests/data/make_release_b57f441.py made it with that release's code). Here the
migrations build that release's schema and its rows go in as it wrote them, their times moved
to now. Then:

- before `pbem init-db`, an app already running answers /health and every page 503 instead of
  500 (tests/processes/test_upgrade_web.py: gunicorn as deploy/systemd/pbem-web.service runs it refuses
  to start and says why, as `pbem serve` does, and starts after `pbem init-db`);
- `pbem init-db` upgrades it; every game, link and queued mail survived: the
  old links open their seats, the queued mail is sent with working links, a reply to an old
  mail's address (its seat token) is applied, and play goes on.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

import pytest
from server import Mailbox, bare_app, make_app, token_in
from sqlalchemy import DateTime, MetaData, func, select, text
from test_pbem_cli import environment, free_port

from pbem import create_app
from pbem.games import rules_for
from pbem.ground import schema
from pbem.ground.db import get_engine, reading
from pbem.ground.models import QUEUED, SENT, Game, MoveRecord, OutboxMessage
from pbem.mailin.inbox import handle_incoming
from pbem.services.moves import submit_move

pytestmark = pytest.mark.usefixtures("database")  # on SQLite and PostgreSQL

ROOT = Path(__file__).resolve().parent.parent.parent
RELEASE = Path(__file__).resolve().parent.parent / "data" / "release_b57f441.jsonl"
OLD_SCHEMA = "4e4047aa641e"
DOMAIN = "games.example.org"
SETTINGS = {"PBEM_MAIL_REPLY_DOMAIN": DOMAIN, "PBEM_SECRET_KEY": "release-test"}


def old_club(instance: Path) -> tuple[str, dict[int, str], dict[str, int]]:
    """The previous release's club in a new database of this test: its schema by the
    migrations, its rows as it wrote them (times moved on to now, so that deadlines lie ahead as
    they did). Returns the database URL, each seat's link token and the rows per table."""
    app = bare_app(instance)
    schema.upgrade(app, OLD_SCHEMA)
    engine = get_engine(app)
    tables = MetaData()
    tables.reflect(engine)
    lines = [json.loads(line) for line in RELEASE.read_text().splitlines()]
    header = lines[0]
    assert header["schema"] == OLD_SCHEMA
    shift = datetime.now(UTC) - datetime.fromisoformat(header["exported_at"])
    counts: dict[str, int] = {}
    with engine.begin() as connection:
        for item in lines[1:]:
            if "table" not in item:
                continue
            table = tables.tables[item["table"]]
            row = {}
            for key, value in item["row"].items():
                if value is not None and isinstance(table.c[key].type, DateTime):
                    value = (datetime.fromisoformat(value) + shift).astimezone(UTC) \
                        .replace(tzinfo=None)
                row[key] = value
            connection.execute(table.insert(), row)
            counts[table.name] = counts.get(table.name, 0) + 1
        if connection.dialect.name == "postgresql":  # the ids go on after the release's
            for name in counts:
                connection.execute(text(
                    f"SELECT setval(pg_get_serial_sequence('\"{name}\"', 'id'), "
                    f"(SELECT MAX(id) FROM \"{name}\"))"))
    url = app.config["DATABASE_URL"]
    engine.dispose()
    tokens = {item["seat"]: item["token"] for item in lines if "token" in item}
    return url, tokens, counts


def env_for(instance: Path, url: str) -> dict[str, str]:
    return environment(instance, PBEM_DATABASE_URL=url, PBEM_BASE_URL="http://localhost",
                       **SETTINGS)


def init_db(instance: Path, url: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pbem", "init-db"], cwd=ROOT,
                          env=env_for(instance, url), capture_output=True, text=True,
                          timeout=300, check=False)


def test_a_running_app_answers_503_until_init_db(tmp_path):
    """/health names the problem for a load balancer; a page says the server is being
    upgraded, instead of failing on a missing column."""
    instance = tmp_path / "instance"
    _url, tokens, _ = old_club(instance)
    app = bare_app(instance)  # made before init-db, as a worker already running would be
    client = app.test_client()
    answer = client.get("/health")
    assert answer.status_code == 503
    assert answer.json["problems"] == ["schema behind: run pbem init-db"]
    page = client.get(f"/seat/{tokens[0]}")
    assert page.status_code == 503 and "being upgraded" in page.text
    assert client.get("/").status_code == 503
    schema.upgrade(app)
    assert client.get(f"/seat/{tokens[0]}").status_code == 200
    assert client.get("/health").json["database"] == "ok"


def test_init_db_upgrades_the_previous_release_and_play_goes_on(tmp_path):
    instance = tmp_path / "instance"
    url, tokens, counts = old_club(instance)
    done = init_db(instance, url)
    assert done.returncode == 0, done.stderr
    app = make_app(instance, DATABASE_URL=url, MAIL_REPLY_DOMAIN=DOMAIN)
    assert schema.problem(app) is None

    # Every row of the release is there.
    with get_engine(app).connect() as connection:
        for table, count in counts.items():
            assert connection.execute(text(f'SELECT count(*) FROM "{table}"')).scalar_one() \
                == count, table
    # Every link of its mails opens its seat.
    client = app.test_client()
    for seat, token in tokens.items():
        page = client.get(f"/seat/{token}")
        assert page.status_code == 200, (seat, page.status_code)
    # The mail it had queued is sent now, and its links open the seats too.
    with app.app_context(), reading() as session:
        queued = session.execute(select(OutboxMessage.id).where(OutboxMessage.status == QUEUED)) \
            .scalars().all()
    assert len(queued) == counts["outboxmessage"] - len(tokens) > 0
    box = Mailbox(app)
    sent = box.messages()
    with app.app_context(), reading() as session:
        statuses = set(session.execute(select(OutboxMessage.status)
                                    .where(OutboxMessage.id.in_(queued))).scalars())
    assert statuses == {SENT}
    assert len(sent) == len(queued)
    for message in sent:
        assert client.get(f"/seat/{token_in(message)}").status_code == 200

    # Replies to the release's addresses are read as that seat's: to the invitation (sent
    # before the upgrade, its address the seat's old link token) as a stale move, since the
    # game has moved on since; to the "your turn" mail it had queued, as the move.
    with app.app_context(), reading() as session:
        game = session.execute(select(Game)).scalars().one()
    rules = rules_for(game.kind)
    state = rules.loads(game.state_json)
    mover = rules.to_move(state)
    move = rules.legal(state)[0]
    your_turn = [m for m in sent if seat_name(mover) in str(m["To"])][-1]
    outcomes = []
    for address in (f"play+{tokens[mover]}@{DOMAIN}", str(your_turn["Reply-To"])):
        with app.app_context():
            outcomes.append(handle_incoming(reply(seat_name(mover), address, move),
                                            [address]).outcome)
    assert outcomes == ["stale", "applied"]
    # And play goes on through the links of the mail sent since.
    with app.app_context():
        for _ in range(3):
            with reading() as session:
                game = session.execute(select(Game)).scalars().one()
            state = rules.loads(game.state_json)
            newest = [m for m in box.messages() if rules.to_move(state) is not None]
            mover = rules.to_move(state)
            token = token_in([m for m in newest if seat_name(mover) in str(m["To"])][-1])
            submit_move(token, rules.legal(state)[0], game.turn)
        with reading() as session:
            moves = session.execute(select(func.count()).select_from(MoveRecord)).scalar_one()
            by_mail = session.execute(select(func.count()).select_from(MoveRecord)
                                   .where(MoveRecord.via == "email")).scalar_one()
    assert moves == counts["moverecord"] + 4 and by_mail == 1


def reply(name: str, address: str, move: str) -> bytes:
    message = EmailMessage()
    message["From"] = f"{name}@demo.localhost"
    message["To"] = address
    message["Subject"] = "Re: Demo game"
    message["Message-ID"] = make_msgid(domain="demo.localhost")
    message.set_content(f"{move}\n")
    return message.as_bytes()


def seat_name(number: int) -> str:
    return ["anna", "bruno", "chiara", "dieter"][number]


def test_a_database_down_at_start_is_no_reason_to_refuse(tmp_path, caplog):
    """The database may come up after the web server (a reboot): the worker starts, says the
    schema was not checked, and checks it at its first request."""
    port = free_port()  # nothing listens there
    app = create_app({"INSTANCE_PATH": str(tmp_path / "instance"), "SECRET_KEY": "test",
                      "TESTING": True,
                      "DATABASE_URL": f"postgresql+psycopg://pbem@127.0.0.1:{port}/pbem"})
    with caplog.at_level("WARNING", logger="pbem.ground.schema"):
        assert schema.check_at_start(app, "web (gunicorn worker)") is None
    assert "the database's schema could not be checked at start" in caplog.text
    assert "checked at the first request" in caplog.text
    assert not app.extensions.get("pbem_schema_ok")
