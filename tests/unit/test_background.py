"""The background-summary registry and its setting (issue 17, ADR 0038); no database."""

from __future__ import annotations

import threading

import pytest
from pydantic import ValidationError

from context_compaction import Settings
from context_compaction.application.state.background import BackgroundJob, BackgroundSummaries, Cancelled


def blocked(release: threading.Event, commits: list[str]):
    def work(job: BackgroundJob) -> str:
        release.wait(5)
        return job.commit_unless_cancelled(lambda: commits.append(job.session_id) or "committed")
    return work


def test_one_attempt_per_session_and_a_new_one_once_it_ended() -> None:
    registry, release, commits = BackgroundSummaries(), threading.Event(), []
    first = registry.start("a", blocked(release, commits))
    assert first is not None
    assert registry.start("a", blocked(release, commits)) is None  # one at a time
    other = registry.start("b", blocked(release, commits))  # other sessions are independent
    assert other is not None
    release.set()
    assert first.done.wait(5) and other.done.wait(5)
    assert first.result == "committed" and sorted(commits) == ["a", "b"]
    assert registry.running("a") is None
    again = registry.start("a", blocked(release, commits))
    assert again is not None and again.done.wait(5)


def test_cancel_by_owner_joins_only_that_owners_attempts_and_none_commits() -> None:
    registry, release, commits = BackgroundSummaries(), threading.Event(), []
    mine, theirs = object(), object()
    a = registry.start("a", blocked(release, commits), owner=mine)
    b = registry.start("b", blocked(release, commits), owner=theirs)
    assert a is not None and b is not None
    threading.Timer(0.2, release.set).start()
    assert registry.cancel(owner=mine, timeout=5) == 0
    assert a.done.is_set() and not a.thread.is_alive() and a.result is None
    assert b.done.wait(5) and commits == ["b"]  # the other owner's attempt went on
    assert registry.start("c", blocked(release, commits)) is not None  # not closed


def test_cancel_all_closes_the_registry() -> None:
    registry, release, commits = BackgroundSummaries(), threading.Event(), []
    job = registry.start("a", blocked(release, commits))
    assert job is not None
    threading.Timer(0.2, release.set).start()
    registry.cancel(timeout=5)
    assert commits == [] and not job.thread.is_alive()
    assert registry.start("a", blocked(release, commits)) is None


def test_a_commit_after_cancel_is_refused() -> None:
    job = BackgroundJob("a")
    assert job.commit_unless_cancelled(lambda: 1) == 1
    job.cancelled = True
    with pytest.raises(Cancelled):
        job.commit_unless_cancelled(lambda: 2)


def test_background_ratio_is_off_by_default_and_a_share_of_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().context_compaction.background_ratio is None
    monkeypatch.setenv("CTXC_CONTEXT_COMPACTION__BACKGROUND_RATIO", "0.8")
    assert Settings().context_compaction.background_ratio == 0.8
    for bad in ("0", "1", "1.5", "-0.2"):
        monkeypatch.setenv("CTXC_CONTEXT_COMPACTION__BACKGROUND_RATIO", bad)
        with pytest.raises(ValidationError):
            Settings()
