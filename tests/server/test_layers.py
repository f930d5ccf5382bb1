"""pbem/ is a house in layers (pbem/__init__.py): each module's floor is its folder, and no
import climbs to a higher floor, goes sideways into another channel's folder, or closes a
circle of modules, whether direct (a imports b, b imports a) or longer.

Every import under pbem/ is read with `ast`, wherever it stands (at the top, in a function, or
under `if TYPE_CHECKING:`: a name a module needs for its types is a dependency too); only a
module's `if __name__ == "__main__":` block is left out, a program of its own that stands on
top of the house, and Alembic's scripts (pbem/ground/migrations/), which Alembic runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGE = ROOT / "pbem"

# The floors, lowest first, by folder; the modules in pbem/ itself (the app: pbem/__init__.py,
# app.py, entry.py, __main__.py) are the top floor. Folders on the same floor (the channels)
# may not import each other.
FLOORS = {"ground": 0, "games": 1, "services": 2, "web": 3, "mailin": 3, "scheduler": 4,
          "cli": 5}
TOP = 6


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def python_files(package: Path = PACKAGE) -> list[Path]:
    return sorted(p for p in package.rglob("*.py")
                  if "migrations" not in p.relative_to(package).parts)


def _is_main_block(node: ast.AST) -> bool:
    """`if __name__ == "__main__":`"""
    test = getattr(node, "test", None)
    return (isinstance(node, ast.If) and isinstance(test, ast.Compare)
            and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def _imports(tree: ast.AST):
    """Every Import and ImportFrom node of `tree`, but those under a `__main__` block."""
    for node in ast.iter_child_nodes(tree):
        if _is_main_block(node):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        yield from _imports(node)


def imports_of(path: Path, modules: set[str], package: Path = PACKAGE) -> dict[str, int]:
    """The modules of `modules` that the module at `path` imports, each with the line of its
    first import: `from x import y` names module x.y when there is one, else x."""
    name = module_name(path, package)
    is_package = path.name == "__init__.py"
    found: dict[str, int] = {}
    for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            if node.level:
                base = name.split(".")
                base = base[:len(base) - node.level + (1 if is_package else 0)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules
                       else module for alias in node.names]
        for target in targets:
            while target and target not in modules:  # `import pbem.x.y`: its module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.setdefault(target, node.lineno)
    return found


def graph(package: Path = PACKAGE) -> dict[str, dict[str, int]]:
    """Each module of the package and what it imports of it (module -> line)."""
    paths = {module_name(p, package): p for p in python_files(package)}
    modules = set(paths)
    return {name: imports_of(path, modules, package) for name, path in paths.items()}


def room(module: str) -> str:
    """The folder a module belongs to (the top floor's modules: the package's own name)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in FLOORS) \
        else parts[0]


def floor(module: str) -> int:
    return FLOORS.get(room(module), TOP)


def wrong_way(edges: dict[str, dict[str, int]]) -> list[str]:
    """Each import that climbs, or goes sideways into another folder of the same floor."""
    found = []
    for module, targets in sorted(edges.items()):
        for target, line in sorted(targets.items()):
            if room(module) == room(target):
                continue
            if floor(target) > floor(module):
                found.append(f"{module}:{line} climbs to {target} "
                             f"(floor {floor(module)} -> {floor(target)})")
            elif floor(target) == floor(module):
                found.append(f"{module}:{line} goes sideways to {target} "
                             f"({room(module)} -> {room(target)}, both floor {floor(module)})")
    return found


