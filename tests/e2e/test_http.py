"""``ctxc serve``: POST /v1/commands over real HTTP, auth, limits, and a schemathesis fuzz."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import schemathesis
from schemathesis import checks
import uvicorn
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from context_compaction import Settings, bootstrap
from context_compaction.infrastructure.http import create_app, is_loopback
from http_server import Server

TOKEN = "s3cret-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    db = tmp_path_factory.mktemp("http") / "http.db"
    bus = bootstrap(Settings(database_url=f"sqlite:///{db}", summarizer="extractive"))
    bus.dispatch_json({"type": "start_session", "session_id": "s", "model": "gpt-4o"})
    with Server(create_app(bus, token=TOKEN, max_body_bytes=64_000)) as srv:
        srv.bus = bus  # type: ignore[attr-defined]
        yield srv
    bus.close()


AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_commands_answer_with_the_same_envelopes(server: Server) -> None:
    with httpx.Client(base_url=server.url, headers=AUTH) as client:
        r = client.post("/v1/commands", json={"type": "append_messages", "session_id": "s",
                                               "messages": [{"role": "user", "content": "hello"}]})
        assert r.status_code == 200 and r.json()["ok"] is True and r.json()["result"]["seqs"]
        r = client.post("/v1/commands", json={"type": "get_history", "session_id": "missing"})
        assert r.status_code == 404 and r.json()["error"]["code"] == "session_not_found"
        r = client.post("/v1/commands", content=b"{not json")
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_command"
        assert client.get("/healthz").json() == {"ok": True}


def test_an_unauthenticated_request_is_401_and_changes_nothing(server: Server) -> None:
    before = server.bus.dispatch_json({"type": "get_history", "session_id": "s"})  # type: ignore[attr-defined]
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {TOKEN}"}):
        r = httpx.post(f"{server.url}/v1/commands", headers=headers,
                       json={"type": "append_messages", "session_id": "s",
                             "messages": [{"role": "user", "content": "sneaky"}]})
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        assert r.headers["www-authenticate"] == "Bearer"
    after = server.bus.dispatch_json({"type": "get_history", "session_id": "s"})  # type: ignore[attr-defined]
    assert after == before


def test_an_oversize_request_is_413(server: Server) -> None:
    body = {"type": "append_messages", "session_id": "s", "messages": [{"role": "user", "content": "x" * 70_000}]}
    r = httpx.post(f"{server.url}/v1/commands", headers=AUTH, json=body)
    assert r.status_code == 413 and r.json()["error"]["code"] == "invalid_command"

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit holds while streaming too
        yield b'{"type": "append_messages", "session_id": "s", "messages": [{"role": "user", "content": "'
        for _ in range(100):
            yield b"y" * 1000
        yield b'"}]}'

    r = httpx.post(f"{server.url}/v1/commands", headers=AUTH, content=chunks())
    assert r.status_code == 413


def test_the_openapi_document_comes_from_the_command_models(server: Server) -> None:
    document = httpx.get(f"{server.url}/openapi.json", headers=AUTH).json()
    body = document["paths"]["/v1/commands"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    kinds = {ref["$ref"].rsplit("/", 1)[1] for ref in body["oneOf"]}
    assert {"StartSession", "AppendMessages", "PrepareTurn", "Compact", "GetContextUsage"} <= kinds
    assert "Message" in document["components"]["schemas"]


def test_serving_without_a_token_is_refused_unless_loopback_and_insecure_local(tmp_path: Path) -> None:
    import subprocess
    import sys

    ctxc = str(Path(sys.executable).with_name("ctxc"))
    env = {k: v for k, v in __import__("os").environ.items() if k != "CTXC_HTTP_TOKEN"}
    proc = subprocess.run([ctxc, "serve", "--db", str(tmp_path / "x.db"), "--host", "0.0.0.0"],
                          capture_output=True, text=True, timeout=60, env=env, check=False)
    assert proc.returncode == 2 and "refusing to serve without a bearer token" in proc.stderr
    proc = subprocess.run([ctxc, "serve", "--db", str(tmp_path / "x.db"), "--host", "0.0.0.0", "--insecure-local"],
                          capture_output=True, text=True, timeout=60, env=env, check=False)
    assert proc.returncode == 2
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")


SEEDED_SESSIONS = ("s", "t")
_fuzz_text = st.text(max_size=40)
SEEDED_BODIES = st.one_of(
    st.builds(lambda texts, command_id: {"type": "append_messages", "session_id": "s", "command_id": command_id,
                                         "messages": [{"role": "user", "content": t} for t in texts]},
              st.lists(_fuzz_text, min_size=1, max_size=3), st.one_of(st.none(), st.text(min_size=1, max_size=8))),
    st.builds(lambda model: {"type": "compact", "session_id": "s", **model},
              st.sampled_from([{}, {"model": "gpt-4o"}, {"model": "no-such-model"}])),
)


@pytest.fixture
def fuzz_server(databases) -> Iterator[Server]:  # type: ignore[no-untyped-def]
    """A server on this test's backend (SQLite file or PostgreSQL schema) with real sessions."""
    bus = bootstrap(Settings(database_url=databases.url("http"), summarizer="extractive"))
    for sid in SEEDED_SESSIONS:
        bus.dispatch_json({"type": "start_session", "session_id": sid, "model": "gpt-4o"})
    try:
        with Server(create_app(bus, token=TOKEN, max_body_bytes=64_000)) as srv:
            srv.bus = bus  # type: ignore[attr-defined]
            yield srv
    finally:
        bus.close()


