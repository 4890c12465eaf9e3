"""The context a request sees: session state, its projection, its budget (spec §7).

``load_context`` reads one consistent snapshot of a session from the read model;
``record_tokens`` counts its messages once per encoding (cached in the read model);
``build_draft`` assembles the full request (system, tools, knowledge, plan, projection)
and its per-part token breakdown; ``budget_for`` resolves the window and thresholds.
Every caller — /info, prepare_turn, compaction — goes through these, so they all use
the same numbers (acceptance 10).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from context_compaction.domain.budget import Budget, WindowResolution, resolve_window
from context_compaction.domain.errors import SessionDeleted, SessionNotFound
from context_compaction.domain.messages import MessageRecord
from context_compaction.domain.projection import (
    CheckpointRef,
    ContextProjection,
    ProviderIdentity,
    build_projection,
    checkpoint_problem,
    summary_message,
)

from .ports import CheckpointRow, SessionRow
from .services import Services

log = logging.getLogger("context_compaction.context")


@dataclass
class SessionContext:
    """One consistent snapshot of a session, ready to project."""

    session: SessionRow
    checkpoint: CheckpointRow | None
    records: list[MessageRecord]
    """Visible raw messages from the checkpoint boundary on (all visible ones when
    there is no usable checkpoint)."""
    notes: list[str] = field(default_factory=list)

    @property
    def checkpoint_ref(self) -> CheckpointRef | None:
        return checkpoint_ref(self.checkpoint)


def checkpoint_ref(row: CheckpointRow | None) -> CheckpointRef | None:
    if row is None:
        return None
    return CheckpointRef(
        checkpoint_id=row.checkpoint_id,
        summary=row.summary,
        first_retained_seq=row.first_retained_seq,
        generation=row.generation,
        degraded=row.degraded,
    )


def load_context(svc: Services, session_id: str, *, allow_deleted: bool = False) -> SessionContext:
    """Read the session, its active checkpoint and tail in one snapshot.

    A broken checkpoint (missing row, empty summary, illegal boundary) falls back to
    all visible raw history with a diagnostic, and never asks a provider (spec §14).
    """
    for _ in range(5):
        view = svc.read_model.session_view(session_id)
        if view is None:
            raise SessionNotFound(f"session {session_id!r} does not exist")
        session = view.session
        if session.deleted and not allow_deleted:
            raise SessionDeleted(f"session {session_id!r} is deleted")
        notes: list[str] = []
        if session.active_checkpoint_id and view.checkpoint is None:
            notes.append(f"active checkpoint {session.active_checkpoint_id} is missing")
        ctx = SessionContext(session, view.checkpoint, view.messages)
        problem = checkpoint_problem(ctx.checkpoint_ref, view.messages) if view.checkpoint else None
        if not notes and not problem:
            return ctx
        full = svc.read_model.session_view(session_id, tail_only=False)
        if full is None or full.session.version != session.version:
            continue  # the session moved between the two reads; read again
        notes += [problem] if problem else []
        log.warning(
            "checkpoint unusable, projecting raw history",
            extra={"session_id": session_id, "checkpoint_id": session.active_checkpoint_id},
        )
        return SessionContext(session, None, full.messages, notes)
    raise SessionNotFound(f"session {session_id!r} kept changing; try again")


def project(ctx: SessionContext, identity: ProviderIdentity | None) -> ContextProjection:
    return build_projection(
        checkpoint=ctx.checkpoint_ref,
        messages=ctx.records,
        context_generation=ctx.session.context_generation,
        identity=identity,
        diagnostics=ctx.notes,
    )


# -------------------------------------------------------------------- tokens
def record_tokens(svc: Services, ctx: SessionContext, encoding: str) -> dict[int, int]:
    """Token count per seq of ``ctx.records``; each message is tokenized once per encoding."""
    counter = svc.tokens
    key = counter.cache_key(encoding)
    if not ctx.records:
        return {}
    first = ctx.records[0]["seq"]
    known = svc.token_cache.token_counts(ctx.session.session_id, key, first)
    missing = {r["seq"]: counter.count_record(r, encoding) for r in ctx.records if r["seq"] not in known}
    if missing:
        try:
            svc.token_cache.store_token_counts(ctx.session.session_id, key, missing)
        except Exception as exc:  # noqa: BLE001 - a cache write must never fail a read
            log.warning(
                "token count cache not written",
                extra={"session_id": ctx.session.session_id, "error_class": type(exc).__name__},
            )
        known = {**known, **missing}
    return known


# --------------------------------------------------------------------- draft
@dataclass(frozen=True)
class TurnInputs:
    """The fixed parts of a request, given by the host for this turn."""

    system_prompt: str | None = None
    tools: tuple[dict[str, Any], ...] = ()
    knowledge: str | None = None
    active_plan: str | None = None


def system_message(inputs: TurnInputs) -> dict[str, Any] | None:
    """System prompt, then knowledge recall and the active plan as sections of it."""
    parts = []
    if inputs.system_prompt:
        parts.append(inputs.system_prompt)
    if inputs.knowledge:
        parts.append(f"# Knowledge\n{inputs.knowledge}")
    if inputs.active_plan:
        parts.append(f"# Active plan\n{inputs.active_plan}")
    if not parts:
        return None
    return {"role": "system", "content": "\n\n".join(parts)}


@dataclass
class Draft:
    """A complete provider request, not yet sent, and what each part costs."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    breakdown: dict[str, int]
    projection: ContextProjection
    encoding: str

    @property
    def total(self) -> int:
        return sum(self.breakdown.values())

    @property
    def fixed(self) -> int:
        return sum(self.breakdown[p] for p in ("system", "tools", "knowledge", "plan"))


