import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The suite starts hundreds of Python processes (xdist workers, `pbem` commands, gunicorn,
# schedulers and their helpers), each importing the project: compiling its modules anew in
# each (PYTHONDONTWRITEBYTECODE set, as some sandboxes and CI images do) costs ~0.4 s of CPU a
# process. The compiled modules are kept as Python keeps them by default (in __pycache__,
# which .gitignore leaves out), for this process and every process it starts.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    sys.dont_write_bytecode = False
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))  # the engine without installing it, for a bare `pytest`


DEFAULT_DATABASES = "sqlite,postgresql"


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite the golden playthrough files instead of comparing with them")
    parser.addoption("--databases", default=DEFAULT_DATABASES,
                     help="the databases the database tests run on, separated by commas "
                          "(default: sqlite,postgresql)")


import pytest


def pytest_generate_tests(metafunc):
    """A module that uses the `database` fixture (`pytestmark = pytest.mark.usefixtures(
    "database")`) runs each of its tests on each database, SQLite first; a test marked
    `only_sqlite` checks something only SQLite has."""
    if "database" not in metafunc.fixturenames:
        return
    from databases import BACKENDS

    chosen = [b.strip() for b in metafunc.config.getoption("databases").split(",") if b.strip()]
    unknown = set(chosen) - set(BACKENDS)
    if unknown:
        raise pytest.UsageError(f"--databases: unknown {', '.join(sorted(unknown))}; "
                                f"choose from {', '.join(BACKENDS)}")
    if metafunc.definition.get_closest_marker("only_sqlite"):
        chosen = [b for b in chosen if b == "sqlite"]
    metafunc.parametrize("database", chosen, indirect=True, scope="module")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """The longest test files first (tests/file_times.py says why), each file's tests in
    their own order."""
    from file_times import longest_first, times_path

    files = list(dict.fromkeys(item.nodeid.split("::", 1)[0] for item in items))
    rank = {path: i for i, path in enumerate(longest_first(files, times_path(config)))}
    items.sort(key=lambda item: rank[item.nodeid.split("::", 1)[0]])


# The suite's own upkeep: tests/file_times.json kept (tests/file_times.py), and the programs
# that are missing named at the end (tests/parts.py).
from file_times import (  # noqa: F401
    pytest_collection_finish,
    pytest_configure,
    pytest_deselected,
    pytest_runtest_logreport,
    pytest_sessionfinish,
    pytest_xdist_node_collection_finished,
)
from parts import pytest_terminal_summary  # noqa: F401


@pytest.fixture(scope="session")
def postgres_server():
    """The session's PostgreSQL server (per xdist worker), started on first use."""
    from databases import PostgresServer, migrate_template
    from parts import require

    server = PostgresServer(require("postgresql"))  # skipped without it (failed in CI)
    try:
        server.start()
        server.make_template(migrate_template)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def database(request):
    """The database this module's tests run on now: "sqlite" or "postgresql". Every app made
    with server.make_app uses it; its apps are closed and its databases dropped afterwards."""
    from server import Databases

    backend = request.param
    Databases.postgres = request.getfixturevalue("postgres_server") \
        if backend == "postgresql" else None
    Databases.backend = backend
    Databases.open_scope()
    try:
        yield backend
    finally:
        Databases.close_scope()
        Databases.backend, Databases.postgres = "sqlite", None


@pytest.fixture(autouse=True)
def _close_test_databases():
    """The apps a test made are closed (and their PostgreSQL databases dropped) after it."""
    from server import Databases

    Databases.open_scope()
    yield
    Databases.close_scope()


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
    from browser_support import WAIT_MS

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(WAIT_MS)
    yield context.new_page()
    context.close()


@pytest.fixture
def sized(browser):
    """A page factory for a viewport size: `sized({"width": 390, "height": 844})`."""
    from browser_support import WAIT_MS

    contexts = []

    def make(viewport):
        context = browser.new_context(viewport=viewport)
        context.set_default_timeout(WAIT_MS)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()
