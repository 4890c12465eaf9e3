"""Dependency direction (DESIGN §2): domain ← application ← infrastructure."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

IO_LIBRARIES = {
    "litellm", "tiktoken", "sqlite3", "psycopg", "psycopg_pool", "httpx", "requests",
    "socket", "urllib", "http", "subprocess", "asyncio", "aiohttp", "openai",
}


def imports_of(folder: str) -> list[tuple[str, int, str]]:
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.ImportFrom) and node.level > 0:
                names = [f".{'.' * (node.level - 1)}{node.module or ''}"]
            else:
                continue
            for name in names:
                found.append((path.relative_to(ROOT).as_posix(), node.lineno, name))
    return found


def offending(folder: str, banned_prefixes: set[str]) -> list[str]:
    bad = []
    for where, line, name in imports_of(folder):
        top = name.split(".")[0]
        if name.startswith("."):
            if name.lstrip(".").split(".")[0] in {"application", "infrastructure"} and name.startswith(".."):
                bad.append(f"{where}:{line} imports {name}")
            continue
        if top in banned_prefixes or any(name.startswith(p + ".") or name == p for p in banned_prefixes):
            bad.append(f"{where}:{line} imports {name}")
    return bad


def test_domain_imports_no_outer_layer_and_no_io() -> None:
    banned = {
        "context_compaction.application",
        "context_compaction.infrastructure",
        "application",
        "infrastructure",
        "eventsourcing.application",
        "eventsourcing.sqlite",
        "eventsourcing.postgres",
        "eventsourcing.persistence",
        *IO_LIBRARIES,
    }
    assert offending("domain", banned) == []


def test_application_does_not_import_infrastructure() -> None:
    banned = {
        "context_compaction.infrastructure",
        "infrastructure",
        "litellm",
        "tiktoken",
        "sqlite3",
        "psycopg",
        "eventsourcing.sqlite",
        "eventsourcing.postgres",
    }
    assert offending("application", banned) == []


def test_the_layer_check_itself_catches_a_bad_import(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "domain").mkdir()
    (tmp_path / "domain" / "bad.py").write_text("import sqlite3\nfrom context_compaction.application import bus\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert len(offending("domain", {"sqlite3", "context_compaction.application"})) == 2


# ------------------------------------------------- eventsourcing beneath its public API
#: The one module that may use eventsourcing's private names (ADR 0026).
LIBRARY_INTERNALS = "infrastructure/eventstore/internals/"  # (a package: one module per library part)
PACKAGE_FOLDERS = ("facade", "domain", "application", "infrastructure")
LIBRARIES = ("eventsourcing", "psycopg")  # (whose private names only the internals use; psycopg_pool too)


def library_private_names() -> set[str]:
    """Every single-underscore name eventsourcing and the pool beneath its PostgreSQL
    module (psycopg_pool) define: functions, methods, classes, attributes they assign
    (their own tests excluded), and the pool's attributes on a connection (psycopg's
    ``_connection_base``: ``_expire_at``)."""
    import eventsourcing
    import psycopg
    import psycopg_pool

    names: set[str] = set()
    sources = [*Path(eventsourcing.__file__).parent.rglob("*.py"),
               *Path(psycopg_pool.__file__).parent.rglob("*.py"),
               Path(psycopg.__file__).parent / "_connection_base.py"]
    for path in sources:
        # (each library's own tests; the libraries may sit in different site dirs)
        root = next(Path(m.__file__).parent for m in (eventsourcing, psycopg_pool, psycopg)
                    if path.is_relative_to(Path(m.__file__).parent))
        if "tests" in path.relative_to(root).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = node.name
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                name = node.attr
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                name = node.id
            else:
                continue
            if name.startswith("_") and not name.startswith("__") and name != "_":
                names.add(name)
    return names


def _library_bound(tree: ast.Module) -> set[str]:
    """Names a module imports from eventsourcing or psycopg (psycopg_pool included)."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(LIBRARIES):
            bound |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.startswith(LIBRARIES)}
    return bound


