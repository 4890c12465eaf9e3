"""The wheel must ship every subpackage the code imports.

``pyproject.toml`` lists ``[tool.setuptools] packages`` by hand. Issue 14 added
``infrastructure/memory/`` (ADR 0045) and ``bootstrap.py`` imports it at module level,
but the list lacks ``context_compaction.infrastructure.memory``: a wheel built from this
tree (``python -m build --wheel``) has no ``infrastructure/memory/`` and
``from context_compaction.infrastructure import bootstrap`` raises ModuleNotFoundError
(the CLI and every host are dead on a non-editable install). The editable install the
tests use hides it, and ``tests/e2e/test_packaging.py`` only looks for ``cli.py``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_folder_is_listed_in_pyproject_packages() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(config["packages"])
    folders = {package: ROOT / folder for package, folder in config["package-dir"].items()}
    found = set()
    for package, folder in folders.items():
        for init in folder.rglob("__init__.py"):
            parts = init.parent.relative_to(folder).parts
            found.add(".".join([package, *parts]))
    assert found - listed == set()
