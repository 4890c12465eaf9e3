"""Nothing to compact said before the summary call (ADR 0095): the precheck may only
refuse a compaction that no summary could make smaller (spec §10.4)."""

from __future__ import annotations

from backends import MakeHarness
from compaction_builders import SID, make
from helpers import RecordingSummarizer, ok, user

#: Handler unit tests: on the in-memory store (ADR 0045).
BACKENDS = ("memory",)

_PATHS = [f"/srv/app/nested/module_{i}/config/settings_prod_{i}.yaml" for i in range(4)]


def test_a_checklist_item_stated_inside_another_does_not_refuse_a_compaction_that_shrinks(
    make_harness: MakeHarness,
) -> None:
    # One constraint names four paths: the checklist holds the constraint and each path,
    # and stating the constraint states the paths. The precheck counted every path twice
    # and refused; the constraint alone as the summary shrinks the request (e27caa7
    # compacted this session, 120 -> 115 tokens).
    constraint = f"You must never edit {', '.join(_PATHS)} directly."
    summarizer = RecordingSummarizer(text=constraint)
    h = make(make_harness, summarizer, context_compaction={"keep_recent_tokens": 10})
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        user(constraint, turn_id="t0"), {"role": "assistant", "content": "ok " + "fine " * 48, "turn_id": "t0"}]}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        user("next", turn_id="t1"), {"role": "assistant", "content": "ok", "turn_id": "t1"}]}))
    got = ok(h.do({"type": "compact", "session_id": SID}))
    assert got["status"] == "compacted", got
    assert got["tokens_after"] < got["tokens_before"]
    assert len(summarizer.requests) == 1
    h.close()


def test_an_automatic_compaction_refused_before_the_call_tells_the_turn_why(make_harness: MakeHarness) -> None:
    # The fixed parts and the newest turn fill the threshold, the old part is two short turns: every turn
    # crosses the threshold and no summary can shrink the request. At e27caa7 the turn was
    # told "compaction would not shrink the context"; the warning must still name a cause.
    summarizer = RecordingSummarizer()
    h = make(make_harness, summarizer, context_compaction={"keep_recent_tokens": 10},
             models={"gpt-4o": {"token_limit": 2_000}})
    for n in range(3):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
            user(f"short question {n}" + (": " + "more words " * 100 if n == 2 else ""), turn_id=f"t{n}"),
            {"role": "assistant", "content": "short answer", "turn_id": f"t{n}"}]}))
    system = "You are a careful assistant. " * 140
    got = ok(h.do({"type": "prepare_turn", "session_id": SID, "system_prompt": system}))
    assert got["usage"]["used_tokens"] > got["usage"]["compression_threshold_tokens"], got["usage"]
    assert summarizer.requests == []
    assert any("as large as the part it replaces" in w for w in got["warnings"]), got["warnings"]
    h.close()


def test_a_checklist_item_the_kept_tail_supersedes_does_not_refuse_a_compaction_that_shrinks(
    make_harness: MakeHarness,
) -> None:
    # The old deploy date is restated in the kept tail: the summary is not checked for the
    # old one (the tail supersedes it), so "Summary." alone shrinks the request. The
    # precheck counted the old statement, a long sentence, and refused (e27caa7 compacted).
    filler = " ".join(["ledger beta delta retry queue"] * 12)
    summarizer = RecordingSummarizer(text="Summary.")
    h = make(make_harness, summarizer, context_compaction={"keep_recent_tokens": 10})
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        user(f"The deploy date is 2026-08-17. {filler}", turn_id="t0"),
        {"role": "assistant", "content": "ok", "turn_id": "t0"}]}))
    ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
        user("The deploy date is 2026-04-14.", turn_id="t1"), {"role": "assistant", "content": "ok", "turn_id": "t1"}]}))
    got = ok(h.do({"type": "compact", "session_id": SID}))
    assert got["status"] == "compacted", got
    assert got["tokens_after"] < got["tokens_before"]
    h.close()


