"""The event feed (issue 15): ``read_events``, ``GET /v1/events``, ``ctxc events``.

A follower keeps the last position it processed and asks for what comes after it:
started late, stopped and resumed, it sees every stored event once, in order.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from backends import Databases
from context_compaction.domain.attempts import attempts_aggregate_id
from context_compaction.domain.session import Session
from helpers import Harness, assistant, err, ok, tool, user

SMALL_KEEP: dict[str, Any] = {"context_compaction": {"keep_recent_tokens": 10}}


def stored(h: Harness) -> list[tuple[int, str, int]]:
    """(position, aggregate id, version) of every stored event, as the recorder lists them."""
    app = h.inspect.app
    return [(n.id, n.originator_id.hex, n.originator_version)
            for n in app.recorder.select_notifications(start=1, limit=100_000)]


def work(h: Harness, session: str, turns: int) -> None:
    for n in range(turns):
        ok(h.do({"type": "append_messages", "session_id": session, "messages": [
            user(f"step {n}", turn_id=f"t{n}"),
            assistant("reading", [(f"c{n}", "read_file", '{"path": "x.py"}')]),
            tool(f"c{n}", f"line {n}\n" * 100),
            assistant(f"done {n}"),
        ]}))


class Follower:
    """What the README shows: a position kept between runs, pages read after it."""

    def __init__(self) -> None:
        self.position = 0
        self.seen: list[dict[str, Any]] = []

    def run(self, h: Harness, *, page: int, pages: int | None = None) -> None:
        while pages is None or pages > 0:
            events = ok(h.do({"type": "read_events", "after": self.position, "limit": page}))["events"]
            if not events:
                return
            self.seen += events
            self.position = events[-1]["position"]
            pages = None if pages is None else pages - 1


def test_a_late_follower_that_stops_and_resumes_sees_every_event_once_in_order(
    databases: Databases,
) -> None:
    h = databases.harness(**SMALL_KEEP)
    ok(h.do({"type": "start_session", "session_id": "a", "model": "gpt-4o"}))
    work(h, "a", 3)
    follower = Follower()  # starts late: events are already stored
    ok(h.do({"type": "start_session", "session_id": "b", "model": "gpt-4o"}))
    follower.run(h, page=3, pages=2)  # stops after two pages
    work(h, "b", 2)
    ok(h.do({"type": "compact", "session_id": "a"}))
    reader = h.reopen()  # a restart: the follower resumes from its kept position
    assert reader is h.bus
    follower.run(h, page=4)
    ok(h.do({"type": "delete_session", "session_id": "b"}))
    follower.run(h, page=1000)

    expected = stored(h)
    assert [(e["position"], e["version"]) for e in follower.seen] == [(n, v) for n, _, v in expected]
    for e, (_, oid, _) in zip(follower.seen, expected, strict=True):
        assert oid in (Session.create_id(e["session_id"]).hex, attempts_aggregate_id(e["session_id"]).hex)
    assert len(expected) > 15
    types = [e["type"] for e in follower.seen]
    assert {"Started", "MessageAppended", "CheckpointCommitted", "Deleted"} <= set(types)
    assert "Session.Started" not in types  # the class name, not the qualified name
    for e in follower.seen:
        at = datetime.fromisoformat(e["at"])
        assert at.utcoffset() == timedelta(0)
        assert "originator_id" not in e["payload"] and "timestamp" not in e["payload"]
    appended = next(e for e in follower.seen if e["type"] == "MessageAppended")
    assert appended["session_id"] == "a" and appended["payload"]["content"] == "step 0"
    assert appended["payload"]["seq"] == 1 and appended["payload"]["role"] == "user"
    # Nothing after the last position.
    assert ok(h.do({"type": "read_events", "after": follower.position}))["events"] == []


def test_the_attempt_log_events_name_their_session(databases: Databases) -> None:
    h = databases.harness(**SMALL_KEEP)
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o"}))
    work(h, "s", 3)
    ok(h.do({"type": "compact", "session_id": "s"}))
    events = ok(h.do({"type": "read_events", "limit": 1000}))["events"]
    attempts = [e for e in events if stored_id(h, e["position"]) == attempts_aggregate_id("s").hex]
    assert attempts and all(e["session_id"] == "s" for e in attempts)
    # A page that starts after the aggregate's first event still names the session.
    late = ok(h.do({"type": "read_events", "after": attempts[-1]["position"] - 1, "limit": 1}))
    assert late["events"][0]["session_id"] == "s"


def stored_id(h: Harness, position: int) -> str:
    return next(oid for n, oid, _ in stored(h) if n == position)


def test_bad_positions_and_limits_are_invalid_and_default_limit_is_100(harness: Harness) -> None:
    for bad in ({"after": -1}, {"limit": 0}, {"limit": 1001}, {"after": "3"}, {"limit": 2.5}):
        err(harness.do({"type": "read_events", **bad}), "invalid_command")
    ok(harness.do({"type": "start_session", "session_id": "x", "model": "gpt-4o"}))
    for n in range(60):
        ok(harness.do({"type": "append_messages", "session_id": "x",
                       "messages": [user(f"m{n}"), user(f"n{n}")]}))
    assert len(ok(harness.do({"type": "read_events"}))["events"]) == 100
    assert len(ok(harness.do({"type": "read_events", "limit": 1000}))["events"]) == 121


# --------------------------------------------------------- HTTP, CLI, README example
def _sqlite_with_events(tmp_path: Path, sessions: tuple[str, ...] = ("p", "q")) -> tuple[str, Harness]:
    url = f"sqlite:///{tmp_path / 'feed.db'}"
    h = Harness(url, summarizer="extractive")
    for sid in sessions:
        ok(h.do({"type": "start_session", "session_id": sid, "model": "gpt-4o"}))
        ok(h.do({"type": "append_messages", "session_id": sid, "messages": [user("hi"), user("there")]}))
    return url, h


def test_http_get_v1_events_pages_with_the_same_token(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from context_compaction.infrastructure.http import create_app

    _, h = _sqlite_with_events(tmp_path)
    token = "a-long-enough-test-token"
    with TestClient(create_app(h.bus, token=token, max_body_bytes=64_000)) as client:
        assert client.get("/v1/events").status_code == 401
        auth = {"Authorization": f"Bearer {token}"}
        first = client.get("/v1/events?limit=3", headers=auth)
        assert first.status_code == 200 and first.json()["ok"] is True
        page = first.json()["result"]["events"]
        assert [e["position"] for e in page] == [1, 2, 3]
        rest = client.get(f"/v1/events?after={page[-1]['position']}", headers=auth).json()
        assert [e["position"] for e in rest["result"]["events"]] == [4, 5, 6]
        assert rest["result"]["events"][-1]["session_id"] == "q"
        for bad in ("limit=0", "limit=1001", "after=-1", "after=x", "=false", "afterr=3", "after=1&after=2", "limit=5&limit=5"):
            response = client.get(f"/v1/events?{bad}", headers=auth)
            assert response.status_code == 400, bad
            assert response.json()["error"]["code"] == "invalid_command", bad
    h.close()


def _ctxc(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    ctxc = str(Path(sys.executable).with_name("ctxc"))
    return subprocess.run([ctxc, *args], capture_output=True, text=True, timeout=120, check=False, **kwargs)


def test_ctxc_events_prints_json_lines_after_a_position(tmp_path: Path) -> None:
    url, h = _sqlite_with_events(tmp_path)
    h.close()
    everything = _ctxc("events", "--db", url)  # every event, in pages
    assert everything.returncode == 0, everything.stderr
    lines = [json.loads(line) for line in everything.stdout.splitlines()]
    assert [e["position"] for e in lines] == [1, 2, 3, 4, 5, 6]
    two = _ctxc("events", "--db", url, "--limit", "2")  # --limit is the total (issue 35)
    assert [json.loads(line)["position"] for line in two.stdout.splitlines()] == [1, 2]
    assert set(lines[0]) == {"position", "session_id", "version", "type", "at", "payload",
                             "parent_session_id"}  # (issue 42)
    later = _ctxc("events", "--db", url, "--after", "4")
    assert [json.loads(line)["position"] for line in later.stdout.splitlines()] == [5, 6]
    assert _ctxc("events", "--db", url, "--after", "-1").returncode == 2
    missing = tmp_path / "none.db"
    assert _ctxc("events", "--db", f"sqlite:///{missing}").returncode != 0 and not missing.exists()


def test_ctxc_events_follow_prints_new_events_and_stops_quietly_on_sigint(tmp_path: Path) -> None:
    url, h = _sqlite_with_events(tmp_path, sessions=("p",))
    ctxc = str(Path(sys.executable).with_name("ctxc"))
    proc = subprocess.Popen([ctxc, "events", "--db", url, "--follow", "--interval", "0.05"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        seen = [json.loads(proc.stdout.readline())["position"] for _ in range(2)]
        ok(h.do({"type": "append_messages", "session_id": "p", "messages": [user("more")]}))
        seen.append(json.loads(proc.stdout.readline())["position"])  # blocks until polled
        assert seen == [1, 2, 3]
        proc.send_signal(signal.SIGINT)
        out, err_text = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and out == "" and "Traceback" not in err_text
    h.close()


def _readme_follower() -> str:
    # The follower moved from the README to docs/recipes.md (issue 39).
    text = (Path(__file__).resolve().parents[2] / "docs" / "recipes.md").read_text(encoding="utf-8")
    section = text.split("## Following the event feed", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


def test_the_readme_follower_resumes_where_it_stopped(tmp_path: Path) -> None:
    url, h = _sqlite_with_events(tmp_path, sessions=("p",))
    script = tmp_path / "follow.py"
    script.write_text(_readme_follower(), encoding="utf-8")
    env = {**os.environ, "CTXC_DATABASE_URL": url, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

    def run() -> list[dict[str, Any]]:
        proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        return [json.loads(line) for line in proc.stdout.splitlines()]

    first = run()
    assert [e["position"] for e in first] == [1, 2, 3]
    ok(h.do({"type": "append_messages", "session_id": "p", "messages": [user("a"), user("b")]}))
    second = run()
    assert [e["position"] for e in second] == [4, 5]
    assert [e["payload"]["content"] for e in second] == ["a", "b"]
    assert run() == []
    assert (tmp_path / "audit.position").read_text() == "5"
    h.close()
