"""Spec §20.1: budget arithmetic, window resolution, the one trigger predicate."""

from __future__ import annotations

import pytest

from context_compaction.domain.budget import (
    Budget,
    SummaryBudget,
    check_fixed_parts,
    resolve_window,
    should_compact,
)
from context_compaction.domain.errors import FixedContextExceedsBudget


def budget(window: int, reserve: int = 16384, keep: int = 20000, enabled: bool = True, **kw) -> Budget:
    return Budget.compute(
        resolve_window(configured_limit=window, catalog_limit=None, **kw),
        reserve_tokens=reserve,
        keep_recent_tokens=keep,
        enabled=enabled,
    )


def test_128k_default_threshold_is_111616() -> None:
    b = budget(128_000)
    assert (b.window, b.reserve, b.threshold, b.keep) == (128_000, 16_384, 111_616, 20_000)


def test_unknown_model_falls_back_to_128000() -> None:
    w = resolve_window(configured_limit=None, catalog_limit=None)
    assert (w.model_window, w.hard_window, w.source) == (128_000, 128_000, "default")


def test_an_8k_window_scales_reserve_and_keep() -> None:
    b = budget(8_192)
    assert b.reserve == 4_096  # min(16384, 8192 / 2)
    assert b.threshold == 4_096
    assert b.keep == 2_048  # min(20000, 4096 / 2)
    assert b.threshold > 0 and b.keep < b.threshold


def test_threshold_does_not_trigger_and_threshold_plus_one_does() -> None:
    b = budget(128_000)
    assert not b.should_compact(111_616)
    assert b.should_compact(111_617)
    assert not should_compact(True, 100, 100) and should_compact(True, 101, 100)


def test_disabled_never_triggers_automatically() -> None:
    b = budget(128_000, enabled=False)
    assert not b.should_compact(10**9)


def test_window_is_the_min_of_caps_and_an_agent_only_tightens() -> None:
    w = resolve_window(configured_limit=64_000, catalog_limit=128_000)
    assert (w.model_window, w.source) == (64_000, "model config")
    w = resolve_window(configured_limit=200_000, catalog_limit=128_000)
    assert (w.model_window, w.source) == (128_000, "model catalog")
    w = resolve_window(configured_limit=None, catalog_limit=128_000, agent_limit=32_000)
    assert (w.model_window, w.hard_window, w.source) == (128_000, 32_000, "agent limit")
    w = resolve_window(configured_limit=None, catalog_limit=128_000, agent_limit=500_000)
    assert w.hard_window == 128_000  # an agent cannot widen the model window
    w = resolve_window(configured_limit=None, catalog_limit=None, agent_limit=500_000)
    assert w.hard_window == 128_000


def test_an_overflow_calibrated_window_tightens_too() -> None:
    w = resolve_window(configured_limit=None, catalog_limit=128_000, calibrated=100_000)
    assert (w.hard_window, w.source) == (100_000, "provider overflow error")
    assert budget(128_000, calibrated=8_192).threshold == 4_096


def test_fixed_parts_at_the_threshold_fail_with_a_breakdown() -> None:
    parts = {"system": 3_000, "tools": 1_000, "knowledge": 96, "plan": 0, "history": 10}
    check_fixed_parts(parts, threshold=4_097)
    with pytest.raises(FixedContextExceedsBudget) as info:
        check_fixed_parts(parts, threshold=4_096)
    assert info.value.code == "fixed_context_exceeds_budget"
    assert info.value.details["breakdown"] == {
        "overhead": 0, "system": 3_000, "tools": 1_000, "knowledge": 96, "plan": 0, "pinned": 0}


def test_summary_budget_follows_the_window_not_a_fixed_32k() -> None:
    big = SummaryBudget.compute(128_000, prompt_overhead=400)
    assert big.output_reserve == 2048 and big.safety == 512
    assert big.source_budget == 128_000 - 2048 - 400 - 512
    assert big.source_budget > 32_000
    small = SummaryBudget.compute(4_096, prompt_overhead=400)
    assert small.output_reserve == 1024 and small.safety == 256
    assert small.source_budget == 4_096 - 1024 - 400 - 256
    assert not SummaryBudget.compute(600, prompt_overhead=400).feasible
