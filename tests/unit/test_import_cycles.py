"""No import circle anywhere in the package (issue 14).

Every import counts: module level, inside functions (a lazy import hides a circle, it
does not remove it) and under ``TYPE_CHECKING`` (a circle in the types is one in the
design). The implicit import of a parent package's ``__init__`` does not count: the
facade's ``__init__`` imports the composition root, which imports everything.
"""

from __future__ import annotations

import ast
from pathlib import Path
from import_graph import PACKAGES, find_cycle, import_graph


def test_the_package_has_no_import_circle() -> None:
    graph = import_graph()
    assert len(graph) > 40  # the walk found the package (not an empty folder)
    assert any(graph.values())
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def _plant(tmp_path: Path, files: dict[str, str]) -> Path:
    for folder in PACKAGES:
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_the_check_finds_a_planted_circle_through_a_function_level_import(tmp_path: Path) -> None:
    root = _plant(tmp_path, {
        "application/a.py": "from .b import thing\n",
        "application/b.py": "def thing():\n    from context_compaction.application import a\n",
        "application/c.py": "from . import a\n",
    })
    cycle = find_cycle(import_graph(root))
    assert cycle is not None
    assert set(cycle) == {"context_compaction.application.a", "context_compaction.application.b"}


def test_the_check_finds_a_circle_hidden_under_type_checking(tmp_path: Path) -> None:
    root = _plant(tmp_path, {
        "domain/x.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .y import Y\n",
        "domain/y.py": "from context_compaction.domain.x import X\n",
    })
    assert find_cycle(import_graph(root)) is not None


def test_the_check_passes_an_acyclic_tree(tmp_path: Path) -> None:
    root = _plant(tmp_path, {
        "domain/x.py": "import json\n",
        "application/a.py": "from context_compaction.domain import x\nfrom ..domain.x import y\n",
        "infrastructure/i.py": "from context_compaction.application.a import z\n",
    })
    graph = import_graph(root)
    assert graph["context_compaction.application.a"] == {"context_compaction.domain.x"}
    assert graph["context_compaction.infrastructure.i"] == {"context_compaction.application.a"}
    assert find_cycle(graph) is None
