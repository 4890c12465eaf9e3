"""Portable JSON (ADR 0005): what can be stored in an event and echoed back unchanged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

MAX_DEPTH = 64
MAX_INT = 2**62


def json_problem(value: Any, *, max_depth: int = MAX_DEPTH, where: str = "") -> str | None:
    """Why ``value`` cannot be stored and echoed as portable JSON, or None.

    Rejects lone surrogates (not encodable as UTF-8), NaN/Infinity, integers beyond
    64-bit storage, non-string keys and nesting deeper than ``max_depth``.
    """
    if _plainly_fine(value, max_depth):
        return None
    problem = _json_problem(value, max_depth, where)
    if problem is not None and len(problem) > 200:
        problem = problem[:90] + " ... " + problem[-90:]
    return problem


def plainly_fine(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """True when ``json_problem(value)`` is surely None: ``value`` is built of exact
    JSON types only and passes every check. False decides nothing (the full walk has
    the last word). It also refuses floats of 2**63 and beyond, which is what orjson
    makes of a JSON integer beyond 64 bits: ``bus.decode_command`` relies on it."""
    return _plainly_fine(value, max_depth)


def _plainly_fine(value: Any, depth_left: int) -> bool:
    """True when ``value`` is built of exact JSON types only and passes every check.

    The common case (every message is checked) without the paths the full walk keeps
    for its message; False sends the value to that walk, which has the last word.
    """
    kind = type(value)
    if kind is str:
        return _text_ok(value)
    if kind is dict:
        if depth_left <= 0:
            return False
        for key, child in value.items():
            if type(key) is not str or not (key.isascii() or _text_ok(key)):
                return False
            child_kind = type(child)
            if child_kind is str:  # inline: most values are strings, most of them ASCII
                if not (child.isascii() or _text_ok(child)):
                    return False
            elif child is not None and child_kind is not bool and not _plainly_fine(child, depth_left - 1):
                return False
        return True
    if kind is list or kind is tuple:
        if depth_left <= 0:
            return False
        for child in value:
            if type(child) is str:
                if not (child.isascii() or _text_ok(child)):
                    return False
            elif not _plainly_fine(child, depth_left - 1):
                return False
        return True
    if value is None or kind is bool:
        return True
    if kind is int:
        return -MAX_INT <= value <= MAX_INT
    if kind is float:
        # (finite, and below 2**63: see ``plainly_fine``; NaN fails every comparison)
        return -_FLOAT_BOUND < value < _FLOAT_BOUND
    return False


_FLOAT_BOUND = float(2**63)


def parsed_fine(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """``plainly_fine`` for a value ``orjson.loads`` returned: the same answer, cheaper.

    orjson builds only exact JSON types with string keys, and no string it returns holds
    a lone surrogate (it refuses such text, and a ``str`` input holding one cannot be
    encoded for it to read), so what is left to check is the depth and the numbers:
    the walk never looks at a string (~40 % of ``plainly_fine``'s time on a command of
    agent messages, which are mostly strings).
    """
    return _parsed_fine(value, max_depth)


def _parsed_fine(value: Any, depth_left: int) -> bool:
    kind = type(value)
    if kind is dict or kind is list:
        if depth_left <= 0:
            return False
        for child in (value.values() if kind is dict else value):
            child_kind = type(child)
            if child_kind is str or child is None or child_kind is bool:
                continue
            if child_kind is dict or child_kind is list:
                if not _parsed_fine(child, depth_left - 1):
                    return False
            elif child_kind is int:
                if not -MAX_INT <= child <= MAX_INT:
                    return False
            elif child_kind is float:
                if not -_FLOAT_BOUND < child < _FLOAT_BOUND:
                    return False
            else:
                return False
        return True
    return _plainly_fine(value, depth_left)


def _text_ok(text: str) -> bool:
    """Encodable as UTF-8 (no lone surrogates); ASCII is decided without encoding."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _json_problem(value: Any, max_depth: int, where: str) -> str | None:
    stack: list[tuple[Any, int, str]] = [(value, 0, where)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth, path = pop()
        kind = type(item)
        if kind is str:
            if not _text_ok(item):
                return f"{path or 'value'} is not valid Unicode (lone surrogate)"
        elif kind is dict or kind is list or kind is tuple:
            if depth >= max_depth:
                return f"{path or 'value'} is nested deeper than {max_depth} levels"
            pairs = item.items() if kind is dict else enumerate(item)
            for key, child in pairs:
                if kind is dict:
                    if type(key) is not str:
                        return f"{path or 'value'} has a non-string key"
                    if not _text_ok(key):
                        return f"{path or 'value'} has a key that is not valid Unicode"
                if type(child) is str and child.isascii():
                    continue  # the common case, decided without a stack round trip
                push((child, depth + 1, f"{path}.{key}" if path else str(key)))
        elif item is None or kind is bool:
            continue
        elif isinstance(item, int):
            if abs(item) > MAX_INT:
                return f"{path or 'value'} is too large an integer"
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                return f"{path or 'value'} is not a finite number"
        elif isinstance(item, (dict, list, tuple)):
            push((dict(item) if isinstance(item, dict) else list(item), depth, path))
        elif isinstance(item, Mapping):  # a UserDict or other mapping a host passed (review wave 3)
            push((dict(item), depth, path))
        elif isinstance(item, BaseModel):
            push((item.model_dump(), depth, path))
    return None
