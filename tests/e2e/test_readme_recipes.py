"""The "Recipes" (README until issue 39, now docs/recipes.md) run as written (issue 15): the FastAPI service through an ASGI
client, the worker against PostgreSQL, the audit replay script on a SQLite file. Models
are the local fake provider (over real HTTP, through litellm)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from backends import Databases
from context_compaction.infrastructure.demo.scenario import coding_session
from fakeprovider import FakeProvider, Reply
from helpers import FAKE_MODEL, Harness, ok

# Moved out of the README by issue 39; still run as written.
README = Path(__file__).resolve().parents[2] / "docs" / "recipes.md"


def recipe(name: str) -> str:
    section = README.read_text(encoding="utf-8").split("\n## Recipes\n", 1)[1].split("\n## ", 1)[0]
    part = section.split(f"\n### {name}\n", 1)[1].split("\n### ", 1)[0]
    match = re.search(r"```python\n(.*?)```", part, re.S)
    assert match is not None, f"no python block in recipe {name!r}"
    return match.group(1)


def load(code: str, path: Path) -> ModuleType:
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_script(code: str, tmp_path: Path, env: dict[str, str], *args: str, stdin: str = "") -> str:
    script = tmp_path / "recipe.py"
    script.write_text(code, encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script), *args], cwd=tmp_path, input=stdin, capture_output=True,
                          text=True, timeout=120, check=False,
                          env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_the_fastapi_recipe_serves_while_a_compaction_waits_for_its_summary(
    tmp_path: Path, provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    provider.queue(Reply(text="## Objective\n- Fix the flaky refund test.", gate=gate))
    monkeypatch.setenv("CTXC_DATABASE_URL", f"sqlite:///{tmp_path / 'service.db'}")
    monkeypatch.setenv("CTXC_MODELS", json.dumps({FAKE_MODEL: {"api_base": provider.base_url, "api_key": "k"}}))
    monkeypatch.setenv("CTXC_CONTEXT_COMPACTION__KEEP_RECENT_TOKENS", "3000")
    app = load(recipe("FastAPI service (async)"), tmp_path / "service.py").app

    async def main() -> None:
        async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://service"
        ) as client:
            assert (await client.post("/sessions/s1", params={"model": FAKE_MODEL})).json() == {"version": 1}
            for turn in coding_session(6, big_output_chars=3_000):
                assert (await client.post("/sessions/s1/messages", json=turn.messages())).status_code == 200
            compacting = asyncio.create_task(client.post("/sessions/s1/compact"))
            try:
                async with asyncio.timeout(30):
                    while provider.calls == 0:
                        await asyncio.sleep(0.005)
                # The summary call is outstanding; the service answers other requests.
                during = await client.post("/commands", json={"type": "get_history", "session_id": "s1",
                                                              "limit": 1})
                assert not compacting.done()
            finally:
                gate.set()
            assert [m["seq"] for m in ok(during.json())["messages"]] == [1]
            compacted = await compacting
            assert compacted.status_code == 200 and compacted.json()["status"] == "compacted"
            missing = await client.post("/sessions/nope/compact")
            assert missing.status_code == 404 and missing.json()["code"] == "session_not_found"
            envelope = (await client.post("/commands", json={"type": "no_such_command"})).json()
            assert envelope["ok"] is False and envelope["error"]["code"] == "invalid_command"
            # bad input is a 422 with the error body, not a 500 (issue 35, finding 5)
            for bad in ([{"role": "nobody", "content": "x"}], {"not": "a list"}):
                refused = await client.post("/sessions/s1/messages", json=bad)
                assert refused.status_code == 422, refused.text
                body = refused.json()
                assert body["code"] == "invalid_command" and body["message"] and body["details"]["errors"]
            # a body nested too deep for the JSON parser: FastAPI's own 400 {"detail": ...} before
            deep = await client.post("/sessions/s1/messages", content=b"[" * 5000 + b"]" * 5000,
                                     headers={"content-type": "application/json"})
            assert deep.status_code == 422 and deep.json()["code"] == "invalid_command", deep.text
            nowhere = await client.get("/no/such/route")
            assert nowhere.status_code == 404 and nowhere.json()["code"] == "not_found", nowhere.text

    asyncio.run(main())
    assert provider.calls == 1
    assert provider.requests[0].headers["x-stainless-async"].startswith("async")  # acompletion


@pytest.mark.postgres
def test_the_worker_recipe_runs_turns_on_postgresql_and_requeues_a_busy_session(
    pg_databases: Databases, tmp_path: Path, provider: FakeProvider
) -> None:
    provider.queue(Reply(text="The refund race is fixed."))
    h = pg_databases.harness("worker")
    ok(h.do({"type": "start_session", "session_id": "busy", "model": FAKE_MODEL}))
    assert h.bus.services.leases.acquire("busy", "another-worker", 60)  # its turn is running
    jobs = "".join(json.dumps(job) + "\n" for job in (
        {"session_id": "ticket-1", "model": FAKE_MODEL, "text": "Why does the refund test fail?"},
        {"session_id": "busy", "model": FAKE_MODEL, "text": "And this one?"},
    ))
    out = run_script(recipe("Worker with PostgreSQL"), tmp_path,
                     {"CTXC_DATABASE_URL": h.url, "OPENAI_API_BASE": provider.base_url, "OPENAI_API_KEY": "k"},
                     stdin=jobs)
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[0] == {"session_id": "ticket-1", "answer": "The refund race is fixed."}
    assert lines[1] == {"requeue": {"session_id": "busy", "model": FAKE_MODEL, "text": "And this one?"}}
    history = ok(h.do({"type": "get_history", "session_id": "ticket-1"}))["messages"]
    assert [(m["role"], m["content"]) for m in history] == [
        ("user", "Why does the refund test fail?"), ("assistant", "The refund race is fixed.")]
    assert ok(h.do({"type": "get_history", "session_id": "busy"}))["messages"] == []
    assert provider.calls == 1


def test_the_audit_replay_recipe_shows_the_session_as_it_was(tmp_path: Path) -> None:
    h = Harness(tmp_path / "audit.db", summarizer="extractive", context_compaction={"keep_recent_tokens": 3000})
    ok(h.do({"type": "start_session", "session_id": "s", "model": "gpt-4o-mini"}))
    for turn in coding_session(6, big_output_chars=3_000):
        ok(h.do({"type": "append_messages", "session_id": "s", "messages": turn.messages()}))
    before = ok(h.do({"type": "replay_session", "session_id": "s"}))
    assert ok(h.do({"type": "compact", "session_id": "s"}))["status"] == "compacted"
    now = ok(h.do({"type": "replay_session", "session_id": "s"}))
    code = recipe("Audit replay")
    env = {"CTXC_DATABASE_URL": h.url}
    then_out = run_script(code, tmp_path, env, "s", str(before["version"])).splitlines()
    now_out = run_script(code, tmp_path, env, "s", str(now["version"])).splitlines()
    assert then_out[0] == (f"s at version {before['version']} of {now['version']}: generation 0, "
                           "checkpoint None")
    assert len(then_out) == 1 + len(before["projection"]["messages"])
    assert now_out[0] == (f"s at version {now['version']} of {now['version']}: generation 1, "
                          f"checkpoint {now['active_checkpoint_id']}")
    assert len(now_out) == 1 + len(now["projection"]["messages"]) < len(then_out)
    assert "Historical conversation summary" in now_out[1]
    h.close()
