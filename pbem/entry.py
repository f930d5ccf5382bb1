"""The `pbem` command's entry point: `pbem ingest-mail` runs without importing the rest of the
command line (pbem.mailpipe: a mail server starts it once per mail), every other command
through `pbem.cli`."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["ingest-mail"]:
        from .mailpipe import main as ingest_mail

        ingest_mail(sys.argv[2:])
    from .cli import main as cli

    cli()
