"""eventsourcing's followers see every event our application writes, in order (issue 14).

The store saves through the library's ``Application.save`` (ADR 0073), so the
notification log and the recordings handed to a ``Leader``'s followers are the ones
eventsourcing itself would produce: a ``ProcessApplication`` that follows the log sees
every stored event exactly once, in notification order, on both backends, whichever
save path wrote it (optimistic, or under the writer lock after a lost race).
"""

from __future__ import annotations

import logging
from functools import singledispatchmethod
from typing import Any

import pytest
from eventsourcing.application import ProcessingEvent
from eventsourcing.system import Leader, ProcessApplication, RecordingEvent, RecordingEventReceiver

from backends import Databases
from context_compaction.domain.session import Session
from context_compaction.infrastructure.eventstore import EventMapper, SessionsApplication
from context_compaction.infrastructure.transcoding import PlainJSONTranscoder
from helpers import Harness, assistant, attempt_count, ok, tool, user


# Compaction keeps the newest turns up to this many tokens: a small session compacts.
SMALL_KEEP: dict[str, Any] = {"context_compaction": {"keep_recent_tokens": 10}}


class SessionFeed(ProcessApplication[Any]):
    """A downstream process application (in memory) that notes each event it is given."""

    def __init__(self) -> None:
        super().__init__(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
        self.seen: list[tuple[int, str, str, int]] = []

    # Our events are stored as plain JSON (ADR 0005): a follower decodes them with our
    # transcoder and mapper, as any reader of the feed must.
    def construct_transcoder(self) -> PlainJSONTranscoder:
        return PlainJSONTranscoder()

    def construct_mapper(self) -> EventMapper:
        return EventMapper(transcoder=self.construct_transcoder())

    @singledispatchmethod
    def policy(self, domain_event: Any, processing_event: ProcessingEvent[Any]) -> None:
        assert processing_event.tracking is not None
        self.seen.append((
            processing_event.tracking.notification_id,
            type(domain_event).__qualname__,
            domain_event.originator_id.hex,
            domain_event.originator_version,
        ))


class FeedingSessions(SessionsApplication, Leader[Any]):
    """Our application as eventsourcing's ``Leader``: it prompts followers after each save."""


class PullOnPrompt(RecordingEventReceiver[Any]):
    """What eventsourcing's single-threaded runner does: pull when a leader prompts."""

    def __init__(self, feed: SessionFeed, leader_name: str) -> None:
        self.feed = feed
        self.leader_name = leader_name
        self.prompts: list[RecordingEvent[Any]] = []
        self.unreadable: list[int] = []

    def receive_recording_event(self, new_recording_event: RecordingEvent[Any]) -> None:
        self.prompts.append(new_recording_event)
        self.feed.pull_and_process(self.leader_name)
        # Prompted after the commit: the pull found what it was prompted for.
        seen = {n for n, *_ in self.feed.seen}
        self.unreadable += [r.notification.id for r in new_recording_event.recordings
                            if r.notification.id not in seen]


def stored(app: SessionsApplication) -> list[tuple[int, str, str, int]]:
    """Every stored event, as the library's recorder lists the notification log."""
    notifications = app.recorder.select_notifications(start=1, limit=100_000)
    return [
        (n.id, n.topic.split(":")[-1], n.originator_id.hex, n.originator_version)
        for n in notifications
    ]


def run_commands(h: Harness, other: Harness) -> None:
    """Every kind of event, two sessions, and a lost race (the locked-writer path)."""
    ok(h.do({"type": "start_session", "session_id": "a", "model": "gpt-4o"}))
    ok(h.do({"type": "start_session", "session_id": "b", "model": "gpt-4o"}))
    for n in range(6):
        ok(h.do({"type": "append_messages", "session_id": "a", "messages": [
            user(f"step {n}", turn_id=f"t{n}"),
            assistant("reading", [(f"c{n}", "read_file", '{"path": "x.py"}')]),
            tool(f"c{n}", f"line {n} of a long file\n" * 200),
            assistant(f"done {n}"),
        ]}))
    ok(h.do({"type": "configure_session", "session_id": "b", "agent_token_limit": 50_000}))
    ok(h.do({"type": "compact", "session_id": "a"}))
    # Another process appends to "b"; ours still holds the older copy, so its next
    # append loses the race and is decided again under the writer lock.
    ok(h.do({"type": "append_messages", "session_id": "b", "messages": [user("one")]}))
    ok(other.do({"type": "append_messages", "session_id": "b", "messages": [user("two")]}))
    ok(h.do({"type": "append_messages", "session_id": "b", "messages": [user("three")]}))
    ok(h.do({"type": "invalidate_history", "session_id": "b", "kind": "clear"}))
    ok(h.do({"type": "delete_session", "session_id": "b"}))


def test_a_follower_pulling_the_notification_log_sees_every_event_in_order(
    databases: Databases,
) -> None:
    pulled_in_order(databases.harness(**SMALL_KEEP), databases.harness())


def pulled_in_order(h: Harness, other: Harness) -> None:
    run_commands(h, other)
    app = h.inspect.app
    feed = SessionFeed()
    feed.follow(app.name, app.notification_log)

    feed.pull_and_process(app.name)

    expected = stored(app)
    assert len(expected) == h.events() + attempt_count(h.bus) > 20  # (attempt logs: ADR 0032)
    assert feed.seen == expected  # every event once, in notification order
    ids = [n for n, *_ in feed.seen]
    assert ids == sorted(set(ids))
    kinds = {kind for _, kind, _, _ in feed.seen}
    assert {"Session.Started", "Session.MessageAppended", "Session.ModelConfigured",
            "Session.CheckpointCommitted", "Session.HistoryInvalidated", "Session.Deleted"} <= kinds

    # Later events only, from the follower's own tracked position.
    ok(h.do({"type": "append_messages", "session_id": "a", "messages": [user("later")]}))
    feed.pull_and_process(app.name)
    assert feed.seen == stored(app)
    assert len(feed.seen) == len(expected) + 1
    assert feed.seen[-1][1:3] == ("Session.MessageAppended", Session.create_id("a").hex)
    # The library's section-wise reader agrees with its recorder.
    section = app.notification_log["1,10"]
    assert [n.id for n in section.items] == [n for n, *_ in expected[:10]]


def test_a_leader_prompts_its_followers_after_every_save_on_both_save_paths(
    databases: Databases, caplog: pytest.LogCaptureFixture
) -> None:
    prompted(databases.harness(adapters={"application_class": FeedingSessions}, **SMALL_KEEP),
             databases.harness(), caplog)


def prompted(h: Harness, other: Harness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="context_compaction")
    app = h.inspect.app
    assert isinstance(app, FeedingSessions)
    feed = SessionFeed()
    feed.follow(app.name, app.notification_log)
    receiver = PullOnPrompt(feed, app.name)
    app.lead(receiver)

    run_commands(h, other)

    assert any(r.getMessage() == "write conflict, retrying" for r in caplog.records)  # (the locked path ran)
    assert receiver.unreadable == []
    # Each command of this process prompted the follower, which pulled: nothing was
    # left to pull afterwards, though the other process's event arrived unannounced.
    assert feed.seen == stored(app)
    announced = [r.notification.id for event in receiver.prompts for r in event.recordings]
    ours = [n for n, *_ in stored(app) if n not in set(announced)]
    assert len(ours) == 1  # the other process's append only
    # The recordings carry the notification ids the rows got, in order.
    assert announced == sorted(announced)
    by_id = {n: (kind, oid, version) for n, kind, oid, version in stored(app)}
    for event in receiver.prompts:
        for recording in event.recordings:
            n = recording.notification
            assert by_id[n.id] == (type(recording.domain_event).__qualname__,
                                   n.originator_id.hex, n.originator_version)
