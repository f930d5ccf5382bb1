"""Settings: defaults, then a TOML file (path in PBEM_CONFIG), then PBEM_* environment variables.

Every setting has one flat name. In the TOML file `[mail] backend = "smtp"` sets MAIL_BACKEND,
and so does the environment variable PBEM_MAIL_BACKEND. Unknown names and values of the wrong
kind are refused with a message naming the setting; nothing here touches the disk beyond reading.
`check_settings` says which settings a process reads.
"""

from __future__ import annotations

import logging
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

# The project's folder: templates/ and docs/ beside the package.
ROOT = Path(__file__).resolve().parents[2]


class ConfigError(ValueError, click.ClickException):
    """A setting is unknown, missing or has a value that cannot work.

    Also a ClickException, so that any command line that makes the app (`pbem ...`, and
    `flask --app pbem ...` too) reports it as one line "Error: ..." with exit status 2.
    """

    exit_code = 2

    def __init__(self, message: str):
        click.ClickException.__init__(self, message)


@dataclass(frozen=True)
class Setting:
    default: Any
    kind: type
    check: Callable[[Any], str | None] | None = None  # returns a complaint, or None when fine


def _one_of(*choices: str) -> Callable[[Any], str | None]:
    return lambda v: None if v in choices else f"must be one of {', '.join(choices)}"


def _at_least(low: int) -> Callable[[Any], str | None]:
    return lambda v: None if v >= low else f"must be at least {low}"


def _port(v: int) -> str | None:
    return None if 1 <= v <= 65535 else "must be a port number from 1 to 65535"


def _between(low: int, high: int) -> Callable[[Any], str | None]:
    return lambda v: None if low <= v <= high else f"must be from {low} to {high}"


def _database_url(v: str) -> str | None:
    if not v or v.startswith(("sqlite:///", "postgresql+psycopg://", "postgresql://",
                              "postgres://")):
        return None
    return ('must be an SQLite URL ("sqlite:////var/lib/pbem/pbem.sqlite3") or a PostgreSQL '
            'one ("postgresql+psycopg://user@host/dbname"), or blank for the SQLite file in the '
            'instance folder')


def _hours_list(v: str) -> str | None:
    parts = [p.strip() for p in v.split(",") if p.strip()]
    if all(p.isascii() and p.isdigit() and 0 < int(p) <= 336 for p in parts):
        return None
    return "must be whole numbers of hours from 1 to 336, separated by commas, like \"24,2\""


def _schemes(v: str) -> str | None:
    parts = [p.strip() for p in v.split(",") if p.strip()]
    if all(p.isascii() and p.isalnum() and p.islower() for p in parts):
        return None
    return ("must be Apprise URL schemes in lower case, separated by commas, like "
            "\"ntfys,discord\"")


def _zone(v: str) -> str | None:
    from .clock import zone

    try:
        zone(v)
    except ValueError as exc:
        return str(exc)
    return None


def _addresses(v: str) -> str | None:
    from email.utils import getaddresses

    if not v.strip():
        return None
    found = getaddresses([v])
    if all("@" in address and "\n" not in address for _, address in found):
        return None
    return "must be mail addresses separated by commas"


def _rate(v: str) -> str | None:
    from limits import parse_many

    try:
        parse_many(v)
    except ValueError:
        return 'must be a rate like "10 per minute" or "5/minute;50/hour"'
    return None


def _domain(v: str) -> str | None:
    import re

    if not v or re.fullmatch(r"[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+", v):
        return None
    return "must be a mail domain like games.example.org, or blank"


def _log_level(v: str) -> str | None:
    if v.upper() in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        return None
    return "must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL"


def _socket_path(v: str) -> str | None:
    return None if not v or v.startswith("/") else "must be an absolute path, or blank"


def _url(v: str) -> str | None:
    return None if v.startswith(("http://", "https://")) else "must start with http:// or https://"


