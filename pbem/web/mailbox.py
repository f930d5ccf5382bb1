"""The mailbox page: every message the local mail backend wrote, for playing all seats from one
browser in the demo. It exists only while MAIL_BACKEND is "local" and MAIL_MAILBOX_PAGE is on,
and answers only requests from this machine unless MAIL_MAILBOX_REMOTE is on, because it shows
every seat's links.

The list is read a page at a time from the outbox table (each sent row is one .eml file, named
by its id), so it costs the same at eight mails or eight thousand; only an opened mail's file
is parsed. No query of the page reads every row: the mail's bodies make each row span several
of SQLite's pages (bench/mailbox_bench.py).
"""

from __future__ import annotations

import ipaddress
import re
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import formatdate, getaddresses, make_msgid, parsedate_to_datetime
from pathlib import Path

from flask import (
    Blueprint,
    Flask,
    Response,
    abort,
    current_app,
    flash,
    redirect,
    render_template,
    request,
    url_for,
)
from markupsafe import Markup, escape

from ..ground.i18n import gettext
from ..services.mailbox import mailbox_page
from .site import form_number, wake_sender

bp = Blueprint("mailbox", __name__, url_prefix="/mailbox")

NAME = re.compile(r"\d{8}")
CID = re.compile(r"""(src=["'])cid:([^"'<>\s]{1,200})(["'])""")
LINK = re.compile(r"https?://[^\s<>\"']+")
TRAILING = ".,;:!?)]}'\""  # punctuation after a link in a sentence, not part of it
PAGE = 50
MAX_ID = 2**31 - 1  # the outbox's ids on PostgreSQL (32 bits); SQLite's never reach it here
SHOWN_IMAGES = ("image/png", "image/jpeg", "image/gif")  # never SVG: it may hold scripts
PROXY_HEADERS = ("X-Forwarded-For", "Forwarded", "X-Real-IP")
REPLY_KEY = re.compile(r"play\+[A-Za-z0-9_-]{32}@[A-Za-z0-9.-]+", re.IGNORECASE)
MAX_REPLY = 20_000  # characters of a reply written on the page


def is_enabled(app: Flask | None = None) -> bool:
    config = (app or current_app).config
    return config["MAIL_BACKEND"] == "local" and config["MAIL_MAILBOX_PAGE"]


def describe_access(app: Flask) -> str:
    """Who may open the mailbox page, in words for `pbem serve`'s start-up lines."""
    if app.config["MAIL_MAILBOX_REMOTE"]:
        return "open to every address: it shows every seat's link"
    return "only from this machine; [mail] mailbox_remote opens it to others"


def _from_this_machine() -> bool:
    """A request from the loopback address that no proxy passed on (a proxy on this machine
    would make every visitor look local, unless [serve] trusted_proxies unwraps it)."""
    try:
        local = ipaddress.ip_address(request.remote_addr or "").is_loopback
    except ValueError:
        return False
    proxied = not current_app.config["SERVE_TRUSTED_PROXIES"] and any(
        header in request.headers for header in PROXY_HEADERS)
    return local and not proxied


@bp.before_request
def _only_when_local():
    if not is_enabled():
        abort(404)
    if not current_app.config["MAIL_MAILBOX_REMOTE"] and not _from_this_machine():
        return render_template("error.html", status=403, message=gettext(
            "The mailbox page shows every seat's secret link, so it answers only on the "
            "machine the server runs on (open it there, at 127.0.0.1). To show it to other "
            "machines, set [mail] mailbox_remote = true; never on a public server.")), 403
    return None


def _folder() -> Path:
    return Path(current_app.config["MAIL_FOLDER"])


def _read(name: str):
    if not NAME.fullmatch(name):
        abort(404)
    path = _folder() / f"{name}.eml"
    if not path.is_file():
        abort(404)
    with path.open("rb") as f:
        return BytesParser(policy=policy.default).parse(f)


def _summary(name: str, message) -> dict:
    return {"name": name, "to": str(message["To"]), "subject": str(message["Subject"]),
            "date": parsedate_to_datetime(message["Date"]) if message["Date"] else None,
            "addresses": [a.lower() for _, a in getaddresses([str(message["To"])])]}


def linkify(text: str) -> Markup:
    """Plain text as HTML with its web links made clickable."""
    out, last = [], 0
    for match in LINK.finditer(text):
        out.append(escape(text[last:match.start()]))
        url = match.group(0).rstrip(TRAILING)
        out.append(Markup('<a href="{0}">{0}</a>').format(url))
        last = match.start() + len(url)
    out.append(escape(text[last:]))
    return Markup("").join(out)


