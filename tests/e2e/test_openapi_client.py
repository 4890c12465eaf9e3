"""The OpenAPI document survives a real client generator (issue 35, finding 4):
``openapi-python-client`` generates a client from the live server's document, without
dropping a schema, and the client appends (plain and tool-calling messages), compacts,
reads the history and the event feed against ``ctxc serve``'s app on 127.0.0.1."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from context_compaction import Settings, bootstrap
from context_compaction.infrastructure.http import create_app
from http_server import Server

TOKEN = "client-token-0123456789abcdef"
GENERATOR = Path(sys.executable).with_name("openapi-python-client")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    db = tmp_path_factory.mktemp("client") / "c.db"
    bus = bootstrap(Settings(database_url=f"sqlite:///{db}", summarizer="extractive",
                             models={"gpt-4o": {"token_limit": 6000}},
                             context_compaction={"keep_recent_tokens": 500, "reserve_tokens": 1000}))
    with Server(create_app(bus, token=TOKEN, max_body_bytes=1_000_000)) as srv:
        yield srv
    bus.close()


@pytest.fixture(scope="module")
def client_package(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    work = tmp_path_factory.mktemp("generated")
    document = httpx.get(f"{server.url}/openapi.json", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    (work / "openapi.json").write_text(json.dumps(document))
    (work / "config.yaml").write_text("post_hooks: []\n")  # no ruff on this machine's PATH needed
    proc = subprocess.run(
        [str(GENERATOR), "generate", "--path", "openapi.json", "--output-path", "ctxc_client",
         "--meta", "none", "--config", "config.yaml"],
        cwd=work, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The generator warns and goes on when it drops a schema: a dropped one is a failure.
    assert "Unable to process schema" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    sys.path.insert(0, str(work))
    try:
        yield "ctxc_client"
    finally:
        sys.path.remove(str(work))
        for name in [m for m in sys.modules if m == "ctxc_client" or m.startswith("ctxc_client.")]:
            del sys.modules[name]


def _module(name: str) -> ModuleType:
    return importlib.import_module(name)


def test_the_generated_client_appends_compacts_and_reads(server: Server, client_package: str) -> None:
    pkg = client_package
    client_mod, models = _module(f"{pkg}.client"), _module(f"{pkg}.models")
    commands = _module(f"{pkg}.api.default.commands_v1_commands_post")
    events = _module(f"{pkg}.api.default.events_v1_events_get")
    client = client_mod.AuthenticatedClient(base_url=server.url, token=TOKEN, raise_on_unexpected_status=True)

    def send(body: Any) -> Any:
        answer = commands.sync(client=client, body=body)
        assert answer is not None and answer.ok is True, answer
        return answer

    send(models.StartSession(session_id="gen", model="gpt-4o"))
    send(models.AppendMessages(session_id="gen", messages=[
        models.Message(role=models.MessageRole.USER, content="hello from a generated client", turn_id="t0")]))
    call = models.ToolCallNested(id="call_1", function=models.ToolCallNestedFunction(
        name="read_file", arguments='{"path": "a.py"}'))
    send(models.AppendMessages(session_id="gen", messages=[
        models.Message(role=models.MessageRole.ASSISTANT, content=None, tool_calls=[call], turn_id="t0"),
        models.Message(role=models.MessageRole.TOOL, tool_call_id="call_1", content="print(1)", turn_id="t0")]))
    words = "word " * 300
    for i in range(1, 8):
        send(models.AppendMessages(session_id="gen", messages=[
            models.Message(role=models.MessageRole.USER, content=f"q{i} {words}", turn_id=f"t{i}"),
            models.Message(role=models.MessageRole.ASSISTANT, content=f"a{i} {words}", turn_id=f"t{i}")]))
    compacted = send(models.Compact(session_id="gen"))
    assert type(compacted).__name__ == "CompactEnvelope"
    assert compacted.result.checkpoint_id, compacted.result
    history = send(models.GetHistory(session_id="gen"))
    assert type(history).__name__ == "GetHistoryEnvelope"
    first = history.result.messages[0]
    assert first.content == "hello from a generated client"
    calls = history.result.messages[1].tool_calls
    assert calls and calls[0].function.name == "read_file"
    feed = events.sync(client=client, after=0, limit=3)
    assert type(feed).__name__ == "ReadEventsEnvelope" and len(feed.result.events) == 3
    failed = commands.sync(client=client, body=models.GetHistory(session_id="missing"))
    assert type(failed).__name__ == "ErrorEnvelope" and failed.error.code == "session_not_found"


def test_event_query_parameters_are_typed(server: Server) -> None:
    document = httpx.get(f"{server.url}/openapi.json", headers={"Authorization": f"Bearer {TOKEN}"}).json()
    parameters = {p["name"]: p["schema"] for p in document["paths"]["/v1/events"]["get"]["parameters"]}
    assert parameters["after"]["type"] == "integer" and parameters["limit"]["type"] == "integer"
    assert (parameters["limit"]["minimum"], parameters["limit"]["maximum"]) == (1, 1000)
    # a bad number still gets our envelope, not FastAPI's 422
    r = httpx.get(f"{server.url}/v1/events?limit=x", headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_command"