def build_draft(
    svc: Services,
    projection: ContextProjection,
    inputs: TurnInputs,
    *,
    encoding: str,
    tokens: dict[int, int],
    summary: str | None = None,
) -> Draft:
    """Assemble the request and count it part by part (spec §7.2: the NEXT full request)."""
    counter = svc.tokens
    system = system_message(inputs)
    messages = ([system] if system else []) + list(projection.messages)
    knowledge = counter.count_text(inputs.knowledge, encoding) + 4 if inputs.knowledge else 0
    plan = counter.count_text(inputs.active_plan, encoding) + 4 if inputs.active_plan else 0
    system_tokens = counter.request_overhead
    if inputs.system_prompt:
        system_tokens += counter.count_message(
            {"role": "system", "content": inputs.system_prompt}, encoding
        )
    elif system:
        system_tokens += 4  # the system message's own overhead
    summary_tokens = 0
    if projection.summary_included:
        text = summary if summary is not None else projection.messages[0]["content"]
        block = summary_message(text) if summary is not None else projection.messages[0]
        summary_tokens = counter.count_message(block, encoding)
    history = sum(tokens.get(seq, 0) for seq in projection.included_seqs)
    breakdown = {
        "system": system_tokens,
        "tools": counter.count_tools(inputs.tools, encoding),
        "knowledge": knowledge,
        "plan": plan,
        "summary": summary_tokens,
        "history": history,
    }
    return Draft(messages, list(inputs.tools), breakdown, projection, encoding)


# -------------------------------------------------------------------- budget
def budget_for(svc: Services, session: SessionRow, model: str | None = None) -> Budget:
    model = model or session.model
    config = svc.settings.model_config_for(model)
    window: WindowResolution = resolve_window(
        configured_limit=config.token_limit,
        catalog_limit=svc.catalog.max_input_tokens(model),
        agent_limit=session.agent_token_limit,
        calibrated=svc.calibrated_window(session.session_id, model),
    )
    cc = svc.settings.context_compaction
    return Budget.compute(
        window,
        reserve_tokens=cc.reserve_tokens,
        keep_recent_tokens=cc.keep_recent_tokens,
        enabled=cc.enabled,
    )