def cycles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a longer circle
    (Tarjan's strongly connected components of more than one module), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in edges.get(module, {}):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return sorted(found)


def _circle(edges: dict[str, dict[str, int]], group: list[str]) -> str:
    """The group in words for the message: each pair in it that imports each other, or else
    one circle through its first module."""
    pairs = [f"{a} <-> {b}" for a in group for b in group
             if a < b and b in edges[a] and a in edges[b]]
    if pairs:
        return "; ".join(pairs)
    members, path = set(group), [group[0]]
    while True:
        step = next(t for t in sorted(edges[path[-1]]) if t in members
                    and (t == group[0] or t not in path))
        path.append(step)
        if step == group[0]:
            return " -> ".join(path)


def test_every_module_has_a_floor():
    """Every folder of pbem/ with Python modules is one of the floors; each floor's package
    says in its docstring what it owns and what it may import."""
    folders = {room(module) for module in graph()} - {"pbem"}
    assert folders <= set(FLOORS), f"folders without a floor: {folders - set(FLOORS)}"
    for folder in FLOORS:
        init = PACKAGE / folder / "__init__.py"
        assert init.is_file(), f"pbem/{folder}/ is missing"
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and "import" in doc.lower(), f"pbem/{folder}/__init__.py says nothing of its imports"


def test_no_import_climbs_or_goes_sideways():
    """A module imports only from its own folder or from a lower floor."""
    found = wrong_way(graph())
    assert not found, "imports the wrong way:\n" + "\n".join(found)


def test_no_modules_import_each_other():
    """No circle of imports between modules, direct or longer."""
    edges = graph()
    found = cycles(edges)
    assert not found, "modules that import each other:\n" + "\n".join(
        _circle(edges, group) for group in found)


def test_the_checks_see_what_they_must(tmp_path):
    """The checks find a circle (also through an import only for types), a climbing import, a
    sideways one and a relative import's target, and leave a `__main__` block out."""
    package = tmp_path / "pbem"
    files = {
        "__init__.py": '"""top"""\nfrom .ground import db\n',
        "ground/__init__.py": '"""ground"""\n',
        "ground/db.py": "def f():\n    from ..services import moves\n",
        "services/__init__.py": '"""services"""\n',
        "services/moves.py": "from ..ground.db import f\nfrom . import log\n",
        "services/log.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                            "    from .moves import x\n"),
        "web/__init__.py": '"""web"""\n',
        "web/pages.py": "import pbem.mailin.inbox\n",
        "mailin/__init__.py": '"""mailin"""\n',
        "mailin/inbox.py": ("from pbem.ground import db\nif __name__ == '__main__':\n"
                            "    from pbem import entry\n"),
    }
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    edges = graph(package)
    assert edges["pbem.services.moves"] == {"pbem.ground.db": 1, "pbem.services.log": 2}
    assert edges["pbem.mailin.inbox"] == {"pbem.ground.db": 1}
    assert edges["pbem"] == {"pbem.ground.db": 2}
    assert cycles(edges) == [["pbem.ground.db", "pbem.services.log", "pbem.services.moves"]]
    assert _circle(edges, cycles(edges)[0]) == \
        "pbem.ground.db <-> pbem.services.moves; pbem.services.log <-> pbem.services.moves"
    circle = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}}
    assert cycles(circle) == [["a", "b", "c"]]
    assert _circle(circle, ["a", "b", "c"]) == "a -> b -> c -> a"
    assert wrong_way(edges) == [
        "pbem.ground.db:2 climbs to pbem.services.moves (floor 0 -> 2)",
        "pbem.web.pages:1 goes sideways to pbem.mailin.inbox (web -> mailin, both floor 3)"]


# --- what a command loads: the command line is light until a command runs -----------------------

LOADS = """
import sys
HEAVY = ("alembic", "mako", "sqlalchemy", "sqlmodel", "pbem.ground.models", "pbem.web",
         "pbem.scheduler", "pbem.cli")
if sys.argv[1] == "help":
    from pbem.command import main
    try:
        main(["--help"])
    except SystemExit as exc:
        assert exc.code == 0, exc.code
else:
    import tempfile
    from pbem import create_app
    with tempfile.TemporaryDirectory() as folder:
        create_app({"INSTANCE_PATH": folder, "SECRET_KEY": "layers", "TESTING": True})
print("LOADED", *[name for name in HEAVY if any(m == name or m.startswith(name + ".")
                                                for m in sys.modules)])
"""


