"""The play-by-email server: web pages, JSON API, database, mail in and out, in floors.

Each floor is a folder and imports only from its own folder or the floors below it (never up,
never sideways into another channel's folder, and no two modules import each other:
tests/server/test_layers.py reads every import and fails on one that does). Lowest first:

0. `ground/`: what everything stands on: storage and migrations, the clock, settings, words
   (i18n), link keys, logging.
1. `games/`: the one interface to the engine's games (the rules the server plays by and how
   a game is shown), the two games behind it, and the mail's board picture.
2. `services/`: the service layer, the only place where the games and the database meet:
   games, seats and links, the move path (`submit_move`, every move's one path), the log,
   time and vacation, deadlines, stewardship, talk, games players start, composing mail.
3. the channels, which call the services and do not import each other: `web/` (pages, the
   JSON API, the admin's pages) and `mailin/` (players' mail: the SMTP listener, the IMAP
   poller, the mail server's pipe).
4. `scheduler/`: the scheduler's jobs and the delivery of mail (the outbox, helper senders).
5. `cli/`: the `pbem` command's commands.
6. the app, here: `create_app` (pbem.app) assembles the others, `pbem.command` is the `pbem`
   command, `pbem.entry` its entry point, `python3 -m pbem` and wsgi.py run them.
"""

from __future__ import annotations

from .app import create_app
from .ground.config import ConfigError
from .ground.process import started

__all__ = ["ConfigError", "create_app", "started"]
