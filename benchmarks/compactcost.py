"""What compacting a full 128K-token context costs, as ratios to one tiktoken pass
over the same text (the least any token-exact compaction must do).

* plan + source: ``plan_cut`` and ``build_summary_source`` (with its token counts) on
  the session's records, as ``compact_context`` calls them, with a fresh counter each
  time (its text cache would otherwise answer from the previous repeat);
* end to end: ``Compact`` with the extractive summarizer on a fresh copy of the
  database whose context (and token counts) the bus has already loaded, as in a
  running service: plan, source, summary, validation, commit, projection;
* floor: ``encode_ordinary`` over every text of the same records (content, tool-call
  arguments, reasoning).

The three alternate repeat by repeat. Runs in its own process and prints JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from collections.abc import Iterator
from typing import Any

from workload import MODEL, median, ms, unique_turns

from context_compaction import Settings, bootstrap  # noqa: E402
from context_compaction import commands as c  # noqa: E402
from context_compaction.application.compacting.prepare import record_counts  # noqa: E402
from context_compaction.application.runtime.turncontext import TurnContext, prepare_context  # noqa: E402
from context_compaction.domain.budget import SUMMARY_OUTPUT_CAP, SummaryBudget  # noqa: E402
from context_compaction.domain.cutpoint import CutPlan, plan_cut  # noqa: E402
from context_compaction.domain.summary import build_summary_source, prompt_overhead  # noqa: E402
from context_compaction.infrastructure.tokens import TiktokenCounter, offline_encoding  # noqa: E402

WINDOW = 128_000


def settings(path: Path) -> Settings:
    return Settings(database_url=f"sqlite:///{path}", summarizer="extractive",
                    context_compaction={"enabled": False}, models={MODEL: {"token_limit": WINDOW}})


def texts_of(records: list[dict[str, Any]]) -> list[str]:
    out = []
    for r in records:
        content = r.get("content")
        out.append(content if isinstance(content, str) else json.dumps(content) if content else "")
        out += [call.get("arguments") or "" for call in r.get("tool_calls") or []]
        out.append(r.get("reasoning") or "")
    return out


def build(path: Path, target_tokens: int) -> int:
    """A session whose request estimate first reaches ``target_tokens``."""
    bus = bootstrap(settings(path))
    bus.dispatch(c.StartSession(session_id="s", model=MODEL))
    enc = offline_encoding("o200k_base")
    total = 0
    batch: list[dict[str, Any]] = []
    for turn in unique_turns(400, "cc", seed=11):
        batch += turn
        total += sum(len(enc.encode_ordinary(t)) for t in texts_of(turn))
        if total >= target_tokens * 0.92:  # the request estimate adds overhead: lands just under
            break
    for start in range(0, len(batch), 900):
        bus.dispatch(c.AppendMessages(session_id="s", messages=batch[start:start + 900]))
    used = bus.dispatch(c.GetContextUsage(session_id="s")).estimated_tokens  # also caches the counts
    bus.close()
    return int(used)


def copy_db(src: Path, dst: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(dst) + suffix).unlink(missing_ok=True)
        if Path(str(src) + suffix).exists():
            shutil.copy(str(src) + suffix, str(dst) + suffix)


def plan_and_source(svc: Any, turn: TurnContext) -> tuple[CutPlan, Any]:
    """What ``compact_context`` and ``summarize_candidate`` do before the summary call."""
    counter = TiktokenCounter(svc.catalog.provider_of)
    encoding = turn.draft.encoding

    def count(text: str) -> int:
        return int(counter.count_text(text, encoding))

    plan = plan_cut(turn.ctx.records, record_counts(turn), keep_tokens=turn.budget.keep)
    assert isinstance(plan, CutPlan), plan
    window = turn.budget.window
    summary_budget = SummaryBudget.compute(window, prompt_overhead(count, min(SUMMARY_OUTPUT_CAP, window // 4)))
    source = build_summary_source(None, plan.summarize, budget_tokens=summary_budget.source_budget, count=count)
    return plan, source


@contextlib.contextmanager
def _without_checklist() -> Iterator[None]:
    """The ledger's extraction without the typed checklist (exact facts, constraints and
    corrections only), as before issue 44."""
    from context_compaction.domain import ledger

    saved = ledger.checklist_items
    ledger.checklist_items = lambda text, asked=None, **_: []
    try:
        yield
    finally:
        ledger.checklist_items = saved


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=WINDOW)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ctxc-bench-compact-"))
    try:
        base = work / "base.db"
        used = build(base, args.tokens)
        bus = bootstrap(settings(base))
        svc = bus.services
        turn = prepare_context(svc, "s", model=MODEL)  # the session, its budget, every record's count
        ctx = turn.ctx
        texts = texts_of(ctx.records)
        enc = offline_encoding(turn.draft.encoding)
        t: dict[str, list[float]] = {"floor": [], "plan_source": [], "end_to_end": [], "no_checklist": []}
        outcome = None
        for i in range(args.repeats):
            t0 = time.perf_counter()
            for text in texts:
                enc.encode_ordinary(text)
            t1 = time.perf_counter()
            plan, source = plan_and_source(svc, turn)
            t2 = time.perf_counter()
            t["floor"].append(t1 - t0)
            t["plan_source"].append(t2 - t1)
            copy = work / f"copy{i}.db"
            copy_db(base, copy)
            other = bootstrap(settings(copy))
            other.dispatch(c.GetContextUsage(session_id="s"))  # the service's warm state
            t3 = time.perf_counter()
            outcome = other.dispatch(c.Compact(session_id="s"))
            t["end_to_end"].append(time.perf_counter() - t3)
            other.close()
            assert outcome.status == "compacted", outcome
            # (the same compaction without the typed checklist, ADR 0083: its cost as a ratio)
            copy_db(base, copy)
            other = bootstrap(settings(copy))
            other.dispatch(c.GetContextUsage(session_id="s"))
            with _without_checklist():
                t4 = time.perf_counter()
                bare = other.dispatch(c.Compact(session_id="s"))
                t["no_checklist"].append(time.perf_counter() - t4)
            other.close()
            assert bare.status == "compacted", bare
        bus.close()
        m = {k: median(v) for k, v in t.items()}
        report = {
            "context_tokens": used, "messages": len(ctx.records), "text_mb": round(sum(map(len, texts)) / 1e6, 2),
            "summarized_messages": len(plan.summarize), "source_entries": len(source.entries),
            "source_tokens": source.tokens, "tokens_after": outcome.tokens_after if outcome else None,
            **{f"{k}_ms": ms(v) for k, v in m.items()},
            "plan_source_ratio": round(m["plan_source"] / m["floor"], 2),
            "end_to_end_ratio": round(m["end_to_end"] / m["floor"], 2),
            "checklist_cost_ratio": round(m["end_to_end"] / m["no_checklist"], 2),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report))
    return 0


def markdown(r: dict[str, Any]) -> list[str]:
    return [
        "| context | one tiktoken pass | plan cut + summary source | extractive compaction, end to end |",
        "|---|---|---|---|",
        f"| {r['context_tokens']:,} tokens, {r['messages']} messages ({r['text_mb']} MB of text) | "
        f"{r['floor_ms']:.1f} ms | {r['plan_source_ms']:.1f} ms ({r['plan_source_ratio']:.2f}×) | "
        f"{r['end_to_end_ms']:.1f} ms ({r['end_to_end_ratio']:.2f}×) |",
        "",
        f"The cut summarizes {r['summarized_messages']} messages; the source keeps {r['source_entries']} entries "
        f"({r['source_tokens']:,} tokens); after compaction the request has {r['tokens_after']:,} tokens.",
        "",
        f"The typed fact checklist (ADR 0083) makes the end-to-end compaction {r['no_checklist_ms']:.1f} → "
        f"{r['end_to_end_ms']:.1f} ms: {r['checklist_cost_ratio']:.2f}× the same compaction without it "
        "(alternating, same run).",
    ]


if __name__ == "__main__":
    sys.exit(main())
