"""``ctxc demo``: a realistic coding-agent session on an embedded SQLite file.

No network and no API key: the TurnRunner talks to a scripted provider that counts
every request and refuses, like a real one, those larger than its window; tools are
scripted too; the summarizer is the extractive one.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from context_compaction.application.agent.runner import TurnResult, TurnRunner
from context_compaction.application.contracts.settings import Settings

from ..bootstrap import bootstrap
from .scenario import Turn, coding_session
from .scripted import ScriptedProvider, ScriptedTools

Print = Callable[[str], None]

SYSTEM_PROMPT = (
    "You are a careful coding agent working in /srv/payments-api. Use the tools to read, "
    "test and patch code; report what you changed."
)
TOOLS = [
    {"type": "function", "function": {"name": name, "description": text,
                                      "parameters": {"type": "object", "properties": {}}}}
    for name, text in (
        ("read_file", "Read a file of the repository"),
        ("run_tests", "Run pytest"),
        ("grep", "Search the repository"),
        ("apply_patch", "Apply a unified diff"),
        ("screenshot", "Screenshot a dashboard URL"),
    )
]
MODEL = "gpt-4o"
CONFIGURED_WINDOW = 60_000
PROVIDER_WINDOW = 30_000
SID = "payments-refund-fix"


def _ok(envelope: dict[str, Any]) -> dict[str, Any]:
    if not envelope["ok"]:
        raise RuntimeError(f"demo step failed: {envelope['error']}")
    return envelope["result"]


def _indent(text: str, pad: str = "  ") -> str:
    return "\n".join(pad + line for line in text.splitlines())


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _steering(turn: Turn) -> Callable[[], list[str]]:
    step = {"i": 0}

    def poll() -> list[str]:
        text = turn.steering.get(step["i"])
        step["i"] += 1
        return [text] if text else []

    return poll


def run_demo(
    workdir: Path,
    *,
    turns: int = 12,
    out: Print = print,
    on_turn: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Run the demo in ``workdir`` (recreated); returns facts for tests."""
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    db = workdir / "demo.db"
    settings = Settings(
        database_url=f"sqlite:///{db}",
        summarizer="extractive",
        models={MODEL: {"token_limit": CONFIGURED_WINDOW}},
        context_compaction={"reserve_tokens": 8_192, "keep_recent_tokens": 6_000},
    )
    facts: dict[str, Any] = {"db": str(db)}
    script = coding_session(turns)
    provider = ScriptedProvider(script, window=PROVIDER_WINDOW)
    tools = ScriptedTools(script)
    _introduce(db, out)

    bus = bootstrap(settings)
    _ok(bus.dispatch_json({"type": "start_session", "session_id": SID, "model": MODEL}))
    results, versions = _run_turns(bus, script, provider, tools, out, on_turn)
    _summarize_turns(results, provider, tools, out, facts)
    live = _ok(bus.dispatch_json({"type": "get_projection", "session_id": SID}))
    raw = _ok(bus.dispatch_json({"type": "get_history", "session_id": SID, "include_invalidated": True}))
    facts["raw_messages"] = len(raw["messages"])
    bus.close()

    calls_before = provider.calls
    bus = bootstrap(settings)
    _show_restart(bus, live, raw, versions, provider.calls - calls_before, out, facts)
    _show_checkpoints_and_info(bus, out, facts)
    bus.close()
    out("")
    out(f"Inspect it yourself:  ctxc info {SID} --db {db}   ·   ctxc history {SID} --db {db}")
    return facts


def _introduce(db: Path, out: Print) -> None:
    out("context-compaction demo: an offline coding-agent session")
    out(f"  event store   {db} (SQLite, WAL)")
    out("  provider      scripted, no network; its real context window is "
        f"{PROVIDER_WINDOW:,} tokens")
    out(f"  our settings  {MODEL} token_limit {CONFIGURED_WINDOW:,} (too optimistic on purpose), "
        "reserve 8,192, keep recent 6,000")
    out("  summarizer    extractive (deterministic, offline)")
    out("")


def _run_turns(
    bus: Any,
    script: list[Turn],
    provider: ScriptedProvider,
    tools: ScriptedTools,
    out: Print,
    on_turn: Callable[[], None] | None,
) -> tuple[list[TurnResult], list[int]]:
    """Each turn through the TurnRunner, one table row per turn; the session's version
    after each."""
    runner = TurnRunner(bus, provider, tools)
    header = f"  {'turn':<8}{'seqs':>9}{'steps':>7}{'tools':>7}{'calls':>7}{'sent':>9}  what happened"
    out(header)
    out("  " + "-" * (len(header) + 20))
    results: list[TurnResult] = []
    versions: list[int] = []
    for turn in script:
        calls_before = len(provider.requests)
        result = asyncio.run(
            runner.run(
                SID,
                turn.request["content"],
                system_prompt=SYSTEM_PROMPT,
                tools=TOOLS,
                turn_id=turn.turn_id,
                steering=_steering(turn),
            )
        )
        results.append(result)
        if on_turn is not None:
            on_turn()
        versions.append(_ok(bus.dispatch_json({"type": "get_projection", "session_id": SID}))["version"])
        sent = max(provider.requests[calls_before:], default=0)
        out(f"  {turn.turn_id:<8}{f'{result.first_seq}-{result.last_seq}':>9}{result.steps:>7}"
            f"{result.tool_calls:>7}{result.provider_calls:>7}{sent:>9,}  "
            + ("; ".join(_what_happened(result)) or "-"))
    out("")
    return results, versions


