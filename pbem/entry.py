"""The `pbem` command's entry point: `pbem ingest-mail` runs without importing the rest of the
command line (pbem.mailin.pipe: a mail server starts it once per mail), every other command
through `pbem.command`."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["ingest-mail"]:
        from .app import create_app
        from .mailin.pipe import main as ingest_mail

        ingest_mail(sys.argv[2:], create_app)
    from .command import main as command

    command()
