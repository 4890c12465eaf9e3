"""Dependency direction (DESIGN §2): domain ← application ← infrastructure."""

from __future__ import annotations

import ast
from pathlib import Path
from layering_checks import LIBRARY_INTERNALS, PACKAGE_FOLDERS, ROOT, demo_importers, library_private_names, private_library_uses


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
