"""Two more ways for players' replies to arrive, both ending in `inbox.handle_incoming`.

`start_listener` runs a small SMTP server (aiosmtpd) that a mail server can hand the reply
domain's mail to (`pbem mail-listener`), and that `pbem ingest-mail` hands its mail to when it
runs (pbem.mailin.pipe: a mail read by a running process costs a hundredth of what a new process
costs). Its greeting names it (`LISTENER_IDENT`). Mail larger than MAIL_MAX_INCOMING_BYTES is
refused while it is being sent (552). Every other mail is answered `250 2.0.0 pbem decided:
accepted`, whatever came of it (applied, answered, dropped: `handle_incoming` logs which): a 550
for an unknown key would tell a stranger which keys exist, and a refusal makes the sending
server bounce the mail to its sender, who may be forged. Those words (`pipe.decision`) are how
the pipe knows that the mail was decided on, not refused by the SMTP layer. A failure of the
server itself (the database) gets 451, so the sending server tries again; nothing is logged
with a live key. Lines of any length are read (up to the size limit): real mail programs
write longer ones than SMTP's 1,000 bytes, and Postfix passes them on.

`poll_imap` reads the unread mail of one IMAP folder (MAIL_IMAP_*), called by the scheduler's
job. Each mail is fetched with BODY.PEEK (which leaves it unread), handed over, and only then
flagged \\Seen; it is never deleted, so the mailbox stays a record of what arrived and a failure
between handling and flagging costs nothing: a second reading of the same Message-ID changes
nothing. A mail whose handling failed (the database) stays unread and is read at the next run.
"""

from __future__ import annotations

import asyncio
import imaplib
import logging
import re
import ssl

from flask import Flask

from .inbox import Handled, handle_incoming, masked
from .pipe import LISTENER_IDENT, decision

IMAP_TIMEOUT_SECONDS = 60
ACCEPTED = decision(250, "2.0.0", "accepted")
REFUSED = {"oversized": decision(552, "5.3.4", "message too big")}

log = logging.getLogger(__name__)


class IncomingHandler:
    """The aiosmtpd handler: each message's DATA goes to `handle_incoming` in a worker thread."""

    def __init__(self, app: Flask):
        self.app = app

    def _handle(self, raw: bytes, recipients: list[str], sender: str) -> Handled:
        with self.app.app_context():
            return handle_incoming(raw, recipients, sender=sender)

    async def handle_DATA(self, server, session, envelope):
        raw = envelope.original_content or envelope.content
        if isinstance(raw, str):
            raw = raw.encode("utf-8", "surrogateescape")
        recipients = list(envelope.rcpt_tos)
        sender = envelope.mail_from or ""
        try:
            handled = await asyncio.get_running_loop().run_in_executor(
                None, self._handle, raw, recipients, sender)
        except Exception:  # the database, most likely: let the sender retry
            log.exception("incoming mail for %s could not be handled: answered 451, to be "
                          "sent again", ", ".join(map(masked, recipients))[:300])
            return "451 4.3.0 Temporary failure, please try again later"
        return REFUSED.get(handled.outcome, ACCEPTED)


def start_listener(app: Flask, host: str | None = None, port: int | None = None):
    """Start the SMTP listener in a thread of its own; returns the Controller (`.stop()`)."""
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import SMTP

    limit = app.config["MAIL_MAX_INCOMING_BYTES"]

    class LongLines(SMTP):
        """aiosmtpd's server, reading DATA lines up to the size limit instead of RFC 5321's
        1,000 bytes (its "500 Line too long" would refuse a real reply). Its reader's buffer
        is bounded by this limit, as the whole mail is."""

        line_length_limit = limit + 2

    class Listening(Controller):
        def factory(self):
            return LongLines(self.handler, **self.SMTP_kwargs)

    # aiosmtpd says at INFO what every connection does ("Peer:", "connection lost", "Available
    # AUTH mechanisms"): its warnings are kept, the one line per mail is handle_incoming's.
    logging.getLogger("mail.log").setLevel(max(logging.WARNING, logging.getLogger().level))
    controller = Listening(
        IncomingHandler(app), hostname=host or app.config["MAIL_LISTEN_HOST"],
        port=port or app.config["MAIL_LISTEN_PORT"], ready_timeout=30,
        data_size_limit=limit, ident=LISTENER_IDENT, enable_SMTPUTF8=True)
    controller.start()
    return controller


