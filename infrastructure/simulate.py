"""Policy replay (issue 43, ADR 0076): a recorded session's appends, again, under other
settings, each in a ``memory://`` store of its own, offline.

The replay is an agent loop over the recorded messages: each turn's input is appended
and the turn's first request prepared (where automatic compaction decides, as in the
recorded run), then each assistant step and what followed it, with a continuation
request before every further step. A request larger than the provider's window (the
window the recorded session learned from an overflow error, if any) is refused as the
provider refused it, and recovered with ``recover_overflow``. A summary is the recorded
one where the cut matches (the same boundary on top of the same previous boundary),
else extractive (deterministic, no network); background summaries are not replayed.

What the log does not keep, the caller gives: the system prompt and tools each request
carried (``system_prompt``, ``tools``).
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from context_compaction.application.contracts import commands as c
from context_compaction.application.contracts import results_costs as rc
from context_compaction.application.history.costs import prices_for
from context_compaction.application.contracts.settings import Settings
from context_compaction.domain.costs import Usage, price
from context_compaction.domain.cutpoint import group_turns

from .bootstrap import bootstrap

_RECORD_ONLY = ("seq", "created_at", "visible", "invalidated")


@dataclass(frozen=True)
class Policy:
    name: str
    source: str
    overrides: Mapping[str, Any] = field(default_factory=dict)
    """Settings over the recorded session's (nested dicts merge)."""


