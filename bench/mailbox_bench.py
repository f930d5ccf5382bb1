"""The mailbox page's list at growing numbers of delivered mails (issue 19: it parsed every
.eml file per request, 20-27 s at 8,250 mails; issue 13: 0.6 s at 216 mails). Prints the time
of one GET /mailbox/ (first page) and of the page of the oldest mail, the best of five, at each
size, against the target (TARGET_SECONDS a page at every size) and the growth from the smallest
size to the largest; the figures are saved as JSON in bench/results/ (unless --no-save).

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

from sqlalchemy import insert  # noqa: E402

import results_file  # noqa: E402
from pbem import create_app, schema  # noqa: E402
from pbem.db import get_engine  # noqa: E402
from pbem.models import SENT, OutboxMessage  # noqa: E402

TARGET_SECONDS = 0.05  # a page of the mailbox, at any number of mails


def filled(instance: Path, count: int):
    app = create_app({"INSTANCE_PATH": str(instance), "SECRET_KEY": "bench", "TESTING": True})
    schema.upgrade(app)
    folder = Path(app.config["MAIL_FOLDER"])
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.now(UTC)
    rows = []
    for i in range(1, count + 1):
        to, subject = f"Player {i % 5} <p{i % 5}@example.org>", f"[Demo #{i // 20}] Your turn"
        message = EmailMessage()
        message["To"], message["Subject"], message["From"] = to, subject, "judge@example.org"
        message.set_content("Your turn.\n" * 40)
        (folder / f"{i:08d}.eml").write_bytes(bytes(message))
        rows.append({"id": i, "kind": "your_turn", "to_addr": to, "subject": subject,
                     "text_body": "", "html_body": "", "message_id": f"<{i}@bench>",
                     "secrets_json": "[]", "status": SENT, "attempts": 1,
                     "created_at": now,
                     "next_attempt_at": now})
    with get_engine(app).begin() as connection:
        connection.execute(insert(OutboxMessage.__table__), rows)
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
    args = parser.parse_args(argv)
    print(f"{'mails':>6}  {'first page':>10}  {'oldest page':>11}")
    rows = []
    for size in args.sizes:
        with tempfile.TemporaryDirectory() as folder:
            client = filled(Path(folder) / "instance", size).test_client()
            first = best(client, "/mailbox/")
            oldest = best(client, "/mailbox/?before=51")
            print(f"{size:>6}  {first * 1000:>8.1f}ms  {oldest * 1000:>9.1f}ms")
            rows.append({"mails": size, "first_page_ms": round(first * 1000, 2),
                         "oldest_page_ms": round(oldest * 1000, 2)})
    slowest = max(max(r["first_page_ms"], r["oldest_page_ms"]) for r in rows) / 1000
    growth = rows[-1]["first_page_ms"] / rows[0]["first_page_ms"]
    met = slowest <= TARGET_SECONDS
    print(f"slowest page {slowest * 1000:.1f} ms against the target of "
          f"{TARGET_SECONDS * 1000:.0f} ms: {'ok' if met else 'MISSED'}; first page at "
          f"{rows[-1]['mails']:,} mails / at {rows[0]['mails']:,}: {growth:.2f}")
    if not args.no_save:
        saved = results_file.save("mailbox_bench", {
            "sizes": rows, "target_ms": TARGET_SECONDS * 1000, "growth": round(growth, 3)})
        print("saved", saved.relative_to(Path(__file__).resolve().parent.parent))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
