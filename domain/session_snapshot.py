"""Is a stored Session snapshot usable? (ADR 0022: stored data is not trusted.)

A snapshot is only a cache of the events: the store replays the events instead of
using one with a problem. The shape checked is the stored JSON, the same before and
after the aggregate's state was typed (``toolgroups.py``, ``checkpoint.py``), plus the
two fields of ADR 0051 (absent from older snapshots).
"""

from __future__ import annotations

from typing import Any


def _pair(value: Any, second: type) -> bool:
    return type(value) is list and len(value) == 2 and type(value[0]) is int and type(value[1]) is second


def snapshot_problem(state: dict[str, Any]) -> str | None:
    """What makes a stored snapshot of a Session unusable (None: usable as far as the
    aggregate's methods read it). A snapshot is only a cache of the events: the store
    replays the events instead of using one with a problem."""
    for name, kind in (("session_id", str), ("model", str), ("created_at", str), ("next_seq", int),
                       ("message_count", int), ("context_generation", int),
                       ("checkpoint_count", int), ("deleted", bool)):
        if type(state.get(name)) is not kind:
            return f"{name} is missing or has the wrong type"
    for name, kind in (("agent_token_limit", int), ("start_command_id", str),
                       ("legacy_last_compressed_message_at", int)):
        if state.get(name) is not None and type(state[name]) is not kind:
            return f"{name} has the wrong type"
    active = state.get("active_checkpoint")
    if active is not None and not (
        type(active) is dict and type(active.get("checkpoint_id")) is str
        and type(active.get("generation")) is int and type(active.get("first_retained_seq")) is int
    ):
        return "active_checkpoint has the wrong shape"
    invalidated, open_calls = state.get("invalidated"), state.get("open_calls")
    if type(invalidated) is not list or not all(_pair(r, int) for r in invalidated):
        return "invalidated is not a list of seq ranges"
    if type(open_calls) is not dict or not all(type(v) is int for v in open_calls.values()):
        return "open_calls is not an object of seqs"
    commands, groups = state.get("recent_commands"), state.get("tool_groups")
    if type(commands) is not dict or not all(_pair(v, int) for v in commands.values()):
        return "recent_commands is not an object of seq spans"
    if type(groups) is not list or not all(
        type(g) is dict and type(g.get("seq")) is int
        and type(g.get("calls")) is list and all(type(c) is str for c in g["calls"])
        and type(g.get("results")) is list and all(_pair(r, str) for r in g["results"])
        for g in groups
    ):
        return "tool_groups has the wrong shape"
    parents = state.get("checkpoint_parents", [])
    if type(parents) is not list or not all(
        type(p) is dict and type(p.get("checkpoint_id")) is str
        and type(p.get("generation")) is int and type(p.get("first_retained_seq")) is int
        for p in parents
    ):
        return "checkpoint_parents has the wrong shape"
    for name, kind in (("archived_upto", int), ("groups_incomplete", bool)):  # ADR 0051
        if name in state and type(state[name]) is not kind:
            return f"{name} has the wrong type"
    pinned = state.get("pinned", [])
    if type(pinned) is not list or not all(type(s) is int for s in pinned):
        return "pinned is not a list of seqs"
    return None
