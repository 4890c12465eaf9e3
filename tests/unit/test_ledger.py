"""The must-keep ledger and citation checks (issue 16): pure, no storage."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from context_compaction.domain.ledger import (
    MAX_ITEMS,
    Ledger,
    LedgerItem,
    extract,
    facts,
    present,
    stated_text,
    verify,
)
from context_compaction.domain.provenance import clean_citations
from context_compaction.domain.summary import HEADINGS, SourceEntry


def words(text: str) -> int:
    return len(text.split())


def user(seq: int, text: str, steering: bool = False) -> SourceEntry:
    return SourceEntry(seq=seq, role="user", text=text, steering=steering)


def empty_summary() -> str:
    return "\n\n".join(f"## {h}\nNone." for h in HEADINGS)


def kinds(items: list[LedgerItem]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for i in items:
        out.setdefault(i.kind, set()).add(i.value)
    return out


def test_extracts_every_kind_of_fact_with_its_seq() -> None:
    text = (
        "Edit src/app/server.py and ./conf/app.yaml; see https://example.com/docs/x.html. "
        "Ticket PROJ-1234 and issue #4711, commit 3fa9c1e0b. The API listens on port 8443, "
        "localhost:9000 in dev. Upgrade to v2.31.0-rc.1. Set LOG_LEVEL=debug."
    )
    found = kinds(facts(text, 7))
    assert found["path"] == {"src/app/server.py", "./conf/app.yaml"}
    assert found["url"] == {"https://example.com/docs/x.html"}
    assert found["id"] == {"PROJ-1234", "#4711"}
    assert found["commit"] == {"3fa9c1e0b"}
    assert found["port"] == {"8443", "9000"}
    assert found["version"] == {"v2.31.0-rc.1"}
    assert found["setting"] == {"LOG_LEVEL=debug"}
    assert all(i.seq == 7 for i in facts(text, 7))


def test_user_constraints_corrections_and_steering_tool_errors_only_from_tools() -> None:
    entries = [
        user(1, "Build the exporter. You must not touch the public API. Thanks!"),
        user(2, "Actually, the output goes to /var/out/report.csv, not stdout."),
        user(3, "keep it short", steering=True),
        SourceEntry(seq=4, role="assistant", text="", tool_calls=(("c1", "read", '{"path": "lib/a.py"}'),)),
        SourceEntry(seq=5, role="tool", text="lib/b.py\nlib/c.py\nValueError: bad header row\n",
                    tool_name="read", tool_call_id="c1"),
    ]
    found = extract(entries)
    by = kinds(found)
    assert by["constraint"] == {"You must not touch the public API.", "keep it short"}
    assert by["correction"] == {"Actually, the output goes to /var/out/report.csv, not stdout."}
    assert by["path"] == {"/var/out/report.csv", "lib/a.py"}  # not the listing's paths
    assert by["error"] == {"ValueError: bad header row"}
    assert [i.seq for i in found if i.kind == "error"] == [5]


def test_merge_is_cumulative_counts_repeats_and_supersedes_settings() -> None:
    first, _ = Ledger().merge(facts("PORT=8080 in src/main.py", 3))
    second, evicted = first.merge(facts("now PORT=9090, still src/main.py", 9))
    assert evicted == []
    values = {i.value: i for i in second.items}
    assert "PORT=8080" not in values and values["PORT=9090"].seq == 9
    assert values["src/main.py"].count == 2 and values["src/main.py"].first_seq == 3
    assert [i.value for i in second.superseded] == ["PORT=8080"]
    again, _ = Ledger.from_record(second.to_record()).merge([])
    assert again == second


def test_verify_restores_missing_items_under_their_headings_with_seqs() -> None:
    ledger, _ = Ledger().merge(
        extract([user(2, "No, use Postgres 16.2.0 instead of MySQL."), user(4, "Never log tokens. The key is in .env/prod.env")])
    )
    summary = empty_summary().replace("## Exact Facts\nNone.", "## Exact Facts\n- version: 16.2.0")
    text, report = verify(summary, ledger, budget_tokens=200, count=words)
    assert report.items_total == len(ledger.items) == report.in_summary + report.restored
    assert report.dropped == 0 and report.in_summary == 1
    assert "- No, use Postgres 16.2.0 instead of MySQL. (seq 2)" in text.split("## Recent User Corrections")[1]
    assert "- Never log tokens. (seq 4)" in text.split("## Constraints")[1].split("##")[0]
    assert "- path: .env/prod.env (seq 4)" in text.split("## Exact Facts")[1].split("##")[0]
    assert [ln for ln in text.splitlines() if ln.startswith("## ")] == [f"## {h}" for h in HEADINGS]
    assert "None." not in text.split("## Constraints")[1].split("##")[0]
    assert verify(text, ledger, 200, words) == (text, verify(text, ledger, 200, words)[1])
    assert verify(text, ledger, 200, words)[1].restored == 0


def test_a_small_budget_keeps_corrections_and_constraints_first_and_reports_the_rest() -> None:
    entries = [user(1, f"Use cfg/file{n}.toml and build {n}.0.1 please") for n in range(10)]
    entries.append(user(20, "Actually, use cfg/final.toml instead."))
    ledger, _ = Ledger().merge(extract(entries))
    text, report = verify("", ledger, budget_tokens=20, count=words)
    assert report.restored >= 1 and report.dropped > 0
    assert "Actually, use cfg/final.toml instead." in text
    assert report.items_total == report.in_summary + report.restored + report.dropped
    for item in report.dropped_items:
        assert not present(text, item)
    record = report.to_record()
    assert record["dropped"] == len(record["dropped_items"]) == report.dropped


def test_a_superseded_setting_left_in_the_summary_is_marked_not_current() -> None:
    ledger, _ = Ledger().merge(facts("DB_PORT=5432", 1))
    ledger, _ = ledger.merge(facts("DB_PORT=6432", 8))
    text, report = verify("## Exact Facts\n- setting: DB_PORT=5432", ledger, 100, words)
    assert "DB_PORT=5432 (superseded by DB_PORT=6432 at seq 8)" in text
    assert "- setting: DB_PORT=6432 (seq 8)" in text
    assert report.marked_superseded == 1
    assert verify(text, ledger, 100, words)[0] == text  # idempotent


def test_the_ledger_is_bounded_and_evicts_the_oldest_facts() -> None:
    found = [LedgerItem("path", f"d/f{n}.py", n, n) for n in range(MAX_ITEMS + 5)]
    found.append(LedgerItem("constraint", "Never push to main.", 0, 0))
    ledger, evicted = Ledger().merge(found)
    assert len(ledger.items) == MAX_ITEMS and len(evicted) == 6
    assert {i.value for i in evicted} == {f"d/f{n}.py" for n in range(6)}
    assert any(i.kind == "constraint" for i in ledger.items)


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(st.sampled_from([
        "Put it in src/x.py", "Actually, port 8080 not 80.", "You must keep API v1.2.3.",
        "See JIRA-77 and https://h.example/a", "MODE=fast", "MODE=slow", "no thanks",
    ]), min_size=1, max_size=12),
    summary=st.text(max_size=80),
    budget=st.integers(min_value=0, max_value=60),
)
def test_every_item_is_in_the_summary_restored_or_reported_dropped(texts: list[str], summary: str, budget: int) -> None:
    ledger, _ = Ledger().merge(extract([user(n + 1, t) for n, t in enumerate(texts)]))
    text, report = verify(summary, ledger, budget, words)
    assert report.items_total == report.in_summary + report.restored + report.dropped
    dropped = set(report.dropped_items)
    for item in ledger.items:
        assert present(stated_text(text), item) or item in dropped


def test_citations_outside_the_summarized_range_are_removed() -> None:
    text = "- Fixed the parser (seq 12–40).\n- Invented (seq 90-120).\n- Also (seq 3).\n- Bad (seq 0)."
    cleaned, kept, removed = clean_citations(text, 1, 50)
    assert (kept, removed) == (2, 2)
    assert cleaned == "- Fixed the parser (seq 12–40).\n- Invented.\n- Also (seq 3).\n- Bad."


def test_superseded_marks_spend_the_write_back_room_and_a_line_they_have_none_for_is_left_out() -> None:
    # Before: the marks were set whatever the room (two "(superseded at seq 55)" at a
    # write-back budget of 0 took a 1,000-token window's summary 4 tokens over the threshold).
    ledger, _ = Ledger().merge(extract([
        SourceEntry(seq=2, role="assistant", text="We settled on RabbitMQ as the queue backend, since the team knows it well."),
        SourceEntry(seq=9, role="assistant",
                    text="Change of plan: the queue backend is now NATS JetStream, since it retries out of the box."),
    ]))
    old = "We settled on RabbitMQ as the queue backend, since the team knows it well."
    summary = f"## Decisions\n- {old} (seq 2)\n- Kept the retry budget at 5 attempts."
    text, report = verify(summary, ledger, 0, words)
    assert "RabbitMQ" not in text and "(superseded" not in text and report.marked_superseded == 0
    assert words(text) <= words(summary) and "- Kept the retry budget at 5 attempts." in text
    # (with room the mark is set, as before)
    text, report = verify(summary, ledger, 500, words)
    assert f"(superseded at seq 9) {old}" in text and report.marked_superseded == 1