# Paths left empty are placed in the instance folder when the app is made.
SETTINGS: dict[str, Setting] = {
    "SECRET_KEY": Setting("", str),
    "BASE_URL": Setting("http://127.0.0.1:5000", str, _url),
    "DATABASE_URL": Setting("", str, _database_url),
    "SQLITE_SYNCHRONOUS": Setting("normal", str, _one_of("normal", "full")),
    "INSTANCE_PATH": Setting("", str),
    "MAX_CONTENT_LENGTH": Setting(64 * 1024, int, _at_least(1024)),
    "SERVE_HOST": Setting("127.0.0.1", str),
    "SERVE_PORT": Setting(5000, int, _port),
    "SERVE_TRUSTED_PROXIES": Setting(0, int, _between(0, 5)),
    "LOG_LEVEL": Setting("INFO", str, _log_level),
    "LOG_SYSLOG": Setting("/dev/log", str, _socket_path),
    "GAMES_MOVE_DEADLINE_HOURS": Setting(72, int, _between(12, 336)),
    "GAMES_REMINDER_HOURS": Setting("24,2", str, _hours_list),
    "GAMES_WEEKEND_PAUSE": Setting(False, bool),
    "GAMES_TIMEZONE": Setting("UTC", str, _zone),
    "GAMES_LANGUAGE": Setting("en", str, _one_of("en", "de", "es")),
    "GAMES_ABSENT_AFTER_TIMEOUTS": Setting(3, int, _at_least(1)),
    "GAMES_VACATION_DAYS": Setting(7, int, _between(0, 365)),
    "GAMES_UNDO": Setting(True, bool),
    "GAMES_UNDO_HOURS": Setting(24, int, _between(1, 336)),
    "GAMES_SECRET_SEEDS": Setting(True, bool),
    "GAMES_OLD_LINK_DAYS": Setting(7, int, _between(1, 365)),
    "GAMES_MY_GAMES_LINK_DAYS": Setting(14, int, _between(1, 365)),
    "GAMES_OPEN_CREATION": Setting(False, bool),
    "GAMES_INVITATION_HOURS": Setting(72, int, _between(1, 720)),
    "GAMES_INVITATIONS_PER_ADDRESS": Setting(5, int, _between(1, 1000)),
    "GAMES_INVITATIONS_PER_IP": Setting(30, int, _between(1, 10000)),
    "GAMES_LINK_REQUESTS_PER_ADDRESS": Setting(3, int, _between(1, 100)),
    "GAMES_LINK_REQUESTS_PER_IP": Setting(20, int, _between(1, 10000)),
    "GAMES_LOBBY": Setting(False, bool),
    "GAMES_LOBBY_HOURS": Setting(168, int, _between(1, 2160)),
    "GAMES_LOBBY_POSTS_PER_ADDRESS": Setting(3, int, _between(1, 100)),
    "GAMES_LOBBY_POSTS_PER_IP": Setting(10, int, _between(1, 10000)),
    "GAMES_LOBBY_JOINS_PER_ADDRESS": Setting(10, int, _between(1, 1000)),
    "GAMES_RATING_OPPONENTS": Setting(3, int, _between(1, 50)),
    "GAMES_RATING_NEW_HOURS": Setting(24, int, _between(0, 8760)),
    "GAMES_RATING_FAST_MINUTES": Setting(10, int, _between(0, 10080)),
    "TALK_MAX_LENGTH": Setting(2000, int, _between(100, 20000)),
    "TALK_RATE": Setting("10 per minute;100 per day", str, _rate),
    "SCHEDULER_TICK_SECONDS": Setting(30, int, _between(1, 3600)),
    "SCHEDULER_OUTAGE_MINUTES": Setting(60, int, _at_least(1)),
    "SCHEDULER_CLAIM_SECONDS": Setting(600, int, _between(5, 86400)),
    "SCHEDULER_TIMERS_PER_TRANSACTION": Setting(50, int, _between(1, 1000)),
    "SCHEDULER_REVIEW_TURNS": Setting(4, int, _between(0, 1000)),
    "SCHEDULER_REVIEW_PLAYOUTS": Setting(48, int, _between(1, 1000)),
    "SCHEDULER_REVIEW_CPU_SECONDS": Setting(600, int, _between(1, 86400)),
    "GAMES_DIGEST_HOURS": Setting(24, int, _at_least(1)),
    "MAIL_BACKEND": Setting("local", str, _one_of("local", "smtp")),
    "MAIL_FROM": Setting("Board games by post <judge@pbem.localhost>", str),
    "MAIL_FOLDER": Setting("", str),
    "MAIL_MAILBOX_PAGE": Setting(True, bool),
    "MAIL_MAILBOX_REMOTE": Setting(False, bool),
    "MAIL_BOARD_PICTURE": Setting(True, bool),
    "MAIL_GAME_PICTURE": Setting(True, bool),
    "MAIL_ADMINS": Setting("", str, _addresses),
    "MAIL_REPLY_DOMAIN": Setting("", str, _domain),
    "MAIL_VERP": Setting(True, bool),
    "MAIL_MAX_INCOMING_BYTES": Setting(256 * 1024, int, _between(4096, 25 * 1024 * 1024)),
    "MAIL_ANSWERS_PER_DAY": Setting(20, int, _between(1, 1000)),
    "MAIL_LISTEN_HOST": Setting("127.0.0.1", str),
    "MAIL_LISTEN_PORT": Setting(2525, int, _port),
    "MAIL_IMAP_HOST": Setting("", str),
    "MAIL_IMAP_PORT": Setting(993, int, _port),
    "MAIL_IMAP_SECURITY": Setting("tls", str, _one_of("tls", "starttls", "none")),
    "MAIL_IMAP_USERNAME": Setting("", str),
    "MAIL_IMAP_PASSWORD": Setting("", str),
    "MAIL_IMAP_FOLDER": Setting("INBOX", str),
    "ADMIN_LOGIN_LIMIT": Setting("10 per minute", str, _rate),
    "ADMIN_LOGIN_LIMIT_ALL": Setting("30 per minute", str, _rate),
    "ADMIN_SESSION_HOURS": Setting(12, int, _between(1, 24 * 30)),
    # argon2id's cost for admin passwords: argon2-cffi's defaults (RFC 9106, low memory);
    # the tests lower them (tests/server.py), tests/server/test_password_cost.py checks these.
    "ADMIN_PASSWORD_TIME_COST": Setting(3, int, _between(1, 20)),
    "ADMIN_PASSWORD_MEMORY_KIB": Setting(65536, int, _between(1024, 4 * 1024 * 1024)),
    "MAIL_MAX_ATTEMPTS": Setting(8, int, _at_least(1)),
    "MAIL_RETRY_SECONDS": Setting(60, int, _at_least(1)),
    "MAIL_SEND_INTERVAL_SECONDS": Setting(5, int, _at_least(1)),
    "MAIL_SENDERS": Setting(1, int, _between(1, 16)),
    "NOTIFY_ENABLED": Setting(True, bool),
    "NOTIFY_ALLOW_SCHEMES": Setting(
        "discord,slack,matrix,matrixs,ntfy,ntfys,gotify,gotifys,mmost,mmosts,rocket,rockets,"
        "msteams,tgram,pover,json,jsons,form,forms", str, _schemes),
    "NOTIFY_ALLOW_HOSTS": Setting("", str),
    "NOTIFY_TIMEOUT_SECONDS": Setting(10, int, _between(1, 120)),
    "NOTIFY_MAX_ATTEMPTS": Setting(6, int, _between(1, 50)),
    "NOTIFY_RETRY_SECONDS": Setting(60, int, _at_least(1)),
    "NOTIFY_PER_HOUR": Setting(30, int, _between(1, 3600)),
    "NOTIFY_TARGETS_PER_OWNER": Setting(5, int, _between(1, 50)),
    "SMTP_HOST": Setting("localhost", str),
    "SMTP_PORT": Setting(587, int, _port),
    "SMTP_SECURITY": Setting("starttls", str, _one_of("starttls", "tls", "none")),
    "SMTP_USERNAME": Setting("", str),
    "SMTP_PASSWORD": Setting("", str),
    "SMTP_TIMEOUT_SECONDS": Setting(30, int, _at_least(1)),
}