def _own_private_names(tree: ast.Module) -> set[str]:
    """Private names the module defines itself, in classes that do not derive from an
    eventsourcing class (our own ``self._closed`` is not the pool's)."""
    library = _library_bound(tree)
    own = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in cls.bases}
        bases |= {b.value.id for b in cls.bases if isinstance(b, ast.Subscript) and isinstance(b.value, ast.Name)}
        if bases & library or any(isinstance(b, ast.Attribute) for b in cls.bases):
            continue
        for node in ast.walk(cls):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                own.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
    return own


def private_library_uses(root: Path, library_names: set[str]) -> dict[str, list[str]]:
    """module → the eventsourcing private names it uses ("name:line"): attributes read or
    set, methods it defines (overrides) and names it imports."""
    uses: dict[str, list[str]] = {}
    for folder in PACKAGE_FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            own = _own_private_names(tree)
            found = []
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute):
                    name = node.attr
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    name = node.name
                elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(LIBRARIES):
                    found += [f"{a.name}:{node.lineno}" for a in node.names if a.name.startswith("_")]
                    continue
                elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                      and node.func.id in ("getattr", "setattr", "hasattr", "delattr")
                      and len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                      and isinstance(node.args[1].value, str)):
                    name = node.args[1].value  # (a private name given as a string)
                else:
                    continue
                if name in library_names and name not in own:
                    found.append(f"{name}:{node.lineno}")
            if found:
                uses[path.relative_to(root).as_posix()] = sorted(found, key=lambda f: int(f.split(":")[1]))
    return uses


def test_private_eventsourcing_names_appear_in_one_module_only() -> None:
    """Checked by hand once (issue 14): ``self._pending_events.append`` planted in
    domain/session.py and ``conn._sqlite_conn`` in infrastructure/database.py each
    made this fail naming the file and line; the self-check below plants one too."""
    uses = private_library_uses(ROOT, library_private_names())
    assert any(k.startswith(LIBRARY_INTERNALS) for k in uses)  # the check sees what it is meant to see
    assert {k: v for k, v in uses.items() if not k.startswith(LIBRARY_INTERNALS)} == {}


def test_the_private_name_check_catches_a_planted_use(tmp_path: Path) -> None:
    (tmp_path / "infrastructure").mkdir(parents=True)
    (tmp_path / "infrastructure" / "bad.py").write_text(
        "from eventsourcing.sqlite import SQLiteApplicationRecorder\n"
        "class Ours:\n"
        "    def __init__(self):\n"
        "        self._closed = False  # our own: not reported\n"
        "    def close(self):\n"
        "        return self._closed\n"
        "class Recorder(SQLiteApplicationRecorder):\n"
        "    def _insert_events(self, c, events, **kw):  # an override: reported\n"
        "        return super()._insert_events(c, events)\n"
        "def peek(pool):\n"
        "    return pool._writer_lock  # reported\n"
    )
    for folder in ("facade", "domain", "application"):
        (tmp_path / folder).mkdir()
    uses = private_library_uses(tmp_path, library_private_names())
    assert uses == {"infrastructure/bad.py": ["_insert_events:8", "_insert_events:9", "_writer_lock:11"]}


# ------------------------------------------------------------------ the demo
DEMO = "context_compaction.infrastructure.demo"
DEMO_IMPORTERS = {"infrastructure/cli.py"}


