"""CPU seconds per incoming mail through each channel (issue 34, point 9: `pbem ingest-mail`
cost about 2.8 s of a core and 100 MB a mail, a whole app per mail). Targets: at most 0.5 s
of CPU a mail through the pipe, 50 ms through the SMTP listener and the IMAP poller.

Every mail is a real reply that is applied: a game per mail (made beforehand), the reply of
its starting seat to the Reply-To of its invitation, with a legal move, each answered by mail
(queued). The channels, each on its own games of one SQLite database:

- pipe, alone: `python -m pbem ingest-mail --recipient ADDRESS` per mail, as Postfix runs it,
  with no listener running (the command loads the server and handles the mail itself); CPU
  of the child processes (user + system).
- pipe + listener: the same command with `pbem mail-listener` running on [mail] listen_port:
  the command hands the mail over; CPU of the command plus what the listener spent meanwhile.
- listener: each mail sent by SMTP straight to `pbem mail-listener`; the listener's CPU.
- IMAP: the mails waiting in a mailbox of a private Dovecot (skipped without dovecot), read by
  one `poll_imap` as the scheduler runs it; that process's CPU for the poll (its start-up is
  the scheduler's, once, not the mail's).

The listener is sent one mail first (not counted), as a running one has read some before.

`--parsers` prints instead the time of reading hostile text (issue 34, point 1): a turn file of
1,000 and of 32,000 newlines (the old `^\\s*Turn:` MULTILINE pattern beside it) and an
HTML-only reply of 60 KB of "<a ".
`--corpus` prints instead how the replies of tests/mail_corpus.py read (issue 41): a game of
each kind played by replies in 25 shapes of 15 mail programs and 19 languages, through
`handle_incoming` as `pbem ingest-mail` hands a mail over; the figures applied exactly /
applied with an alarm / refused / wrong, by program and by language, and the CPU seconds of
reading and applying one reply (target 0.05 s). `--readers` adds how each way of finding the writer's own text reads the
same replies: ours (pbem.services.quoting), quotequail, mail-parser-reply, and each library
with our table after it.
`--python` runs the commands with another interpreter (an older checkout's, to compare); the
channels it lacks are skipped. Figures go to bench/results/ (unless --no-save).

    python3 bench/mailin_bench.py [--mails 20] [--python PYTHON]
    python3 bench/mailin_bench.py --parsers
    python3 bench/mailin_bench.py --corpus [--replies 475] [--readers]
"""

from __future__ import annotations

import argparse
import imaplib
import json
import os
import resource
import smtplib
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import results_file

DOMAIN = "games.example.org"
HOST = "127.0.0.1"
TARGETS = {"pipe": 0.5, "pipe+listener": 0.5, "listener": 0.05, "imap": 0.05}

