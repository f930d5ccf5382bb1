"""Logging for every process: one format (time, level, logger), one level (`[log] level`), and
no live secret in any line, whatever logger wrote it.

`setup(config, process)` is called once by each process when it has its settings: the `pbem`
commands (`pbem.cli`), and each gunicorn worker (`wsgi.py`). It puts one handler on the root
logger (standard error, which systemd's journal or the terminal keeps), sets the level, and
puts `HideSecrets` on that handler and on the loggers and handlers of the web servers' request
logs (werkzeug's for `pbem serve`, gunicorn's access and error logs), so that a seat link, a
"my games" link, an invitation, a starter's link or a reply address never reaches a log in
clear. Modules log through a module-level `logging.getLogger(__name__)`; nothing more is
needed for their lines to follow these rules.

It also makes the files of gunicorn's own log handlers (`--access-logfile`,
`--error-logfile`) readable by the server's user only, as the database is, whatever the
process's umask: they hold every visitor's address.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import sys
from collections.abc import Mapping
from typing import Any

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
HIDDEN = "[hidden]"

# A path whose next segment is a secret key: a seat's link and its API, a "my games" link, a
# friend's invitation, a starter's link to a proposed game.
SECRET_PATH = re.compile(r"(/(?:seat|me|invite|new/game|api/v1/seat|feeds)/)[A-Za-z0-9_-]{8,}")
# A reply address (play+<key>@domain, and any other local part with a key after the "+").
REPLY_KEY = re.compile(r"(\b[A-Za-z0-9._-]+\+)[A-Za-z0-9_-]{16,}(@)")
# A bare key anywhere else in a line: 32 characters of the URL-safe alphabet on their own, not
# all of them hexadecimal digits (a Message-ID's or a seed's hex is no key, and a key is all
# hex digits once in 10^15).
BARE_KEY = re.compile(r"(?<![A-Za-z0-9_-])(?=[0-9a-f]*[g-zA-Z_-])[A-Za-z0-9_-]{32}"
                      r"(?![A-Za-z0-9_-])")
LOGGERS = ("werkzeug", "gunicorn.access", "gunicorn.error", "pbem")

logger = logging.getLogger(__name__)


def hide_secrets(text: str) -> str:
    """`text` with every key in it replaced by [hidden]."""
    text = SECRET_PATH.sub(r"\1" + HIDDEN, text)
    if "+" in text:
        text = REPLY_KEY.sub(r"\1" + HIDDEN + r"\2", text)
    return BARE_KEY.sub(HIDDEN, text)


class HideSecrets(logging.Filter):
    """Masks every key in a log record's message (see `hide_secrets`), its arguments filled
    in: gunicorn's access log line among them, with the request's path, query and Referer."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 (logging's own error report follows)
            return True
        hidden = hide_secrets(message)
        if hidden != message:
            record.msg, record.args = hidden, ()
        return True


class HidingFormatter(logging.Formatter):
    """The format of every line, with the keys masked in the whole of it: a traceback too."""

    def format(self, record: logging.LogRecord) -> str:
        return hide_secrets(super().format(record))


def _has(owner: logging.Logger | logging.Handler, kind: type) -> bool:
    return any(isinstance(f, kind) for f in owner.filters)


def guard(log: logging.Logger | logging.Handler) -> None:
    """Put HideSecrets on a logger or handler (once)."""
    if not _has(log, HideSecrets):
        log.addFilter(HideSecrets())


def _private_file(handler: logging.FileHandler) -> None:
    """Make a log handler's file 0600 now, and each time the handler opens it again (gunicorn
    reopens its files on SIGUSR1, after a log rotation)."""
    def private() -> None:
        try:
            info = os.stat(handler.baseFilename)
        except OSError:
            return
        if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(handler.baseFilename, 0o600)

    if getattr(handler, "_pbem_private", False):
        private()
        return
    opener = handler._open

    def open_private():
        stream = opener()
        private()
        return stream

    setattr(handler, "_open", open_private)  # noqa: B010 (mypy forbids assigning to a method)
    setattr(handler, "_pbem_private", True)  # noqa: B010 (an attribute FileHandler lacks)
    private()


class _OurHandler(logging.StreamHandler):
    """The handler `setup` puts on the root logger: one per process, however often it runs."""


def setup(config: Mapping[str, Any], process: str, service: bool = True) -> logging.Logger:
    """Log like every other pbem process: time, level and logger name to standard error, at
    `config["LOG_LEVEL"]`, with no secret in any line; then say which settings this process
    read: at INFO for a `service` (a server, the scheduler, mail in, a job cron runs), at
    DEBUG for a command a person types (whose only output stays its answer, or one line
    "Error: ..."). Safe to call again (a test making several apps): it replaces nothing but
    the level. Returns the root logger."""
    level = str(config.get("LOG_LEVEL", "INFO")).upper()
    root = logging.getLogger()
    ours = next((h for h in root.handlers if isinstance(h, _OurHandler)), None)
    if ours is None:
        ours = _OurHandler(sys.stderr)
        ours.setFormatter(HidingFormatter(FORMAT))
        root.addHandler(ours)
    guard(ours)
    root.setLevel(level)
    # Flask gave the app's logger ("pbem") a handler of its own when nothing was set up yet:
    # every line would be written twice, once in Flask's format.
    from flask.logging import default_handler

    logging.getLogger("pbem").removeHandler(default_handler)
    # Alembic says at INFO which database kind it found whenever the schema is checked, and
    # Flask-WTF why it refused a CSRF token, which pbem.web.site says as a WARNING with more.
    # APScheduler says at INFO that each job ran ("executed successfully"), every 30 seconds.
    for chatty in ("alembic", "flask_wtf.csrf", "apscheduler"):
        logging.getLogger(chatty).setLevel(max(logging.WARNING, root.level))
    for name in LOGGERS:
        named = logging.getLogger(name)
        guard(named)
        for handler in named.handlers:
            guard(handler)
            if isinstance(handler, logging.FileHandler) and name.startswith("gunicorn."):
                _private_file(handler)
    for handler in root.handlers:
        guard(handler)
    path = os.environ.get("PBEM_CONFIG")
    logger.log(logging.INFO if service else logging.DEBUG,
               "%s (process %d): %s; log level %s", process, os.getpid(),
               f"settings from {path} (PBEM_CONFIG) and PBEM_* variables" if path else
               "no settings file (PBEM_CONFIG is not set): built-in defaults and PBEM_* "
               "variables", level)
    return root
