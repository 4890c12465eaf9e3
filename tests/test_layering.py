"""Dependency direction (DESIGN §2): domain ← application ← infrastructure."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

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
