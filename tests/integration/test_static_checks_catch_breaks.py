"""The static tests (private eventsourcing names in one
module, the demo imported only by the CLI, no import circle) must not pass while the
rule is broken. They read the AST for attribute nodes and import statements only, so a
name given as a string passes them all:

- ``getattr(app, "_notify")`` / ``setattr(pool, "_writer_lock", …)`` outside
  ``internals.py`` is not reported by ``private_library_uses``;
- ``importlib.import_module("context_compaction.infrastructure.demo")`` is not seen by
  ``demo_importers``;
- ``importlib.import_module(...)`` edges are not in ``import_graph``, so a circle closed
  through one is not found. The package itself already imports seven application
  modules this way (``application/handlers.py``'s ``_on_first_use``), and the graph the
  circle test checks has none of those edges.
"""

from __future__ import annotations

from pathlib import Path

from import_graph import PACKAGES, find_cycle, import_graph
from layering_checks import PACKAGE_FOLDERS, demo_importers, library_private_names, private_library_uses


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for folder in PACKAGE_FOLDERS:
        (tmp_path / folder).mkdir(exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_a_private_library_name_reached_by_getattr_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "infrastructure/feed.py": (
            "def announce(app, events):\n"
            "    getattr(app, '_notify')(events)\n"
            "    setattr(app.recorder, '_insert_events', None)\n"
        ),
    })
    uses = private_library_uses(root, library_private_names())
    assert "infrastructure/feed.py" in uses


def test_the_demo_imported_by_importlib_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "infrastructure/providers.py": (
            "import importlib\n"
            "def scenario():\n"
            "    return importlib.import_module('context_compaction.infrastructure.demo.scenario')\n"
        ),
    })
    assert demo_importers(root) == ["infrastructure/providers.py:3"]


def test_a_circle_through_importlib_is_found(tmp_path: Path) -> None:
    assert set(PACKAGES) == set(PACKAGE_FOLDERS)
    root = _tree(tmp_path, {
        "application/a.py": "from .b import thing\n",
        "application/b.py": (
            "import importlib\n"
            "def thing():\n"
            "    return importlib.import_module('context_compaction.application.a')\n"
        ),
    })
    assert find_cycle(import_graph(root)) is not None


def test_the_real_graph_has_the_registry_s_lazy_imports() -> None:
    """``application/handlers.py`` imports compaction, turns, usage, recovery, ... on
    first use; the circle check walks a graph without those edges."""
    edges = import_graph()["context_compaction.application.handlers"]
    assert "context_compaction.application.compacting.compaction" in edges
    assert "context_compaction.application.turn.turns" in edges
