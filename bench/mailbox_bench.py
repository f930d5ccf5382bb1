"""The mailbox page's list at growing numbers of delivered mails (issue 19: it parsed every
.eml file per request, 20-27 s at 8,250 mails; issue 13: 0.6 s at 216 mails). Prints the time
of one GET /mailbox/ (first page) and of the page of the oldest mail, the best of five, at each
size, against the target (TARGET_SECONDS a page at every size), the growth from the smallest
size to the largest, and the ratio against a floor measured in the same run: a bare Flask app
on the same database file (an engine made by `pbem.ground.db.make_engine`) whose one page reads the
same fifty rows of the outbox with one SELECT and renders them as a table with Jinja. The
ratio floor/pbem (1.0: as fast as the floor) is the figure to compare on a shared machine. The
figures are saved as JSON in bench/results/ (unless --no-save).

Each row holds bodies of the sizes a real mail's have (a demo invitation's: 2,500 characters
of text, 5,800 of HTML; --empty-bodies for the bench as it was before issue 34): SQLite keeps
what does not fit in a page of the table in overflow pages, which a query reading a column
stored after the bodies (the status) must walk for every row it looks at. The attacker of issue
34 measured 275 ms for the first page at 8,305 real mails, where this bench with empty bodies
said 10.4 ms.

    python3 bench/mailbox_bench.py [SIZES...]     # default: 100 1000 8250
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import results_file
from flask import Flask, render_template_string, request
from sqlalchemy import insert, text

from pbem import create_app
from pbem.ground import schema
from pbem.ground.db import get_engine, make_engine
from pbem.ground.models import SENT, OutboxMessage

TARGET_SECONDS = 0.05  # a page of the mailbox, at any number of mails


TEXT_BODY, HTML_BODY = 2500, 5800  # characters, as a demo invitation's


def filled(instance: Path, count: int, bodies: bool = True):
    app = create_app({"INSTANCE_PATH": str(instance), "SECRET_KEY": "bench", "TESTING": True})
    schema.upgrade(app)
    folder = Path(app.config["MAIL_FOLDER"])
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    text_body = ("Your turn in the demo game. " * 100)[:TEXT_BODY] if bodies else ""
    html_body = ("<p>Your turn in the <b>demo</b> game.</p>" * 150)[:HTML_BODY] if bodies else ""
    rows = []
    for i in range(1, count + 1):
        to, subject = f"Player {i % 5} <p{i % 5}@example.org>", f"[Demo #{i // 20}] Your turn"
        message = EmailMessage()
        message["To"], message["Subject"], message["From"] = to, subject, "judge@example.org"
        message.set_content("Your turn.\n" * 40)
        (folder / f"{i:08d}.eml").write_bytes(bytes(message))
        rows.append({"id": i, "kind": "your_turn", "to_addr": to, "subject": subject,
                     "text_body": text_body, "html_body": html_body,
                     "message_id": f"<{i}@bench>",
                     "secrets_json": "[]", "status": SENT, "attempts": 1,
                     "created_at": now,
                     "next_attempt_at": now})
    with get_engine(app).begin() as connection:
        connection.execute(insert(OutboxMessage.__table__), rows)
    return app


FLOOR_PAGE = """<!doctype html><title>Mailbox</title><table>
{% for id, to, subject, created in rows %}<tr><td>{{ created }}</td><td>{{ to }}</td>
<td><a href="/mailbox/{{ '%08d' % id }}">{{ subject }}</a></td></tr>{% endfor %}</table>"""


def floor_app(database: Path) -> Flask:
    """The floor: one page reading the newest (or older) fifty delivered mails of the same
    outbox table with one SELECT, rendered as a table; no access check, no recipients, no
    pending list, no files looked at. Its SELECT walks the table newest first (`status || ''`
    keeps SQLite off the status index, which would make it read and sort every sent row)."""
    app = Flask("floor")
    engine = make_engine(f"sqlite:///{database}")

    @app.get("/mailbox/")
    def index():
        before = request.args.get("before", type=int)
        with engine.connect() as connection:
            rows = connection.execute(text(
                "SELECT id, to_addr, subject, created_at FROM outboxmessage "
                "WHERE status || '' = 'sent' AND id < :before ORDER BY id DESC LIMIT 51"),
                {"before": before if before is not None else 2 ** 62}).all()
        return render_template_string(FLOOR_PAGE, rows=rows[:50])

    return app


def best(client, path: str) -> float:
    times = []
    for _ in range(5):
        start = time.perf_counter()
        assert client.get(path).status_code == 200
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[100, 1000, 8250],
                        help="numbers of delivered mails")
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/")
    parser.add_argument("--empty-bodies", action="store_true",
                        help="rows without bodies (the bench before issue 34)")
    args = parser.parse_args(argv)
    print(f"{'mails':>6}  {'first page':>10}  {'oldest page':>11}  {'floor, first':>12}  "
          f"{'floor, oldest':>13}")
    rows = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as folder:
            app = filled(Path(folder) / "instance", size, bodies=not args.empty_bodies)
            client = app.test_client()
            floor = floor_app(Path(app.config["DATABASE_URL"].removeprefix("sqlite:///")))
            floor_client = floor.test_client()
            first = best(client, "/mailbox/")
            oldest = best(client, "/mailbox/?before=51")
            floor_first = best(floor_client, "/mailbox/")
            floor_oldest = best(floor_client, "/mailbox/?before=51")
            print(f"{size:>6}  {first * 1000:>8.1f}ms  {oldest * 1000:>9.1f}ms  "
                  f"{floor_first * 1000:>10.1f}ms  {floor_oldest * 1000:>11.1f}ms")
            rows.append({"mails": size, "first_page_ms": round(first * 1000, 2),
                         "oldest_page_ms": round(oldest * 1000, 2),
                         "floor_first_page_ms": round(floor_first * 1000, 2),
                         "floor_oldest_page_ms": round(floor_oldest * 1000, 2)})
    slowest = max(max(r["first_page_ms"], r["oldest_page_ms"]) for r in rows) / 1000
    growth = rows[-1]["first_page_ms"] / rows[0]["first_page_ms"]
    ratio = min(min(r["floor_first_page_ms"] / r["first_page_ms"],
                    r["floor_oldest_page_ms"] / r["oldest_page_ms"]) for r in rows)
    met = slowest <= TARGET_SECONDS
    print(f"slowest page {slowest * 1000:.1f} ms against the target of "
          f"{TARGET_SECONDS * 1000:.0f} ms: {'ok' if met else 'MISSED'}; first page at "
          f"{rows[-1]['mails']:,} mails / at {rows[0]['mails']:,}: {growth:.2f}")
    print(f"ratio floor/pbem, the lowest of any page at any size: {ratio:.3f} (1.0: as fast as "
          f"a bare page reading the same fifty rows)")
    if not args.no_save:
        saved = results_file.save("mailbox_bench", {
            "sizes": rows, "bodies": not args.empty_bodies, "target_ms": TARGET_SECONDS * 1000, "growth": round(growth, 3),
            "floor_over_pbem": round(ratio, 3)})
        print("saved", saved.relative_to(Path(__file__).resolve().parent.parent))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
