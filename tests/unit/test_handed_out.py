"""Typed results hand out messages that share no dict or list with the cache (R8), each
copied when the caller takes it out (ADR 0058)."""

from __future__ import annotations

import copy
import gc
import json
import pickle
import threading
from collections.abc import Callable

import orjson
import pytest

from context_compaction.application.runtime.handout import handed_out
from containers import containers


def test_every_dict_and_list_is_new_and_equal() -> None:
    cached = [
        {"role": "user", "content": "flat"},
        {"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "image_url",
                                                                  "image_url": {"url": "u"}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "assistant", "content": "", "thinking_blocks": [{"type": "thinking", "thinking": "t"}],
         "audio": {}, "extra": [[], {}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok", "n": 3, "f": 1.5, "b": None},
    ]
    given = handed_out(cached)
    assert given == cached
    originals = {id(c) for c in containers(cached)}
    assert len(containers(given)) == len(originals)
    assert not any(id(c) in originals for c in containers(given))


def _tool_calls(n: int) -> list[dict[str, object]]:
    return [{"role": "assistant", "content": None, "tool_calls": [
        {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}]} for i in range(n)]


def test_the_collector_waits_while_the_copy_is_made_and_is_switched_back_on() -> None:
    # (ADR 0088: young collections in the middle of a copy scan the half-made copy)
    cached = _tool_calls(2000)
    starts: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            starts.append(info["generation"])

    was_enabled, threshold = gc.isenabled(), gc.get_threshold()
    gc.enable()
    gc.set_threshold(10)  # 8,000 containers would start hundreds of collections
    gc.callbacks.append(seen)
    try:
        given = handed_out(cached)
        during = len(starts)  # (no allocation: a list here would start the deferred collection)
        on_after = gc.isenabled()
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*threshold)
        if not was_enabled:
            gc.disable()
    assert given == cached
    assert during == 0
    assert on_after


def test_a_collector_the_host_switched_off_stays_off() -> None:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        given = handed_out(_tool_calls(3))
        still_off = not gc.isenabled()
    finally:
        if was_enabled:
            gc.enable()
    assert given == _tool_calls(3)
    assert still_off


def test_changing_what_was_handed_out_leaves_the_source_alone() -> None:
    cached = [{"role": "user", "content": [{"type": "text", "text": "x"}]}, {"role": "user", "content": "y"},
              {"role": "assistant", "content": "", "audio": {}}]
    before = repr(cached)
    given = handed_out(cached)
    given[0]["content"][0]["cache_control"] = {"type": "ephemeral"}
    given[0]["content"].append({"type": "text", "text": "added"})
    given[1]["cache_control"] = {"type": "ephemeral"}
    given[2]["audio"]["id"] = "a"
    assert repr(cached) == before