ENV_PREFIX = "PBEM_"
SECRETS = {"SECRET_KEY", "SMTP_PASSWORD", "MAIL_IMAP_PASSWORD"}  # never repeated in an error message


def _shown(name: str, value: Any) -> str:
    if name in SECRETS:
        return "(the value given)"
    if name == "DATABASE_URL" and isinstance(value, str):
        from .db import shown_url  # its password is left out

        return repr(shown_url(value))
    return repr(value)
KIND_WORDS = {str: "text (a quoted string in TOML)", int: "a whole number",
              bool: "true or false"}


def _coerce(name: str, value: Any, source: str, parse_text: bool = True) -> Any:
    """The value checked; `parse_text`: it may be a string to parse (the environment has no types,
    a TOML file does, so a quoted "80" there is refused like any other wrong kind)."""
    setting = SETTINGS[name]
    kind = setting.kind
    shown = _shown(name, value)
    if parse_text and isinstance(value, str) and kind is not str:
        text = value.strip().lower()
        if kind is bool:
            if text not in ("true", "false", "1", "0", "yes", "no", "on", "off"):
                raise ConfigError(f"{name} (from {source}) must be true or false, not {shown}")
            value = text in ("true", "1", "yes", "on")
        else:
            try:
                value = int(text)
            except ValueError:
                raise ConfigError(f"{name} (from {source}) must be a whole number, "
                                  f"not {shown}") from None
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise ConfigError(f"{name} (from {source}) must be {KIND_WORDS[kind]}, not {shown}")
    complaint = setting.check(value) if setting.check else None
    if complaint:
        shown = _shown(name, value)
        raise ConfigError(f"{name} (from {source}) {complaint}; it is {shown}")
    return value


