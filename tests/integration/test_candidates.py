"""Preview, approve, partial; the /info forecast (issue 43), on memory, SQLite and
PostgreSQL."""

from __future__ import annotations

import math

import pytest

from backends import MakeHarness
from context_compaction.domain.forecast import forecast
from context_compaction.infrastructure.demo.scenario import coding_session
from helpers import Harness, assistant, err, ok, user
from candidate_builders import SID, projection, tool_session

BACKENDS = ("memory", "sqlite", "postgres")


def _session(make_harness: MakeHarness, turns: int = 8, **settings) -> Harness:
    settings.setdefault("context_compaction", {"keep_recent_tokens": 3000})
    h = make_harness("cand", **settings)
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    for t in coding_session(turns, big_output_chars=3_000):
        ok(h.do({"type": "append_messages", "session_id": SID, "messages": t.messages()}))
    return h


# ------------------------------------------------------------ dry run, commit
def test_a_dry_run_commits_nothing_and_its_candidate_commits_later(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    before = projection(h)
    events = h.events()
    dry = ok(h.do({"type": "compact", "session_id": SID, "dry_run": True}))
    assert dry["status"] == "candidate" and dry["candidate_id"] and dry["checkpoint_id"] is None
    assert dry["summary"] and dry["tokens_after"] < dry["tokens_before"]
    assert dry["ledger"] is not None and dry["net"]["measured"] is False
    assert projection(h) == before and h.events() == events  # nothing committed
    done = ok(h.do({"type": "commit_candidate", "session_id": SID, "candidate_id": dry["candidate_id"]}))
    assert done["status"] == "compacted" and done["first_retained_seq"] == dry["first_retained_seq"]
    p = projection(h)
    assert p["checkpoint_id"] == done["checkpoint_id"]
    assert dry["summary"] in p["messages"][0]["content"]
    outcomes = [a["outcome"] for a in ok(h.do({"type": "list_compaction_attempts", "session_id": SID}))["attempts"]]
    assert outcomes == ["compacted", "candidate"]
    # Committed once: the generation moved, so a second commit is stale.
    again = h.do({"type": "commit_candidate", "session_id": SID, "candidate_id": dry["candidate_id"]})
    err(again, "stale_candidate")
    h.close()


def test_an_append_after_the_dry_run_does_not_stale_the_candidate(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    dry = ok(h.do({"type": "compact", "session_id": SID, "dry_run": True}))
    ok(h.do({"type": "append_messages", "session_id": SID,
                     "messages": [user("one more question"), assistant("one more answer")]}))
    done = ok(h.do({"type": "commit_candidate", "session_id": SID, "candidate_id": dry["candidate_id"]}))
    assert done["status"] == "compacted"
    p = projection(h)
    assert p["messages"][-1]["content"] == "one more answer"  # the new message stays in the tail
    h.close()


def test_a_clear_after_the_dry_run_makes_the_candidate_stale(make_harness: MakeHarness) -> None:
    h = _session(make_harness)
    dry = ok(h.do({"type": "compact", "session_id": SID, "dry_run": True}))
    ok(h.do({"type": "invalidate_history", "session_id": SID, "kind": "clear"}))
    events = h.events()
    err(h.do({"type": "commit_candidate", "session_id": SID, "candidate_id": dry["candidate_id"]}),
        "stale_candidate")
    assert h.events() == events and projection(h)["checkpoint_id"] is None
    h.close()


def test_an_unknown_candidate_is_refused(make_harness: MakeHarness) -> None:
    h = _session(make_harness, turns=3)
    err(h.do({"type": "commit_candidate", "session_id": SID, "candidate_id": "cand-nope"}), "invalid_command")
    err(h.do({"type": "compact", "session_id": SID, "up_to_seq": 3, "fraction": 0.5}), "invalid_command")
    h.close()


# ------------------------------------------------------------------- partial
@pytest.mark.parametrize("up_to_seq, first_retained", [(8, 9), (10, 9), (13, 13), (4, 5)])
def test_up_to_seq_summarizes_only_whole_turns_up_to_it(make_harness: MakeHarness, up_to_seq: int,
                                                         first_retained: int) -> None:
    h = tool_session(make_harness)
    done = ok(h.do({"type": "compact", "session_id": SID, "up_to_seq": up_to_seq}))
    # A seq inside a turn (10: the tool call of turn 3) keeps that whole turn, its tool group with it.
    assert done["status"] == "compacted" and done["first_retained_seq"] == first_retained
    p = projection(h)
    assert p["first_raw_seq"] == first_retained
    assert p["messages"][1]["role"] == "user"
    h.close()


def test_up_to_seq_inside_the_first_turn_compacts_nothing(make_harness: MakeHarness) -> None:
    h = tool_session(make_harness)
    assert ok(h.do({"type": "compact", "session_id": SID, "up_to_seq": 3}))["status"] == "nothing_to_compact"
    h.close()


def test_a_fraction_summarizes_the_oldest_share_in_whole_turns(make_harness: MakeHarness) -> None:
    h = tool_session(make_harness)
    done = ok(h.do({"type": "compact", "session_id": SID, "fraction": 0.5}))
    # Six equal turns: half of them is three, the fourth starts at seq 13.
    assert done["first_retained_seq"] == 13 and done["kept_turns"] == 3
    h.close()


def test_a_partial_dry_run_then_commit(make_harness: MakeHarness) -> None:
    h = tool_session(make_harness)
    dry = ok(h.do({"type": "compact", "session_id": SID, "up_to_seq": 8, "dry_run": True}))
    assert dry["status"] == "candidate" and dry["first_retained_seq"] == 9
    done = ok(h.do({"type": "commit_candidate", "session_id": SID, "candidate_id": dry["candidate_id"]}))
    assert done["first_retained_seq"] == 9
    h.close()


# ------------------------------------------------------------------ forecast
def test_forecast_median_over_the_last_turns() -> None:
    f = forecast([100, 200, 300, 10_000, 400], used=1_000, threshold=2_000, window=5_000, n=4)
    assert f.tokens_per_turn == 350 and f.turns_observed == 4  # median of 200, 300, 10000, 400
    assert f.turns_to_threshold == math.ceil(1_000 / 350) and f.turns_to_window == math.ceil(4_000 / 350)
    assert "median" in f.method and "last 4" in f.method
    assert forecast([], used=10, threshold=20, window=30).turns_to_threshold is None


def test_info_forecasts_a_session_of_known_growth(make_harness: MakeHarness) -> None:
    """Every turn is the same two messages: each adds the same tokens, which is the growth."""
    h = make_harness("fc", context_compaction={"keep_recent_tokens": 100_000})
    ok(h.do({"type": "start_session", "session_id": SID, "model": "gpt-4o"}))
    used = []
    for k in range(6):
        ok(h.do({"type": "append_messages", "session_id": SID,
                 "messages": [user("the same question " * 40), assistant("the same answer " * 60)]}))
        used.append(ok(h.do({"type": "get_context_usage", "session_id": SID}))["used_tokens"])
    per_turn = used[-1] - used[-2]
    assert per_turn > 0 and used[-2] - used[-3] == per_turn
    info = ok(h.do({"type": "get_context_usage", "session_id": SID}))
    f = info["forecast"]
    assert f["tokens_per_turn"] == per_turn and f["turns_observed"] == 6
    threshold, window = info["compression_threshold_tokens"], info["effective_window_tokens"]
    assert f["tokens_to_threshold"] == threshold - used[-1]
    assert f["turns_to_threshold"] == math.ceil((threshold - used[-1]) / per_turn)
    assert f["turns_to_window"] == math.ceil((window - used[-1]) / per_turn)
    assert "Forecast" in info["text"] and f["method"] in info["text"]
    h.close()


@pytest.mark.backends("sqlite")
def test_ctxc_preview_then_commit_candidate_in_another_process(make_harness: MakeHarness, backend, capsys) -> None:
    """The candidate is kept in the store: a second ``ctxc`` commits what the first made."""
    import json

    from cli_inprocess import run_cli as main  # (leaves logging as it found it)

    h = _session(make_harness)
    h.close()
    common = ["--db", h.url, "--summarizer", "extractive", "--json"]
    assert main(["preview", SID, "--up-to-seq", "20", *common]) == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["status"] == "candidate" and dry["first_retained_seq"] <= 21
    assert main(["commit-candidate", SID, dry["candidate_id"], *common]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["status"] == "compacted" and done["first_retained_seq"] == dry["first_retained_seq"]
    assert main(["cost", SID, *common]) == 0
    cost = json.loads(capsys.readouterr().out)
    assert cost["session_id"] == SID and [c["reason"] for c in cost["compactions"]] == ["manual"]
