"""Every dict and list inside a value, for the hand-out tests' "nothing shared" checks."""

from __future__ import annotations

from typing import Any


def containers(value: Any) -> list[Any]:
    """The dicts and lists of ``value``, itself included, depth first."""
    found = []
    if isinstance(value, (dict, list)):
        found.append(value)
        for item in value.values() if isinstance(value, dict) else value:
            found += containers(item)
    return found
