"""The checklist on chat-style text (ADR 0091): sentences that end without a capital or
without a stop, a value that belongs to the sentence after it, everyday cue phrases,
clauses with their own subjects, and every replaced value that leaves reported.

The sentences here are this module's own (not any ``ctxc eval`` phrasing set)."""

from __future__ import annotations

from context_compaction.application.compacting.ledgers import verify_summary
from context_compaction.domain.checklist import checklist_items
from context_compaction.domain.joining import sentences
from context_compaction.domain.ledger import Ledger, extract
from context_compaction.domain.splitting import split_raw
from context_compaction.domain.summary import SourceEntry


def count(text: str) -> int:
    return max(1, len(text) // 4)


def msg(seq: int, text: str, role: str = "user") -> dict:
    return {"seq": seq, "role": role, "content": text, "tool_calls": [], "steering": False}


def test_a_sentence_ends_at_a_stop_or_a_question_whatever_case_follows() -> None:
    assert sentences("the vendor call moved to Thursday. after that we freeze the schema") == [
        "the vendor call moved to Thursday.", "after that we freeze the schema"]
    assert sentences("do we keep the old importer? nobody has said so far") == [
        "do we keep the old importer?", "nobody has said so far"]
    # (abbreviations and a version number are not the end of a sentence)
    assert len(sentences("we keep small helpers, e.g. the date parser, in one module")) == 1
    assert len(sentences("pin it at approx. 3 retries for now")) == 1


def test_a_sentence_without_its_stop_ends_before_a_word_that_opens_sentences() -> None:
    text = "the shard count is 14 across regions Please rerun the flaky suite afterwards."
    assert split_raw(text) == ["the shard count is 14 across regions", "Please rerun the flaky suite afterwards."]
    # (a name, a month or "I" inside a sentence is no opener)
    assert len(split_raw("ask Rosalind Park about it since I wrote the March plan")) == 1


def test_a_statement_glued_to_a_routine_request_is_its_own_item() -> None:
    items = checklist_items("Could you tidy up jobs/sync.py a little. the vendor call moved to Thursday btw")
    values = [v for _, v, _ in items]
    assert "the vendor call moved to Thursday btw" in values
    assert not any("jobs/sync.py" in v and "vendor" in v for v in values)


def test_a_value_without_a_subject_joins_the_sentence_after_it_that_names_it() -> None:
    assert sentences("Please trim the logs. Maybe 7 nodes? For the search cluster, if memory serves.") == [
        "Please trim the logs.", "Maybe 7 nodes? For the search cluster, if memory serves."]
    # (a subject asked as a question still takes the value after it)
    assert sentences("Disk quota? About 40 GB.") == ["Disk quota? About 40 GB."]


def test_a_count_of_steps_stays_with_the_task_it_counts() -> None:
    assert sentences("Great, the invoice exporter is wrapped up. That puts us at 2 of 6 overall.") == [
        "Great, the invoice exporter is wrapped up. That puts us at 2 of 6 overall."]


def test_everyday_phrases_name_their_kinds() -> None:
    kinds = {v: k for k, v, _ in checklist_items(
        "Keycloak makes the most sense for the identity provider, it is already deployed. "
        "for timestamps can we stick with UTC everywhere? "
        "The onboarding wizard is shipped, 3 of 4 through. "
        "let's keep global state out of the plugin loader.")}
    assert kinds["Keycloak makes the most sense for the identity provider, it is already deployed."] == "decision"
    assert kinds["for timestamps can we stick with UTC everywhere?"] == "preference"
    assert kinds["The onboarding wizard is shipped, 3 of 4 through."] == "task"
    assert kinds["let's keep global state out of the plugin loader."] == "preference"


def test_a_routine_request_glued_on_no_longer_supersedes_a_fact() -> None:
    first = extract([SourceEntry(seq=1, role="user",
                                 text="fyi Oskar Lind is the billing approver now Make sure the formatter runs on api/a.py.")])
    second = extract([SourceEntry(seq=2, role="user", text="Make sure the formatter runs on api/b.py after your change.")])
    ledger, _ = Ledger().merge(first)
    ledger, _ = ledger.merge(second)
    assert any("Oskar Lind" in i.value for i in ledger.items)
    assert not any("Oskar Lind" in i.value for i in ledger.superseded)


def test_a_replaced_value_that_leaves_the_context_is_reported_dropped_with_what_replaced_it() -> None:
    covered = [msg(1, "The nightly import window is 45 minutes."),
               msg(2, "ok update: the nightly import window is 70 minutes now.")]
    out = verify_summary("## Progress\nNone.", previous=None, covered=covered, last_seq=2,
                         budget_tokens=500, count=count)
    dropped = out.record["report"]["dropped_items"]
    assert [(d["value"], d.get("superseded_by")) for d in dropped] == [
        ("The nightly import window is 45 minutes.", 2)]
    report = out.report
    assert report.items_total == report.in_summary + report.restored + report.dropped
    # (one the summary still states, marked, has not left: not dropped as an item; it is
    # no longer stated as current, which the coverage check lists once, ADR 0109)
    kept = verify_summary("## Progress\n- The nightly import window is 45 minutes. (seq 1)", previous=None,
                          covered=covered, last_seq=2, budget_tokens=500, count=count)
    assert [(d["kind"], d["value"]) for d in kept.record["report"]["dropped_items"]] == [
        ("unstated", "The nightly import window is 45 minutes.")]
    assert "(superseded at seq 2) The nightly import window is 45 minutes." in kept.text


def test_a_replaced_value_the_previous_summary_stated_is_reported_when_the_next_one_drops_it() -> None:
    covered = [msg(1, "The nightly import window is 45 minutes."),
               msg(2, "ok update: the nightly import window is 70 minutes now.")]
    first = verify_summary("## Progress\n- The nightly import window is 45 minutes. (seq 1)", previous=None,
                           covered=covered, last_seq=2, budget_tokens=500, count=count)
    again = verify_summary("## Progress\nNone.", previous=first.record, covered=[msg(3, "Thanks.")],
                           last_seq=3, budget_tokens=500, count=count, previous_summary=first.text)
    assert [d["value"] for d in again.record["report"]["dropped_items"]] == [
        "The nightly import window is 45 minutes."]
    # (without a previous summary stating it, a value replaced earlier is not reported twice)
    quiet = verify_summary("## Progress\nNone.", previous=first.record, covered=[msg(3, "Thanks.")],
                           last_seq=3, budget_tokens=500, count=count, previous_summary="## Progress\nNone.")
    assert quiet.record["report"]["dropped_items"] == []


def test_text_in_a_script_without_case_is_never_cut_inside_a_sentence() -> None:
    text = "配置文件在服务器上，请不要修改它。预算上限是五百美元"
    parts = split_raw(text)
    assert "".join(parts) == text and parts == ["配置文件在服务器上，请不要修改它。", "预算上限是五百美元"]


def test_a_compound_sentence_is_about_the_clause_that_holds_its_value() -> None:
    first = extract([SourceEntry(seq=1, role="user", text="Yusuf Demir owns the payments runbook now, the old owner left.")])
    second = extract([SourceEntry(seq=2, role="user", text="Hanna Berg is the incident commander now, the old owner left.")])
    ledger, _ = Ledger().merge(first)
    ledger, _ = ledger.merge(second)
    assert {i.value for i in ledger.items if i.kind == "person"} >= {
        "Yusuf Demir owns the payments runbook now, the old owner left.",
        "Hanna Berg is the incident commander now, the old owner left."}
    # (the same subject in the value's clause still replaces: the newer owner is current)
    third = extract([SourceEntry(seq=3, role="user", text="Lior Ben owns the payments runbook now, the old owner left.")])
    ledger, _ = ledger.merge(third)
    assert any(i.value.startswith("Yusuf Demir") for i in ledger.superseded)


def test_a_value_after_a_request_question_joins_the_sentence_that_names_it() -> None:
    assert sentences("Could you rerun the linter? Maybe May 9? For the vendor review, I believe.")[-1] == (
        "Maybe May 9? For the vendor review, I believe.")


def test_a_chat_update_without_a_matching_subject_marks_the_old_value_possibly_superseded() -> None:
    first = extract([SourceEntry(seq=1, role="assistant",
                                 text="Honestly Meilisearch makes the most sense for the search engine, it indexed fastest.")])
    second = extract([SourceEntry(seq=2, role="assistant",
                                  text="scratch that, we're doing Typesense for the search engine since ops prefer it")])
    ledger, _ = Ledger().merge(first)
    ledger, _ = ledger.merge(second)
    old = [i for i in (*ledger.items, *ledger.superseded) if "Meilisearch" in i.value]
    assert old and (old[0] in ledger.superseded or old[0].doubt == 2)


def test_the_write_back_takes_kinds_in_turns_so_a_frequent_kind_does_not_crowd_out_the_rest() -> None:
    from context_compaction.domain.ledger import LedgerItem, fair_order

    steps = [LedgerItem("task", f"Step {n} is done.", n, n, anchors=(f"step {n}",)) for n in range(10, 20)]
    port = LedgerItem("port", "20011", 11, 11)
    owner = LedgerItem("person", "Noor Aziz approves the releases.", 3, 3, anchors=("releases",))
    rule = LedgerItem("constraint", "Never touch the vendored SDK.", 1, 1)
    order = fair_order([*steps, port, owner, rule])
    assert order[0] is rule  # (constraints and rules first, as before)
    assert set(order[1:4]) == {steps[-1], port, owner}  # (each kind's newest, then the next round)
    assert order[4:] == sorted(steps[:-1], key=lambda i: -i.seq)


def test_a_pronoun_follow_up_updates_the_statement_before_it() -> None:
    entries = [SourceEntry(seq=1, role="user", text="The pen test is on March 3. Please rerun the suite."),
               SourceEntry(seq=2, role="assistant", text="All green."),
               SourceEntry(seq=3, role="user", text="ok so that moved to March 10."),
               SourceEntry(seq=4, role="assistant", text="The nightly build takes 9 minutes."),
               SourceEntry(seq=5, role="user", text="hmm, it's now 14 minutes.")]
    ledger, _ = Ledger().merge(extract(entries))
    current = {i.value for i in ledger.items}
    assert "ok so that moved to March 10. (about: pen test)" in current
    assert "hmm, it's now 14 minutes. (about: build takes, nightly build)" in current
    assert {i.value for i in ledger.superseded} >= {"The pen test is on March 3.", "The nightly build takes 9 minutes."}


def test_a_pronoun_sentence_with_a_subject_of_its_own_or_nothing_before_it_is_no_follow_up() -> None:
    alone = extract([SourceEntry(seq=1, role="user", text="that moved to March 10.")])
    assert [i.anchors for i in alone if "March 10" in i.value] == [()]  # (no subject to replace)
    own = extract([SourceEntry(seq=1, role="user", text="The pen test is on March 3."),
                   SourceEntry(seq=2, role="user", text="it's 4 hours for the load test though.")])
    assert not any("(about:" in i.value for i in own)


def test_a_fact_in_a_caseless_script_is_kept_whole_and_its_loss_reported() -> None:
    text = "预算上限是五百美元，不能超过。好的，谢谢。发布日期改到3月14日。"
    values = [v for _, v, _ in checklist_items(text)]
    assert values == ["预算上限是五百美元，不能超过。", "发布日期改到3月14日。"]  # (whole; talk without a value is not a fact)
    covered = [msg(1, text)]
    kept = verify_summary("## Progress\nNone.", previous=None, covered=covered, last_seq=1,
                          budget_tokens=500, count=count)
    assert all(v in kept.text for v in values)
    lost = verify_summary("## Progress\nNone.", previous=None, covered=covered, last_seq=1,
                          budget_tokens=0, count=count)
    assert {d["value"] for d in lost.record["report"]["dropped_items"]} >= set(values)


def test_a_task_marked_done_after_a_dash_or_colon_keeps_its_count() -> None:
    assert checklist_items("The billing migration: finished. That is 2 of 5.") == [
        ("task", "The billing migration: finished. That is 2 of 5.", frozenset({"billing migration"}))]
    assert [k for k, _, _ in checklist_items("Search reindex \u2014 done. 4/7 steps complete.")] == ["task"]
    assert checklist_items("Run the migration - see the docs.") == []


def test_a_count_is_not_pulled_into_a_routine_sentence_after_it_nor_merged_by_generic_nouns() -> None:
    text = ("great, that closes out the csv importer. 4 of the 9 items on the list are finished now "
            "The parser in etl/read.py is split in two; nothing else changes.")
    values = [v for _, v, _ in checklist_items(text)]
    assert "great, that closes out the csv importer. 4 of the 9 items on the list are finished now" in values
    one = extract([SourceEntry(seq=1, role="assistant", text="the csv importer is wrapped up, 4 of the 9 items on the list")])
    two = extract([SourceEntry(seq=2, role="assistant", text="the pdf exporter is wrapped up, 5 of the 9 items on the list")])
    ledger, _ = Ledger().merge(one)
    ledger, _ = ledger.merge(two)
    assert not ledger.superseded  # ("items on the list" is no subject: two tasks)


def test_an_aside_marker_or_a_first_person_report_opens_a_new_statement_without_a_stop() -> None:
    assert split_raw("the disk quota is 80 GB now fyi NODE_POOL is 6 on staging") == [
        "the disk quota is 80 GB now", "fyi NODE_POOL is 6 on staging"]
    assert split_raw("the error budget is 0.5 percent honestly I patched the alert rule.") == [
        "the error budget is 0.5 percent honestly", "I patched the alert rule."]
    assert len(split_raw("the query I patched was slow")) == 1  # ("I" inside a clause)
    assert sentences("the cutover btw is June 9") == ["the cutover btw is June 9"]  # (value rejoins its subject)


def test_i_think_opens_a_sentence_unless_a_conjunction_leads_into_it() -> None:
    assert split_raw("Oskar signs the invoices now, the old approver left I think it was May 2?") == [
        "Oskar signs the invoices now, the old approver left", "I think it was May 2?"]
    assert len(split_raw("we can ship today so I think the freeze holds")) == 1
    assert len(split_raw("the flaky test I patched is green again")) == 1


def test_an_amounts_rate_is_part_of_the_value_not_a_subject_so_an_asked_subject_keeps_it() -> None:
    # ("per hour" made "hour" a subject of its own: the asked subject went alone and the
    # amount was an item nobody could tell what it was about)
    text = "Contractor rate? Around $120 per hour, give or take."
    assert sentences(text) == [text]
    (kind, value, anchors), = checklist_items(text)
    assert kind == "amount" and "Contractor rate" in value and "$120 per hour" in value
    assert any("contractor" in a for a in anchors)


def test_a_clause_after_a_dash_does_not_make_two_limits_one_subject() -> None:
    # (two limits with the same consequence after a dash: the shared consequence was
    # counted as subject and the second limit replaced the first)
    first = extract([SourceEntry(seq=1, role="user", text="Hold the cold start budget below 800 ms — going over that fails the release gate.")])
    second = extract([SourceEntry(seq=2, role="user", text="Hold the warm start budget below 300 ms—going over that fails the release gate.")])
    ledger, _ = Ledger().merge(first)
    ledger, _ = ledger.merge(second)
    assert not ledger.superseded
    assert sum(1 for i in ledger.items if "release gate" in i.value) == 2
    # (the same limit stated again after a dash still replaces the old value)
    third = extract([SourceEntry(seq=3, role="user", text="Hold the cold start budget below 650 ms – going over that fails the release gate.")])
    ledger, _ = ledger.merge(third)
    assert [i.value for i in ledger.superseded] == [first[0].value]


def test_a_first_person_report_after_a_finished_state_opens_a_new_statement() -> None:
    # ("... 2 of 3 through I moved ..." glued a task to the next report, whose words later
    # replaced it)
    assert split_raw("The invoice export is finished, 2 of 3 through I moved the retries into jobs/retry.py") == [
        "The invoice export is finished, 2 of 3 through", "I moved the retries into jobs/retry.py"]
    assert split_raw("the docs build is all done I've pushed the fix too") == [
        "the docs build is all done", "I've pushed the fix too"]
    # (not after a word inside a clause: "the file I edited")
    assert len(split_raw("check the file I edited before lunch")) == 1


def test_a_product_name_in_capitals_is_the_new_value_that_replaces_an_old_choice() -> None:
    first = extract([SourceEntry(seq=1, role="assistant", text="The search index will be Apache Solr; ops already runs it.")])
    second = extract([SourceEntry(seq=2, role="assistant", text="New plan for the search index: it's MeiliDB now, as the licence is cleaner.")])
    ledger, _ = Ledger().merge(first)
    ledger, _ = ledger.merge(second)
    assert [i.value for i in ledger.superseded] == [first[0].value]


def test_the_word_role_after_a_subject_does_not_make_it_another_subject() -> None:
    first = extract([SourceEntry(seq=1, role="user", text="Whatever it is, Noor Haddad acts as release captain for mobile.")])
    second = extract([SourceEntry(seq=2, role="user", text="Starting today Tomas Ruiz takes the release captain for mobile role.")])
    ledger, _ = Ledger().merge(first)
    ledger, _ = ledger.merge(second)
    assert [i.value for i in ledger.superseded] == [first[0].value]
    assert any(i.value == second[0].value for i in ledger.items)


def test_a_wish_in_the_first_person_opens_a_new_statement_without_a_stop() -> None:
    assert split_raw("Lena Wu runs the data platform now, the old lead left I'd prefer smaller commits from here") == [
        "Lena Wu runs the data platform now, the old lead left", "I'd prefer smaller commits from here"]
    assert len(split_raw("so I'd rather wait for the review")) == 1  # (a conjunction leads into it)


def test_when_a_change_takes_effect_is_not_part_of_its_subject() -> None:
    first = extract([SourceEntry(seq=1, role="user", text="Omar Sayed is the incident lead for payments.")])
    second = extract([SourceEntry(seq=2, role="user", text="Jana Novak becomes incident lead for payments effective Monday.")])
    third = extract([SourceEntry(seq=3, role="user", text="Kofi Mensah is incident lead for payments starting tomorrow.")])
    ledger, _ = Ledger().merge(first)
    ledger, _ = ledger.merge(second)
    ledger, _ = ledger.merge(third)
    assert sorted(i.value for i in ledger.superseded) == sorted([first[0].value, second[0].value])


def test_a_second_change_of_a_subject_replaces_the_first_change() -> None:
    # (the first change found no typed item to replace and stayed an update; the next
    # change of the same subject must still replace it)
    texts = ["The mobile team says the build tool could be Bazel at some point.",
             "Change of plan on the build tool: Buck now, it caches better.",
             "Change of plan on the build tool: Gradle now, the team already knows it."]
    ledger = Ledger()
    for n, t in enumerate(texts, 1):
        ledger, _ = ledger.merge(extract([SourceEntry(seq=n, role="assistant", text=t)]))
    current = [i.value for i in ledger.items if "build tool" in i.value]
    assert current == [texts[2]], current
