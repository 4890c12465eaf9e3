"""``ctxc demo``: a realistic coding-agent session on an embedded SQLite file.

No network and no API key: the provider is scripted (``scenario.py``) and the
summarizer is the extractive one.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from context_compaction.application.settings import Settings

from .bootstrap import bootstrap
from .scenario import coding_session

Print = Callable[[str], None]


def _ok(envelope: dict[str, Any]) -> dict[str, Any]:
    if not envelope["ok"]:
        raise RuntimeError(f"demo step failed: {envelope['error']}")
    return envelope["result"]


SYSTEM_PROMPT = "You are a careful coding agent working in /srv/payments-api."


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def _chars(messages: list[dict[str, Any]]) -> int:
    return len(json.dumps(messages, ensure_ascii=False))


def run_demo(workdir: Path, *, turns: int = 6, out: Print = print) -> dict[str, Any]:
    """Run the demo in ``workdir`` (recreated); returns facts for tests."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    db = workdir / "demo.db"
    settings = Settings(
        database_url=f"sqlite:///{db}",
        summarizer="extractive",
        context_compaction={"keep_recent_tokens": 6000},
    )
    facts: dict[str, Any] = {"db": str(db)}

    out("context-compaction demo")
    out(f"  embedded SQLite event store: {db}  (no network, no API key)")
    out("")
    bus = bootstrap(settings)
    sid = "payments-refund-fix"
    _ok(bus.dispatch_json({"type": "start_session", "session_id": sid, "model": "gpt-4o"}))
    out(f"Session {sid!r} started on model gpt-4o")
    out("")
    out(f"  {'turn':<8}{'seqs':<12}{'msgs':>5}{'tool calls':>12}{'steering':>10}{'chars':>10}")
    script = coding_session(turns)
    versions: list[int] = []
    for turn in script:
        messages = turn.messages()
        result = _ok(
            bus.dispatch_json(
                {
                    "type": "append_messages",
                    "session_id": sid,
                    "messages": messages,
                    "command_id": f"{sid}:{turn.turn_id}",
                }
            )
        )
        versions.append(result["version"])
        seqs = result["seqs"]
        calls = sum(len(s.tool_calls) for s in turn.steps)
        out(
            f"  {turn.turn_id:<8}{f'{seqs[0]}-{seqs[-1]}':<12}{len(seqs):>5}{calls:>12}"
            f"{len(turn.steering):>10}{_chars(messages):>10,}"
        )
    retry = _ok(
        bus.dispatch_json(
            {
                "type": "append_messages",
                "session_id": sid,
                "messages": script[-1].messages(),
                "command_id": f"{sid}:{script[-1].turn_id}",
            }
        )
    )
    out("")
    out(f"A retried append (same command_id) returns seqs {retry['seqs'][0]}-{retry['seqs'][-1]} "
        f"again and appends nothing (duplicate={retry['duplicate']}).")

    live = _ok(bus.dispatch_json({"type": "get_projection", "session_id": sid}))
    facts["projection_messages"] = len(live["messages"])
    out(
        f"Projection: {len(live['messages'])} provider messages, {_chars(live['messages']):,} chars, "
        f"generation {live['context_generation']}, raw seqs {live['first_raw_seq']}..{live['max_raw_seq']}"
    )
    for note in live["diagnostics"]:
        out(f"  repair: {note}")

    bus.close()
    bus = bootstrap(settings)
    restored = _ok(bus.dispatch_json({"type": "get_projection", "session_id": sid}))
    same = json.dumps(restored, sort_keys=True) == json.dumps(live, sort_keys=True)
    facts["restore_identical"] = same
    out(f"Restart: a new bus on the same file restores the identical projection: {'yes' if same else 'NO'}")

    rewind_to = _ok(bus.dispatch_json({"type": "get_history", "session_id": sid}))["messages"]
    last_turn_start = next(m["seq"] for m in rewind_to if m.get("turn_id") == script[-1].turn_id)
    inv = _ok(
        bus.dispatch_json(
            {
                "type": "invalidate_history",
                "session_id": sid,
                "kind": "rewind",
                "to_seq": last_turn_start - 1,
                "reason": "user undid the last turn",
            }
        )
    )
    raw = _ok(bus.dispatch_json({"type": "get_history", "session_id": sid, "include_invalidated": True}))
    hidden = sum(1 for m in raw["messages"] if m["invalidated"])
    out(
        f"Rewind to seq {last_turn_start - 1} (undo the last turn): generation {inv['context_generation']}; "
        f"raw history still holds all {len(raw['messages'])} messages ({hidden} hidden from the model)"
    )
    after = _ok(bus.dispatch_json({"type": "append_messages", "session_id": sid,
                                   "messages": [{"role": "user", "content": "Let's try that differently."}]}))
    out(f"Next append gets seq {after['seqs'][0]}: seqs are never reused")

    out("")
    out("/info before compaction:")
    info = _ok(bus.dispatch_json({"type": "get_context_usage", "session_id": sid,
                                  "system_prompt": SYSTEM_PROMPT}))
    out(_indent(info["text"]))
    outcome = _ok(bus.dispatch_json({"type": "compact", "session_id": sid}))
    facts["compaction"] = outcome
    out("")
    out("/compact (extractive summarizer, offline):")
    out(_indent(outcome["report"]))
    src = outcome["summary_source"]
    out(f"  summarized seqs {src['first_seq']}..{src['last_seq']}: {src['source_messages']} messages, "
        f"{src['truncated_messages']} tool outputs cut to head/tail, {src['omitted_messages']} omitted")
    info = _ok(bus.dispatch_json({"type": "get_context_usage", "session_id": sid,
                                  "system_prompt": SYSTEM_PROMPT}))
    out("")
    out("/info after compaction:")
    out(_indent(info["text"]))
    summary = _ok(bus.dispatch_json({"type": "get_projection", "session_id": sid}))["messages"][0]["content"]
    out("")
    out("The summary block the model now sees first (excerpt):")
    out(_indent("\n".join(summary.splitlines()[:14]) + "\n  ..."))

    replay = _ok(bus.dispatch_json({"type": "replay_session", "session_id": sid, "at_version": versions[-1]}))
    replay_same = json.dumps(replay["projection"], sort_keys=True) == json.dumps(live, sort_keys=True)
    facts["replay_identical"] = replay_same
    out(
        f"Audit replay at version {versions[-1]} (before the rewind) reproduces the projection "
        f"that was live then: {'yes' if replay_same else 'NO'}"
    )
    bus.close()
    out("")
    out(f"Inspect it yourself:  ctxc dispatch --db {db}  <<< "
        f"'{{\"type\": \"get_history\", \"session_id\": \"{sid}\"}}'")
    return facts
