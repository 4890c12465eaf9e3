"""Typed results hand out messages that share no dict or list with the cache (R8), each
copied when the caller takes it out (ADR 0058)."""

from __future__ import annotations

import copy
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
