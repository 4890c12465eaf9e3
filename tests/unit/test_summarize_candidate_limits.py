"""``summarize_candidate`` keeps ADR 0111's rule (review of issue 44, ADR 0115): when no
summary fits beside what the planned cut keeps, no summary is asked for; the error names
the parts and the smallest window, as ``compact`` does."""

from __future__ import annotations

from pathlib import Path

import pytest

from context_compaction import Settings, bootstrap, commands
from context_compaction.application.compacting.compaction import summarize_candidate
from context_compaction.application.compacting.prepare import keep_beside_pins, record_counts
from context_compaction.application.runtime.turncontext import prepare_context
from context_compaction.domain.cutpoint import CutPlan, plan_cut
from context_compaction.domain.errors import SummaryFailed
from filling_summarizer import Filler


def _say(bus, role: str, text: str) -> None:  # type: ignore[no-untyped-def]
    bus.dispatch(commands.AppendMessages(session_id="s", messages=[{"role": role, "content": text}]))


def test_a_planned_cut_with_no_room_for_a_summary_asks_for_none_and_names_the_smallest_window(tmp_path: Path) -> None:
    # Before: the summarizer was asked for the whole output reserve (250 tokens) beside a
    # pinned rule and a turn that left it under 64, and the candidate then failed the
    # shrink check with no window named (a paid call that could not succeed).
    filler = Filler()
    bus = bootstrap(Settings(database_url=f"sqlite:///{tmp_path / 't.db'}"), summarizer=filler)
    bus.dispatch(commands.StartSession(session_id="s", model="gpt-4o", agent_token_limit=1_000))
    got = bus.dispatch_json({"type": "append_messages", "session_id": "s",
                             "messages": [{"role": "user", "content": "Pinned rule: " + "never deploy on fridays " * 35}]})
    bus.dispatch_json({"type": "pin_messages", "session_id": "s", "seqs": got["result"]["seqs"]})
    _say(bus, "assistant", "Understood.")
    for k in range(4):
        _say(bus, "user", f"Question {k}: " + "please check the logs " * 10)
        _say(bus, "assistant", "Checked: " + "all fine " * 10)
    _say(bus, "user", "Next: " + "look at the handler " * 48)
    svc = bus.services
    turn = prepare_context(svc, "s")
    plan = plan_cut(turn.records, record_counts(turn), keep_tokens=keep_beside_pins(turn), previous_first_retained=None)
    assert isinstance(plan, CutPlan)
    with pytest.raises(SummaryFailed) as failed:
        summarize_candidate(svc, turn, plan, "manual")
    assert filler.asked == []
    details = failed.value.details or {}
    assert details["smallest_window"] > 1_000 and details["first_retained_seq"] == plan.first_retained_seq
    assert f"the smallest window that can compact it is {details['smallest_window']:,} tokens" in str(failed.value)
    bus.close()