def test_schemathesis_finds_no_server_error(fuzz_server: Server, backend: str, record_property) -> None:  # type: ignore[no-untyped-def]
    """Fuzz every operation of our own OpenAPI document over HTTP: schema-valid and
    schema-invalid requests, half of them aimed at sessions that exist. No 5xx, only
    envelopes, invalid requests refused, and real commands (an append, a compaction)
    succeed through the same door.

    A quarter of the schema-valid requests carry a real append or compaction for the
    live session "s" (random messages are almost never valid, and a random session id
    never exists). Breakage tried: that seeding removed (no ``append_messages`` returned
    200: the assertion on the command types fails).
    """
    from hypothesis import given
    from schemathesis import GenerationMode

    server = fuzz_server
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json", headers=AUTH)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.path for op in operations} == {"/healthz", "/v1/commands", "/v1/events"}
    seen: dict[int, int] = {}
    succeeded: dict[str, int] = {}
    for operation in operations:
        commands = operation.path == "/v1/commands"
        # (/healthz takes no input: nothing in it can be invalid.)
        takes_input = operation.path != "/healthz"
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE) if takes_input else (GenerationMode.POSITIVE,):
            examples = (120 if mode is GenerationMode.POSITIVE else 60) if commands else 30 if takes_input else 5

            @settings(max_examples=examples, deadline=None, database=None,
                      suppress_health_check=list(HealthCheck))
            @given(case=operation.as_strategy(generation_mode=mode), data=st.data())
            def fuzz(case, data) -> None:  # type: ignore[no-untyped-def]
                if commands and mode is GenerationMode.POSITIVE and data.draw(st.integers(0, 3)) == 0:
                    case.body = data.draw(SEEDED_BODIES)  # real work on a real session
                body = case.body
                sid = body.get("session_id") if isinstance(body, dict) else None
                # A negative case whose invalid part is the session id must stay invalid.
                aimable = isinstance(sid, str) and (
                    mode is GenerationMode.POSITIVE or (0 < len(sid) <= 256 and "\x00" not in sid))
                if aimable and data.draw(st.booleans()):
                    # (only "t" may be deleted: "s" stays alive for the rest of the run)
                    body["session_id"] = "t" if body.get("type") == "delete_session" else "s"
                response = case.call(base_url=server.url, headers=AUTH, timeout=30)
                seen[response.status_code] = seen.get(response.status_code, 0) + 1
                assert response.status_code < 500, (response.status_code, response.text[:300])
                # Every check except "schema-valid data must be accepted": JSON Schema cannot
                # say "no lone surrogates, no integers past 64 bits, a session that exists".
                excluded = [checks.positive_data_acceptance]
                if response.status_code == 413:
                    # Too large is a refusal too (the body cap), just not one schemathesis
                    # lists: check it is our error envelope instead.
                    assert response.json()["error"]["code"] == "invalid_command", response.text[:300]
                    excluded.append(checks.negative_data_rejection)
                case.validate_response(response, excluded_checks=excluded)
                if case.path == "/v1/commands":
                    assert response.json()["ok"] is (response.status_code == 200)
                    if response.status_code == 200:
                        succeeded[body["type"]] = succeeded.get(body["type"], 0) + 1

            fuzz()
    record_property("schemathesis_status_codes", dict(sorted(seen.items())))
    record_property("schemathesis_succeeded_types", dict(sorted(succeeded.items())))
    print(f"\nFIGURE schemathesis[{backend}]: status codes {dict(sorted(seen.items()))}; "
          f"200 per command type {dict(sorted(succeeded.items()))}")
    assert sum(n for code, n in seen.items() if 400 <= code < 500) > 0
    assert succeeded.get("append_messages", 0) >= 1 and succeeded.get("compact", 0) >= 1, succeeded