def peer_policies(window: int, max_output: int, message_tokens: int) -> list[Policy]:
    """The peers' default policies, each as our settings for the same session.

    Approximations, stated: our planner keeps whole turns by tokens, so a peer that keeps
    a number of messages keeps that many messages' worth of tokens (the session's mean
    message size), and every policy keeps at least the newest complete turn.
    """
    return [
        Policy(
            # langchain 1.x, langchain/agents/middleware/summarization.py:
            # SummarizationMiddleware(trigger=None, keep=("messages", 20)); trigger None
            # never summarizes, so the row uses the trigger its docstring and docs show,
            # ("fraction", 0.8), with the default keep of 20 messages.
            "langchain-summarization", "langchain SummarizationMiddleware: trigger ('fraction', 0.8) "
            "(docs example; default None never triggers), keep ('messages', 20) default",
            {"context_compaction": {"reserve_tokens": window - int(window * 0.8),
                                    "keep_recent_tokens": 20 * message_tokens}},
        ),
        Policy(
            # Claude Code, services/compact/autoCompact.ts as read in "Harness engineering
            # from CC to AI coding", ch. 9 (zhanghandong.github.io/harness-engineering-
            # from-cc-to-ai-coding/en/part3/ch09.html): effective window = window -
            # min(max output, 20,000); auto-compact at effective - 13,000 (167,000 of
            # 200,000); the whole conversation is summarized (nothing kept verbatim).
            "claude-code", "Claude Code auto-compact: window - min(max output, 20,000) - 13,000, keep nothing",
            {"context_compaction": {"reserve_tokens": min(max_output, 20_000) + 13_000, "keep_recent_tokens": 0}},
        ),
        Policy(
            # OpenAI Codex, codex-rs/protocol/src/openai_models.rs
            # ModelInfo::auto_compact_token_limit: (context_window * 9) / 10; after a
            # compaction it keeps recent user messages (up to 20,000 tokens) and drops the
            # rest: kept here as whole turns within 20,000 tokens.
            "codex", "Codex auto_compact_token_limit: (context_window * 9) / 10, keep <= 20,000 tokens",
            {"context_compaction": {"reserve_tokens": window - (window * 9) // 10, "keep_recent_tokens": 20_000}},
        ),
        Policy("no-auto-compaction", "baseline: automatic compaction off (overflow recovery still compacts)",
               {"context_compaction": {"enabled": False}}),
    ]


class RecordedSummaries:
    """The summarizer of a replay: the recorded checkpoint's summary where the replay cuts
    where the recording did, on top of the same previous boundary; extractive elsewhere."""

    provider_kind = "extractive"

    def __init__(self, recorded: Mapping[tuple[int, int | None], str]) -> None:
        from .summarizers import ExtractiveSummarizer

        self.recorded = dict(recorded)
        self.fallback = ExtractiveSummarizer()
        self.bus: Any = None
        self.reused = 0

    def summarize(self, request: Any) -> Any:
        from context_compaction.application.contracts.ports import SummaryResult

        last = request.source.last_seq
        text = None if last is None else self.recorded.get((last + 1, self._previous(request.session_id)))
        if text is None:
            return self.fallback.summarize(request)
        self.reused += 1
        return SummaryResult(text=text, provider_kind="recorded", model=request.model)

    def _previous(self, session_id: str) -> int | None:
        row = self.bus.services.read_model.session(session_id)
        cp = self.bus.services.read_model.checkpoint(row.active_checkpoint_id) if row.active_checkpoint_id else None
        return cp.first_retained_seq if cp is not None else None


def recorded_summaries(bus: Any, session_id: str) -> dict[tuple[int, int | None], str]:
    """(boundary, previous boundary) → summary, of the session's committed checkpoints
    that were summarized by something other than the extractive summarizer."""
    found = bus.dispatch(c.ListCheckpoints(session_id=session_id)).checkpoints
    boundary = {cp.checkpoint_id: cp.first_retained_seq for cp in found}
    # An extractive recording is remade exactly by the replay's own summarizer (reusing
    # its stored, already verified text would verify it twice): only summaries the
    # replay cannot remake offline (an LLM's, a native one's) are reused.
    return {(cp.first_retained_seq, boundary.get(cp.parent_checkpoint_id or "")): cp.summary
            for cp in found if not cp.degraded and cp.provider_kind != "extractive"}


@dataclass
class _Run:
    sent: int = 0
    cacheable: int = 0
    cost: float = 0.0
    priced: bool = True
    previous: list[dict[str, Any]] = field(default_factory=list)


def simulate(
    bus: Any,
    session_id: str,
    policies: Sequence[Policy] = (),
    *,
    system_prompt: str | None = None,
    tools: Sequence[dict[str, Any]] | None = None,
    peers: bool = True,
) -> rc.SimulationResult:
    """Replay ``session_id`` of ``bus`` under its own settings ("recorded"), each of
    ``policies`` and (``peers``) the peers' defaults; side by side."""
    svc = bus.services
    row = svc.read_model.session(session_id) or _missing(session_id)
    records = svc.read_model.messages(session_id)
    info = bus.dispatch(c.GetContextUsage(session_id=session_id, system_prompt=system_prompt,
                                          tools=list(tools) if tools else None))
    # The provider refuses what is over its window: the one the session learned from an
    # overflow error, else the one it was configured with.
    provider_window = info.effective_window_tokens
    recorded = [a.reason for a in bus.dispatch(c.ListCompactionAttempts(session_id=session_id)).attempts
                if a.outcome in ("compacted", "degraded")]
    base = svc.settings.model_dump(mode="python", by_alias=True)
    base["models"] = {k: {**v, "api_key": None} for k, v in base.get("models", {}).items()}
    window = info.configured_window_tokens
    encoding = svc.tokens.encoding_for(row.model)
    mean = max(1, sum(svc.tokens.count_record(r, encoding) for r in records) // max(1, len(records)))
    catalog_output = getattr(svc.catalog, "max_output_tokens", lambda m: None)(row.model) or 20_000
    chosen = [Policy("recorded", "the session's own settings"), *policies]
    if peers:
        chosen += peer_policies(window, catalog_output, mean)
    turns = _turns(records, svc, encoding)
    summaries = recorded_summaries(bus, session_id)
    with _quiet():
        rows = [
            _replay(policy, base, row.model, turns, provider_window, system_prompt, tools, summaries)
            for policy in chosen
        ]
    result = rc.SimulationResult(session_id=session_id, model=row.model, turns=len(turns),
                                 recorded_compactions=len(recorded),
                                 recorded_by_reason=dict(sorted(Counter(recorded).items())), rows=rows, text="")
    result.text = table(result)
    return result


@contextmanager
def _quiet() -> Iterator[None]:
    """The replays' own warnings (overflows, trims of a session named ``simulated``) are
    what the table reports: not log lines of the process that asked."""
    logger = logging.getLogger("context_compaction")
    level = logger.level
    logger.setLevel(max(level, logging.ERROR))
    try:
        yield
    finally:
        logger.setLevel(level)


def _missing(session_id: str) -> Any:
    from context_compaction.domain.errors import SessionNotFound

    raise SessionNotFound(f"session {session_id!r} does not exist")


def _turns(records: list[Any], svc: Any, encoding: str) -> list[list[dict[str, Any]]]:
    counts = [svc.tokens.count_record(r, encoding) for r in records]
    return [[_message(r) for r in records[t.start:t.end]] for t in group_turns(records, counts)]


def _message(record: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in _RECORD_ONLY and v not in (None, False, [], ())}


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = _merged(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) \
            else value
    return out


def _replay(
    policy: Policy, base: Mapping[str, Any], model: str, turns: list[list[dict[str, Any]]],
    provider_window: int | None, system_prompt: str | None, tools: Sequence[dict[str, Any]] | None,
    summaries: Mapping[tuple[int, int | None], str],
) -> rc.PolicyRow:
    values = _merged(base, policy.overrides)
    values.update(database_url=f"memory://simulate-{uuid.uuid4().hex}", summarizer="extractive")
    values["context_compaction"] = {**values.get("context_compaction", {}), "background_ratio": None}
    settings = Settings.model_validate(values)
    summarizer = RecordedSummaries(summaries)
    sim = bootstrap(settings, summarizer=summarizer)
    summarizer.bus = sim
    try:
        sid = "simulated"
        sim.dispatch(c.StartSession(session_id=sid, model=model))
        run = _Run()
        prepare = c.PrepareTurn(session_id=sid, system_prompt=system_prompt,
                                tools=list(tools) if tools else None)
        for turn in turns:
            _turn(sim, sid, model, turn, prepare, provider_window, run)
        return _row(sim, sid, policy, settings, model, run, summarizer.reused)
    finally:
        sim.close()


def _turn(sim: Any, sid: str, model: str, turn: list[dict[str, Any]], prepare: c.PrepareTurn,
          provider_window: int | None, run: _Run) -> None:
    """One recorded turn: its input, then each assistant step after a request."""
    steps = [i for i, m in enumerate(turn) if m["role"] == "assistant"]
    head = steps[0] if steps else len(turn)
    sim.dispatch(c.AppendMessages(session_id=sid, messages=turn[:head]))
    for n, at in enumerate(steps):
        request = sim.dispatch(prepare)
        if n == 0 and provider_window is not None and request.usage.estimated_tokens > provider_window:
            request = sim.dispatch(c.RecoverOverflow(
                session_id=sid, request_id=request.request_id,
                error_message=(f"This model's maximum context length is {provider_window} tokens. However, "
                               f"your messages resulted in {request.usage.estimated_tokens} tokens.")))
        end = steps[n + 1] if n + 1 < len(steps) else len(turn)
        _sent(sim, model, request, turn[at], run)
        sim.dispatch(c.AppendMessages(session_id=sid, messages=turn[at:end], model=model))


def _sent(sim: Any, model: str, request: Any, reply: dict[str, Any], run: _Run) -> None:
    """One request's tokens, the part a prefix cache could serve (the messages it shares
    from the start with the previous request), and its price."""
    svc = sim.services
    encoding = svc.tokens.encoding_for(model)
    messages = list(request.messages)
    same = 0
    for a, b in zip(messages, run.previous):
        if a != b:
            break
        same += 1
    cached = sum(svc.tokens.count_message(m, encoding) for m in messages[:same])
    total = request.usage.estimated_tokens
    completion = svc.tokens.count_message(reply, encoding)
    prices = prices_for(svc, model)
    cost = price(Usage(prompt=total, cached=min(cached, total), completion=completion), prices)
    run.sent, run.cacheable, run.previous = run.sent + total, run.cacheable + min(cached, total), messages
    run.cost += cost.total
    run.priced = run.priced and cost.priced


def _row(sim: Any, sid: str, policy: Policy, settings: Settings, model: str, run: _Run,
         reused: int) -> rc.PolicyRow:
    attempts = sim.dispatch(c.ListCompactionAttempts(session_id=sid)).attempts
    committed = [a for a in attempts if a.outcome in ("compacted", "degraded")]
    summarized = [a for a in attempts if a.stage == "summarized" and a.outcome in ("compacted", "summary_failed")]
    svc = sim.services
    prices = prices_for(svc, settings.summary_model_for(model))
    # The extractive summarizer reports no usage: a summary call is priced as the LLM one
    # it stands for, reading the context it compacts and writing the summary.
    for a in summarized:
        cost = price(Usage(prompt=a.tokens_before, completion=max(0, a.tokens_after // 10)), prices)
        run.cost += cost.total
    ledger = sim.dispatch(c.GetContextUsage(session_id=sid)).ledger
    cc = settings.context_compaction
    return rc.PolicyRow(
        policy=policy.name, source=policy.source, compactions=len(committed), summary_calls=len(summarized),
        compactions_by_reason=dict(sorted(Counter(a.reason for a in committed).items())),
        recorded_summaries=reused,
        tokens_sent=run.sent, cacheable_share=round(run.cacheable / run.sent, 4) if run.sent else 0.0,
        cost_usd=round(run.cost, 6), priced=run.priced and prices.known,
        facts_kept=None if ledger is None else ledger["items_total"] - ledger["dropped"],
        facts_total=None if ledger is None else ledger["items_total"],
        settings={"reserve_tokens": cc.reserve_tokens, "keep_recent_tokens": cc.keep_recent_tokens,
                  "enabled": cc.enabled, "clear_tool_results": cc.tool_results.clear},
    )


def table(result: rc.SimulationResult) -> str:
    header = ["policy", "compactions", "summary calls", "recorded reused", "tokens sent", "cacheable", "cost USD",
              "facts kept"]
    lines = [f"session {result.session_id} ({result.model}), {result.turns} turns, "
             f"{result.recorded_compactions} compactions recorded", ""]
    rows = [[r.policy, f"{r.compactions}", f"{r.summary_calls}", f"{r.recorded_summaries}", f"{r.tokens_sent:,}",
             f"{r.cacheable_share:.0%}",
             f"{r.cost_usd:.4f}" + ("" if r.priced else "*"),
             "-" if r.facts_kept is None else f"{r.facts_kept}/{r.facts_total}"] for r in result.rows]
    widths = [max(len(x) for x in col) for col in zip(header, *rows)]
    for cells in [header, *rows]:
        lines.append("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in
                               enumerate(zip(cells, widths))))
    lines.append("")
    lines += [f"{r.policy}: {r.source}" for r in result.rows]
    return "\n".join(lines)
