"""A field's docstring sits right under its field: two string statements in a row in a
class body mean one of them documents the wrong field (issue 38:
``ContextUsage.compaction_breaker`` carried ``prompt_cache``'s docstring)."""

from __future__ import annotations

import ast
from pathlib import Path

import context_compaction

ROOT = Path(context_compaction.__file__).parent


def _is_string(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def test_no_class_body_has_two_docstrings_in_a_row() -> None:
    found, classes = [], 0
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                classes += 1
                for before, after in zip(node.body, node.body[1:]):
                    if _is_string(before) and _is_string(after):
                        found.append(f"{path.relative_to(ROOT)}:{after.lineno} in {node.name}")
    assert classes > 100  # the walk reached the package
    assert not found, found
