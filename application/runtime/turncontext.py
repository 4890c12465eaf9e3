"""One trip per command (issue 14, ADR 0024): the context of a session's next request,
worked out once and handed down.

``prepare_context`` reads the session (through the process's context cache), resolves
the model and its budget and builds the full draft request with its per-part token
breakdown. ``prepare_turn``, ``get_context_usage``, ``compact`` and
``recover_overflow`` each start from one ``TurnContext`` and pass it to
auto-compaction, the degraded trim and the result; a new one is prepared only after
the session changed (a checkpoint committed, a candidate went stale, a window was
learned). /info, prepare_turn and compaction all count through it (acceptance 10).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any

from context_compaction.domain.budget import Budget, resolve_window
from context_compaction.domain.messages import MessageRecord
from context_compaction.domain.provider_messages import ProviderIdentity

from ..state.calibration import CalibrationKey
from ..state.drafts import Draft, TurnInputs, build_draft
from ..contracts.ports import SessionRow
from .services import Services
from ..state.session_context import SessionContext, record_tokens


def budget_for(
    svc: Services, session: SessionRow, model: str | None = None, *, window_cap: int | None = None
) -> Budget:
    """The budget of ``model`` in this session: configured and catalog limits, the agent
    limit and the window the session learned from the provider (``WindowLearned``,
    in our token units); ``window_cap`` tightens it for one overflow recovery."""
    model = model or session.model
    config = svc.settings.model_config_for(model)
    learned = session.learned_windows.get(model)
    calibrated = [w for w in (learned.in_our_units if learned else None, window_cap) if w]
    window = resolve_window(
        configured_limit=config.token_limit,
        catalog_limit=svc.catalog.max_input_tokens(model),
        agent_limit=session.agent_token_limit,
        calibrated=min(calibrated) if calibrated else None,
    )
    cc = svc.settings.context_compaction
    return Budget.compute(
        window,
        reserve_tokens=cc.reserve_tokens,
        keep_recent_tokens=cc.keep_recent_tokens,
        enabled=cc.enabled,
    )


@dataclass(frozen=True)
class UsageDecision:
    """THE used-token figure (spec §7.2, §16) and what it was made of."""

    key: CalibrationKey
    used: int
    source: str
    """``estimated`` or ``measured+estimated``."""


@dataclass(frozen=True)
class TurnContext:
    """A session's next request for one model, as of one read of the session."""

    ctx: SessionContext
    model: str
    identity: ProviderIdentity
    inputs: TurnInputs
    budget: Budget
    draft: Draft

    @property
    def session_id(self) -> str:
        return self.ctx.session.session_id

    @property
    def records(self) -> list[MessageRecord]:
        return self.ctx.records

    @property
    def tokens(self) -> dict[int, int]:
        """seq → tokens in the draft's encoding, for every record."""
        return self.ctx.tokens[self.draft.encoding]

    def with_window_cap(self, svc: Services, window_cap: int | None) -> TurnContext:
        """The same request under a window tightened for one overflow recovery
        (arithmetic only: nothing is read again)."""
        if window_cap is None:
            return self
        budget = budget_for(svc, self.ctx.session, self.model, window_cap=window_cap)
        return replace(self, budget=budget)


def prepare_context(
    svc: Services,
    session_id: str,
    inputs: TurnInputs | None = None,
    model: str | None = None,
) -> TurnContext:
    """The one trip: session snapshot, model, budget and the full draft request."""
    ctx = svc.contexts.get(svc.read_model, session_id)
    model = model or ctx.session.model
    identity = svc.identity(model)
    inputs = inputs or TurnInputs()
    encoding = svc.tokens.encoding_for(model)
    record_tokens(svc.tokens, svc.token_cache, ctx, encoding)
    projection = ctx.projection(identity)
    history = ctx.history_tokens(projection, identity, encoding)
    draft = build_draft(svc.tokens, projection, inputs, encoding=encoding, history_tokens=history)
    budget = budget_for(svc, ctx.session, model)
    return TurnContext(ctx, model, identity, inputs, budget, draft)


def fixed_digest(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """Digest of a request's fixed parts: its system message and tool schemas."""
    fixed = [m for m in messages[:1] if m.get("role") == "system"]
    payload = json.dumps([fixed, tools], sort_keys=True, ensure_ascii=False)
    return hashlib.blake2b(payload.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def decide_usage(svc: Services, turn: TurnContext) -> UsageDecision:
    """The used tokens of ``turn``'s request: ``measured + estimate(suffix)`` when the
    calibration key matches and what was sent is an exact prefix of what will be sent;
    the full local estimate otherwise (spec §7.2)."""
    ctx, draft = turn.ctx, turn.draft
    key = CalibrationKey(
        provider=turn.identity.provider,
        model=turn.model,
        generation=ctx.session.context_generation,
        checkpoint_id=ctx.checkpoint.checkpoint_id if ctx.checkpoint else None,
        fixed_digest=fixed_digest(draft.messages, draft.tools),
        pinned=tuple(draft.projection.pinned_seqs),
    )
    cal = svc.turns.calibrations.get(turn.session_id)
    included = draft.projection.included_seqs
    if cal is None or cal.key != key or cal.history_count > len(included):
        return UsageDecision(key, draft.total, "estimated")
    if ctx.history_digest(draft.projection, turn.identity, cal.history_count) != cal.history_digest:
        return UsageDecision(key, draft.total, "estimated")
    tokens = turn.tokens
    suffix = sum(tokens.get(seq, 0) for seq in included[cal.history_count :])
    return UsageDecision(key, cal.prompt_tokens + suffix, "measured+estimated")