# The games are made by the interpreter under test, which may be an older checkout's.
MAKE_GAMES = """
import sys
from pbem import create_app
try:
    from pbem.services.creating import create_game
    from pbem.services.players import parse_player
except ImportError:  # an older checkout's
    from pbem.services.moves import create_game, parse_player
app = create_app()
with app.app_context():
    for n in range(int(sys.argv[1])):
        create_game([parse_player(f"P{n}-{i} <p{n}-{i}@example.org>") for i in range(3)],
                    f"bench{n}", start=0)
"""
POLL = """
import json, time
from pbem import create_app
from pbem.mailin.listener import poll_imap
app = create_app()
started = time.process_time()
done = poll_imap(app)
print(json.dumps({"mails": done, "cpu": time.process_time() - started}))
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Club:
    def __init__(self, folder: Path, python: str, games: int):
        self.folder, self.python = folder, python
        self.listen_port = free_port()
        self.config = folder / "config.toml"
        self.config.write_text(
            f'instance_path = "{folder / "instance"}"\nsecret_key = "bench"\n'
            f'base_url = "http://localhost"\n[mail]\nreply_domain = "{DOMAIN}"\n'
            f"listen_port = {self.listen_port}\nboard_picture = false\n")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("PBEM_", "FLASK_"))}
        self.env["PBEM_CONFIG"] = str(self.config)
        self.run("-m", "pbem", "init-db")
        self.run("-c", MAKE_GAMES, str(games))
        self.replies = self._replies()

    def run(self, *args: str, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run([self.python, *args], cwd=ROOT, env=self.env, check=True,
                              capture_output=True, timeout=600, **kwargs)

    def _replies(self) -> list[tuple[str, bytes]]:
        """(recipient, raw mail) of each game's starting seat, answering its invitation."""
        from pbem.games import choices, rules_for

        database = sqlite3.connect(self.folder / "instance" / "pbem.sqlite3")
        rows = database.execute(
            "SELECT o.reply_to, s.email, s.number, g.kind, g.state_json FROM outboxmessage o "
            "JOIN seat s ON s.id = o.seat_id JOIN game g ON g.id = s.game_id "
            "WHERE o.reply_to IS NOT NULL AND o.kind = 'invitation' ORDER BY g.id").fetchall()
        database.close()
        replies = []
        for reply_to, email, number, kind, state_json in rows:
            rules = rules_for(kind)
            state = rules.loads(state_json)
            if rules.to_move(state) != number:
                continue
            message = EmailMessage()
            message["From"], message["To"] = email, reply_to
            message["Subject"] = "Re: You are invited to play"
            message["Message-ID"] = make_msgid(domain="example.org")
            message.set_content(f"{choices(rules, state)[0]}\n\nOn Monday the judge wrote:\n"
                                "> the board\n")
            replies.append((reply_to, message.as_bytes()))
        return replies

    def moves(self) -> int:
        database = sqlite3.connect(self.folder / "instance" / "pbem.sqlite3")
        try:
            return database.execute("SELECT count(*) FROM moverecord WHERE via = 'email'"
                                    ).fetchone()[0]
        finally:
            database.close()

    def ingest(self, recipient: str, raw: bytes) -> str:
        done = subprocess.run([self.python, "-m", "pbem", "ingest-mail", "--recipient",
                               recipient], input=raw, cwd=ROOT, env=self.env,
                              capture_output=True, timeout=600, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"ingest-mail exited {done.returncode}: {done.stderr[-2000:]!r}")
        return done.stdout.decode()

    def listener(self) -> subprocess.Popen:
        process = subprocess.Popen([self.python, "-m", "pbem", "mail-listener", "--port",
                                    str(self.listen_port)], cwd=ROOT, env=self.env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with smtplib.SMTP(HOST, self.listen_port, timeout=5):
                    return process
            except OSError:
                if process.poll() is not None:
                    raise RuntimeError("mail-listener ended at start") from None
                time.sleep(0.1)
        raise RuntimeError("mail-listener did not listen within 120 s")


def pipe(club: Club, mails, listening: bool) -> dict | None:
    listener = club.listener() if listening else None
    try:
        if listener is not None:
            warm_up, mails = mails[0], mails[1:]
            if "handed to the mail listener" not in club.ingest(*warm_up):
                return None  # this version's pipe does not hand mail over
            listener_before = process_cpu(listener.pid)
        before, moves = children_cpu(), club.moves()
        for recipient, raw in mails:
            club.ingest(recipient, raw)
        cpu = children_cpu() - before
        if listener is not None:
            cpu += process_cpu(listener.pid) - listener_before
        assert club.moves() - moves == len(mails), "every reply applied"
        return {"mails": len(mails), "cpu_per_mail": cpu / len(mails)}
    finally:
        if listener is not None:
            listener.terminate()
            listener.wait(60)


def smtp(club: Club, mails) -> dict:
    listener = club.listener()
    try:
        with smtplib.SMTP(HOST, club.listen_port, timeout=60) as client:
            client.sendmail("bench@example.org", [mails[0][0]], mails[0][1])  # warm-up
        mails = mails[1:]
        before, moves = process_cpu(listener.pid), club.moves()
        for recipient, raw in mails:
            with smtplib.SMTP(HOST, club.listen_port, timeout=60) as client:
                client.sendmail("bench@example.org", [recipient], raw)
        cpu = process_cpu(listener.pid) - before
        assert club.moves() - moves == len(mails), "every reply applied"
        return {"mails": len(mails), "cpu_per_mail": cpu / len(mails)}
    finally:
        listener.terminate()
        listener.wait(60)


def imap(club: Club, mails) -> dict | None:
    sys.path.insert(0, str(ROOT / "tests"))
    import test_mail_in as imap_test  # its private Dovecot

    binary = imap_test.dovecot_binary()
    if binary is None:
        return None
    with imap_test.private_dovecot(binary) as port:
        client = imaplib.IMAP4(HOST, port, timeout=30)
        client.login(imap_test.IMAP_USER, imap_test.IMAP_PASSWORD)
        for _, raw in mails:
            client.append("INBOX", None, None, raw)
        client.logout()
        settings = (f"imap_host = \"{HOST}\"\nimap_port = {port}\nimap_security = \"none\"\n"
                    f"imap_username = \"{imap_test.IMAP_USER}\"\n"
                    f"imap_password = \"{imap_test.IMAP_PASSWORD}\"\n")
        club.config.write_text(club.config.read_text() + settings)
        moves = club.moves()
        done = json.loads(club.run("-c", POLL).stdout.decode().strip().splitlines()[-1])
        assert done["mails"] == len(mails) and club.moves() - moves == len(mails), done
        return {"mails": len(mails), "cpu_per_mail": done["cpu"] / len(mails)}


OLD_TURN_LINE = r"^\s*Turn:\s*(\d{1,9})(?:\s*\(move\s+(\d{1,9})\))?\s*$"


def parsers() -> dict:
    """Seconds to read hostile text, the best of three."""
    import re
    from email.message import EmailMessage

    from pbem.mailin import reading
    from pbem.services import turnfile

    def best(work) -> float:
        times = []
        for _ in range(3):
            started = time.perf_counter()
            work()
            times.append(time.perf_counter() - started)
        return min(times)

    figures = {}
    old = re.compile(OLD_TURN_LINE, re.MULTILINE | re.IGNORECASE)
    for lines in (1000, 32000):
        text = "\n" * lines
        figures[f"turn file of {lines} newlines"] = best(lambda t=text: turnfile.read(t))
        figures[f"old Turn pattern over {lines} newlines"] = best(lambda t=text: old.search(t))
    html = EmailMessage()
    html.set_content("<a " * 20000, subtype="html")
    figures["HTML reply of 60 KB of '<a '"] = best(lambda: reading.body_text(html))
    return figures


def corpus(replies: int, readers: bool) -> dict:
    """The corpus's figures; with `readers`, each reader's too."""
    sys.path.insert(0, str(ROOT / "tests"))
    import mail_corpus
    from server import make_app

    from pbem.mailin.inbox import handle_incoming

    raws: list[bytes] = []
    cpu = [0.0]
    with tempfile.TemporaryDirectory(prefix="pbem-corpus-bench-") as folder:
        app = make_app(Path(folder) / "instance", MAIL_REPLY_DOMAIN=DOMAIN,
                       MAIL_BOARD_PICTURE=False,
                       DATABASE_URL=f"sqlite:///{folder}/corpus.sqlite3")

        def ingest(raw: bytes, recipient: str):
            raws.append(raw)
            with app.app_context():
                started = time.process_time()
                handled = handle_incoming(raw, [recipient])
                cpu[0] += time.process_time() - started
            return handled

        club = mail_corpus.Club(app, ingest)
        results = [club.play(i, *case) for i, case in enumerate(mail_corpus.cases(replies))]
    figures = mail_corpus.figures(results)
    figures["cpu_per_reply"] = cpu[0] / len(results)
    figures["misread"] = [f"{r.shape} {r.lang} {r.placement} {r.kind}: {r.outcome} "
                          f"{r.orders} -> {r.played} ({r.detail[:120]})"
                          for r in results if r.outcome != "exact"]
    if readers:
        figures["readers"] = compare_readers(raws, results)
    return figures


def compare_readers(raws: list[bytes], results) -> dict:
    """How many replies each reader of the writer's own text reads exactly as written (the
    same MIME handling for all: our choice of part, HTML turned into text by ours)."""
    from email import policy
    from email.parser import BytesParser

    import quotequail
    from mailparser_reply import EmailReplyParser

    from pbem.mailin import reading
    from pbem.services import quoting, turnfile

    parser = EmailReplyParser(languages=["en", "de", "es", "fr", "it", "nl", "pl", "sv", "cs",
                                         "da", "ja", "zh"])

    def ours(text):
        return turnfile.read(text).lines

    def by_quotequail(text):
        kept = "".join(part for shown, part in quotequail.quote(text) if shown)
        return turnfile._orders([quoting.plain(line) for line in kept.splitlines()])

    def by_parser(text):
        kept = parser.parse_reply(text) or ""
        return turnfile._orders([quoting.plain(line) for line in kept.splitlines()])

    def quotequail_then_ours(text):
        return ours("".join(part for shown, part in quotequail.quote(text) if shown))

    def parser_then_ours(text):
        return ours(parser.parse_reply(text) or "")

    readers = {"ours": ours, "quotequail": by_quotequail, "mail-parser-reply": by_parser,
               "quotequail + ours": quotequail_then_ours,
               "mail-parser-reply + ours": parser_then_ours}
    counts = {name: {"exact": 0, "extra lines": 0, "missed": 0, "cpu": 0.0}
              for name in readers}
    for raw, result in zip(raws, results):
        message = BytesParser(policy=policy.default).parsebytes(raw)
        read = reading.read_mail(message)
        plain, html = message.get_body(("plain",)), message.get_body(("html",))
        if read.part == reading.ATTACHMENT:
            continue  # a file: no quote to find
        texts = [plain.get_content()] if plain is not None else []
        if html is not None:
            texts.append(reading.HtmlText.of(html.get_content()))
        for name, reader in readers.items():
            started = time.process_time()
            got = []
            for text in texts:
                try:
                    got = reader(text)
                except Exception:  # noqa: BLE001 (a library's crash is a miss)
                    got = []
                if got:
                    break
            counts[name]["cpu"] += time.process_time() - started
            if got == result.orders:
                counts[name]["exact"] += 1
            elif got[:len(result.orders)] == result.orders:
                counts[name]["extra lines"] += 1
            else:
                counts[name]["missed"] += 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mails", type=int, default=20, help="mails per channel (20)")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter whose pbem is measured (default: this one)")
    parser.add_argument("--parsers", action="store_true",
                        help="time the readers of hostile text instead")
    parser.add_argument("--corpus", action="store_true",
                        help="read the corpus of tests/mail_corpus.py instead")
    parser.add_argument("--replies", type=int, default=475,
                        help="replies of the corpus (475: every shape in every language)")
    parser.add_argument("--readers", action="store_true",
                        help="with --corpus: compare the readers of a reply's own text")
    parser.add_argument("--no-save", action="store_true")
    options = parser.parse_args()
    if options.corpus:
        figures = corpus(options.replies, options.readers)
        print_corpus(figures)
        if not options.no_save:
            print(f"Saved to {results_file.save('mailin_corpus', figures)}")
        return
    if options.parsers:
        figures = parsers()
        for what, seconds in figures.items():
            print(f"  {what:40} {seconds * 1000:9.1f} ms")
        if not options.no_save:
            print(f"Saved to {results_file.save('mailin_parsers', figures)}")
        return
    n = options.mails
    with tempfile.TemporaryDirectory(prefix="pbem-mailin-bench-") as folder:
        club = Club(Path(folder), options.python, 4 * n + 2)
        mails = club.replies
        figures = {"pipe": pipe(club, mails[:n], listening=False),
                   "pipe+listener": pipe(club, mails[n:2 * n + 1], listening=True),
                   "listener": smtp(club, mails[2 * n + 1:3 * n + 2]),
                   "imap": imap(club, mails[3 * n + 2:4 * n + 2])}
    print(f"CPU seconds per mail ({options.python}, {n} mails per channel, load average "
          f"{os.getloadavg()[0]:.1f}):")
    for channel, result in figures.items():
        if result is None:
            print(f"  {channel:14} -        (not measured: this version lacks it)")
            continue
        target = TARGETS[channel]
        print(f"  {channel:14} {result['cpu_per_mail']:.3f} s  (target {target} s: "
              f"{'met' if result['cpu_per_mail'] <= target else 'MISSED'})")
    if not options.no_save:
        print(f"Saved to {results_file.save('mailin_bench', figures)}")


