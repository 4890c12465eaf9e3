"""What the layering tests read: package folders, demo importers, the library's private names."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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


# ------------------------------------------------------------------ the demo
DEMO = "context_compaction.infrastructure.demo"


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
