"""A provider request before it is sent: its fixed parts and its per-part cost (spec §7.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from context_compaction.domain.budget import FIXED_PARTS
from context_compaction.domain.projection import ContextProjection, KnownFlat

from ..contracts.commands import TurnInputsMixin
from ..contracts.ports import TokenCounter


@dataclass(frozen=True)
class TurnInputs:
    """The fixed parts of a request, given by the host for this turn."""

    system_prompt: str | None = None
    tools: tuple[dict[str, Any], ...] = ()
    knowledge: str | None = None
    active_plan: str | None = None


def inputs_of(cmd: TurnInputsMixin) -> TurnInputs:
    """The fixed parts a turn command (``PrepareTurn``, ``GetContextUsage``) names."""
    return TurnInputs(
        system_prompt=cmd.system_prompt,
        tools=tuple(cmd.tools or ()),
        knowledge=cmd.knowledge,
        active_plan=cmd.active_plan,
    )


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
    #: The whole request's tokens (the breakdown's sum), counted once with it.
    total: int
    #: Its fixed parts' tokens (``FIXED_PARTS``: what no compaction can shrink).
    fixed: int
    #: Which of ``messages`` are flat, as the projection's builder found them (issue 38).
    known_flat: KnownFlat | None = None


def build_draft(
    counter: TokenCounter,
    projection: ContextProjection,
    inputs: TurnInputs,
    *,
    encoding: str,
    history_tokens: int,
) -> Draft:
    """Assemble the request and count it part by part (spec §7.2: the NEXT full request).

    Every token is attributed to one part; ``overhead`` is the request's own priming,
    whatever the messages are (spec §16, §21.10).
    """
    system = system_message(inputs)
    messages = ([system] if system else []) + projection.messages
    knowledge = counter.count_text(inputs.knowledge, encoding) + 4 if inputs.knowledge else 0
    plan = counter.count_text(inputs.active_plan, encoding) + 4 if inputs.active_plan else 0
    system_tokens = 0
    if inputs.system_prompt:
        system_tokens += counter.count_message(
            {"role": "system", "content": inputs.system_prompt}, encoding
        )
    elif system:
        system_tokens += 4  # the system message's own overhead
    summary_tokens = 0
    if projection.summary_included:
        # What is sent: the readable block, or a provider's native state (ADR 0039).
        summary_tokens = counter.count_message(projection.messages[0], encoding)
    first = 1 if projection.summary_included else 0
    pinned = sum(
        counter.count_message(m, encoding)
        for m in projection.messages[first : first + projection.pinned_count]
    )
    breakdown = {
        "overhead": counter.request_overhead,
        "system": system_tokens,
        "tools": counter.count_tools(inputs.tools, encoding),
        "knowledge": knowledge,
        "plan": plan,
        "summary": summary_tokens,
        "history": history_tokens,
        "pinned": pinned,
    }
    known = projection.known_flat
    return Draft(messages, list(inputs.tools), breakdown, projection, encoding,
                 total=sum(breakdown.values()), fixed=sum(breakdown[p] for p in FIXED_PARTS),
                 known_flat=known.moved(messages, len(messages) - len(projection.messages))
                 if known is not None and known.messages is projection.messages else None)