def print_corpus(figures: dict) -> None:
    def row(name: str, counts: dict) -> str:
        total = sum(counts.values())
        return (f"  {name:18} {total:4}  " + "  ".join(
            f"{counts[o]:4} {o}" for o in ("exact", "alarm", "refused", "wrong")) +
            f"   ({100 * counts['exact'] / total:5.1f}% exact)")

    print("Replies of the corpus (applied exactly / with an alarm / refused / wrong):")
    print(row("all", figures["all"]))
    print("By program:")
    for name, counts in figures["client"].items():
        print(row(name, counts))
    print("By language:")
    for name, counts in figures["language"].items():
        print(row(name, counts))
    print(f"CPU to read and apply one reply: {figures['cpu_per_reply']:.3f} s (target 0.05 s: "
          f"{'met' if figures['cpu_per_reply'] <= 0.05 else 'MISSED'})")
    for line in figures["misread"]:
        print("  misread:", line)
    if "readers" in figures:
        print("Readers of the writer's own text, on the replies without a file:")
        for name, counts in figures["readers"].items():
            print(f"  {name:26} {counts['exact']:4} exact  {counts['extra lines']:4} with "
                  f"lines more  {counts['missed']:4} missed   {counts['cpu']:.2f} s CPU")


if __name__ == "__main__":
    main()