def demo_importers(root: Path) -> list[str]:
    """Modules outside the demo package that import it (absolute or relative)."""
    found = []
    for folder in PACKAGE_FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            where = path.relative_to(root).as_posix()
            if where.startswith("infrastructure/demo/"):
                continue
            package = ".".join(["context_compaction", *path.relative_to(root).parts[:-1]]).replace(
                "context_compaction.facade", "context_compaction"
            )
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    targets = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = package.split(".")
                    if node.level:
                        base = base[: len(base) - node.level + 1]
                        module = ".".join([*base, node.module] if node.module else base)
                    else:
                        module = node.module or ""
                    targets = [module, *(f"{module}.{a.name}" for a in node.names)]
                elif isinstance(node, ast.Call):
                    # (``importlib.import_module("...demo...")``, ``__import__``: by string)
                    targets = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                else:
                    continue
                if any(t == DEMO or t.startswith(DEMO + ".") for t in targets):
                    found.append(f"{where}:{node.lineno}")
                    break
    return found


def test_no_module_but_the_cli_imports_the_demo() -> None:
    """Checked by hand once (issue 14): ``from .demo.scenario import Turn`` planted in
    infrastructure/providers.py made this fail naming that line."""
    importers = demo_importers(ROOT)
    assert {i.split(":")[0] for i in importers} == DEMO_IMPORTERS  # (the CLI's is seen)


def test_the_demo_check_catches_a_planted_import(tmp_path: Path) -> None:
    for folder in PACKAGE_FOLDERS:
        (tmp_path / folder).mkdir()
    (tmp_path / "infrastructure" / "adapter.py").write_text("from .demo.scenario import Turn\n")
    (tmp_path / "application" / "service.py").write_text(
        "from context_compaction.infrastructure import demo\n"
    )
    assert demo_importers(tmp_path) == ["application/service.py:1", "infrastructure/adapter.py:1"]


# ------------------------------------------------------------ the application's rooms
#: application/'s sub-packages, lowest first (issue 38, ADR 0078): a module imports its
#: own room and the rooms before it, never one after it. ``handlers.py`` (the registry)
#: sits on top, in application/ itself.
ROOMS = ("contracts", "state", "runtime", "history", "compacting", "turn", "agent")
MAX_MODULES_PER_FOLDER = 12


def room_violations(root: Path = ROOT) -> list[str]:
    """Imports (anywhere in a file, lazy ones and registry strings too) from a room into
    a later room, or into application/'s own modules."""
    from test_import_cycles import import_graph

    app = "context_compaction.application."
    rank = {room: i for i, room in enumerate(ROOMS)}
    bad = []
    for module, targets in import_graph(root).items():
        if not module.startswith(app):
            continue
        here = module[len(app):].split(".")[0]
        if here not in rank:
            continue  # application/handlers.py: the registry imports every room
        for target in sorted(targets):
            if not target.startswith(app):
                continue
            there = target[len(app):].split(".")[0]
            if there not in rank or rank[there] > rank[here]:
                bad.append(f"{module} imports {target}")
    return bad


def test_application_rooms_import_only_their_own_and_lower_rooms() -> None:
    rooms = {p.name for p in (ROOT / "application").iterdir() if (p / "__init__.py").exists()}
    assert rooms == set(ROOMS)  # a new room takes its place in ROOMS
    assert room_violations() == []


def test_no_application_folder_holds_more_than_twelve_modules() -> None:
    for folder in [ROOT / "application", *(ROOT / "application").iterdir()]:
        if folder.is_dir() and folder.name != "__pycache__":
            modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
            assert len(modules) <= MAX_MODULES_PER_FOLDER, (folder, len(modules))


def test_the_room_check_catches_an_upward_import(tmp_path: Path) -> None:
    for folder in PACKAGE_FOLDERS:
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    for room in ("contracts", "turn"):
        (tmp_path / "application" / room).mkdir()
        (tmp_path / "application" / room / "__init__.py").write_text("")
    (tmp_path / "application" / "turn" / "turns.py").write_text("X = 1\n")
    (tmp_path / "application" / "contracts" / "commands.py").write_text(
        "def f():\n    from ..turn.turns import X\n"
    )
    assert room_violations(tmp_path) == [
        "context_compaction.application.contracts.commands imports context_compaction.application.turn.turns"
    ]