def test_the_attempt_log_names_why_an_automatic_compaction_was_refused_before_the_call(
    make_harness: MakeHarness,
) -> None:
    h = make(make_harness, RecordingSummarizer(), context_compaction={"keep_recent_tokens": 10},
             models={"gpt-4o": {"token_limit": 2_000}})
    for n in range(3):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
            user(f"short question {n}" + (": " + "more words " * 100 if n == 2 else ""), turn_id=f"t{n}"),
            {"role": "assistant", "content": "short answer", "turn_id": f"t{n}"}]}))
    ok(h.do({"type": "prepare_turn", "session_id": SID, "system_prompt": "You are a careful assistant. " * 140}))
    attempts = ok(h.do({"type": "list_compaction_attempts", "session_id": SID}))["attempts"]
    assert [a["outcome"] for a in attempts] == ["nothing_to_compact"]
    assert attempts[0]["nothing_reason"] == "summary_not_smaller" and attempts[0]["error_code"] is None
    h.close()


def test_the_floor_never_exceeds_what_the_write_back_of_a_bare_summary_adds() -> None:
    # A lower bound or nothing: "." with the checklist written back is a summary the
    # compaction can always produce, so the precheck's floor may never exceed what that
    # write-back adds (overlapping items and statements the kept tail supersedes among them).
    import random
    import re

    from context_compaction.application.compacting.ledgers import (
        checked_ledger,
        checklist_for,
        tail_statements,
        verify_summary,
    )
    from context_compaction.application.compacting.prepare import carried_floor
    from context_compaction.domain.ledger import Ledger, fair_order

    def count(text: str) -> int:
        return len(re.findall(r"\w+|[^\w\s]", text))

    words = ["alpha", "beta", "refund", "ledger", "lock", "queue", "retry", "cache"]
    rng = random.Random(7)
    for _ in range(200):
        records = []
        for seq in range(1, 2 * rng.randrange(2, 8) + 1):
            filler = " ".join(rng.choice(words) for _ in range(rng.randrange(0, 30)))
            content = rng.choice([
                f"You must never edit /srv/app/m{rng.randrange(4)}/cfg.yaml or /srv/app/m{rng.randrange(4)}/x.py. ",
                f"The deploy date is 2026-0{rng.randrange(1, 9)}-1{rng.randrange(9)}. ",
                f"Use port {rng.randrange(8000, 8004)} for the api. ", ""]) + filler
            records.append({"seq": seq, "role": "user" if seq % 2 else "assistant", "content": content or "ok",
                            "turn_id": f"t{(seq + 1) // 2}", "message_id": f"m{seq}"})
        cut = 2 * rng.randrange(1, len(records) // 2)
        covered, retained = records[:cut], records[cut:]
        budget = rng.choice([15, 40, 120, 1_000])
        checked = tuple(fair_order(checked_ledger(Ledger(checklist_for(None, covered)), tail_statements(retained)).items))
        floor = carried_floor(checked, budget, count)
        written = verify_summary(".", previous=None, covered=covered, last_seq=cut, budget_tokens=budget,
                                 count=count, retained=retained).text
        assert floor <= count(written) - count("."), (floor, written, covered, retained)


def test_one_compaction_reads_the_kept_tail_for_its_statements_once(make_harness: MakeHarness, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # ADR 0103: the shrink check and the verification both need the kept tail's statements;
    # each extracted them (~24 ms for a 57-message tail), now ``Preparation.tail`` carries them.
    from context_compaction.application.compacting import ledgers

    reads: list[tuple[int, ...]] = []
    real = ledgers.extract

    def extract(entries):  # type: ignore[no-untyped-def]
        reads.append(tuple(e.seq for e in entries))
        return real(entries)

    monkeypatch.setattr(ledgers, "extract", extract)
    summarizer = RecordingSummarizer(text="Summary.")
    h = make(make_harness, summarizer, context_compaction={"keep_recent_tokens": 10})
    for n in range(3):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": [
            user(f"The deploy date is March {n + 3}. " + "filler words " * 30, turn_id=f"t{n}"),
            {"role": "assistant", "content": "ok " * 30, "turn_id": f"t{n}"}]}))
    got = ok(h.do({"type": "compact", "session_id": SID}))
    assert got["status"] == "compacted", got
    tail = [r for r in reads if r and r[-1] == max(max(x) for x in reads if x) and r[0] > 1]
    assert len(tail) == 1, reads
    h.close()
