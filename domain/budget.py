"""ContextBudget arithmetic (spec §8, DESIGN §7). Pure functions, no I/O.

There is ONE trigger predicate, :func:`should_compact`, strictly greater-than
(seed 003 rule 1); every caller uses it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .errors import FixedContextExceedsBudget

DEFAULT_WINDOW = 128_000
SUMMARY_OUTPUT_CAP = 2048
SUMMARY_SAFETY_CAP = 512

#: A token counter (the model's tokenizer, or an estimate). Here, the lowest module that
#: counts tokens, so clearing, the summary input and the ledger share one definition.
Count = Callable[[str], int]

#: Parts of a request that compaction cannot shrink (``overhead``: the request's priming).
#: Parts a compaction cannot shrink; ``pinned`` are the pinned messages below the
#: checkpoint's boundary, kept verbatim (issue 16).
FIXED_PARTS = ("overhead", "system", "tools", "knowledge", "plan", "pinned")


@dataclass(frozen=True)
class WindowResolution:
    """How the hard window was decided (spec §10.3 last paragraph, acceptance 14).

    ``model_window`` = min(configured token_limit, catalog max_input_tokens), whichever
    are known, else 128000; ``hard_window`` = min(model_window, agent limit,
    calibrated window): an agent or an overflow error can only tighten it.
    """

    model_window: int
    hard_window: int
    source: str


def resolve_window(
    *,
    configured_limit: int | None,
    catalog_limit: int | None,
    agent_limit: int | None = None,
    calibrated: int | None = None,
) -> WindowResolution:
    known = [w for w in (configured_limit, catalog_limit) if w]
    model_window = min(known) if known else DEFAULT_WINDOW
    if not known:
        source = "default"
    elif configured_limit and (not catalog_limit or configured_limit <= catalog_limit):
        source = "model config"
    else:
        source = "model catalog"
    hard = model_window
    if agent_limit and agent_limit < hard:
        hard, source = agent_limit, "agent limit"
    if calibrated and calibrated < hard:
        hard, source = calibrated, "provider overflow error"
    return WindowResolution(model_window=model_window, hard_window=hard, source=source)


@dataclass(frozen=True)
class LearnedWindow:
    """A context window a provider reported in an overflow error (``WindowLearned``).

    ``window`` is the provider's number. When the provider also counted the refused
    request higher than we did (``prompt_tokens`` > ``estimated_tokens``), our token
    counts run low for it, so the budget uses the window in our units instead
    (:attr:`in_our_units`): the next request then fits the provider's count too.
    """

    provider: str
    model: str
    window: int
    prompt_tokens: int | None = None
    estimated_tokens: int | None = None

    @property
    def in_our_units(self) -> int:
        reported, ours = self.prompt_tokens, self.estimated_tokens
        if reported and ours and reported > ours:
            return self.window * ours // reported
        return self.window


@dataclass(frozen=True)
class Budget:
    """The thresholds of spec §8.2 for one hard window."""

    configured_window: int
    window: int
    configured_reserve: int
    reserve: int
    threshold: int
    configured_keep: int
    keep: int
    enabled: bool
    window_source: str = "default"

    @classmethod
    def compute(
        cls,
        window: WindowResolution,
        *,
        reserve_tokens: int,
        keep_recent_tokens: int,
        enabled: bool = True,
    ) -> Budget:
        hard = window.hard_window
        reserve = min(reserve_tokens, hard // 2)
        threshold = hard - reserve
        keep = min(keep_recent_tokens, threshold // 2)
        return cls(
            configured_window=window.model_window,
            window=hard,
            configured_reserve=reserve_tokens,
            reserve=reserve,
            threshold=threshold,
            configured_keep=keep_recent_tokens,
            keep=keep,
            enabled=enabled,
            window_source=window.source,
        )

    def should_compact(self, context_tokens: int) -> bool:
        return should_compact(self.enabled, context_tokens, self.threshold)


#: The share of the threshold the checklist's write-back is guaranteed (ADR 0083): the kept
#: raw tail gives way first. At a 128K or 32K window the default tail leaves more than
#: this; at 8K (threshold 4,000, summary 2,000, tail 2,000) it left none.
CHECKLIST_ROOM_SHARE = 4


def keep_with_checklist_room(keep: int, *, threshold: int, fixed: int, window: int) -> int:
    """The kept tail, shrunk so that the summary (its output reserve) and the checklist's
    write-back (a quarter of the threshold) still fit under the threshold beside it and
    the fixed parts; never below zero."""
    output_reserve = min(SUMMARY_OUTPUT_CAP, window // 4)
    room = threshold - fixed - output_reserve - threshold // CHECKLIST_ROOM_SHARE
    return max(0, min(keep, room))


def should_compact(enabled: bool, context_tokens: int, threshold: int) -> bool:
    """Spec §8.3: auto-compact iff enabled and the next request exceeds the threshold."""
    return enabled and context_tokens > threshold


def check_fixed_parts(breakdown: Mapping[str, int], threshold: int) -> None:
    """Spec §8.4: compaction only shrinks history; fixed parts at or over the threshold fail."""
    fixed = sum(breakdown.get(part, 0) for part in FIXED_PARTS)
    if fixed >= threshold:
        parts = {part: breakdown.get(part, 0) for part in FIXED_PARTS}
        raise FixedContextExceedsBudget(
            f"system, tools, knowledge, plan, pinned messages and request overhead need {fixed:,} tokens, at or over the "
            f"compaction threshold of {threshold:,}; compaction can only shrink history",
            details={"breakdown": parts, "fixed_tokens": fixed, "threshold": threshold},
        )


@dataclass(frozen=True)
class SummaryBudget:
    """Spec §10.3: the summary call's own limits, derived from the current window."""

    output_reserve: int
    safety: int
    prompt_overhead: int
    source_budget: int

    @classmethod
    def compute(cls, window: int, prompt_overhead: int) -> SummaryBudget:
        output_reserve = min(SUMMARY_OUTPUT_CAP, window // 4)
        safety = min(SUMMARY_SAFETY_CAP, window // 16)
        source = window - output_reserve - prompt_overhead - safety
        return cls(output_reserve, safety, prompt_overhead, source)

    @property
    def feasible(self) -> bool:
        """Is there room for any material at all? (spec §10.3, too-small windows)"""
        return self.source_budget >= 64 and self.output_reserve >= 64
