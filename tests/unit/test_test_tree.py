"""The test tree by behaviour (issue 39, ADR 0080): modules are named for what they test,
not for the review round that wrote them; no test module imports another; shared helpers
are in tests/support, the only folder on pytest's ``pythonpath``."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
if not (TESTS.parent / "pyproject.toml").exists():
    pytest.skip("needs the repository's pyproject.toml", allow_module_level=True)


def modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "support" not in p.parts)


def test_the_walk_finds_the_modules() -> None:
    names = {p.name for p in modules()}
    assert {"test_pins.py", "test_revert.py", "test_test_tree.py"} <= names


def test_no_module_is_named_for_a_review_round() -> None:
    named = [p.relative_to(TESTS) for p in TESTS.rglob("*.py")
             if p.name.startswith("test_review") or re.search(r"wave\d", p.name)]
    assert named == []


def imported(source: str) -> list[str]:
    """The modules a source imports, and the test modules it loads by path."""
    names = [m for m in re.findall(r'"(test_\w+)\.py"', source)] if "spec_from_file_location" in source else []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module.split(".")[0])
    return names


def test_no_test_module_imports_another() -> None:
    stems = {p.stem for p in modules()}
    assert "test_pins" in imported("from test_pins import start") and "test_x" in imported(
        'spec_from_file_location("m", HERE / "test_x.py")')
    found = [(path.name, name) for path in modules() + sorted((TESTS / "support").glob("*.py"))
             if path != Path(__file__).resolve()  # (its own examples above)
             for name in imported(path.read_text(encoding="utf-8")) if name in stems]
    assert found == []


def test_only_tests_support_is_on_the_pythonpath() -> None:
    config = tomllib.loads((TESTS.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert config["tool"]["pytest"]["ini_options"]["pythonpath"] == ["tests/support"]