def _flatten(data: Mapping[str, Any], source: str) -> dict[str, Any]:
    flat = {}
    for key, value in data.items():
        if isinstance(value, Mapping):
            for inner, item in value.items():
                flat[f"{key}_{inner}".upper()] = (item, f"[{key}] {inner} in {source}")
        else:
            flat[key.upper()] = (value, f"{key} in {source}")
    return flat


def _known(name: str, where: str) -> None:
    if name not in SETTINGS:
        raise ConfigError(f"unknown setting {where}; see config.example.toml for the known ones")


def load_settings(environ: Mapping[str, str] | None = None,
                  overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """All settings, each checked: defaults < TOML file < environment < `overrides` (tests)."""
    environ = os.environ if environ is None else environ
    values = {name: s.default for name, s in SETTINGS.items()}
    path = environ.get(ENV_PREFIX + "CONFIG")
    if path:
        try:
            with open(path, "rb") as f:
                data = tomllib.load(f)
        except OSError as e:
            raise ConfigError(f"cannot read the config file {path} (PBEM_CONFIG): "
                              f"{e.strerror}") from None
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"the config file {path} is not valid TOML: {e}") from None
        except UnicodeDecodeError as e:  # TOML is UTF-8; a file saved as Latin-1 is not
            raise ConfigError(f"the config file {path} is not valid TOML: it must be UTF-8 "
                              f"text, and byte {e.start + 1} is not (save it as UTF-8)"
                              ) from None
        for name, (value, where) in _flatten(data, path).items():
            _known(name, where)
            values[name] = _coerce(name, value, where, parse_text=False)
    for key, value in environ.items():
        if not key.startswith(ENV_PREFIX) or key == ENV_PREFIX + "CONFIG":
            continue
        name = key[len(ENV_PREFIX):]
        _known(name, f"{key} in the environment")
        values[name] = _coerce(name, value, key)
    for name, value in (overrides or {}).items():
        if name in SETTINGS:
            values[name] = _coerce(name, value, "the test configuration")
        else:
            values[name] = value  # Flask's own keys (TESTING, WTF_CSRF_ENABLED, ...)
    given = path is not None and "BASE_URL" in _flatten(data, path) \
        or ENV_PREFIX + "BASE_URL" in environ or "BASE_URL" in (overrides or {})
    # Without a base URL of its own, the links in mail lead to the server as it listens.
    if not given:
        values["BASE_URL"] = served_url(values["SERVE_HOST"], values["SERVE_PORT"])
    return values


