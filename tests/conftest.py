import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))  # the engine without installing it, for a bare `pytest`


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite the golden playthrough files instead of comparing with them")


import pytest


@pytest.fixture(autouse=True)
def _no_pbem_environment(monkeypatch):
    """The developer's own PBEM_* settings must not leak into a test."""
    import os

    for key in list(os.environ):
        if key.startswith("PBEM_"):
            monkeypatch.delenv(key)


@pytest.fixture
def app(tmp_path):
    from server import make_app

    return make_app(tmp_path / "instance")


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


@pytest.fixture
def mailbox(app):
    from server import Mailbox

    return Mailbox(app)


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium through Playwright, for the modules that call require_browser()."""
    from browser_support import chromium, require_browser

    with chromium(require_browser()) as browser:
        yield browser


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    yield context.new_page()
    context.close()
