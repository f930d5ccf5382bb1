"""Slow clients against bare gunicorn: how many answers a normal client gets while a few
clients send their request one byte at a time (issue 42, point 6).

    python3 bench/slow_clients.py                          # sync workers, as the unit runs
    python3 bench/slow_clients.py --worker-class gthread --threads 8
    python3 bench/slow_clients.py --slow 40 --seconds 20

gunicorn runs `wsgi:app` with 4 workers on loopback and a fresh SQLite file; `--slow` clients
each open a connection and send a request's headers one byte every `--every` seconds (never
finishing); one client asks /health again and again, each with a 5 s limit. It prints the
answers the client got and the requests that timed out. gunicorn must never face the internet
for this reason (docs/deploy.md): nginx reads whole requests before passing them on.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def slow_client(port: int, every: float, stop: threading.Event) -> None:
    request = b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Padding: " + b"a" * 10_000
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=60) as conn:
                for byte in request:
                    if stop.wait(every):
                        return
                    conn.sendall(bytes([byte]))
        except OSError:
            stop.wait(0.1)  # closed by the server: open another at once


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--slow", type=int, default=8)
    parser.add_argument("--every", type=float, default=2.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--worker-class", default="sync")
    parser.add_argument("--threads", type=int, default=1)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, INSTANCE_PATH=folder, PBEM_SECRET_KEY="slow-clients",
                   PBEM_DATABASE_URL=f"sqlite:///{folder}/pbem.sqlite3",
                   PYTHONPATH=str(ROOT))
        subprocess.run([sys.executable, "-m", "pbem", "init-db"], env=env, check=True,
                       capture_output=True)
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-w", "4", "-k", options.worker_class,
             "--threads", str(options.threads), "-b", f"127.0.0.1:{port}", "wsgi:app"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        base = f"http://127.0.0.1:{port}/health"
        try:
            while True:
                try:
                    requests.get(base, timeout=5)
                    break
                except requests.RequestException:
                    time.sleep(0.1)
            stop = threading.Event()
            slow = [threading.Thread(target=slow_client, args=(port, options.every, stop))
                    for _ in range(options.slow)]
            for thread in slow:
                thread.start()
            time.sleep(1)  # the slow clients have connected
            answered = timed_out = 0
            end = time.monotonic() + options.seconds
            while time.monotonic() < end:
                try:
                    requests.get(base, timeout=5)
                    answered += 1
                except requests.RequestException:
                    timed_out += 1
            stop.set()
        finally:
            server.terminate()
            errors = server.communicate(timeout=60)[1]
    print(f"{options.worker_class} x4 (threads {options.threads}), {options.slow} slow "
          f"clients, {options.seconds:.0f} s: {answered} answers, {timed_out} timed out, "
          f"{errors.count('WORKER TIMEOUT')} worker timeouts")


if __name__ == "__main__":
    main()
