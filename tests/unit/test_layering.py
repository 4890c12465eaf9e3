"""Dependency direction (DESIGN §2): domain ← application ← infrastructure."""

from __future__ import annotations

import ast
from pathlib import Path
from layering_checks import LIBRARY_INTERNALS, PACKAGE_FOLDERS, ROOT, demo_importers, library_private_names, private_library_uses


IO_LIBRARIES = {
    "litellm", "tiktoken", "sqlite3", "psycopg", "psycopg_pool", "httpx", "requests",
    "socket", "urllib", "http", "subprocess", "asyncio", "aiohttp", "openai",
}


#: Source folder → the package it installs as (pyproject.toml, ADR 0002).
PACKAGE_OF = {"facade": "context_compaction", "domain": "context_compaction.domain",
              "application": "context_compaction.application",
              "infrastructure": "context_compaction.infrastructure"}


def imports_of(folder: str) -> list[tuple[str, int, str]]:
    """(file, line, module) for every import in ``folder``; a relative import is resolved
    to its absolute name, and ``from <package> import <name>`` also counts as an import
    of ``<package>.<name>`` (``from ... import infrastructure`` names the layer only
    there)."""
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        package = [*PACKAGE_OF[folder].split("."), *path.relative_to(ROOT / folder).parent.parts]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = ".".join(package[: len(package) - (node.level - 1)] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                names = [base, *(f"{base}.{a.name}" for a in node.names if a.name != "*")]
            else:
                continue
            for name in dict.fromkeys(names):
                found.append((path.relative_to(ROOT).as_posix(), node.lineno, name))
    return found


def offending(folder: str, banned_prefixes: set[str]) -> list[str]:
    bad: dict[tuple[str, int], str] = {}  # one report per import statement
    for where, line, name in imports_of(folder):
        if any(name == p or name.startswith(p + ".") for p in banned_prefixes):
            bad.setdefault((where, line), f"{where}:{line} imports {name}")
    return list(bad.values())


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


def test_the_layer_check_resolves_relative_imports_of_a_sibling_layer(tmp_path: Path, monkeypatch) -> None:
    """``from ... import infrastructure`` in application/runtime/ (or ``from .. import
    application`` in domain/) names the outer layer only in its alias: it is caught."""
    (tmp_path / "application" / "runtime").mkdir(parents=True)
    (tmp_path / "application" / "runtime" / "bad.py").write_text(
        "def f():\n    from ... import infrastructure\n    return infrastructure\n"
        "from . import services\n"  # (its own room: not reported)
    )
    (tmp_path / "domain").mkdir()
    (tmp_path / "domain" / "bad.py").write_text("from .. import application\nfrom . import errors\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert offending("application", {"context_compaction.infrastructure"}) == [
        "application/runtime/bad.py:2 imports context_compaction.infrastructure"
    ]
    assert offending("domain", {"context_compaction.application"}) == [
        "domain/bad.py:1 imports context_compaction.application"
    ]


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


DEMO_IMPORTERS = {"infrastructure/cli.py"}


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
    from import_graph import import_graph

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
