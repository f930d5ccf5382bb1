"""Sending one notice to a chat or push service given as an Apprise URL, safely.

Apprise (the maintained `apprise` library) knows how each service wants its message (Discord's
webhook JSON, Slack's, Matrix's, ntfy's, a plain JSON or form webhook); this module decides
which URLs are accepted and where a request may go. Every request Apprise makes here goes
through urllib3, whose connections are made by `_guarded_connection` while `send` runs: the
host name is resolved there, at connect time, and each address it resolves to is checked
before the socket connects to that very address (no second lookup a name could answer
differently). A private, loopback, link-local, multicast or otherwise non-public address is
refused unless the host name is on the operator's allow-list (`[notify] allow_hosts`). Each
connect and each read waits at most the timeout, and an answer is read up to MAX_ANSWER bytes
(`_guarded_stream`). Both hooks act only in the thread of a running `send`: the rest of the
process (the mail, an IMAP poll) connects as before.

Owns no database and no game: pbem.services.notices queues notices, pbem.scheduler.notices
delivers them. The URL is a secret (it is the key to the channel): `shown` is what may be
shown or logged of it, never the URL itself.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

import apprise
import urllib3.exceptions
import urllib3.response
import urllib3.util.connection

logger = logging.getLogger(__name__)

# Apprise's mail plugin loads pgpy, which imports imghdr (deprecated since Python 3.11, and
# unused here): imported once without its warning, so that loading a plugin says nothing.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        import imghdr  # noqa: F401
    except ImportError:  # Python 3.13: Apprise puts its own stand-in in its place
        pass

MAX_URL = 2000  # characters of a target's URL
MAX_TITLE = 200  # characters of a notice's title and body as sent: far below every service's
MAX_BODY = 1500  # limit (Discord's 2,000, ntfy's 4,096 bytes), so none cuts it itself
MAX_ANSWER = 64 * 1024  # bytes of a service's answer read at most (they answer a few hundred)
# Schemes whose host part is the service's own host (not a topic or a key): shown as typed.
_HOSTED = ("ntfy", "ntfys", "json", "jsons", "form", "forms", "matrix", "matrixs", "gotify",
           "gotifys", "mmost", "mmosts", "rocket", "rockets", "http", "https")


class Refused(OSError):
    """A connection the policy does not allow (a non-public address)."""


@dataclass(frozen=True)
class Policy:
    allow_hosts: frozenset[str]
    timeout: float


_local = threading.local()
_original = urllib3.util.connection.create_connection


def is_public(address: str) -> bool:
    """Whether `address` (an IP address) is on the public internet: not private, loopback,
    link-local, multicast, reserved or unspecified (an IPv4 address inside IPv6 as itself)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def _guarded_connection(address, timeout=socket._GLOBAL_DEFAULT_TIMEOUT,
                        source_address=None, socket_options=None):
    """urllib3's create_connection, checking each resolved address against the policy of the
    `send` running in this thread (none: urllib3's own, unchanged)."""
    policy: Policy | None = getattr(_local, "policy", None)
    if policy is None:
        return _original(address, timeout, source_address, socket_options)
    host, port = address
    host = host.strip("[]")
    trusted = host.lower() in policy.allow_hosts
    error: OSError | None = None
    for family, kind, proto, _, sockaddr in socket.getaddrinfo(host, port, 0,
                                                               socket.SOCK_STREAM):
        if not trusted and not is_public(sockaddr[0]):
            error = Refused(f"{host} is at {sockaddr[0]}, an address inside a private network "
                            "or this machine: refused")
            _local.refused = str(error)
            continue
        sock = socket.socket(family, kind, proto)
        try:
            for option in socket_options or ():
                sock.setsockopt(*option)
            sock.settimeout(policy.timeout if timeout is socket._GLOBAL_DEFAULT_TIMEOUT
                            or timeout is None else min(timeout, policy.timeout))
            if source_address:
                sock.bind(source_address)
            sock.connect(sockaddr)
            return sock
        except OSError as exc:
            error = exc
            sock.close()
    raise error or OSError(f"{host} has no address")


