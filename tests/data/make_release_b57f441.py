"""Make tests/data/release_b57f441.jsonl: a club's database as the release of 2026-11-25
(b57f441, schema 4e4047aa641e) left it, for tests/processes/test_upgrade.py.

Run with that release's code, not this one's (it imports the old `pbem` modules):

    git archive b57f441 | tar -x -C /tmp/oldrel
    cd /tmp/oldrel && PYTHONPATH=/tmp/oldrel python3 /path/to/make_release_b57f441.py OUT.jsonl

It sets up the demo game of four players with a reply domain (its invitations mailed to a local
folder, their reply addresses carrying the seat link tokens, as that release wrote them), plays
the first turn by the seat's link, leaves the mail that turn queued unsent, and writes the old
release's own `pbem export-db` followed by one line per seat with the token of its newest link
(`{"token": ..., "seat": ...}`: the test plays on with them)."""

import json
import os
import re
import sys
import tempfile
from pathlib import Path

folder = Path(tempfile.mkdtemp())
os.environ.update(PBEM_INSTANCE_PATH=str(folder), PBEM_MAIL_REPLY_DOMAIN="games.example.org",
                  PBEM_BASE_URL="https://games.example.org", PBEM_SECRET_KEY="release-test")

from sqlmodel import select

from pbem import create_app
from pbem.db import reading
from pbem.games import rules_for
from pbem.models import Game
from pbem.services import load_seat, submit_move

app = create_app()
runner = app.test_cli_runner()
result = runner.invoke(args=["demo"])
assert result.exit_code == 0, result.output
tokens = {}
for mail in sorted((folder / "mail").rglob("*.eml")):
    text = mail.read_text()
    for token in re.findall(r"^Reply-To: play\+([A-Za-z0-9_-]+)@", text, re.MULTILINE):
        tokens.setdefault(token, None)
with app.app_context():
    with reading() as session:
        game = session.exec(select(Game)).one()
    rules = rules_for(game.kind)
    by_seat = {}
    for token in tokens:  # the mails in order: a seat's newest link last
        by_seat[load_seat(token).seat.number] = token
    state = rules.loads(game.state_json)
    mover = rules.to_move(state)
    while rules.to_move(state) == mover:  # the first seat's whole turn: its placement, its draws
        submit_move(by_seat[mover], rules.legal(state)[0], game.turn)
        with reading() as session:
            game = session.get(Game, game.id)
        state = rules.loads(game.state_json)
out = Path(sys.argv[1])
result = runner.invoke(args=["export-db", str(out)])
assert result.exit_code == 0, result.output
with out.open("a") as lines:
    for number, token in sorted(by_seat.items()):
        lines.write(json.dumps({"token": token, "seat": number}) + "\n")
print(out.read_text()[:300])