def loaded_by(what: str) -> set[str]:
    """The heavy packages a fresh interpreter holds after `pbem --help` ("help") or after
    making an app ("app")."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PBEM_", "FLASK_"))}
    done = subprocess.run([sys.executable, "-c", LOADS, what], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("LOADED"))
    return set(line.split()[1:])


def test_help_and_an_app_load_only_what_they_use():
    """`pbem --help` lists the commands without the database layer, Alembic (and its Mako) or
    the pages; an app (a web worker, a helper sender, `pbem ingest-mail`) is made without the
    command line's commands and the scheduler's processes: each command imports what it uses
    when it runs (bench/cli_start.py measures what a command's start costs)."""
    assert loaded_by("help") == {"pbem.cli"}
    app = loaded_by("app")
    assert "pbem.cli" not in app and "alembic" not in app and "mako" not in app, app
    assert {"sqlalchemy", "pbem.ground.models", "pbem.web"} <= app, app


# --- what follows a move: told, not called ------------------------------------------------------

# What a move causes beyond its own mails listens to the move path's events
# (pbem.services.events): the move path itself imports none of them.
LISTENERS_ONLY = ("pbem.services.ratings", "pbem.services.tournaments", "pbem.services.feeds",
                  "pbem.services.timeouts", "pbem.services.undo", "pbem.services.reviews")


def imported_by(edges: dict[str, dict[str, int]], module: str) -> set[str]:
    """Every module `module` imports, directly or through others (its import closure)."""
    seen: set[str] = set()
    waiting = [module]
    while waiting:
        for target in edges.get(waiting.pop(), {}):
            if target not in seen:
                seen.add(target)
                waiting.append(target)
    return seen


def test_the_move_path_imports_none_of_what_follows_a_move():
    """services/moves.py and everything it imports import neither ratings, tournaments,
    feeds, the timeouts' policy nor take-back requests: they listen to the move path's events."""
    edges = graph()
    closure = imported_by(edges, "pbem.services.moves")
    found = sorted(closure & set(LISTENERS_ONLY))
    assert not found, f"the move path imports {found}"
    assert "pbem.services.events" in closure
    assert not {"pbem.services.ratings", "pbem.services.tournaments"} & set(
        edges["pbem.services.finished"]), "finished.py announces a finished game"


LISTENING = """
import pbem.services.moves
from pbem.services import events
for kind in (events.GameFinished, events.TurnTimedOut, events.UndoOvertaken,
             events.SeatHandedOver):
    print(kind.__name__, *[f"{f.__module__}.{f.__name__}" for f in events.listeners(kind)])
"""


def test_every_listener_is_registered_however_the_services_are_entered():
    """A program that imports only the move path (as mail in, a command or a test calling a
    service does, with no app made) has every listener registered, in its order."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", LISTENING], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        ("GameFinished pbem.services.ratings.on_game_finished "
         "pbem.services.tournaments.on_game_finished pbem.services.reviews.on_game_finished"),
        "TurnTimedOut pbem.services.timeouts.on_turn_timed_out",
        "UndoOvertaken pbem.services.undo.on_undo_overtaken",
        "SeatHandedOver pbem.services.mail.listeners.on_seat_handed_over"]


# --- seams: what one module uses of another is public, and only services query the database -----

# Delivering the outbox is the scheduler's own work (issue 44: "the scheduler only claims due
# work and runs it in transactions"): its senders claim rows and record each delivery, the
# claim protocol of pbem/scheduler/outbox.py's docstring. These stay, by design, not for now.
DELIVERY = {"pbem.scheduler.outbox", "pbem.scheduler.senders", "pbem.scheduler.notices"}


def _is_private(name: str) -> bool:
    """`_x`, but neither gettext's `_` nor a dunder."""
    return name.startswith("_") and name != "_" and not name.endswith("__")


def private_uses(package: Path = PACKAGE) -> list[str]:
    """Each private name (`_x`) a module of the package takes from another of its modules:
    `from .x import _y`, or `x._y` of a module `x` it imported."""
    paths = {module_name(p, package): p for p in python_files(package)}
    found = []
    for name, path in sorted(paths.items()):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_package = path.name == "__init__.py"
        modules: set[str] = set()  # the names bound to modules of the package
        for node in _imports(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".")
                    base = base[:len(base) - node.level + (1 if is_package else 0)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                if source.split(".")[0] != package.name:
                    continue
                for alias in node.names:
                    if f"{source}.{alias.name}" in paths:
                        modules.add(alias.asname or alias.name)
                    elif _is_private(alias.name) and source != name:
                        found.append(f"{name}:{node.lineno} imports {alias.name} from {source}")
            else:
                for alias in node.names:
                    if alias.name.split(".")[0] == package.name:
                        modules.add(alias.asname or alias.name.split(".")[0])
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and _is_private(node.attr)
                    and isinstance(node.value, ast.Name) and node.value.id in modules):
                found.append(f"{name}:{node.lineno} uses {node.value.id}.{node.attr}")
    return found


def test_no_private_name_crosses_modules():
    """What a module uses of another is public: no `_private` name is imported from, or
    reached in, another module of pbem/."""
    found = private_uses()
    assert not found, "private names used across modules:\n" + "\n".join(found)


def test_the_seam_check_sees_what_it_must(tmp_path):
    """The check finds a private name imported or reached in another module, and leaves
    gettext's `_`, a module's own names and other packages' names alone."""
    package = tmp_path / "pbem"
    files = {
        "__init__.py": "",
        "ground/__init__.py": "",
        "ground/i18n.py": "def _(text):\n    return text\n\ndef _hidden():\n    pass\n",
        "services/__init__.py": "",
        "services/log.py": "from ..ground.i18n import _, _hidden\n",
        "services/seats.py": ("from . import log\nfrom flask import current_app\n"
                              "log._private()\ncurrent_app._get_current_object()\n"),
    }
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    assert private_uses(package) == [
        "pbem.services.log:1 imports _hidden from pbem.ground.i18n",
        "pbem.services.seats:3 uses log._private"]


CHANNELS = ("web", "mailin", "cli", "scheduler")
SQL = {"select", "update", "delete", "insert", "text"}  # statements, from sqlalchemy or sqlmodel
SESSIONS = {"reading", "writing", "writing_rows", "get_row"}  # of pbem.ground.db


def queries(package: Path = PACKAGE) -> list[str]:
    """Each database query in a channel's module (pbem/web, mailin, cli, scheduler): a statement
    built (`select(`, `update(`, ...), run (`.exec(`, `.execute(`, `.query(`), a row read by
    its key (`session.get(Model, ...)`, `get_row`) or a session opened (`reading()`,
    `writing()`)."""
    found = []
    for path in python_files(package):
        name = module_name(path, package)
        if room(name) not in CHANNELS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        statements, models, sessions = set(), set(), set()
        for node in _imports(tree):
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if (node.module or "").split(".")[0] in ("sqlalchemy", "sqlmodel") \
                            and alias.name in SQL:
                        statements.add(alias.asname or alias.name)
                    elif (node.module or "").endswith("models"):
                        models.add(alias.asname or alias.name)
                    elif (node.module or "").endswith("ground.db") and alias.name in SESSIONS:
                        sessions.add(alias.asname or alias.name)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Name) and func.id in statements:
                found.append(f"{name}:{node.lineno} builds a statement ({func.id})")
            elif isinstance(func, ast.Name) and func.id in sessions:
                found.append(f"{name}:{node.lineno} opens a session ({func.id})")
            elif isinstance(func, ast.Attribute) and func.attr in ("exec", "execute", "query"):
                found.append(f"{name}:{node.lineno} runs a query (.{func.attr})")
            elif (isinstance(func, ast.Attribute) and func.attr == "get" and node.args
                  and isinstance(node.args[0], ast.Name) and node.args[0].id in models):
                found.append(f"{name}:{node.lineno} reads a row ({node.args[0].id})")
    return found


