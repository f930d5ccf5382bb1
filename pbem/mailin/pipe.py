"""`pbem ingest-mail`: one mail from a mail server's pipe (Postfix's `pipe`, Exim's, a
`.forward`), read on standard input and acted on.

Cheap when the listener runs: a whole app (Flask, SQLAlchemy, the models, the games) costs a
new process about a second of CPU to load before it reads one mail. So when `pbem
mail-listener` answers on `[mail] listen_host`/`listen_port` (its greeting names it), this
command only hands the mail over to it by SMTP, with its envelope and CRLF line ends (a mail
server's pipe gives LF ends, one endless line to SMTP), and exits with what the listener
answered: a few hundredths of a second of CPU. When no listener answers (none is run, or it is
down), it loads the app and handles the mail itself, as before. Either way the mail goes
through `pbem.mailin.inbox.handle_incoming`, which logs one line for it; this process's lines
also go to the syslog socket `[log] syslog` (the journal), since the mail server keeps only
the start of what it says. The app is made by the factory the program gives (`main`:
pbem.entry gives `pbem.create_app`), or by the command group that runs this command (`flask
--app pbem ingest-mail`).

Exit statuses, as mail servers read them (sysexits.h):
- 0: the mail was handled: applied, refused with an answer, or deliberately dropped (an
  automatic reply, an unknown key, a copy of a reply to all, a mail too big or unreadable);
  the log says which. Handed over, only when the listener answered its own decision about the
  mail (`decision`: "250 2.0.0 pbem decided: accepted", or a 5xx with the same words).
- 75 (EX_TEMPFAIL): nothing was done, try again later: the database cannot be reached, is
  locked, missing, or mid-upgrade (its schema behind or ahead of this server's), the settings
  or the secrets file cannot be read, the command line is wrong, the server failed, or the
  listener gave any other answer (a 4xx, a 5xx or 250 without its words, a recipient refused,
  a connection cut or timed out). The mail server keeps the mail and delivers it again;
  nothing a player sent is lost or bounced, and a second delivery of a mail that was handled
  after all changes nothing (its Message-ID is kept).

This module imports little at the top: the hand-over must not pay for the app.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import smtplib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from email.parser import BytesHeaderParser
from email.policy import compat32
from email.utils import parseaddr
from pathlib import Path

import click

EX_OK, EX_TEMPFAIL = 0, 75
# The listener's greeting says this: the hand-over talks only to our own listener, never to a
# mail server that happens to listen on the configured port.
LISTENER_IDENT = "pbem mail-listener"
# What the listener's answer to a mail's DATA says when it is its own decision about the mail
# (`decision`): anything else (aiosmtpd's "500 Line too long", a 4xx) is no decision.
DECIDED = "pbem decided:"
DECISION = re.compile(r"[245]\.\d{1,3}\.\d{1,3} " + re.escape(DECIDED) + r" [a-z ]{1,40}")
HAND_OVER_TIMEOUT_SECONDS = 120
CHUNK = 64 * 1024

log = logging.getLogger(__name__)


def read_mail(stream, limit: int) -> tuple[bytes, int]:
    """The first `limit + 1` bytes of the mail on `stream`, and its true size: the rest is read
    and counted, not kept (a mail server's pipe wants its whole mail taken)."""
    raw = stream.read(limit + 1)
    size = len(raw)
    while chunk := stream.read(CHUNK):
        size += len(chunk)
    return raw, size


def envelope_sender(raw: bytes) -> str | None:
    """The envelope sender a mail server wrote into the mail's Return-Path header ('' for
    `<>`, a bounce's), or None when there is none."""
    try:
        values = BytesHeaderParser(policy=compat32).parsebytes(raw).get_all("Return-Path")
    except Exception:
        return None
    if not values:
        return None
    text = str(values[0]).strip()
    return "" if text.replace(" ", "") == "<>" else parseaddr(text)[1]


def as_crlf(raw: bytes) -> bytes:
    """`raw` with every line ending CRLF, as SMTP carries mail: a mail server's pipe gives its
    mail with LF endings, which an SMTP server reads as one endless line."""
    return raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")


def smtp_size(raw: bytes) -> int:
    """How many bytes of DATA `raw` is over SMTP (CRLF ends, a dot doubled at a line's start,
    a last line end), as the listener counts them against its size limit."""
    sent = as_crlf(raw)
    return len(sent) + sent.count(b"\r\n.") + sent.startswith(b".") \
        + (0 if sent.endswith(b"\r\n") else 2)


def is_decision(answer: str) -> bool:
    """Whether the listener's answer to a mail's DATA (without its code) is its own decision
    about the mail (`decision`), not a word of aiosmtpd or of anything else on the port."""
    return bool(DECISION.fullmatch(answer.strip()))


def decision(code: int, status: str, what: str) -> str:
    """The listener's answer to a mail it decided about (applied, answered, dropped, refused
    for good): `250 2.0.0 pbem decided: accepted`. The pipe counts a mail as handled only on
    such an answer."""
    return f"{code} {status} {DECIDED} {what}"


def hand_over(host: str, port: int, raw: bytes, recipients: Sequence[str],
              sender: str | None) -> tuple[int, str] | None:
    """Give the mail to the listener; (exit status, what it answered), or None when no
    listener of ours answers there (nothing listens, or something else does).

    0 only when the listener answered its own decision about the mail (`decision`); every
    other end (a 4xx, a 5xx not of ours, a recipient refused, a broken or timed out
    connection) is 75: the mail server keeps the mail and delivers it again, and a second
    delivery of a mail that was handled after all changes nothing (its Message-ID is kept)."""
    client = smtplib.SMTP(timeout=HAND_OVER_TIMEOUT_SECONDS)
    try:
        code, banner = client.connect(host, port)
    except OSError:
        client.close()
        return None
    if code != 220 or LISTENER_IDENT.encode() not in banner:
        client.close()
        return None
    where = f"the mail listener at {host}:{port}"
    # The listener reads an empty envelope sender as an automatic mail, as it is; a mail with
    # no Return-Path at all is not one.
    mail_from = "postmaster@localhost" if sender is None else sender
    options = ["SMTPUTF8"] if not all(a.isascii() for a in (mail_from, *recipients)) else []
    try:
        client.ehlo_or_helo_if_needed()
        steps: list[tuple[str, Callable[[], tuple[int, bytes]]]] = [
            ("MAIL FROM", lambda: client.mail(mail_from, options))]
        steps += [(f"RCPT TO {i + 1}", functools.partial(client.rcpt, a))
                  for i, a in enumerate(recipients)]
        for step, call in steps:
            code, text = call()
            if code not in (250, 251):
                return EX_TEMPFAIL, f"{where} refused {step}: {code} {_text(text)}"
        code, text = client.data(as_crlf(raw))
        answer = f"{where} answered {code} {_text(text)}"
        if is_decision(_text(text)) and (code == 250 or 500 <= code < 600):
            # Its own decision: applied, answered or dropped (250), or refused for good,
            # which it logged and answered where it could (5xx).
            return EX_OK, answer if code != 250 else f"handed to {where}"
        # A 4xx (the listener's database), or a refusal that is not the listener's decision
        # about this mail (a line too long, a protocol error): the mail is kept.
        return EX_TEMPFAIL, answer
    except (smtplib.SMTPException, OSError) as exc:
        # Cut off or timed out mid-way: whether it was handled is unknown, and a second
        # delivery of the same Message-ID changes nothing, so it is delivered again.
        return EX_TEMPFAIL, f"{where} failed: {type(exc).__name__}: {exc}"
    finally:
        try:
            client.quit()
        except (smtplib.SMTPException, OSError):
            client.close()


def _text(answer) -> str:
    text = answer.decode("utf-8", "replace") if isinstance(answer, bytes) else str(answer)
    return " ".join(text.split())[:300]


def load_env_file(path: str) -> None:
    """Put the KEY=VALUE lines of `path` (the secrets file the systemd units read with
    EnvironmentFile=) into this process's environment. OSError when it cannot be read."""
    from dotenv import dotenv_values

    with open(path, encoding="utf-8") as file:
        values = dotenv_values(stream=file)
    os.environ.update({key: value for key, value in values.items() if value is not None})


def _database_problem(app) -> str | None:
    """Why the mail cannot be handled now (the database missing, unreachable or mid-upgrade),
    or None. Never makes a database: an SQLite file that is not there is reported, not
    created empty (a pipe that read other settings than the server must not play elsewhere)."""
    from ..ground import schema
    from ..ground.db import shown_url

    url = app.config["DATABASE_URL"]
    if url.startswith("sqlite") and "///" in url:
        path = url.split("///", 1)[1]
        if path and path != ":memory:" and not path.startswith("file:") \
                and not os.path.exists(path):
            return (f"no database at {path} ({shown_url(url)}): are the settings the "
                    "server's (PBEM_CONFIG)?")
    problem = schema.problem(app)
    return f"{problem} ({shown_url(url)})" if problem else None


def handle_here(app, raw: bytes, size: int, recipients: list[str],
                sender: str | None) -> tuple[int, str]:
    """Handle the mail in this process with `app`: (exit status, a line for the log)."""
    from sqlalchemy.exc import DBAPIError, SQLAlchemyError

    from ..ground.db import shown_url
    from .inbox import handle_incoming

    where = shown_url(app.config["DATABASE_URL"])
    try:
        with app.app_context():
            problem = _database_problem(app)
            if problem:
                log.error("ingest-mail: %s; the mail is left to the mail server to deliver "
                          "again", problem)
                return EX_TEMPFAIL, f"try again later: {problem}"
            handled = handle_incoming(raw, recipients, size=size, sender=sender)
    except (DBAPIError, SQLAlchemyError) as exc:
        reason = " ".join(str(getattr(exc, "orig", exc) or exc).split())[:300]
        log.error("ingest-mail: the database %s failed (%s); the mail is left to the mail "
                  "server to deliver again", where, reason)
        return EX_TEMPFAIL, f"try again later: the database {where} failed: {reason}"
    except Exception as exc:  # a fault of the server: keep the mail, fix, deliver again
        log.exception("ingest-mail: the mail could not be handled; the mail is left to the "
                      "mail server to deliver again")
        return EX_TEMPFAIL, f"try again later: the server failed: {type(exc).__name__}"
    return EX_OK, f"{handled.outcome}: {handled.detail}"


class _PipeCommand(click.Command):
    """A wrong command line is 75, not click's 2: the mail stays queued until it is fixed."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            exc.exit_code = EX_TEMPFAIL
            raise


@click.command("ingest-mail", cls=_PipeCommand, epilog="""\b
Exit status: 0 when the mail was handled (applied, answered, or
deliberately dropped: see the log); 75 (EX_TEMPFAIL) when nothing was
done and the mail server should deliver it again later (the database
unreachable, locked, missing or mid-upgrade, the settings or secrets
unreadable, a wrong command line, a fault of the server, or any answer
of the mail listener that is not its decision about the mail).""")
@click.argument("addresses", nargs=-1, metavar="[RECIPIENT]...")
@click.option("--recipient", "recipients", multiple=True, metavar="ADDRESS",
              help="An envelope recipient (Postfix: ${recipient}); may be repeated, or the "
                   "addresses given after the options.")
@click.option("--sender", default=None, metavar="ADDRESS",
              help="The envelope sender (Postfix: ${sender}), when the mail has no "
                   "Return-Path header.")
@click.option("--env-file", type=click.Path(dir_okay=False), default=None,
              help="Read KEY=VALUE lines (PBEM_SECRET_KEY, PBEM_DATABASE_URL, ...) from this "
                   "file first: the secrets file the systemd units read with EnvironmentFile=.")
@click.option("--here", is_flag=True,
              help="Handle the mail in this process, even when `pbem mail-listener` runs.")
@click.pass_context
def ingest_mail_command(ctx, addresses, recipients, sender, env_file, here):
    """Read one mail on standard input (a player's reply with orders) and act on it: hand it
    to `pbem mail-listener` when one runs (cheap), else handle it here."""
    if env_file:
        try:
            load_env_file(env_file)
        except (OSError, UnicodeDecodeError) as exc:
            _give_up(ctx, f"cannot read the secrets file {env_file}: "
                          f"{getattr(exc, 'strerror', None) or exc}")
    from flask.cli import ScriptInfo

    info = ctx.find_object(ScriptInfo)
    app = info.load_app() if info is not None and info.create_app is not None else None
    if app is not None:
        config = app.config
    else:
        from ..ground.config import ConfigError, load_settings

        try:
            config = load_settings()
        except ConfigError as exc:
            _give_up(ctx, f"the settings cannot be read: {exc.message}")
    to_syslog(config["LOG_SYSLOG"])
    everyone = [a for a in (*recipients, *addresses) if a]
    limit = config["MAIL_MAX_INCOMING_BYTES"]
    raw, size = read_mail(sys.stdin.buffer, limit)
    sender = envelope_sender(raw) if sender is None else sender
    # The listener refuses a mail over the limit as SMTP carries it before reading it: such a
    # mail is read here, where its sender is told that it was too big.
    if app is None and not here and everyone and size <= limit and smtp_size(raw) <= limit:
        done = hand_over(config["MAIL_LISTEN_HOST"], config["MAIL_LISTEN_PORT"], raw,
                         everyone, sender)
        if done is not None:
            if done[0] != EX_OK:
                log.error("ingest-mail: %s; the mail is left to the mail server to deliver "
                          "again", done[1])
            _finish(ctx, *done)
    if app is None:
        app = _pipe_app(ctx, config)
    from ..ground.config import check_settings

    # A mail server's pipe logs what we print: only the warning, not the settings line.
    check_settings(app, "ingest-mail", replies_arrive=True, quiet=True,
                   delivered_to=_delivered_to(everyone))
    _finish(ctx, *handle_here(app, raw, size, everyone, sender))


SYSLOG_IDENT = "pbem-ingest-mail"


def to_syslog(address: str) -> None:
    """Write this process's log lines to the syslog socket `address` too (the journal's
    /dev/log), masked like every line: a mail server keeps only the start of what the pipe
    says, in its own log. Nothing when `address` is blank or no socket is there."""
    import logging.handlers

    from ..ground.logs import HidingFormatter, guard

    if not address or not os.path.exists(address):
        return
    try:
        handler = logging.handlers.SysLogHandler(
            address, facility=logging.handlers.SysLogHandler.LOG_MAIL)
    except OSError as exc:
        log.warning("ingest-mail: cannot write to the syslog socket %s ([log] syslog): %s",
                    address, exc.strerror or exc)
        return
    handler.ident = f"{SYSLOG_IDENT}[{os.getpid()}]: "
    handler.setFormatter(HidingFormatter("%(levelname)s %(name)s: %(message)s"))
    guard(handler)
    logging.getLogger().addHandler(handler)


def _delivered_to(recipients: list[str]) -> str | None:
    """The domain of the first reply address among the envelope recipients (the one
    pbem.mailin.inbox takes the reply domain from when the setting is unset)."""
    from .inbox import DOMAIN, KEY_ADDRESS

    for address in recipients:
        if KEY_ADDRESS.search(address or ""):
            domain = address.rpartition("@")[2].strip().strip(">").lower()
            if DOMAIN.fullmatch(domain):
                return domain
    return None


def _pipe_app(ctx, config):
    """The app for handling a mail here. Without a secret key set it gets a passing one
    instead of writing its own `secret_key` file into whatever instance folder it finds:
    it signs nothing that outlives the process."""
    import secrets

    from flask.cli import ScriptInfo

    from ..ground.config import ROOT, ConfigError

    # The instance's own secret_key, where there is one, signs what this mail may be about
    # (a bounce's address: pbem.services.bounces).
    instance = Path(config["INSTANCE_PATH"] or ROOT / "instance")
    known = config["SECRET_KEY"] or (instance / "secret_key").is_file()
    if not known:
        log.warning("ingest-mail: no secret key is set (PBEM_SECRET_KEY, or --env-file) and the "
                    "instance folder %s has none: bounces of the server's mail cannot be "
                    "recognised by this process", instance)
    factory = ctx.find_object(AppFactory)
    try:
        if factory is None:  # a command group's command (`flask --app pbem ingest-mail`)
            return ctx.find_object(ScriptInfo).load_app()
        return factory.make(None if known else {"SECRET_KEY": secrets.token_hex(32)})
    except ConfigError as exc:
        _give_up(ctx, f"the settings cannot be read: {exc.message}")
    except OSError as exc:
        _give_up(ctx, f"{exc.strerror or exc}: {exc.filename or ''}")


def _give_up(ctx, reason: str):
    log.error("ingest-mail: %s; the mail is left to the mail server to deliver again", reason)
    _finish(ctx, EX_TEMPFAIL, f"try again later: {reason}")


def _finish(ctx, status: int, line: str):
    click.echo(line, err=status != EX_OK)
    ctx.exit(status)


@dataclass(frozen=True)
class AppFactory:
    """How `pbem ingest-mail` makes the app when it handles a mail here: `make(test_config)`,
    given by the program that runs it (pbem.entry), from the top of the house."""

    make: Callable


def main(argv: list[str] | None, make_app: Callable) -> None:
    """`pbem ingest-mail ...` without loading the rest of the command line (pbem.entry), the
    app made by `make_app` (pbem.create_app) when the mail is handled here."""
    # On standard error, which a mail server's pipe logs with a deferred mail: the server's
    # own lines from INFO on (one for each mail, with its outcome), the libraries' warnings.
    # (pbem.ground.logs: the format, level and masking of every pbem process; the level from the
    # environment here, before the settings are read.)
    from ..ground.logs import LEVELS, setup

    level = os.environ.get("PBEM_LOG_LEVEL", "INFO").upper()
    setup({"LOG_LEVEL": level if level in LEVELS else "INFO"}, "ingest-mail", service=False)
    ingest_mail_command.main(args=argv, prog_name="pbem ingest-mail",
                             obj=AppFactory(make_app))
