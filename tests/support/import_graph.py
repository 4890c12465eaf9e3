"""The import graph of the package, for the import-cycle tests."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


#: Source folder → the package it installs as (pyproject.toml, ADR 0002).
PACKAGES = {
    "facade": "context_compaction",
    "domain": "context_compaction.domain",
    "application": "context_compaction.application",
    "infrastructure": "context_compaction.infrastructure",
}


def module_files(root: Path) -> dict[str, Path]:
    """Module name → its file, for every module of the four folders."""
    found: dict[str, Path] = {}
    for folder, package in PACKAGES.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    drop = node.level - 1 if is_package else node.level
    base = base[: len(base) - drop] if drop else base
    return ".".join([*base, *([node.module] if node.module else [])])


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module → the package modules it imports (anywhere in its file)."""
    files = module_files(root)
    graph: dict[str, set[str]] = {name: set() for name in files}
    for module, path in files.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(module, is_package, node)
                # ``from pkg import mod`` imports the module pkg.mod when there is one.
                targets = [
                    f"{source}.{alias.name}" if f"{source}.{alias.name}" in files else source
                    for alias in node.names
                ]
            elif isinstance(node, ast.Call):
                targets = _named_modules(node, module, is_package, files)
            for target in targets:
                if target in files and target != module:
                    graph[module].add(target)
    # A command names its handler's module where it is declared (``handled_by`` in
    # contracts/commands/); the registry (application/handlers.py) imports it.
    registry = "context_compaction.application.handlers"
    if registry in graph:
        for module, path in files.items():
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "handled_by"
                        and node.args and isinstance(node.args[0], ast.Constant)):
                    target = f"context_compaction.application.{node.args[0].value}"
                    if target in files:
                        graph[registry].add(target)
    return graph


#: Calls that import the module a string names: importlib's, the builtin, and the
#: handler registry's lazy loader (application/handlers.py).
_IMPORTING_CALLS = frozenset({"import_module", "__import__", "_on_first_use"})


def _named_modules(call: ast.Call, module: str, is_package: bool, files: dict[str, Path]) -> list[str]:
    """Modules a call names by string (``importlib.import_module("pkg.mod")``, a lazy
    registry's ``_on_first_use("mod", ...)``): a string argument that is a package
    module's full name, or a sibling's name, counts as an import of it."""
    func = call.func
    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if called not in _IMPORTING_CALLS:
        return []  # (other strings, e.g. logger names, are not imports)
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for arg in call.args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            for name in (arg.value, f"{package}.{arg.value}"):
                if name in files:
                    found.append(name)
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle (its modules in order, the first repeated last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None