urllib3.util.connection.create_connection = _guarded_connection
_original_stream = urllib3.response.HTTPResponse.stream


def _guarded_stream(self, amt=2**16, decode_content=None):
    """urllib3's reading of an answer, stopped past MAX_ANSWER bytes while `send` runs in
    this thread (requests reads the whole answer into memory otherwise)."""
    policy = getattr(_local, "policy", None)
    read = 0
    for chunk in _original_stream(self, amt, decode_content):
        read += len(chunk)
        if policy is not None and read > MAX_ANSWER:
            _local.refused = f"the service's answer was larger than {MAX_ANSWER} bytes"
            raise urllib3.exceptions.ProtocolError(_local.refused)
        yield chunk


# (setattr: mypy forbids assigning to a method)
setattr(urllib3.response.HTTPResponse, "stream", _guarded_stream)  # noqa: B010


def _asset() -> apprise.AppriseAsset:
    # Nothing written to disk (Apprise's persistent store is off), no images fetched.
    return apprise.AppriseAsset(storage_mode="memory", image_url_mask=None, image_url_logo=None,
                                app_id="Board games by post", app_desc="Board games by post")


def parse_target(url: str, schemes: Iterable[str]):
    """The Apprise plugin for `url` if it is one a player may give, else ValueError with a
    message that says what to do. Nothing is sent."""
    url = (url or "").strip()
    if not url:
        raise ValueError("empty")
    if len(url) > MAX_URL or any(c.isspace() or ord(c) < 32 for c in url):
        raise ValueError("shape")
    plugin = apprise.Apprise.instantiate(url, asset=_asset(), suppress_exceptions=True)
    if plugin is None:
        raise ValueError("unknown")
    if scheme_of(plugin) not in set(schemes):
        raise ValueError("scheme")
    return plugin


def scheme_of(plugin) -> str:
    """The plugin's own scheme (a Discord webhook's https address is `discord`)."""
    return plugin.url(privacy=True).split("://", 1)[0].lower()


def shown(url: str, plugin) -> str:
    """What may be shown of target `url`: its scheme and host, never a topic, key or path."""
    scheme = scheme_of(plugin)
    typed = urlsplit(url.strip())
    host = typed.hostname or ""
    if typed.scheme.lower() in ("http", "https") or scheme in _HOSTED and (
            "." in host or host == "localhost" or ":" in host):
        return f"{scheme}://{host}"[:200]
    return f"{scheme}://"


def send(url: str, title: str, body: str, *, allow_hosts: Iterable[str], timeout: float,
         schemes: Iterable[str]) -> str | None:
    """Send one notice to `url`; None when the service took it, else why not (a sentence for
    the target's owner, without the URL). Every connection is checked (`_guarded_connection`)
    and each connect and each read waits at most `timeout` seconds."""
    try:
        plugin = parse_target(url, schemes)
    except ValueError as exc:
        return f"the address is not accepted ({exc})"
    plugin.socket_connect_timeout = plugin.socket_read_timeout = float(timeout)
    _local.policy = Policy(frozenset(h.strip().lower() for h in allow_hosts if h.strip()),
                           float(timeout))
    _local.refused = None
    try:
        with apprise.LogCapture(level=logging.WARNING, fmt="%(message)s") as captured:
            ok = plugin.notify(body=body[:MAX_BODY], title=title[:MAX_TITLE])
        if ok:
            return None
        if _local.refused:
            return _local.refused
        said = [line.strip() for line in captured.getvalue().splitlines() if line.strip()]
        reason = said[-1] if said else "the service did not take it"
        return reason.replace(url, "[the address]")[:500]
    except Exception as exc:  # a plugin's bug must not stop the delivery of the others
        logger.exception("notice to %s failed in Apprise", shown(url, plugin))
        return f"{type(exc).__name__}"
    finally:
        _local.policy = None
