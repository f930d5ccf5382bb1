"""What the browser tests share: Debian's chromium through Playwright, and the app served by
werkzeug on a free port in a thread (so mail links lead to it)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from werkzeug.serving import make_server

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
SHOTS = Path(__file__).resolve().parent / "artifacts" / "screenshots"
PHONE = {"width": 390, "height": 844}
# How long the browser and `expect` wait for what a page must show: generous, for a busy
# machine (a quick page passes at once; only a broken one waits this long).
WAIT_MS = 60_000


def require_browser():
    """Playwright's sync API, or skip the calling test module when no browser can run (fail it
    in CI: tests/parts.py)."""
    from parts import require

    require("chromium")
    require("playwright")
    import playwright.sync_api

    playwright.sync_api.expect.set_options(timeout=WAIT_MS)
    return playwright.sync_api


def _closing_at_once(app):
    """`app`, with each response read whole and closed before werkzeug writes it.

    werkzeug's server closes a response only after reading what is left of the request, and
    that read raises when the browser has already hung up (a page closed at the end of a test
    while its favicon was answered): the response's open static file is then left to the
    garbage collector, whose ResourceWarning the suite treats as an error."""
    def wsgi(environ, start_response):
        body = app(environ, start_response)
        try:
            return [b"".join(body)]
        finally:
            if hasattr(body, "close"):
                body.close()
    return wsgi


@contextmanager
def live_server(app) -> Iterator[str]:
    """Serve `app` on a free port; yields its base URL, which BASE_URL is set to."""
    server = make_server("127.0.0.1", 0, _closing_at_once(app), threaded=True)
    base = f"http://127.0.0.1:{server.server_port}"
    app.config["BASE_URL"] = base
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield base
    finally:
        server.shutdown()
        thread.join(10)
        server.server_close()


@contextmanager
def chromium(sync_api) -> Iterator[object]:
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        from parts import require

        browser = playwright.chromium.launch(executable_path=str(require("chromium")), args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


ADMIN, PASSWORD = "organiser@example.org", "browser test password"


@contextmanager
def site_with_admin(tmp_path_factory, name: str) -> Iterator[tuple[object, str]]:
    """(app, base URL): a module's app (see server.module_app), served, with an admin account."""
    from server import module_app

    from pbem.services.stewardship import create_admin

    app = module_app(tmp_path_factory, name)
    with app.app_context():
        create_admin(ADMIN, PASSWORD)
    with live_server(app) as base:
        yield app, base


def monastery_move(state):
    """A legal placement of one monastery paid by exactly one way of playing cards."""
    import engine

    places = [m for m in engine.legal_moves(state) if isinstance(m, engine.Place)]
    for move in places:
        same = [m for m in places if m.country == move.country and m.pieces == move.pieces]
        if len(move.pieces) == 1 and move.pieces[0] != engine.ADVISOR and len(same) == 1:
            return move
    raise AssertionError("no single-card monastery placement in this position")