def links_here(config) -> bool:
    """Whether the base URL is the server's own address as configured (so a server started
    on another address or port leads its links there)."""
    return config["BASE_URL"].rstrip("/") == served_url(config["SERVE_HOST"],
                                                        config["SERVE_PORT"])


def served_url(host: str, port: int) -> str:
    """The address a browser on this machine opens for a server listening on host:port (one
    listening on every address is reached at 127.0.0.1)."""
    if host in ("", "0.0.0.0", "::", "[::]"):
        host = "127.0.0.1"
    elif ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def resolve_paths(values: dict[str, Any], default_instance: Path) -> dict[str, Any]:
    """Fill the path settings left empty with places in the instance folder."""
    instance = Path(values["INSTANCE_PATH"] or default_instance)
    values["INSTANCE_PATH"] = str(instance)
    if not values["DATABASE_URL"]:
        values["DATABASE_URL"] = f"sqlite:///{instance / 'pbem.sqlite3'}"
    if not values["MAIL_FOLDER"]:
        values["MAIL_FOLDER"] = str(instance / "mail")
    return values


def check_settings(app, command: str, replies_arrive: bool = False, quiet: bool = False,
                   delivered_to: str | None = None) -> bool:
    """Say on standard error which settings this process reads, and warn loudly when players'
    replies are expected (they arrive here, an IMAP mailbox is read, or mail really goes out)
    but `[mail] reply_domain` is unset. Returns whether it warned. `delivered_to`: the
    domain a reply was delivered to (ingest-mail's envelope recipient), which then stands in
    for the unset setting in the mails this process writes.

    Every process writes mail (the web server after a move, the scheduler after a timeout,
    ingest-mail after a reply), so all of them must read the same settings file."""
    path = os.environ.get("PBEM_CONFIG")
    # A service's log already said it at start (pbem.ground.logs.setup), when its level shows it.
    if not quiet and not logging.getLogger("pbem.ground.logs").isEnabledFor(logging.INFO):
        click.echo(f"{command}: " + (f"settings from {path} (PBEM_CONFIG) and PBEM_* variables"
                                     if path else "no settings file (PBEM_CONFIG is not set): "
                                     "built-in defaults and PBEM_* variables"), err=True)
    expected = replies_arrive or bool(app.config["MAIL_IMAP_HOST"]) \
        or app.config["MAIL_BACKEND"] == "smtp"
    if expected and not app.config["MAIL_REPLY_DOMAIN"]:
        if delivered_to:
            what = ("this process takes the reply domain from the address the mail was "
                    f"delivered to ({delivered_to}) for the mails it writes; the other processes "
                    "need the setting.")
        else:
            what = ("so the mails this process writes have no Reply-To and players cannot play "
                    "by replying to them" + (" (give the address the mail was delivered to, "
                                             "--recipient ${recipient}, and it takes the domain "
                                             "from there)." if replies_arrive else "."))
        click.echo(f"WARNING ({command}): [mail] reply_domain is not set, {what} Every pbem "
                   "process (serve, scheduler, ingest-mail, mail-listener) must "
                   "read the same settings: give them all the same PBEM_CONFIG, or set "
                   "PBEM_MAIL_REPLY_DOMAIN for each.", err=True)
        return True
    return False
