"""Each command's ``handled_by`` names a handler that exists and answers that command
(issue 38): the registry imports handlers on first use, so a misspelt module or function,
or a handler written for another command, would otherwise surface only when that
command first runs (an ``internal_error``), and a type checker never sees the pairing."""

from __future__ import annotations

import importlib
import inspect
import typing
from typing import Any

from context_compaction.application.contracts.commands import ROUTES, Command, Route


def route_problems(routes: dict[type[Command[Any]], Route]) -> list[str]:
    """Routes whose module does not import, whose function is missing, or whose handler
    is not ``(command: <that command>, services) -> <its result type>``."""
    problems = []
    for kind, route in routes.items():
        where = f"{kind.__name__} → {route.module}.{route.function}"
        try:
            module = importlib.import_module(f"context_compaction.application.{route.module}")
        except ImportError as exc:
            problems.append(f"{where}: {exc}")
            continue
        handler = getattr(module, route.function, None)
        if not callable(handler):
            problems.append(f"{where}: no such function")
            continue
        hints = typing.get_type_hints(handler)
        first = next(iter(inspect.signature(handler).parameters), None)
        if first is None or hints.get(first) is not kind:
            problems.append(f"{where}: takes {hints.get(first) if first else None}")
        if hints.get("return") is not kind.result_type():
            problems.append(f"{where}: returns {hints.get('return')}, not {kind.result_type().__name__}")
    return problems


def test_every_route_names_the_handler_of_its_command() -> None:
    assert len(ROUTES) >= 28
    assert route_problems(ROUTES) == []


def test_the_route_check_catches_a_misspelt_or_mismatched_route() -> None:
    by_name = {kind.__name__: kind for kind in ROUTES}
    planted = {
        by_name["PrepareTurn"]: Route("turn.turns", "prepare_turnn"),
        by_name["GetHistory"]: Route("history.querys", "get_history"),
        by_name["Compact"]: Route("turn.turns", "prepare_turn"),  # another command's handler
    }
    problems = route_problems(planted)
    assert [p.split(":")[0] for p in problems] == [
        "PrepareTurn → turn.turns.prepare_turnn",
        "GetHistory → history.querys.get_history",
        "Compact → turn.turns.prepare_turn",
        "Compact → turn.turns.prepare_turn",
    ]
    assert problems[0].endswith("no such function")


def test_routes_keep_the_topics_order_then_each_topics_own() -> None:
    # ``AnyCommand`` and the OpenAPI document list the commands in ``ROUTES``' order,
    # which is the import order of the topic modules: an import sorter reordering
    # commands/__init__.py would reorder the published document.
    from context_compaction.application.contracts import commands

    def place(kind: type[Command[Any]]) -> tuple[int, int]:
        return commands.TOPICS.index(kind.__module__.rsplit(".", 1)[1]), inspect.getsourcelines(kind)[1]

    assert {kind.__module__.rsplit(".", 1)[1] for kind in ROUTES} == set(commands.TOPICS)
    assert list(ROUTES) == sorted(ROUTES, key=place)
    assert [kind.__name__ for kind in ROUTES][:2] == ["StartSession", "ConfigureSession"]
