"""The hand-out copy where CPython does not track dicts lazily (3.14, GH-127010; issue 38):
the same copies, found flat by their values' types instead of the collector."""

from __future__ import annotations

from context_compaction.application.runtime import handout

from containers import containers


def test_both_paths_hand_out_copies_that_share_no_container(handout_path: str) -> None:
    cached = [
        {"role": "user", "content": "flat", "n": 1, "f": 0.5, "b": True, "none": None},
        {"role": "user", "content": [{"type": "text", "text": "x"}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "assistant", "content": "", "audio": {}},
        ["a", {"b": []}],
    ]
    given = handout.handed_out(cached)
    assert given == cached
    originals = {id(c) for c in containers(cached)}
    assert len(containers(given)) == len(originals)
    assert not any(id(c) in originals for c in containers(given))
    given[3]["audio"]["id"] = "a"
    given[0]["cache_control"] = {"type": "ephemeral"}
    assert cached[3]["audio"] == {} and "cache_control" not in cached[0]
