"""What a session cost, from its durable log of usages and attempts (issue 43, ADR 0076).

Prices per token come from litellm's offline cost map (the catalog's entry for the
model, the same JSON ``litellm.model_cost`` loads under ``LITELLM_LOCAL_MODEL_COST_MAP``)
or, per field, from ``models.<name>`` in Settings for a private deployment.

Usages (``record_usage``) are recorded in the attempt log's stream, so that one read
gives requests and compactions in order: a compaction's requests-until-the-next are
counted from it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from context_compaction.domain.attempts import Attempt, RecordedUsage
from context_compaction.domain.costs import Cost, Prices, Usage, net_figure, price
from context_compaction.domain.errors import SessionNotFound

from ..contracts import commands as c
from ..contracts import results as r
from ..contracts import results_costs as rc
from ..runtime.services import Services

log = logging.getLogger("context_compaction.costs")

_PRICE_FIELDS = {
    "input_cost_per_token": "input",
    "output_cost_per_token": "output",
    "cache_read_input_token_cost": "cache_read",
    "cache_creation_input_token_cost": "cache_creation",
}
COMMITTED = ("compacted", "degraded")


def prices_for(svc: Services, model: str) -> Prices:
    """The model's prices: the cost map's, each field overridden by Settings when set."""
    lookup = getattr(svc.catalog, "entry", None)
    entry = lookup(model) if lookup is not None else None
    prices = Prices.from_entry(entry)
    config = svc.settings.models.get(model)
    overrides = {
        ours: getattr(config, theirs) for theirs, ours in _PRICE_FIELDS.items()
        if config is not None and getattr(config, theirs) is not None
    }
    if not overrides:
        return prices
    # A private deployment's own price is not the public long-prompt tier's.
    merged = {**prices.__dict__, **overrides, "source": "settings", "tiers": ()}
    return Prices(**merged)


def figures(calls: Iterable[tuple[Usage, Prices]]) -> rc.CostFigures:
    usage, cost, n = Usage(), Cost(), 0
    for u, p in calls:
        usage, cost, n = usage + u, cost + price(u, p), n + 1
    return rc.CostFigures(
        calls=n, prompt_tokens=usage.prompt, cached_tokens=usage.cached,
        cache_creation_tokens=usage.created, completion_tokens=usage.completion,
        input_usd=_usd(cost.input), cached_usd=_usd(cost.cached), cache_creation_usd=_usd(cost.created),
        completion_usd=_usd(cost.completion), total_usd=_usd(cost.total), priced=cost.priced,
    )


def _usd(value: float) -> float:
    return round(value, 9)


# ------------------------------------------------------------------ recording
def record_request_usage(svc: Services, session_id: str, usage: RecordedUsage) -> None:
    """Keep one request's usage durably; a log that cannot be written is logged and
    never fails ``record_usage`` (as the attempt log, ADR 0032)."""
    record = getattr(svc.attempts, "record_usage", None)
    if record is None:
        return
    try:
        record(session_id, usage)
    except Exception as exc:  # noqa: BLE001 - accounting must never fail the call it accounts
        log.warning("usage not recorded", extra={"session_id": session_id, "error_class": type(exc).__name__})


def summary_cost(svc: Services, usage: dict[str, Any] | None) -> float | None:
    if not usage:
        return None
    prices = prices_for(svc, str(usage.get("model") or ""))
    return _usd(price(Usage.from_record(usage), prices).total) if prices.known else None


# ------------------------------------------------------------------ reading
def entries(svc: Services, session_id: str) -> list[Attempt | RecordedUsage]:
    read = getattr(svc.attempts, "entries", None)
    return list(read(session_id)) if read is not None else []


def compaction_nets(
    svc: Services, session_model: str, log: Sequence[Attempt | RecordedUsage]
) -> dict[str, r.CompactionNet]:
    """attempt_id → balance, for every committed compaction in ``log`` (in order)."""
    out: dict[str, r.CompactionNet] = {}
    committed = [i for i, e in enumerate(log) if isinstance(e, Attempt) and e.outcome in COMMITTED]
    # A committed candidate's summary call was made (and recorded) by its dry run.
    made = {e.candidate_id: e.summary_usage for e in log
            if isinstance(e, Attempt) and e.outcome == "candidate" and e.candidate_id}
    for n, index in enumerate(committed):
        attempt = log[index]
        assert isinstance(attempt, Attempt)
        end = committed[n + 1] if n + 1 < len(committed) else len(log)
        after = [e for e in log[index + 1:end] if isinstance(e, RecordedUsage)]
        model = after[0].model if after else session_model
        out[attempt.attempt_id] = net_result(
            svc, model, attempt.tokens_before, attempt.tokens_after, len(after),
            summary_usage=attempt.summary_usage or made.get(attempt.candidate_id or ""),
            measured=True, open_=end == len(log),
        )
    return out


def net_result(
    svc: Services, model: str, before: int, after: int, requests: int, *,
    summary_usage: dict[str, Any] | None, measured: bool, open_: bool = False,
) -> r.CompactionNet:
    summary = Usage.from_record(summary_usage)
    summary_prices = prices_for(svc, str((summary_usage or {}).get("model") or model))
    prices = prices_for(svc, model)
    summary_cost_ = price(summary, summary_prices)
    figure = net_figure(
        tokens_before=before, tokens_after=after, requests=requests, measured=measured,
        prices=prices, summary=summary_cost_,
    )
    # A figure that needs an unknown price is unknown, never 0 USD (it would read as free).
    session_known, summary_known = prices.known, summary_cost_.priced or not summary_usage
    return r.CompactionNet(
        tokens_shed=figure.tokens_shed, requests=figure.requests, measured=measured, open=open_,
        priced=session_known and summary_known,
        saved_usd=_usd(figure.saved) if session_known else None,
        summary_usd=_usd(figure.summary) if summary_known else None,
        invalidated_cache_usd=_usd(figure.invalidated) if session_known else None,
        spent_usd=_usd(figure.spent) if session_known and summary_known else None,
        net_usd=_usd(figure.net) if session_known and summary_known else None,
    )


def session_cost(svc: Services, session_id: str) -> rc.SessionCostResult:
    row = svc.read_model.session(session_id)
    if row is None:
        raise SessionNotFound(f"session {session_id!r} does not exist")
    log = entries(svc, session_id)
    prices: dict[str, Prices] = {}

    def of(model: str) -> Prices:
        if model not in prices:
            prices[model] = prices_for(svc, model)
        return prices[model]

    requests = [(e.model, Usage.from_record(e.to_record())) for e in log if isinstance(e, RecordedUsage)]
    summaries = [
        (str(e.summary_usage.get("model") or row.model), Usage.from_record(e.summary_usage))
        for e in log if isinstance(e, Attempt) and e.summary_usage
    ]
    models = sorted({m for m, _ in requests} | {m for m, _ in summaries})
    nets = compaction_nets(svc, row.model, log)
    return rc.SessionCostResult(
        session_id=session_id,
        total=figures((u, of(m)) for m, u in requests + summaries),
        requests=figures((u, of(m)) for m, u in requests),
        summaries=figures((u, of(m)) for m, u in summaries),
        per_model=[
            rc.ModelCost(
                model=m, prices_source=of(m).source,
                requests=figures((u, of(m)) for mm, u in requests if mm == m),
                summaries=figures((u, of(m)) for mm, u in summaries if mm == m),
            )
            for m in models
        ],
        compactions=[
            rc.CompactionCost(attempt_id=e.attempt_id, at=e.at, reason=e.reason,
                              tokens_before=e.tokens_before, tokens_after=e.tokens_after,
                              net=nets[e.attempt_id])
            for e in log if isinstance(e, Attempt) and e.attempt_id in nets
        ],
    )


def get_session_cost(cmd: c.GetSessionCost, svc: Services) -> rc.SessionCostResult:
    return session_cost(svc, cmd.session_id)


def cost_line(cost: rc.SessionCostResult) -> str:
    """/info's line: the total, and how much of it went to summaries; unknown (with the
    models that have no price) when a call's model is unpriced, never a partial sum
    that would read as the whole."""
    t = cost.total
    calls = f"{cost.requests.calls:,} requests and {cost.summaries.calls:,} summary calls"
    if not t.priced:
        unpriced = ", ".join(m.model for m in cost.per_model if m.prices_source == "unknown")
        return f"unknown over {calls}: no prices for {unpriced} (set models.<name> *_cost_per_token)"
    return f"${t.total_usd:,.4f} over {calls} (summaries ${cost.summaries.total_usd:,.4f})"
