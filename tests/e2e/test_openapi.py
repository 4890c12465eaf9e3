"""The OpenAPI document of ``ctxc serve`` as a client generator reads it (issue 15, ADR
0028): a valid OpenAPI 3.1 document, ``type`` required in every command, and a typed
result per command that real answers conform to."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

from context_compaction import Settings, bootstrap
from context_compaction.application.contracts import results as r
from context_compaction.application.contracts.commands import command_types
from context_compaction.infrastructure.http import create_app
from context_compaction.infrastructure.openapi import RESULT_TYPES


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    db = tmp_path_factory.mktemp("openapi") / "o.db"
    bus = bootstrap(Settings(database_url=f"sqlite:///{db}", summarizer="extractive",
                             models={"gpt-4o": {"token_limit": 4000}}))
    with TestClient(create_app(bus, token=None, max_body_bytes=1_000_000)) as test_client:
        yield test_client
    bus.close()


@pytest.fixture(scope="module")
def document(client: TestClient) -> dict[str, Any]:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


def resolve(document: dict[str, Any], ref: str) -> dict[str, Any]:
    assert ref.startswith("#/components/schemas/")
    return document["components"]["schemas"][ref.rsplit("/", 1)[1]]  # type: ignore[no-any-return]


def test_the_document_is_valid_openapi(document: dict[str, Any]) -> None:
    validate(document)  # raises OpenAPIValidationError with the path of the first problem
    assert document["openapi"].startswith("3.1")


def test_type_is_required_in_every_command_schema(document: dict[str, Any]) -> None:
    body = document["paths"]["/v1/commands"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    refs = [choice["$ref"] for choice in body["oneOf"]]
    assert len(refs) == len(command_types())
    for ref in refs:
        schema = resolve(document, ref)
        assert "type" in schema["required"], ref
        assert schema["properties"]["type"]["const"] in command_types()
    assert set(body["discriminator"]["mapping"]) == set(command_types())


def test_every_command_names_its_typed_result(document: dict[str, Any]) -> None:
    assert RESULT_TYPES.keys() == command_types().keys()
    ok = document["paths"]["/v1/commands"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    offered = {choice["$ref"].rsplit("/", 1)[1] for choice in ok["anyOf"]}
    for kind, command in command_types().items():
        envelope_name = resolve(document, f"#/components/schemas/{command.__name__}")["x-result-envelope"]
        assert envelope_name in offered
        envelope = resolve(document, f"#/components/schemas/{envelope_name}")
        assert envelope["properties"]["ok"] == {"const": True}
        result = resolve(document, envelope["properties"]["result"]["$ref"])
        assert result["title"] == RESULT_TYPES[kind].__name__
    failed = document["paths"]["/v1/commands"]["post"]["responses"]["409"]["content"]["application/json"]["schema"]
    error = resolve(document, failed["$ref"])
    assert error["properties"]["ok"] == {"const": False} and "turn_in_progress" in \
        error["properties"]["error"]["properties"]["code"]["enum"]


def test_a_generated_client_gets_turn_request_fields_for_prepare_turn(document: dict[str, Any]) -> None:
    """What a client generator does: prepare_turn → its envelope → the result model."""
    prepare = resolve(document, "#/components/schemas/PrepareTurn")
    envelope = resolve(document, f"#/components/schemas/{prepare['x-result-envelope']}")
    turn = resolve(document, envelope["properties"]["result"]["$ref"])
    fields = {f.alias or name for name, f in r.TurnRequest.model_fields.items()}
    assert set(turn["properties"]) == fields and set(turn["required"]) == fields
    assert turn["properties"]["phase"]["enum"] == ["start", "continuation"]
    usage = resolve(document, turn["properties"]["usage"]["$ref"])
    assert set(usage["properties"]) == set(r.ContextUsage.model_fields)
    compaction = turn["properties"]["compaction"]["anyOf"]
    assert {"$ref": "#/components/schemas/CompactOutcome"} in compaction and {"type": "null"} in compaction


def _validator(document: dict[str, Any], name: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/components/schemas/{name}", "components": document["components"]})


def test_real_answers_conform_to_their_typed_envelopes(client: TestClient, document: dict[str, Any]) -> None:
    sid = "typed"
    big = "word " * 600
    steps: list[dict[str, Any]] = [
        {"type": "start_session", "session_id": sid, "model": "gpt-4o"},
        {"type": "configure_session", "session_id": sid, "agent_token_limit": 3000},
        *[{"type": "append_messages", "session_id": sid, "messages": [
            {"role": "user", "content": f"turn {i}: {big}", "turn_id": f"t{i}"},
            {"role": "assistant", "content": f"answer {i}: {big}", "turn_id": f"t{i}"}]} for i in range(4)],
        {"type": "get_context_usage", "session_id": sid},
        {"type": "compact", "session_id": sid},
        {"type": "prepare_turn", "session_id": sid, "system_prompt": "be brief"},
        {"type": "get_history", "session_id": sid},
        {"type": "search_history", "session_id": sid, "query": "answer"},
        {"type": "pin_messages", "session_id": sid, "seqs": [1]},
        {"type": "unpin_messages", "session_id": sid, "seqs": [1]},
        {"type": "get_projection", "session_id": sid},
        {"type": "replay_session", "session_id": sid, "at_version": 2},
        {"type": "replay_state", "session_id": sid, "at_version": 2},
        {"type": "list_checkpoints", "session_id": sid},
        {"type": "recall_timeline", "session_id": sid},
        {"type": "list_sessions"},
        {"type": "invalidate_history", "session_id": sid, "kind": "rewind", "to_seq": 2},
        {"type": "read_events", "after": 0, "limit": 5},
        {"type": "read_session_events", "session_id": sid, "from_version": 2, "limit": 5},
    ]
    answered: set[str] = set()
    for step in steps:
        envelope = _post(client, step)
        _check(document, step["type"], envelope)
        answered.add(step["type"])
        if step["type"] == "list_checkpoints":
            active = envelope["result"]["active_checkpoint_id"]
            assert active is not None
            revert = {"type": "revert_checkpoint", "session_id": sid, "checkpoint_id": active}
            _check(document, "revert_checkpoint", _post(client, revert))
            answered.add("revert_checkpoint")
        if step["type"] == "prepare_turn":
            request_id = envelope["result"]["request_id"]
            usage = {"type": "record_usage", "session_id": sid, "request_id": request_id, "prompt_tokens": 900}
            _check(document, "record_usage", _post(client, usage))
            overflow = {"type": "recover_overflow", "session_id": sid, "request_id": request_id,
                        "error_message": "This model's maximum context length is 2000 tokens"}
            _check(document, "recover_overflow", _post(client, overflow))
            answered |= {"record_usage", "recover_overflow"}
        if step["type"] == "compact" and envelope["result"]["checkpoint_id"]:
            again = {"type": "resummarize", "session_id": sid, "checkpoint_id": envelope["result"]["checkpoint_id"]}
            _check(document, "resummarize", _post(client, again))
            log = {"type": "list_compaction_attempts", "session_id": sid}
            _check(document, "list_compaction_attempts", _post(client, log))
            answered |= {"resummarize", "list_compaction_attempts"}
    answered |= _preview_and_cost(client, document, big)  # (issue 43)
    answered |= _tree_commands(client, document)  # (issue 42)
    _check(document, "delete_session", _post(client, {"type": "delete_session", "session_id": sid}))
    _check(document, "purge_session", _post(client, {"type": "purge_session", "session_id": sid}))
    assert answered | {"delete_session", "purge_session"} == set(command_types())
    failed = client.post("/v1/commands", json={"type": "get_history", "session_id": "nobody"})
    assert failed.status_code == 404
    errors = list(_validator(document, "ErrorEnvelope").iter_errors(failed.json()))
    assert not errors, errors


def _preview_and_cost(client: TestClient, document: dict[str, Any], big: str) -> set[str]:
    """A dry run's candidate, committed; the session's cost (issue 43)."""
    sid = "typed-preview"
    _post(client, {"type": "start_session", "session_id": sid, "model": "gpt-4o", "agent_token_limit": 3000})
    for i in range(4):
        _post(client, {"type": "append_messages", "session_id": sid, "messages": [
            {"role": "user", "content": f"turn {i}: {big}"}, {"role": "assistant", "content": f"answer {i}"}]})
    dry = _post(client, {"type": "compact", "session_id": sid, "dry_run": True})
    _check(document, "compact", dry)
    assert dry["result"]["status"] == "candidate"
    done = _post(client, {"type": "commit_candidate", "session_id": sid,
                          "candidate_id": dry["result"]["candidate_id"]})
    _check(document, "commit_candidate", done)
    assert done["result"]["status"] == "compacted"
    _check(document, "get_session_cost", _post(client, {"type": "get_session_cost", "session_id": sid}))
    return {"commit_candidate", "get_session_cost"}


def _post(client: TestClient, command: dict[str, Any]) -> dict[str, Any]:
    response = client.post("/v1/commands", json=command)
    assert response.status_code == 200, (command["type"], response.text[:500])
    return response.json()  # type: ignore[no-any-return]


def _check(document: dict[str, Any], kind: str, envelope: dict[str, Any]) -> None:
    name = f"{command_types()[kind].__name__}Envelope"
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in _validator(document, name).iter_errors(envelope)]
    assert not errors, (kind, errors[:5])
    # The typed schema is not vacuous: the answer of another command does not fit it.
    other = "ListSessionsEnvelope" if kind != "list_sessions" else "GetHistoryEnvelope"
    assert list(_validator(document, other).iter_errors(envelope)), (kind, other)


def test_the_document_is_built_on_first_use(tmp_path: Path) -> None:
    # create_app builds the document lazily: the first /openapi.json request pays for it.
    bus = bootstrap(Settings(database_url=f"sqlite:///{tmp_path / 'x.db'}"))
    try:
        app = create_app(bus, token=None, max_body_bytes=10)
        assert app.openapi_schema is None
        assert app.openapi()["components"]["schemas"]["TurnRequest"]["title"] == "TurnRequest"
    finally:
        bus.close()


def _tree_commands(client: Any, document: dict[str, Any]) -> set[str]:
    """fork_session and complete_subagent (issue 42), on sessions of their own."""
    root = "tree-root"
    for step in (
        {"type": "start_session", "session_id": root, "model": "gpt-4o"},
        {"type": "append_messages", "session_id": root, "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "agent", "arguments": "{}"}}]}]},
        {"type": "start_session", "session_id": "tree-sub", "model": "gpt-4o",
         "parent_session_id": root, "parent_tool_call_id": "c1"},
    ):
        _check(document, step["type"], _post(client, step))
    _check(document, "fork_session", _post(client, {"type": "fork_session", "session_id": root,
                                                    "new_session_id": "tree-fork"}))
    _check(document, "complete_subagent", _post(client, {"type": "complete_subagent", "session_id": "tree-sub",
                                                         "result": "done"}))
    _check(document, "list_sessions", _post(client, {"type": "list_sessions", "tree": True}))
    return {"fork_session", "complete_subagent"}
