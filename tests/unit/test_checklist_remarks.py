"""Every loss reported by design (ADR 0099): a user's content-bearing sentence that no kind
reads is a low-priority ``remark``, carried and reported like any item; a change that names
its subject with other words flags the earlier value instead of leaving it current.

The sentences here are this module's own (not any ``ctxc eval`` phrasing set)."""

from __future__ import annotations

from functools import partial
from context_compaction.domain.checklist import checklist_items, remark
from context_compaction.domain.ledger import Ledger, LedgerItem, fair_order, verify
from context_compaction.domain.remarks import MAX_REMARKS
from context_compaction.domain.summary import SourceEntry
from ledger_builders import merged as merged_by
from backends import MakeHarness
from helpers import ok


def said(seq: int, text: str, role: str = "user") -> SourceEntry:
    return SourceEntry(seq=seq, role=role, text=text)


def words(text: str) -> int:
    return len(text.split())


def chars(text: str) -> int:
    return max(1, len(text) // 4)


merged = partial(merged_by, step=1)


def test_a_user_statement_no_kind_reads_is_a_remark_and_its_loss_is_reported() -> None:
    text = "Squashed merges keep the history readable for the auditors."
    ledger = merged(text)
    [item] = [i for i in ledger.items if i.value == text]
    assert item.kind == "remark" and item.seq == 1 and not item.anchors
    _, report = verify("## Progress\nNone.", ledger, budget_tokens=0, count=words)
    assert {"kind": "remark", "value": text, "seq": 1} in report.to_record()["dropped_items"]
    assert report.items_total == report.in_summary + report.restored + report.dropped
    # (the assistant's prose is not a remark: its decisions have their kind, ADR 0099)
    assert not [i for i in merged(text, role="assistant").items if i.kind == "remark"]


def test_questions_acknowledgements_requests_and_code_are_no_remarks() -> None:
    for s in ("Why does the importer skip empty rows?", "Thanks, that fixed it!", "Sounds good, go ahead.",
              "Run the suite again, the exporter test was flaky.", "Could you tidy the docstrings up a bit.",
              "total = sum(line.amount for line in invoice)", "    if limit is not None and total > limit:",
              "Good morning!", "The key is in .env/prod.env", "Here is the plan:"):
        assert not remark(s), s
    for s in ("Squashed merges keep the history readable.", "Tabs, not spaces.",
              "Make sure every migration can be rolled back."):
        assert remark(s), s


def test_text_in_other_scripts_is_kept_whole() -> None:
    for s in ("Die Abrechnung läuft über das neue Modul, nicht über das alte.",
              "Счёт-фактуры всегда проверяет бухгалтерия.",
              "日志里不要出现客户的邮箱地址",
              "الفواتير تمر عبر الوحدة الجديدة دائما"):
        [(kind, value, anchors)] = checklist_items(s, user=True)
        assert value == s, (kind, value)
        # (a subject word is a whole word of its script: never "uft" out of "läuft")
        assert all(w in s.casefold() and f" {w.split()[0]}" in f" {s.casefold()}" for w in anchors), anchors


def test_typed_items_come_before_remarks_and_remarks_are_bounded() -> None:
    typed = LedgerItem("date", "The audit is on May 4.", 1, 1, anchors=("audit",))
    remarks = [LedgerItem("remark", f"Remark number {n} about the importer.", n + 2, n + 2)
               for n in range(MAX_REMARKS + 5)]
    ledger, evicted = Ledger().merge([typed, *remarks])
    assert fair_order(ledger.items)[0] == typed
    assert sum(i.kind == "remark" for i in ledger.items) == MAX_REMARKS
    # (the oldest leave first and are reported by the compaction that evicts them)
    assert sorted(i.seq for i in evicted) == [r.seq for r in remarks[:5]]
    # (room for the typed line and the heading it creates, not for one remark more)
    room = words(typed.line()) + 1 + words("## Fact Checklist") + 2
    _, report = verify("## Progress\nNone.", ledger, budget_tokens=room, count=words)
    assert typed not in report.dropped_items and report.dropped == MAX_REMARKS


def test_a_change_naming_its_subject_otherwise_flags_the_old_value() -> None:
    ledger = merged("The licence budget is $3,400 a month.",
                    "Actually, what procurement signed off for the licence is now $5,800 a month.")
    old = next(i for i in ledger.items if "$3,400" in i.value)
    assert old.doubt == 2 and "possibly superseded at seq 2" in old.line()
    assert any("$5,800" in i.value for i in ledger.items) and not ledger.superseded
    # (one of several values of that kind and type, sharing a subject word: that one)
    ledger = merged("Priya Raman is our release manager.", "Aiko Tanaka is the on-call reviewer.",
                    "Actually Marcus Bell runs the releases now.")
    assert {i.value: i.doubt for i in ledger.items if i.kind == "person"} == {
        "Priya Raman is our release manager.": 3, "Aiko Tanaka is the on-call reviewer.": None}


def test_a_change_that_names_the_old_value_replaces_it_and_no_cue_flags_nothing() -> None:
    ledger = merged("The licence budget is $3,400 a month.",
                    "Procurement moved the licence budget from $3,400 a month to $5,800 a month.")
    assert [i.value for i in ledger.superseded] == ["The licence budget is $3,400 a month."]
    # (no word of change: two amounts of two things)
    ledger = merged("The licence budget is $3,400 a month.", "The travel allowance is $900 a month.")
    assert all(i.doubt is None for i in ledger.items) and not ledger.superseded
    # ("now" alone is no change said outright: the one time value there is stays current)
    ledger = merged("The nightly batch takes two hours.", "The new parser is much faster now, 40 ms per file.",
                    role="assistant")
    assert all(i.doubt is None for i in ledger.items)


def test_a_1000_token_window_still_compacts_a_session_full_of_remarks(make_harness: MakeHarness) -> None:
    h = make_harness("w", summarizer="extractive", models={"gpt-4o": {"token_limit": 1_000}})
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    areas = "amber cobalt indigo scarlet ochre teal olive maroon coral ivory violet russet".split()
    remarks, statuses, dropped = [], [], set()
    for area in areas * 2:
        remarks.append(f"Squashed merges keep the {area} history readable for the auditors.")
        for message in ({"role": "user", "content": remarks[-1]},
                        {"role": "assistant", "content": "I read the parser and its tests again; nothing changed there."}):
            ok(h.do({"type": "append_messages", "session_id": "s", "messages": [message]}))
            env = h.do({"type": "prepare_turn", "session_id": "s"})
            compaction = (env["result"].get("compaction") or {}) if env["ok"] else {}
            statuses.append(compaction.get("status") if env["ok"] else env["error"]["code"])
            ledger = compaction.get("ledger") or {}
            dropped |= {(d["kind"], d["value"]) for d in ledger.get("dropped_items", ())}
    assert "compacted" in statuses and "summary_failed" not in statuses, statuses
    context = "\n".join(str(m.get("content") or "") for m in
                        ok(h.do({"type": "get_projection", "session_id": "s"}))["messages"])
    # (every remark is in the context, or was reported when it left)
    assert all(r in context or ("remark", r) in dropped for r in remarks)
    assert any(kind == "remark" for kind, _ in dropped)
    h.close()


def test_a_topic_closing_a_run_on_sentence_goes_with_the_wish_after_it() -> None:
    items = checklist_items("bump WORKER_COUNT to 6 as well for the changelog I'd rather we keep one line per fix")
    assert ("preference", "for the changelog I'd rather we keep one line per fix") in {(k, v) for k, v, _ in items}
    assert any(v == "bump WORKER_COUNT to 6 as well" for _, v, _ in items)
    # (a topic closing a sentence with a stop is that sentence's own)
    own = "The release lead is Marta Nowak for the mobile apps. I'd rather we keep one line per fix."
    assert [v for _, v, _ in checklist_items(own)][0] == "The release lead is Marta Nowak for the mobile apps."


def test_a_remark_the_summary_leaves_out_is_reported_once_and_not_carried_after() -> None:
    from context_compaction.application.compacting.ledgers import verify_summary

    def msg(seq: int, text: str) -> dict:
        return {"seq": seq, "role": "user", "content": text, "tool_calls": [], "steering": False}

    text = "Squashed merges keep the history readable for the auditors."
    first = verify_summary("## Progress\nNone.", previous=None, covered=[msg(1, text)], last_seq=1,
                           budget_tokens=0, count=words)
    assert [i.value for i in first.report.dropped_items] == [text]
    # (it left the context: the stored ledger no longer carries it, so no later report repeats it)
    assert text not in [i["value"] for i in first.record.get("items", [])]
    again = verify_summary("## Progress\nNone.", previous=first.record, covered=[msg(2, "Fine.")], last_seq=2,
                           budget_tokens=0, count=words)
    assert text not in [i.value for i in again.report.dropped_items] and again.report.dropped == 0
    # (one the summary states is still carried, and reported when a later summary leaves it out)
    kept = verify_summary(f"## Progress\n- {text}", previous=None, covered=[msg(1, text)], last_seq=1,
                          budget_tokens=0, count=words)
    assert not kept.report.dropped_items and text in [i["value"] for i in kept.record["items"]]
    later = verify_summary("## Progress\nNone.", previous=kept.record, covered=[msg(2, "Fine.")], last_seq=2,
                           budget_tokens=0, count=words)
    assert [i.value for i in later.report.dropped_items] == [text]


def test_a_value_merely_repeated_by_a_change_of_another_subject_is_neither_hidden_nor_flagged() -> None:
    for old, new in (("The product launch is on March 3.", "My flight moved from March 3 to March 5, so I miss the party."),
                     ("The hosting invoice is $400 a month.", "I moved $400 from savings into the holiday fund, it's $1,200 now."),
                     ("Our sprint demo is on Thursday.",
                      "Actually, my kid's parent-teacher meeting moved to Thursday afternoon instead of Wednesday."),
                     ("The contract renewal is due on June 30.", "Update: the team barbecue is now on June 12."),
                     ("The team offsite in Porto is on March 3.", "Actually, my dentist appointment got moved to March 10.")):
        ledger = merged(old, new)
        assert not ledger.superseded, (old, new)
        assert [i.doubt for i in ledger.items if i.value == old] == [None], (old, new)
    # (the same subject, from the old value to a new one: replaced)
    ledger = merged("The product launch is on March 3.", "The product launch moved from March 3 to March 5.")
    assert [i.value for i in ledger.superseded] == ["The product launch is on March 3."]


_AREAS = "amber cobalt indigo scarlet ochre teal olive maroon coral ivory".split()


def test_remarks_in_the_prompt_are_bounded_said_last_and_take_no_room_from_a_summarizer_that_reads_no_prompt() -> None:
    from context_compaction.application.compacting.ledgers import REMARK_SHARE, summary_input

    covered = [{"seq": n + 1, "role": "user", "tool_calls": [], "steering": False,
                "content": f"My cousin remembers the {a} garden and the {b} kettle by the window."}
               for n, (a, b) in enumerate((a, b) for a in _AREAS for b in _AREAS[:8])]
    covered.append({"seq": len(covered) + 1, "role": "user", "tool_calls": [], "steering": False,
                    "content": "The audit is on May 4."})

    def build(reads_prompt: bool, budget: int):
        return summary_input(None, None, covered, source_budget=budget, output_reserve=400, room=10_000, count=chars,
                             reads_prompt=reads_prompt)

    whole = build(False, 100_000).source.tokens  # (the whole material, with room to spare)
    llm, extractive = build(True, whole + 100), build(False, whole + 100)
    user = llm.prompt[-1]["content"]
    must, may = user.split("<must_keep>")[1].split("</must_keep>")[0], user.split("<may_keep>")[1]
    assert "The audit is on May 4." in must and "My cousin" not in must and "Lowest priority" in may
    covered_tokens = sum(len(m["content"]) for m in covered) / 4  # (the share's own estimate)
    remark_cost = sum(chars(ln) + 1 for ln in may.split("\n") if ln.startswith("- "))
    assert 0 < remark_cost <= covered_tokens * REMARK_SHARE
    # (the extractive summarizer never reads the prompt: its material is not shrunk for it)
    assert extractive.source.omitted_messages == 0 and llm.source.omitted_messages > 0


def test_statements_that_open_like_a_request_or_an_acknowledgement_are_remarks() -> None:
    for s in ("Read access is all the external auditors get.", "Show business people rarely read the fine print.",
              "Try-hard marketing copy puts our customers off.", "Sure, grandma is deaf.",
              "数据库服务器放在会计的办公室里面。", "Я не ем мясо."):
        assert remark(s), s
    for s in ("Read the logs.", "Check whether the cache is warm.", "Great, thanks for the quick fix.",
              "Thanks, that fixed it!", "这个问题为什么还没修好？"):
        assert not remark(s), s
    # (a short sentence of a caseless script is content too: five characters say a lot)
    assert [k for k, _, _ in checklist_items("我是素食者。", user=True)] == ["remark"]


def test_a_topic_never_joins_a_wish_across_a_line_break() -> None:
    items = checklist_items("- bump WORKER_COUNT to 6 as well for the changelog\n- I'd rather we keep one line per fix")
    assert "I'd rather we keep one line per fix" in {v for _, v, _ in items}
