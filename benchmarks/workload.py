"""Workload helpers shared by the benchmark sections (no timing here)."""

from __future__ import annotations

import os
import statistics
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import islice
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from context_compaction.infrastructure.demo.scenario import iter_turns  # noqa: E402

MODEL = "gpt-4o"
SYSTEM = "You are a careful coding agent working in /srv/payments-api."
TOOLS = [{"type": "function", "function": {"name": n, "description": f"{n} tool",
                                           "parameters": {"type": "object", "properties": {}}}}
         for n in ("read_file", "run_tests", "grep", "apply_patch", "screenshot")]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def relabel(messages: list[dict[str, Any]], tag: str) -> list[dict[str, Any]]:
    """The turn with its turn id and tool-call ids prefixed by ``tag``.

    The scenario numbers tool calls from 1 per generator, so two generators (or two
    passes over one) repeat ids; a session refuses a tool call id it already has.
    """
    out = []
    for m in messages:
        m = dict(m)
        if m.get("turn_id"):
            m["turn_id"] = f"{tag}-{m['turn_id']}"
        if m.get("tool_call_id"):
            m["tool_call_id"] = f"{tag}-{m['tool_call_id']}"
        if m.get("tool_calls"):
            m["tool_calls"] = [{**call, "id": f"{tag}-{call['id']}"} for call in m["tool_calls"]]
        out.append(m)
    return out


def unique_turns(count: int, tag: str, seed: int = 4242) -> list[list[dict[str, Any]]]:
    """``count`` scenario turns whose ids no other ``tag`` shares."""
    return [relabel(t.messages(), tag) for t in islice(iter_turns(seed=seed), count)]


def turn_stream(tag: str, seed: int = 4242, cycle: int = 200) -> Any:
    """Endless turns with ids unique to ``tag``: ``cycle`` scenario turns, relabelled
    on each pass."""
    base = [t.messages() for t in islice(iter_turns(seed=seed), cycle)]
    n = 0
    while True:
        for turn in base:
            yield relabel(turn, f"{tag}.{n // cycle}")
            n += 1


PG = "postgresql://postgres@127.0.0.1:5432/test"


@contextmanager
def throwaway_schema(prefix: str) -> Iterator[str]:
    """A database URL in a PostgreSQL schema of its own, dropped afterwards whatever
    happened (a bench must not leave tables behind in the shared test database)."""
    schema = f"{prefix}_{uuid.uuid4().hex[:8]}"
    try:
        yield f"{PG}?schema={schema}"
    finally:
        import psycopg

        with psycopg.connect(PG, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
