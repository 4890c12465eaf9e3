"""Recall of compacted history (issue 16): get_history ranges, search_history."""

from __future__ import annotations

import pytest

from backends import MakeHarness
from helpers import Harness, assistant, err, event_count, ok, user
from rv_builders import RV, rv_session

#: Issue 16's done-when asks for these on SQLite and PostgreSQL; memory:// answers alike
#: (ADR 0045). Tests marked ``backends(...)`` pick their own.
BACKENDS = ("memory", "sqlite", "postgres")

SID = "r"


def start(make_harness: MakeHarness, **settings) -> Harness:
    settings.setdefault("context_compaction", {"keep_recent_tokens": 400})
    h = make_harness("recall", **settings)
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    return h


def append(h: Harness, *messages: dict) -> list[int]:
    return ok(h.do({"type": "append_messages", "session_id": SID, "messages": list(messages)}))["seqs"]


def history(h: Harness, **query) -> list[dict]:
    return ok(h.do({"type": "get_history", "session_id": SID, **query}))["messages"]


def test_get_history_pages_ascend_from_from_seq_and_limit_cuts_the_end(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    for i in range(10):
        append(h, user(f"question {i}"), assistant(f"answer {i}"))
    assert [m["seq"] for m in history(h, from_seq=5, to_seq=9)] == [5, 6, 7, 8, 9]
    assert [m["seq"] for m in history(h, from_seq=5, limit=3)] == [5, 6, 7]
    assert [m["seq"] for m in history(h, to_seq=3)] == [1, 2, 3]
    assert [m["seq"] for m in history(h, from_seq=19, limit=10)] == [19, 20]
    assert history(h, from_seq=30) == []
    ok(h.do({"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [6]}))
    assert [m["seq"] for m in history(h, from_seq=5, limit=3)] == [5, 7, 8]
    assert [m["seq"] for m in history(h, from_seq=5, limit=3, include_invalidated=True)] == [5, 6, 7]


def test_get_history_refuses_a_reversed_range_or_a_bad_limit(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    append(h, user("hello"))
    for query in ({"from_seq": 5, "to_seq": 4}, {"limit": 0}, {"limit": -1}, {"from_seq": 0}):
        err(h.do({"type": "get_history", "session_id": SID, **query}), "invalid_command")
    assert [m["seq"] for m in history(h, from_seq=1, to_seq=1)] == [1]


def turn(i: int, fact: str = "") -> list[dict]:
    return [user(f"step {i}: please continue with the work {fact}".strip()),
            assistant(f"done with step {i}; " + "details " * 40)]


def test_a_fact_dropped_from_the_summary_is_found_and_its_turn_expanded(make_harness: MakeHarness) -> None:
    from helpers import RecordingSummarizer

    summary = "## Goal\nKeep going with the steps."  # the port number is not in it
    h = start(make_harness, adapters={"summarizer": RecordingSummarizer(text=summary)})
    # (plain words: the must-keep ledger restores paths, ports and ids to a summary)
    seqs = append(h, *turn(0, "the staging box is nicknamed bluefinch by the ops crew"))
    for i in range(1, 12):
        append(h, *turn(i))
    outcome = ok(h.do({"type": "compact", "session_id": SID}))
    assert outcome["status"] == "compacted" and outcome["first_retained_seq"] > seqs[1]
    projection = ok(h.do({"type": "get_projection", "session_id": SID}))["messages"]
    assert not any("bluefinch" in str(m["content"]) for m in projection)
    hits = ok(h.do({"type": "search_history", "session_id": SID, "query": "nicknamed bluefinch"}))["hits"]
    assert [(x["seq"], x["role"], x["compacted"]) for x in hits] == [(seqs[0], "user", True)]
    assert "bluefinch" in hits[0]["snippet"] and hits[0]["score"] > 0
    expanded = history(h, from_seq=hits[0]["seq"], to_seq=hits[0]["seq"] + 1)
    assert [m["seq"] for m in expanded] == seqs and "bluefinch" in expanded[0]["content"]
    # a recent message is found too, and is not compacted
    recent = ok(h.do({"type": "search_history", "session_id": SID, "query": "step 11"}))["hits"]
    assert recent and recent[0]["compacted"] is False and recent[0]["seq"] >= outcome["first_retained_seq"]


def test_search_excludes_invalidated_messages_unless_asked(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    kept, gone = append(h, user("the ticket is PROJ-1234"), user("the ticket was PROJ-9999 wrongly"))
    ok(h.do({"type": "invalidate_history", "session_id": SID, "kind": "delete", "seqs": [gone]}))
    search = {"type": "search_history", "session_id": SID, "query": "ticket"}
    assert [x["seq"] for x in ok(h.do(search))["hits"]] == [kept]
    both = ok(h.do({**search, "include_invalidated": True}))["hits"]
    assert sorted(x["seq"] for x in both) == [kept, gone]
    assert [x["invalidated"] for x in sorted(both, key=lambda x: x["seq"])] == [False, True]
    assert ok(h.do({**search, "limit": 1, "include_invalidated": True}))["hits"][0]["seq"] in (kept, gone)
    assert len(ok(h.do({**search, "limit": 1, "include_invalidated": True}))["hits"]) == 1


def test_the_runner_offers_recall_history_and_answers_it_locally(make_harness: MakeHarness, provider) -> None:
    import asyncio
    import json

    from context_compaction import RECALL_HISTORY_TOOL
    from context_compaction.application.agent.runner import TurnRunner
    from context_compaction.infrastructure.providers import LiteLLMChatProvider
    from fakeprovider import Reply
    from helpers import FAKE_MODEL

    h = make_harness("runner", models={FAKE_MODEL: {"api_base": provider.base_url, "api_key": "k"}})
    ok(h.do({"type": "start_session", "session_id": SID, "model": FAKE_MODEL}))
    (seq,) = append(h, user("remember: the release branch is rel/2024-q3"))
    provider.queue(
        Reply.calls(("r1", "recall_history", {"query": "release branch"})),
        Reply.calls(("r2", "recall_history", {"from_seq": seq, "to_seq": seq})),
        Reply(text="It is rel/2024-q3."),
    )
    host_calls: list[dict] = []

    async def host_tool(call: dict) -> str:
        host_calls.append(call)
        return "host"

    runner = TurnRunner(h.bus, LiteLLMChatProvider(h.bus.services.settings, timeout=10), host_tool)
    result = asyncio.run(runner.run(SID, "Which release branch?", recall=True, turn_id="t"))
    assert result.answer == "It is rel/2024-q3." and host_calls == []
    offered = provider.requests[0].body["tools"]
    assert offered == [RECALL_HISTORY_TOOL]
    tool_results = [m for m in ok(h.do({"type": "get_history", "session_id": SID}))["messages"] if m["role"] == "tool"]
    search, expand = (json.loads(m["content"]) for m in tool_results)
    # (the question and the tool call itself match too: they are history now)
    assert seq in [x["seq"] for x in search["hits"]]
    assert [(m["seq"], m["content"]) for m in expand["messages"]] == [(seq, "remember: the release branch is rel/2024-q3")]
    # without recall=True the tool is not offered
    provider.queue(Reply(text="ok"))
    asyncio.run(runner.run(SID, "again", turn_id="t2"))
    assert "tools" not in provider.requests[-1].body or not provider.requests[-1].body["tools"]


def test_run_recall_answers_bad_arguments_with_an_error_for_the_model(make_harness: MakeHarness) -> None:
    import json

    from context_compaction import run_recall

    h = start(make_harness)
    append(h, user("x"))
    for arguments in ("not json", "[]", "{}", '{"from_seq": 0}', '{"from_seq": 3, "to_seq": 1}'):
        assert "error" in json.loads(run_recall(h.bus, SID, arguments)), arguments
    assert json.loads(run_recall(h.bus, SID, {"from_seq": 1}))["messages"][0]["content"] == "x"


@pytest.mark.backends("sqlite", "postgres")  # (user text never reaches SQL as syntax)
def test_search_query_is_text_never_syntax(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    (seq,) = append(h, user('he said "OR" NEAR the end; it\'s 50% done * (x:y) ^ -z \x07bell\nline'))
    for query in ('"OR"', "NEAR", "it's", "50%", "(x:y)", "^", "-z", "'; DROP TABLE rm_messages; --",
                  "AND OR NOT", '"', "*", "x:y"):
        result = h.do({"type": "search_history", "session_id": SID, "query": query})
        assert result["ok"], (query, result)
    assert [x["seq"] for x in ok(h.do({"type": "search_history", "session_id": SID, "query": "NEAR"}))["hits"]] == [seq]
    assert ok(h.do({"type": "search_history", "session_id": SID, "query": "*"}))["hits"] == []
    snippet = ok(h.do({"type": "search_history", "session_id": SID, "query": "bell"}))["hits"][0]["snippet"]
    assert "\x07" not in snippet and "\n" not in snippet and "bell line" in snippet
    assert history(h) and len(history(h)) == 1  # nothing was dropped
    err(h.do({"type": "search_history", "session_id": SID, "query": ""}), "invalid_command")
    err(h.do({"type": "search_history", "session_id": SID, "query": "x", "limit": 0}), "invalid_command")
    err(h.do({"type": "search_history", "session_id": "nobody", "query": "x"}), "session_not_found")


@pytest.mark.backends("sqlite", "postgres")  # (its subject is the storage)
def test_search_index_is_rebuilt_from_the_events(make_harness: MakeHarness) -> None:
    h = start(make_harness)
    append(h, user("the deploy uses version 3.2.1"), assistant("noted: version 3.2.1"))
    before = ok(h.do({"type": "search_history", "session_id": SID, "query": "3.2.1"}))["hits"]
    assert len(before) == 2
    rm = h.bus.services.read_model
    rm.rebuild()
    assert ok(h.do({"type": "search_history", "session_id": SID, "query": "3.2.1"}))["hits"] == before
    from context_compaction.infrastructure.verify import verify

    report = h.inspect.verify()
    assert report.tables["rm_search"].ok and report.tables["rm_search"].rebuilt == 2


# The recall tool answers any bad arguments with an error for the model, changing nothing.
@pytest.mark.parametrize(
    "arguments",
    ['{"query": "bluefinch", "limit": "5"}', '{"from_seq": 1, "limit": "5"}', '{"from_seq": 1, "limit": [1]}',
     '{"query": "bluefinch", "limit": {"a": 1}}', '{"from_seq": "1"}', '{"query": 5}', "[]", "null", "{",
     '{"from_seq": 2, "to_seq": 1}', '{"query": "x", "limit": 0}', '{"query": "x", "limit": true}'],
)
@pytest.mark.backends("sqlite", "postgres")
def test_recall_answers_any_bad_arguments_with_an_error_for_the_model(make_harness: MakeHarness, arguments: str) -> None:
    import json

    from context_compaction import run_recall

    h = rv_session(make_harness)
    ok(h.do({"type": "append_messages", "session_id": RV, "messages": [user("bluefinch"), assistant("ok")]}))
    events = event_count(h)
    answer = json.loads(run_recall(h.bus, RV, arguments))
    assert set(answer) == {"error"} and answer["error"], answer
    assert event_count(h) == events