def _what_happened(result: TurnResult) -> list[str]:
    events = []
    for c in result.compactions:
        change = f"{c.tokens_before:,} -> {c.tokens_after:,} tokens, kept {c.kept_turns} turns from seq {c.first_retained_seq}"
        if c.degraded:
            events.append(f"over the window and no summary possible: degraded trim, {change}")
        elif c.trigger_reason == "overflow":
            events.append(f"provider refused the request as too long; recovered with a summary, {change}")
        else:
            events.append(f"auto-compaction, {change}")
    if result.in_turn_trims:
        events.append("overflow after tools ran: step retried once with a locally trimmed request, "
                      "no tool re-run")
    trims = sum(1 for w in result.warnings if w.startswith("request trimmed"))
    if trims:
        events.append(f"{trims} request(s) trimmed locally within the turn")
    return events


def _summarize_turns(
    results: list[TurnResult],
    provider: ScriptedProvider,
    tools: ScriptedTools,
    out: Print,
    facts: dict[str, Any],
) -> None:
    compactions = [c for r in results for c in r.compactions]
    facts["auto_compactions"] = sum(1 for c in compactions if c.trigger_reason == "auto")
    facts["overflow_recoveries"] = sum(r.overflow_recoveries for r in results)
    facts["provider_overflows"] = provider.overflows
    facts["tool_runs"] = len(tools.executed)
    facts["tool_runs_unique"] = len(set(tools.executed))
    out(f"{len(results)} turns, {provider.calls} provider calls ({provider.overflows} refused as too long), "
        f"{len(tools.executed)} tool runs (each exactly once), "
        f"{facts['auto_compactions']} auto-compaction(s), {facts['overflow_recoveries']} overflow recovery(ies)")
    shown: set[str] = set()
    for c in compactions:
        kind = "degraded" if c.degraded else c.trigger_reason
        if kind in shown:
            continue
        shown.add(kind)
        label = {"auto": "First auto-compaction", "overflow": "First overflow recovery",
                 "degraded": "First degraded trim"}.get(kind, kind)
        out("")
        out(f"{label} (checkpoint {c.checkpoint_id}):")
        out(_indent(c.report))


def _show_restart(
    bus: Any,
    live: dict[str, Any],
    raw: dict[str, Any],
    versions: list[int],
    provider_calls: int,
    out: Print,
    facts: dict[str, Any],
) -> None:
    """A new process restores the same projection without the provider; an audit replay."""
    restored = _ok(bus.dispatch_json({"type": "get_projection", "session_id": SID}))
    same = _canonical(restored) == _canonical(live)
    facts["restore_identical"] = same
    facts["restore_provider_calls"] = provider_calls
    out("")
    out(f"Restart: a new process restores the identical projection ({len(restored['messages'])} messages, "
        f"checkpoint {restored['checkpoint_id']}): {'yes' if same else 'NO'}; provider calls: "
        f"{facts['restore_provider_calls']}")
    out(f"Raw history: all {len(raw['messages'])} messages kept, seqs 1..{raw['messages'][-1]['seq']}; "
        "compaction never rewrote one")

    at = versions[len(versions) // 2]
    replay = _ok(bus.dispatch_json({"type": "replay_session", "session_id": SID, "at_version": at}))
    out(f"Audit replay at version {at} (after {len(versions) // 2 + 1} turns): generation "
        f"{replay['context_generation']}, checkpoint {replay['active_checkpoint_id']}, "
        f"{len(replay['projection']['messages'])} messages in the projection then")
    facts["replay_version"] = at
    facts["replay"] = replay


def _show_checkpoints_and_info(bus: Any, out: Print, facts: dict[str, Any]) -> None:
    checkpoints = _ok(bus.dispatch_json({"type": "list_checkpoints", "session_id": SID}))["checkpoints"]
    out("")
    out("Checkpoints:")
    for cp in checkpoints:
        out(f"  gen {cp['generation']}  {cp['checkpoint_id']}  {cp['trigger_reason']:<8} "
            f"{cp['tokens_before']:>7,} -> {cp['tokens_after']:>6,}  first retained seq "
            f"{cp['first_retained_seq']}{'  degraded' if cp['degraded'] else ''}"
            f"{'  (active)' if cp['active'] else ''}")
    info = _ok(bus.dispatch_json({"type": "get_context_usage", "session_id": SID,
                                  "system_prompt": SYSTEM_PROMPT, "tools": TOOLS}))
    facts["info"] = info
    out("")
    out(f"/info for {SID} (in the restarted process, which budgets with the window the provider")
    out("reported in its overflow error: the session recorded it as a WindowLearned event):")
    out(_indent(info["text"]))
