"""Projection rules (spec §7.1, §5.11, §20.4): framing, provider state, tool-chain repair."""

from __future__ import annotations

import pytest

import json

from hypothesis import given, settings

from context_compaction.domain.checkpoint import Checkpoint
from context_compaction.domain.projection import (
    SUMMARY_FOOTER,
    SUMMARY_HEADER,
    ProjectionBuilder,
    build_projection,
)
from context_compaction.domain.provider_messages import ProviderIdentity
from helpers import Harness, assistant, err, ok, tool, user
from projection_builders import rec


CLAUDE = ProviderIdentity("anthropic", "anthropic/claude-sonnet-4-5")


def test_hostile_transcoder_shaped_objects_survive_storage(harness: Harness) -> None:
    weird = {"_type_": "datetime_iso", "_data_": "not a date"}
    nested = {"_type_": "ctxc_escaped_object", "_data_": [["a", 1]]}
    ok(harness.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    message = assistant("hi", provider_state={"provider": "openai", "model": "gpt-4o",
                                              "data": {"x": weird, "y": [nested]}})
    ok(harness.do({"type": "append_messages", "session_id": "s",
                   "messages": [user("hello"), message,
                                {"role": "user", "content": [{"type": "input_audio",
                                                              "input_audio": weird}]}]}))
    harness.reopen()
    stored = ok(harness.do({"type": "get_history", "session_id": "s"}))["messages"]
    assert stored[1]["provider_state"]["data"] == {"x": weird, "y": [nested]}
    assert stored[2]["content"][0]["input_audio"] == weird
    ok(harness.do({"type": "append_messages", "session_id": "s", "messages": [user("still loadable")]}))
    p = ok(harness.do({"type": "replay_session", "session_id": "s", "at_version": 3}))
    assert p["projection"]["messages"][1]["x"] == weird


def test_user_ids_shaped_like_transcoder_markers_survive_snapshots(make_harness) -> None:
    h = make_harness("snapshots", snapshot_interval=2)
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    ok(h.do({"type": "append_messages", "session_id": "s", "command_id": "_type_", "messages": [user("a")]}))
    ok(h.do({"type": "append_messages", "session_id": "s", "command_id": "_data_",
             "messages": [assistant(None, [("_type_", "f", "{}"), ("_data_", "g", "{}")])]}))
    h.reopen()  # the next command loads the session from its snapshot
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [tool("_type_", "1"), tool("_data_", "2")]}))
    assert ok(h.do({"type": "append_messages", "session_id": "s", "command_id": "_type_",
                    "messages": [user("a")]}))["seqs"] == [1]
    assert [m["role"] for m in ok(h.do({"type": "get_projection", "session_id": "s"}))["messages"]] == [
        "user", "assistant", "tool", "tool"]


def test_a_long_session_reloads_from_its_latest_snapshot(make_harness) -> None:
    h = make_harness("sparse", snapshot_interval=2)
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    for i in range(60):
        ok(h.do({"type": "append_messages", "session_id": "s", "messages": [
            assistant(None, [(f"c{i}", "f", "{}")]), tool(f"c{i}", str(i))]}))
    before = ok(h.do({"type": "get_projection", "session_id": "s"}))
    snapshots = h.bus.services.events.app.snapshots
    aggregate_id = h.bus.services.events.load("s").id
    versions = [s.originator_version for s in snapshots.recorder.select_events(aggregate_id)]
    # every ``snapshot_interval`` events whatever the size (ADR 0051): a cold load
    # replays at most one interval
    assert versions and max(versions) >= 121 - 2
    h.reopen()  # cold: the latest snapshot plus the events after it
    assert ok(h.do({"type": "get_projection", "session_id": "s"})) == before
    # The reloaded aggregate still knows every tool group and every open call.
    err(h.do({"type": "append_messages", "session_id": "s", "messages": [tool("c3", "again")]}),
        "invalid_message")
    ok(h.do({"type": "append_messages", "session_id": "s", "messages": [
        assistant(None, [("c60", "f", "{}")]), tool("c60", "x")]}))
    refused = err(h.do({"type": "invalidate_history", "session_id": "s", "kind": "delete",
                        "seqs": [120]}), "invalid_message")
    assert refused["details"]["tool_group_seqs"] == [119, 120]