# --- IMAP ---------------------------------------------------------------------------------------

def _connect(config) -> imaplib.IMAP4:
    host, port, security = (config["MAIL_IMAP_HOST"], config["MAIL_IMAP_PORT"],
                            config["MAIL_IMAP_SECURITY"])
    if security == "tls":
        return imaplib.IMAP4_SSL(host, port, ssl_context=ssl.create_default_context(),
                                 timeout=IMAP_TIMEOUT_SECONDS)
    client = imaplib.IMAP4(host, port, timeout=IMAP_TIMEOUT_SECONDS)
    if security == "starttls":
        client.starttls(ssl.create_default_context())
    return client


def _quoted(folder: str) -> str:
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _body(data) -> tuple[bytes | None, int | None]:
    """The message bytes in a FETCH answer ([(b'1 (UID 5 RFC822.SIZE 9 BODY[]<0> {123}',
    b'...'), b')']) and the mail's whole size."""
    for item in data or []:
        if isinstance(item, tuple) and len(item) == 2 and re.search(rb"BODY\[\]", item[0]):
            size = re.search(rb"RFC822\.SIZE (\d{1,12})", item[0])
            return item[1], int(size.group(1)) if size else None
    return None, None


def poll_imap(app: Flask) -> int:
    """Read every unread mail in the IMAP folder; returns how many were handed over.

    Errors (the server unreachable, a refused login, a broken answer) are logged, never raised:
    the scheduler's other work goes on, and what was not read is read at the next run."""
    config = app.config
    if not config["MAIL_IMAP_HOST"]:
        return 0
    limit = config["MAIL_MAX_INCOMING_BYTES"]
    where = f"{config['MAIL_IMAP_HOST']}:{config['MAIL_IMAP_PORT']}"
    handled = 0
    client = None
    try:
        client = _connect(config)
        if config["MAIL_IMAP_USERNAME"]:
            client.login(config["MAIL_IMAP_USERNAME"], config["MAIL_IMAP_PASSWORD"])
        status, _ = client.select(_quoted(config["MAIL_IMAP_FOLDER"]))
        if status != "OK":
            raise imaplib.IMAP4.error(f"cannot select the folder {config['MAIL_IMAP_FOLDER']}")
        # (no charset: None, which imaplib takes and typeshed does not)
        status, found = client.uid("SEARCH", None, "UNSEEN")  # type: ignore[arg-type]
        if status != "OK":
            raise imaplib.IMAP4.error("SEARCH UNSEEN failed")
        for uid in (found[0] or b"").split():
            # PEEK: still unread if anything below fails; at most limit + 1 bytes, so a huge
            # mail is not fetched whole (handle_incoming refuses anything over the limit,
            # telling its true size).
            status, data = client.uid("FETCH", uid.decode(),
                                      f"(RFC822.SIZE BODY.PEEK[]<0.{limit + 1}>)")
            raw, size = _body(data) if status == "OK" else (None, None)
            if raw is None:
                log.warning("IMAP %s: no body for mail UID %s", where, uid.decode())
                continue
            try:
                with app.app_context():
                    handle_incoming(raw, [], size=max(size or 0, len(raw)))
            except Exception:  # left unread, read again at the next run
                log.exception("IMAP %s: mail UID %s could not be handled; left unread, read "
                              "again at the next run", where, uid.decode())
                continue
            client.uid("STORE", uid.decode(), "+FLAGS", "(\\Seen)")
            handled += 1
    except (imaplib.IMAP4.error, OSError) as exc:
        log.error("IMAP %s: %s: %s", where, type(exc).__name__, exc)
    finally:
        if client is not None:
            try:
                client.logout()
            except (imaplib.IMAP4.error, OSError):
                pass
    return handled
