"""The mailbox page: every message the local mail backend wrote, for playing all seats from one
browser in the demo. It exists only while MAIL_BACKEND is "local" and MAIL_MAILBOX_PAGE is on,
because it shows every seat's links.
"""

from __future__ import annotations

import re
from email import policy
from email.parser import BytesParser
from email.utils import getaddresses, parsedate_to_datetime
from pathlib import Path

from flask import Blueprint, Response, abort, current_app, render_template, request
from markupsafe import Markup, escape
from sqlmodel import select

from .db import reading
from .models import SENT, OutboxMessage

bp = Blueprint("mailbox", __name__, url_prefix="/mailbox")

NAME = re.compile(r"\d{8}")
LINK = re.compile(r"https?://[^\s<>\"']+")


def is_enabled() -> bool:
    config = current_app.config
    return config["MAIL_BACKEND"] == "local" and config["MAIL_MAILBOX_PAGE"]


@bp.before_request
def _only_when_local():
    if not is_enabled():
        abort(404)


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
        url = match.group(0)
        out.append(Markup('<a href="{0}">{0}</a>').format(url))
        last = match.end()
    out.append(escape(text[last:]))
    return Markup("").join(out)


@bp.get("/")
def index():
    folder = _folder()
    names = sorted((p.stem for p in folder.glob("*.eml") if NAME.fullmatch(p.stem)),
                   reverse=True) if folder.is_dir() else []
    wanted = request.args.get("to", "").strip().lower()[:254]
    messages = []
    for name in names:
        summary = _summary(name, _read(name))
        if not wanted or wanted in summary["addresses"]:
            messages.append(summary)
    recipients = sorted({a for m in messages for a in m["addresses"]}) if not wanted else []
    with reading() as session:
        pending = session.exec(select(OutboxMessage).where(OutboxMessage.status != SENT)
                               .order_by(OutboxMessage.id.desc()).limit(100)).all()
    return render_template("mailbox/index.html", messages=messages, wanted=wanted,
                           recipients=recipients, pending=pending)


@bp.get("/<name>")
def message(name: str):
    parsed = _read(name)
    text = parsed.get_body(("plain",))
    return render_template("mailbox/message.html", summary=_summary(name, parsed),
                           body=linkify(text.get_content() if text else ""))


@bp.get("/<name>/html")
def message_html(name: str):
    """The HTML part on its own, as a mail program would show it (no scripts, no frames)."""
    html = _read(name).get_body(("html",))
    if html is None:
        abort(404)
    response = Response(html.get_content(), mimetype="text/html")
    response.headers["Content-Security-Policy"] = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'")
    return response
