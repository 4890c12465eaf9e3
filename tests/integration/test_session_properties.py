"""Property: for random append / clear / rewind / delete sequences the invariants of
DESIGN §3 hold, and a restore (new bus on the file) equals the live projection."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backends import Databases
from helpers import Harness, assistant, tool, user

_examples = itertools.count()

ops = st.one_of(
    st.tuples(st.just("user"), st.integers(1, 3)),
    st.tuples(st.just("tools"), st.integers(1, 3)),
    st.tuples(st.just("clear"), st.just(0)),
    st.tuples(st.just("rewind"), st.integers(0, 40)),
    st.tuples(st.just("delete"), st.integers(1, 40)),
)


def check_tool_chains(messages: list[dict]) -> None:
    """Every tool result directly follows the assistant that called it; no call is unanswered."""
    i = 0
    while i < len(messages):
        m = messages[i]
        assert m["role"] != "tool", f"orphan tool result at {i}"
        if m["role"] == "assistant" and m.get("tool_calls"):
            ids = [c["id"] for c in m["tool_calls"]]
            results = [x["tool_call_id"] for x in messages[i + 1 : i + 1 + len(ids)]]
            assert sorted(results) == sorted(ids), (ids, results)
            i += len(ids)
        i += 1


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(ops, min_size=1, max_size=18))
def test_invariants_hold_and_restore_equals_live(databases: Databases, sequence) -> None:
    # One database for every example, a session of its own for each: a schema (or file)
    # per example cost more than the example (the restore is still a new bus).
    h = databases.harnesses[0] if databases.harnesses else databases.harness("examples")
    run(h, f"s{next(_examples)}", sequence)


def run(h: Harness, sid: str, sequence) -> None:
    assert h.do({"type": "start_session", "session_id": sid, "model": "gpt-4o"})["ok"]
    visible: dict[int, str] = {}  # seq -> role, per the reference model
    next_seq, generation, calls = 1, 0, 0
    raw_before: list[dict] = []
    for kind, n in sequence:
        if kind == "user":
            msgs = [user(f"u{next_seq + i}") for i in range(n)]
        elif kind == "tools":
            ids = [f"call{calls + i}" for i in range(n)]
            calls += n
            msgs = [assistant(None, [(c, "f", "{}") for c in ids])] + [tool(c, "out") for c in ids]
        if kind in ("user", "tools"):
            r = h.do({"type": "append_messages", "session_id": sid, "messages": msgs})
            assert r["ok"], r
            assert r["result"]["seqs"] == list(range(next_seq, next_seq + len(msgs)))
            for seq, m in zip(r["result"]["seqs"], msgs, strict=True):
                visible[seq] = m["role"]
            next_seq += len(msgs)
        elif kind == "clear":
            assert h.do({"type": "invalidate_history", "session_id": sid, "kind": "clear"})["ok"]
            visible.clear()
            generation += 1
        elif kind == "rewind":
            r = h.do({"type": "invalidate_history", "session_id": sid, "kind": "rewind", "to_seq": n})
            assert r["ok"], r
            if n < next_seq - 1:
                generation += 1
                visible = {s: role for s, role in visible.items() if s <= n}
        elif kind == "delete":
            r = h.do({"type": "invalidate_history", "session_id": sid, "kind": "delete", "seqs": [n],
                      "expand_tool_groups": True})
            if n in visible:
                assert r["ok"], r
                generation += 1
                excluded = {s for lo, hi in r["result"]["excluded_seqs"] for s in range(lo, hi + 1)}
                assert n in excluded
                visible = {s: role for s, role in visible.items() if s not in excluded}
            else:
                assert r["error"]["code"] == "invalid_command"

        raw = h.do({"type": "get_history", "session_id": sid, "include_invalidated": True})["result"]["messages"]
        seqs = [m["seq"] for m in raw]
        assert seqs == list(range(1, next_seq)), "seqs are 1..N, strictly increasing, never reused"
        strip = [{k: v for k, v in m.items() if k != "invalidated"} for m in raw]
        assert strip[: len(raw_before)] == raw_before, "raw history is append-only"
        raw_before = strip
        assert {m["seq"] for m in raw if not m["invalidated"]} == set(visible)

        p = h.do({"type": "get_projection", "session_id": sid})["result"]
        assert p["context_generation"] == generation
        check_tool_chains(p["messages"])
        users = [m for m in p["messages"] if m["role"] == "user"]
        assert len(users) == sum(1 for role in visible.values() if role == "user")

    live = h.do({"type": "get_projection", "session_id": sid})
    h.reopen()
    assert h.do({"type": "get_projection", "session_id": sid}) == live
