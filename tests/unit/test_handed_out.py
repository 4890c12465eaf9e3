"""Typed results hand out messages that share no dict or list with the cache (R8), each
copied when the caller takes it out (ADR 0058)."""

from __future__ import annotations

import copy
import json
import pickle
import threading
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from context_compaction.application.handout import HandedOutMessages, handed_out


def _containers(value: Any) -> list[Any]:
    found = []
    if isinstance(value, (dict, list)):
        found.append(value)
        for item in value.values() if isinstance(value, dict) else value:
            found += _containers(item)
    return found


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
    originals = {id(c) for c in _containers(cached)}
    assert len(_containers(given)) == len(originals)
    assert not any(id(c) in originals for c in _containers(given))


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


# ------------------------------------------------- copied when taken out (ADR 0058)
def _cache() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "image_url", "image_url": {"url": "u"}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]


def _vandalize(value: Any) -> None:
    if isinstance(value, dict):
        for key in list(value):
            if isinstance(value[key], (dict, list)):
                _vandalize(value[key])
            elif isinstance(value[key], str):
                value[key] += " VANDALIZED"
        value["vandal"] = True
    elif isinstance(value, list):
        for item in value:
            _vandalize(item)
        value.append({"vandal": True})


def _shares_nothing(cached: list[Any], taken: Any) -> bool:
    originals = {id(c) for c in _containers(cached)}
    return not any(id(c) in originals for c in _containers(taken))


#: Every way a caller takes messages out of the list: each result is then edited.
TAKE_OUT: dict[str, Callable[[list[Any]], Any]] = {
    "index": lambda h: [h[i] for i in range(len(h))],
    "negative index": lambda h: [h[-i] for i in range(1, len(h) + 1)],
    "slice": lambda h: h[1:] + h[:1],
    "step slice": lambda h: h[::-1],
    "iteration": lambda h: [m for m in h],
    "reversed": lambda h: list(reversed(h)),
    "list()": list,
    "unpacking": lambda h: [*h],
    "tuple()": lambda h: list(tuple(h)),
    "enumerate": lambda h: [m for _, m in enumerate(h)],
    "sorted": lambda h: sorted(h, key=lambda m: m["role"]),
    "copy()": lambda h: h.copy(),
    "copy.copy": copy.copy,
    "deepcopy": copy.deepcopy,
    "pickle": lambda h: pickle.loads(pickle.dumps(h)),
    "concatenation": lambda h: h + [],
    "plain list + it": lambda h: [] + h,
    "repetition": lambda h: h * 1,
    "pop": lambda h: [h.pop() for _ in range(len(h))],
    "extend a plain list": lambda h: (lambda out: (out.extend(h), out)[1])([]),
}


@pytest.mark.parametrize("way", list(TAKE_OUT))
def test_what_a_caller_takes_out_shares_nothing_with_the_cache(way: str) -> None:
    cached = _cache()
    before = copy.deepcopy(cached)
    given = HandedOutMessages(cached)
    taken = TAKE_OUT[way](given)
    assert sorted(map(json.dumps, taken)) == sorted(map(json.dumps, before))  # (some reorder)
    assert _shares_nothing(cached, taken)
    _vandalize(taken)
    assert cached == before


#: Every way a caller reorders, removes or inserts before walking the list again.
REARRANGE: dict[str, Callable[[list[Any]], None]] = {
    "insert": lambda h: h.insert(0, {"role": "user", "content": "mine"}),
    "del": lambda h: h.__delitem__(0),
    "del slice": lambda h: h.__delitem__(slice(0, 2)),
    "remove": lambda h: h.remove({"role": "tool", "tool_call_id": "c1", "content": "ok"}),
    "sort": lambda h: h.sort(key=lambda m: m["role"]),
    "reverse": lambda h: h.reverse(),
    "slice assignment": lambda h: h.__setitem__(slice(0, 1), [{"role": "user", "content": "mine"}]),
    "in-place repetition": lambda h: h.__imul__(2),
    "append": lambda h: h.append({"role": "user", "content": "mine"}),
    "extend": lambda h: h.extend([{"role": "user", "content": "mine"}]),
    "+=": lambda h: h.__iadd__([{"role": "user", "content": "mine"}]),
    "item assignment": lambda h: h.__setitem__(2, {"role": "user", "content": "mine"}),
    "extended by itself": lambda h: h.extend(h),
    "+= itself": lambda h: h.__iadd__(h),
    "slice assigned itself": lambda h: h.__setitem__(slice(0, 0), h),
}


@pytest.mark.parametrize("way", list(REARRANGE))
def test_rearranging_then_editing_everything_changes_nothing_cached(way: str) -> None:
    cached = _cache()
    before = copy.deepcopy(cached)
    given = HandedOutMessages(cached)
    REARRANGE[way](given)
    for index in range(len(given)):
        _vandalize(given[index])
    for message in given:
        _vandalize(message)
    assert cached == before
    assert _shares_nothing(cached, list(given))


def test_clearing_leaves_the_cache_whole() -> None:
    cached = _cache()
    given = HandedOutMessages(cached)
    given.clear()
    assert given == [] and len(cached) == 5


def test_nothing_is_copied_until_it_is_taken_out() -> None:
    cached = _cache()
    given = HandedOutMessages(cached)
    assert all(list.__getitem__(given, i) is cached[i] for i in range(len(cached)))
    taken = given[1]
    assert taken is not cached[1] and taken == cached[1]
    assert list.__getitem__(given, 1) is taken
    assert all(list.__getitem__(given, i) is cached[i] for i in (0, 2, 3, 4))


def test_a_message_taken_out_twice_is_the_same_edited_copy() -> None:
    cached = _cache()
    given = HandedOutMessages(cached)
    given[1]["content"][0]["cache_control"] = {"type": "ephemeral"}
    given[-1]["content"] = "edited"
    assert given[1] is given[1] and given[1]["content"][0]["cache_control"] == {"type": "ephemeral"}
    walked = list(given)
    assert walked[-1]["content"] == "edited" and walked[1] is given[1]
    # readers that do not take anything out see the caller's edits too
    assert json.loads(json.dumps(given))[-1]["content"] == "edited"
    assert orjson.loads(orjson.dumps(given))[1]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert cached[-1]["content"] == "done" and "cache_control" not in cached[1]["content"][0]


def test_what_the_caller_puts_in_is_kept_as_it_is() -> None:
    given = HandedOutMessages(_cache())
    mine, other = {"role": "user", "content": "mine"}, {"role": "user", "content": "other"}
    given.append(mine)
    given[0] = other
    assert given[-1] is mine and given[0] is other
    assert [m for m in given][0] is other


def test_reads_compare_and_serialize_like_the_plain_list() -> None:
    cached = _cache()
    given = HandedOutMessages(cached)
    assert given == cached and len(given) == len(cached) and isinstance(given, list)
    assert json.dumps(given) == json.dumps(cached)
    assert orjson.dumps(given) == orjson.dumps(cached)
    assert cached[3] in given and given.index(cached[3]) == 3
    with pytest.raises(IndexError):
        given[len(cached)]
    with pytest.raises(TypeError):
        given["role"]


def test_threads_taking_one_message_out_get_the_same_copy() -> None:
    cached = [{"role": "user", "content": [{"type": "text", "text": str(i)}]} for i in range(2_000)]
    given = HandedOutMessages(cached)
    seen: list[list[int]] = []
    start = threading.Barrier(4)

    def take() -> None:
        start.wait()
        seen.append([id(given[i]) for i in range(len(given))])

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 4 and all(ids == seen[0] for ids in seen)
    assert _shares_nothing(cached, list(given))
