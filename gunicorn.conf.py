"""gunicorn's settings for this server, which gunicorn reads by itself from the folder it starts
in (the checkout, /srv/pbem/app in deploy/systemd/pbem-web.service).

gunicorn must never face the internet: its workers read a request themselves, so a few clients
that send their headers or body one byte at a time hold every worker (eight such clients left
players without an answer for 30 s: issue 42). nginx (deploy/nginx/pbem.conf) reads whole
requests before it passes them on. So gunicorn listens on the loopback address by default, and
refuses to start on any other address unless PBEM_GUNICORN_PUBLIC=yes says that its operator
knows (docs/deploy.md, "The web server behind nginx"); a Unix socket is always fine.
"""

from __future__ import annotations

import os

from gunicorn.util import parse_address

from pbem.cli.processes import is_loopback

bind = ["127.0.0.1:8000"]

PUBLIC = "PBEM_GUNICORN_PUBLIC"


def is_private_address(address: str) -> bool:
    """Whether a gunicorn bind address is reachable from this machine only: a Unix socket, an
    inherited file descriptor (whose socket systemd made), or a host that is loopback only."""
    parsed = parse_address(address)  # as gunicorn reads it: a path, a descriptor or a pair
    if not isinstance(parsed, tuple):
        return True
    return bool(parsed[0]) and is_loopback(parsed[0])


def on_starting(server) -> None:
    """Refuse an address others can reach, unless the operator said so (see above)."""
    public = [a for a in server.cfg.bind if not is_private_address(a)]
    if public and os.environ.get(PUBLIC, "").strip().lower() not in ("1", "yes", "true"):
        raise RuntimeError(
            f"gunicorn would listen on {', '.join(public)}, which other machines can reach. "
            "gunicorn must not face the internet: a few slow clients hold all its workers. "
            "Listen on 127.0.0.1 or a Unix socket behind nginx (deploy/nginx/pbem.conf); if "
            f"you must, set {PUBLIC}=yes and read docs/deploy.md first.")