@bp.get("/")
def index():
    """One page of the delivered mail, newest first (`before`: the oldest id shown so far)."""
    wanted = request.args.get("to", "").strip().lower()[:254]
    # An id beyond what the keys hold is later than every mail: the newest page.
    before = form_number(request.args.get("before", "")[:40], high=10**40)
    if before is not None and before > MAX_ID:
        before = None
    folder = _folder()
    rows, recipients, pending = mailbox_page(wanted, before, PAGE)
    more = len(rows) > PAGE
    messages = [{"name": f"{row_id:08d}", "to": to, "subject": subject, "date": created}
                for row_id, to, subject, created in rows[:PAGE]
                if (folder / f"{row_id:08d}.eml").is_file()]
    older = rows[PAGE - 1][0] if more else None
    return render_template("mailbox/index.html", messages=messages, wanted=wanted,
                           recipients=recipients, pending=pending, older=older,
                           newest=before is None)


def _reply_to(message) -> str | None:
    """The play+ address a reply to `message` goes to, if it has one."""
    match = REPLY_KEY.search(str(message["Reply-To"] or ""))
    return match.group(0) if match else None


@bp.get("/<name>")
def message(name: str):
    parsed = _read(name)
    text = parsed.get_body(("plain",))
    return render_template("mailbox/message.html", summary=_summary(name, parsed),
                           body=linkify(text.get_content() if text else ""),
                           reply_to=_reply_to(parsed))


@bp.get("/<name>/reply")
def reply_form(name: str):
    """A reply to the mail, written here as in a mail program: the original quoted below."""
    parsed = _read(name)
    address = _reply_to(parsed)
    if address is None:
        abort(404)
    text = parsed.get_body(("plain",))
    quoted = "\n".join(f"> {line}" for line in (text.get_content() if text else "").splitlines())
    return render_template("mailbox/reply.html", summary=_summary(name, parsed),
                           reply_to=address, body=f"\n\n{quoted}\n")


@bp.post("/<name>/reply")
def reply(name: str):
    """Send the reply written on the page to the mail's reply address: it is read by the same
    code as a reply that comes by mail (`pbem ingest-mail`, the mail listener)."""
    parsed = _read(name)
    address = _reply_to(parsed)
    if address is None:
        abort(404)
    text = request.form.get("body", "")[:MAX_REPLY]
    sender = getaddresses([str(parsed["To"])])[0][1]
    subject = str(parsed["Subject"] or "")
    answer = EmailMessage()
    answer["From"] = sender
    answer["To"] = address
    answer["Subject"] = subject if subject.lower().startswith("re:") else f"Re: {subject}"
    answer["Date"] = formatdate(localtime=False)
    answer["Message-ID"] = make_msgid(domain=address.rpartition("@")[2])
    if parsed["Message-ID"]:
        answer["In-Reply-To"] = str(parsed["Message-ID"])
        answer["References"] = str(parsed["Message-ID"])
    answer.set_content(text)
    current_app.extensions["pbem_mail_in"](answer.as_bytes(), [address])
    wake_sender()
    flash(gettext("Your reply went to the server, which read it as a mail: its answer shows "
                  "in the mailbox."))
    return redirect(url_for("mailbox.index", to=sender), code=303)


@bp.get("/<name>/html")
def message_html(name: str):
    """The HTML part on its own, as a mail program would show it (no scripts, no frames)."""
    html = _read(name).get_body(("html",))
    if html is None:
        abort(404)

    def inline_part(match: re.Match) -> str:  # cid:X is the mail's own part X, as a mail
        url = url_for("mailbox.message_part", name=name, cid=match.group(2))  # program shows it
        return f"{match.group(1)}{escape(url)}{match.group(3)}"

    response = Response(CID.sub(inline_part, html.get_content()), mimetype="text/html")
    response.headers["Content-Security-Policy"] = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
        "form-action 'none'")
    return response


@bp.get("/<name>/part/<path:cid>")
def message_part(name: str, cid: str):
    """An image the mail's HTML shows by `cid:` (its Content-ID), served as the mail holds it;
    only raster images, so a mail's parts cannot become pages of this site."""
    for part in _read(name).walk():
        if part.get("Content-ID", "").strip().strip("<>") == cid \
                and part.get_content_type() in SHOWN_IMAGES:
            response = Response(part.get_content(), mimetype=part.get_content_type())
            response.headers["Content-Security-Policy"] = "default-src 'none'"
            response.headers["X-Content-Type-Options"] = "nosniff"
            return response
    abort(404)
