"""Retention benchmark (issue 16): what survives many compactions, verbatim.

A coding-agent transcript with planted must-keep items — facts of every kind the
ledger knows (paths, ids, commit hashes, ports, versions, URLs, settings, errors),
user constraints and user corrections — plus settings that are set again later, whose
old values must not come back as current. It is run through the real bus (SQLite,
auto-compaction in ``prepare_turn``) and at the end the projection the model would see
is searched for every item. Two summarizers: the extractive one, and a fake "LLM" that
is the extractive one with a set share of the planted facts removed from its output
(as a model that forgets would). Deterministic: no clock, no randomness, no network.

    python benchmarks/retention.py [--turns 200] [--window 128000] [--json out.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from context_compaction import Settings, bootstrap  # noqa: E402
from context_compaction.application.contracts.ports import SummaryRequest, SummaryResult  # noqa: E402
from context_compaction.infrastructure.summarizers import ExtractiveSummarizer  # noqa: E402

MODEL = "gpt-4o"
FACT_KINDS = ("path", "id", "commit", "port", "version", "url", "setting", "error")


@dataclass
class Planted:
    kind: str  # a fact kind, "constraint", "correction" or "superseded"
    value: str
    turn: int


@dataclass
class Transcript:
    turns: list[list[dict[str, Any]]] = field(default_factory=list)
    planted: list[Planted] = field(default_factory=list)


def _hex(n: int) -> str:
    digest = hashlib.sha1(f"commit-{n}".encode()).hexdigest()
    return "a1" + digest[:8]  # always a letter and a digit: a commit hash, not a number


def _filler(t: int, chars: int) -> str:
    lines = []
    n = 0
    while sum(len(x) + 1 for x in lines) < chars:
        lines.append(f"    result_{t}_{n} = compute_step({n}, scale={t % 7}, label='row {n} of batch {t}')")
        n += 1
    return "\n".join(lines)


def _fact(kind: str, t: int) -> tuple[str, str]:
    """(the sentence that states it, the exact value)."""
    if kind == "path":
        v = f"src/pkg{t}/handler_{t}.py"
        return f"The handler lives in {v}.", v
    if kind == "id":
        v = f"TKT-{1000 + t}"
        return f"This is tracked as {v}.", v
    if kind == "commit":
        v = _hex(t)
        return f"The fix landed in commit {v}.", v
    if kind == "port":
        v = str(20000 + t)
        return f"The worker listens on port {v} now.", v
    if kind == "version":
        v = f"{t % 9 + 1}.{t % 7}.{t}"
        return f"We pinned the client to {v} for this.", v
    if kind == "url":
        v = f"https://docs.example.com/runbook/{t}"
        return f"The runbook is at {v} for reference.", v
    if kind == "setting":
        v = f"OPT_{t}=on{t}"
        return f"Set {v} in the environment.", v
    v = f"KeyError: missing key k{t} in config"
    return v, v


def transcript(turns: int, tool_chars: int = 6_000) -> Transcript:
    """Two planted facts a turn, a constraint every 10th turn, a correction every 15th,
    and every 20th setting set again 40 turns later (its old value superseded)."""
    out = Transcript()
    resets: dict[int, tuple[str, str]] = {}
    for t in range(turns):
        tid = f"t{t}"
        kinds = (FACT_KINDS[(2 * t) % 8], FACT_KINDS[(2 * t + 1) % 8])
        user_parts = [f"Step {t}: continue with the migration of module {t}."]
        answer_parts = [f"Step {t} is done."]
        tool_text = _filler(t, tool_chars)
        for n, kind in enumerate(kinds):
            sentence, value = _fact(kind, t)
            out.planted.append(Planted(kind, value, t))
            if kind == "error":
                tool_text += "\n" + sentence
            elif n == 0:
                user_parts.append(sentence)
            else:
                answer_parts.append(sentence)
            if kind == "setting" and t % 20 == 7 and t + 40 < turns:
                resets[t + 40] = (f"OPT_{t}", value)
        if t % 10 == 3:
            c = f"You must never modify the generated file gen_{t}.pb.go."
            user_parts.append(c)
            out.planted.append(Planted("constraint", c, t))
        if t % 15 == 7:
            c = f"Actually, the deadline is day {t + 30}, not day {t}."
            user_parts.insert(0, c)
            out.planted.append(Planted("correction", c, t))
        if t in resets:
            name, old = resets[t]
            new = f"{name}=off{t}"
            user_parts.append(f"Change of plan: set {new} from now on.")
            out.planted.append(Planted("superseded", old, t))
            out.planted.append(Planted("setting", new, t))
        call = {"id": f"call_{t}", "type": "function",
                "function": {"name": "run_tests", "arguments": json.dumps({"module": f"mod{t}"})}}
        out.turns.append([
            {"role": "user", "content": " ".join(user_parts), "turn_id": tid},
            {"role": "assistant", "content": None, "tool_calls": [call], "turn_id": tid},
            {"role": "tool", "tool_call_id": f"call_{t}", "content": tool_text, "turn_id": tid},
            {"role": "assistant", "content": " ".join(answer_parts), "turn_id": tid},
        ])
    return out


class ForgetfulSummarizer:
    """A fake LLM: the extractive summary with a share of the planted facts forgotten.

    Which facts it forgets is fixed by a hash of the value, so it forgets the same ones
    at every compaction — the worst case for a cumulative summary.
    """

    provider_kind = "llm:fake-forgetful"

    def __init__(self, planted: list[Planted], share: float) -> None:
        cut = int(share * 1000)
        self.forget = [
            p.value for p in planted
            if p.kind in FACT_KINDS and int(hashlib.sha1(p.value.encode()).hexdigest(), 16) % 1000 < cut
        ]
        self.inner = ExtractiveSummarizer()

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        text = self.inner.summarize(request).text
        lines = [ln for ln in text.splitlines() if not any(v in ln for v in self.forget)]
        return SummaryResult(text="\n".join(lines), provider_kind=self.provider_kind, model="fake-forgetful")


def stated(text: str, value: str) -> bool:
    """The value appears as current: somewhere not marked superseded."""
    start = 0
    while (i := text.find(value, start)) >= 0:
        if not text.startswith(" (superseded", i + len(value)):
            return True
        start = i + 1
    return False


def run(turns: int, window: int, summarizer: str, share: float, tool_chars: int) -> dict[str, Any]:
    script = transcript(turns, tool_chars)
    with tempfile.TemporaryDirectory() as tmp:
        reserve = min(16_384, window // 8)
        settings = Settings(
            database_url=f"sqlite:///{Path(tmp) / 'retention.db'}",
            summarizer="extractive",
            models={MODEL: {"token_limit": window}},
            context_compaction={"reserve_tokens": reserve, "keep_recent_tokens": min(20_000, window // 6)},
        )
        extra: dict[str, Any] = {}
        if summarizer == "forgetful":
            extra["summarizer"] = ForgetfulSummarizer(script.planted, share)
        bus = bootstrap(settings, **extra)
        sid = "retention"
        started = time.perf_counter()
        bus.dispatch_json({"type": "start_session", "session_id": sid, "model": MODEL})
        compactions = 0
        for turn in script.turns:
            _ok(bus.dispatch_json({"type": "append_messages", "session_id": sid, "messages": turn[:1]}))
            req = _ok(bus.dispatch_json({"type": "prepare_turn", "session_id": sid}))
            if req.get("compaction") and req["compaction"]["status"] == "compacted":
                compactions += 1
            _ok(bus.dispatch_json({"type": "append_messages", "session_id": sid, "messages": turn[1:]}))
        req = _ok(bus.dispatch_json({"type": "prepare_turn", "session_id": sid}))
        elapsed = time.perf_counter() - started
        text = "\n".join(m["content"] for m in req["messages"] if isinstance(m.get("content"), str))
        checkpoints = _ok(bus.dispatch_json({"type": "list_checkpoints", "session_id": sid}))
        scored = _score(script, text, compactions, checkpoints, elapsed)
        scored["accounted"] = _accounted(bus, sid, scored.pop("missing_items"), checkpoints)
        bus.close()
    return scored | {
        "turns": turns, "window": window, "summarizer": summarizer,
        "forgotten_share": share if summarizer == "forgetful" else 0.0,
    }


def _ok(envelope: dict[str, Any]) -> dict[str, Any]:
    if not envelope.get("ok"):
        raise SystemExit(f"benchmark command failed: {envelope.get('error')}")
    return envelope["result"]


def _score(script: Transcript, text: str, compactions: int, checkpoints: dict[str, Any],
           elapsed: float) -> dict[str, Any]:
    groups: dict[str, list[bool]] = {"facts": [], "constraints": [], "corrections": [], "superseded_not_current": []}
    missing: list[dict[str, Any]] = []
    # A value set again later must NOT be current: it is scored as superseded only.
    superseded = {p.value for p in script.planted if p.kind == "superseded"}
    for p in script.planted:
        if p.kind != "superseded" and p.value in superseded:
            continue
        if p.kind == "superseded":
            groups["superseded_not_current"].append(not stated(text, p.value))
            continue
        if p.kind in ("constraint", "correction"):
            ok = " ".join(p.value.split()).casefold() in " ".join(text.split()).casefold()
            groups[p.kind + "s"].append(ok)
        else:
            ok = stated(text, p.value)
            groups["facts"].append(ok)
        if not ok:
            missing.append({"kind": p.kind, "value": p.value, "turn": p.turn})
    share = {k: (sum(v) / len(v) if v else 1.0) for k, v in groups.items()}
    last = (checkpoints.get("checkpoints") or [{}])[-1].get("ledger") or {}
    return {
        "missing_items": missing,
        "last_ledger": {k: last.get(k) for k in ("items_total", "in_summary", "restored", "dropped")},
        "planted": {k: len(v) for k, v in groups.items()},
        "retention": share,
        "compactions": compactions,
        "checkpoints": len(checkpoints.get("checkpoints", [])),
        "missing_examples": missing[:5],
        "missing": len(missing),
        "seconds": round(elapsed, 2),
    }


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


def _holds(bus: Any, sid: str, seq: int, value: str) -> bool:
    """Does raw message ``seq`` (expanded with ``get_history``) state ``value``?"""
    env = bus.dispatch_json({"type": "get_history", "session_id": sid, "from_seq": seq, "to_seq": seq})
    messages = env["result"]["messages"] if env.get("ok") else []
    return any(_squash(value) in _squash(str(m.get("content") or "")) for m in messages)


def _accounted(bus: Any, sid: str, missing: list[dict[str, Any]], checkpoints: dict[str, Any]) -> dict[str, Any]:
    """Of the items not in the projection: how many some checkpoint reported dropped
    (``CompactOutcome.ledger.dropped_items``), and how many ``search_history`` finds in
    the raw history — a hit whose message, expanded by ``get_history``, states the item
    verbatim — when the service has that query (None when it has not)."""
    dropped = {
        _squash(d["value"])
        for cp in checkpoints.get("checkpoints", [])
        for d in ((cp.get("ledger") or {}).get("dropped_items") or [])
    }
    in_dropped = sum(1 for m in missing if _squash(m["value"]) in dropped)
    found: int | None = 0
    for m in missing:
        env = bus.dispatch_json({"type": "search_history", "session_id": sid, "query": m["value"], "limit": 3})
        if not env.get("ok"):
            if (env.get("error") or {}).get("code") == "invalid_command":
                found = None  # (no search_history in this build)
                break
            continue
        found += 1 if any(_holds(bus, sid, hit["seq"], m["value"]) for hit in env["result"].get("hits") or []) else 0
    share = (in_dropped / len(missing)) if missing else 1.0
    return {"missing": len(missing), "in_dropped_list": in_dropped, "dropped_list_share": share,
            "found_by_search": found}


def _found(r: dict[str, Any]) -> str:
    found = r["accounted"]["found_by_search"]
    return "n/a (no search_history)" if found is None else f"{found}/{r['accounted']['missing']}"


def markdown(results: list[dict[str, Any]]) -> list[str]:
    rows = ["| window | turns | summarizer | compactions | facts | constraints | corrections | "
            "superseded not current | not present: in a dropped list | found by search |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        ret, acc = r["retention"], r["accounted"]
        rows.append(
            f"| {r['window']:,} | {r['turns']} | {r['summarizer']} | {r['compactions']} | "
            f"{ret['facts']:.1%} of {r['planted']['facts']} | {ret['constraints']:.0%} | "
            f"{ret['corrections']:.0%} | {ret['superseded_not_current']:.1%} | "
            f"{acc['in_dropped_list']}/{acc['missing']} | {_found(r)} |"
        )
    return rows


def targets(results: list[dict[str, Any]], big_window: int) -> list[tuple[str, Any, str, bool]]:
    out = []
    for r in results:
        ret, name = r["retention"], f"{r['summarizer']} {r['window']:,}"
        if r["window"] == big_window:
            out.append((f"retention facts, {name}", round(ret["facts"], 3), ">= 0.95", ret["facts"] >= 0.95))
            both = min(ret["constraints"], ret["corrections"])
            out.append((f"retention constraints+corrections, {name}", both, "== 1.0", both == 1.0))
        else:
            acc = r["accounted"]
            share = acc["dropped_list_share"]
            out.append((f"not present but in a dropped list, {name}", share, "== 1.0", share == 1.0))
            if acc["found_by_search"] is not None:
                found = acc["found_by_search"] / acc["missing"] if acc["missing"] else 1.0
                out.append((f"not present but found by search_history, {name}", found, "== 1.0", found == 1.0))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--window", type=int, default=128_000)
    ap.add_argument("--tool-chars", type=int, default=6_000)
    ap.add_argument("--share", type=float, default=0.5, help="facts the fake LLM forgets")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--print-json", action="store_true", help="only the JSON, on stdout (make bench)")
    args = ap.parse_args(argv)
    results = [
        run(args.turns, args.window, name, args.share, args.tool_chars)
        for name in ("extractive", "forgetful")
    ]
    if args.print_json:
        print(json.dumps(results))
        return 0
    for r in results:
        ret = r["retention"]
        print(
            f"{r['summarizer']:>10} window {r['window']:,} turns {r['turns']} "
            f"compactions {r['compactions']}: facts {ret['facts']:.1%} of {r['planted']['facts']}, "
            f"constraints {ret['constraints']:.1%}, corrections {ret['corrections']:.1%}, "
            f"superseded not current {ret['superseded_not_current']:.1%}; not present {r['missing']}, "
            f"in a dropped list {r['accounted']['dropped_list_share']:.0%}, "
            f"found by search {_found(r)} ({r['seconds']} s)"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