def test_channels_query_the_database_only_through_services():
    """Services are where games and the database meet: a page, mail coming in, a command or a
    scheduler's job asks a service, never the database itself (but the outbox's delivery)."""
    found = [line for line in queries() if line.partition(":")[0] not in DELIVERY]
    assert not found, "queries outside services:\n" + "\n".join(found)


def test_the_query_check_sees_what_it_must(tmp_path):
    """The check finds a statement built, a query run, a row read by key and a session opened
    in a channel, and leaves a Flask session's `.get("key")` and the services alone."""
    package = tmp_path / "pbem"
    files = {
        "__init__.py": "",
        "services/__init__.py": "",
        "services/creating.py": "from sqlmodel import select\nselect(1)\n",
        "web/__init__.py": "",
        "web/pages.py": ("from flask import session\nfrom sqlmodel import select\n"
                         "from ..ground.db import reading\nfrom ..ground.models import Game\n"
                         "session.get('admin_id')\nwith reading() as db:\n"
                         "    db.exec(select(Game))\n    db.get(Game, 1)\n"),
    }
    for name, text in files.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(text)
    assert sorted(queries(package)) == [
        "pbem.web.pages:6 opens a session (reading)",
        "pbem.web.pages:7 builds a statement (select)",
        "pbem.web.pages:7 runs a query (.exec)",
        "pbem.web.pages:8 reads a row (Game)"]
