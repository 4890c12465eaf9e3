"""The schemas of ``ctxc serve``'s OpenAPI document (ADR 0028).

A generated client gets real types: every command schema requires ``type`` and names
its answer in ``x-result-envelope``; ``<Command>Envelope`` is ``{ok: true, result:
<its result model>}``; the 200 response of ``POST /v1/commands`` is ``anyOf`` those
envelopes (``anyOf``, not ``oneOf``: two results may share a shape, e.g.
``start_session`` and ``delete_session``), every error status an ``ErrorEnvelope``.
"""

from __future__ import annotations

import copy

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from context_compaction.application import results as r
from context_compaction.application import results_costs as rc
from context_compaction.application.commands import COMMAND_ADAPTER, command_types

REF = "#/components/schemas/{model}"

#: What each command answers with (CONTRACT.md "Commands"). ``test_openapi`` checks that
#: every command type has an entry and that real answers validate against it.
RESULT_TYPES: dict[str, type[BaseModel]] = {
    "start_session": r.StartSessionResult,
    "configure_session": r.ConfigureSessionResult,
    "append_messages": r.AppendMessagesResult,
    "invalidate_history": r.InvalidateHistoryResult,
    "delete_session": r.DeleteSessionResult,
    "purge_session": r.PurgeSessionResult,
    "pin_messages": r.PinsResult,
    "unpin_messages": r.PinsResult,
    "revert_checkpoint": r.RevertResult,
    "compact": r.CompactOutcome,
    "prepare_turn": r.TurnRequest,
    "record_usage": r.RecordUsageResult,
    "recover_overflow": r.TurnRequest,
    "get_context_usage": r.ContextUsage,
    "recall_timeline": r.TimelineResult,
    "get_history": r.HistoryResult,
    "search_history": r.SearchResult,
    "get_projection": r.ProjectionResult,
    "replay_session": r.ReplayResult,
    "replay_state": r.ReplayStateResult,
    "list_checkpoints": r.CheckpointsResult,
    "list_sessions": r.SessionsResult,
    "list_compaction_attempts": r.CompactionAttemptsResult,
    "resummarize": r.ResummarizeResult,
    "read_events": r.EventsResult,
    "read_session_events": r.SessionEventsResult,
    "commit_candidate": r.CompactOutcome,
    "get_session_cost": rc.SessionCostResult,
    "fork_session": r.ForkSessionResult,  # issue 42
    "complete_subagent": r.CompleteSubagentResult,  # issue 42
}


def envelope_name(command: type[BaseModel]) -> str:
    return f"{command.__name__}Envelope"


def command_schemas() -> tuple[dict[str, Any], dict[str, Any]]:
    """The request body (``oneOf`` on ``type``) and the command models' definitions."""
    body = COMMAND_ADAPTER.json_schema(ref_template=REF)
    definitions: dict[str, Any] = body.pop("$defs", {})
    for command in command_types().values():
        schema = definitions[command.__name__]
        # ``type`` has a default in Python (``PrepareTurn(session_id=...)``), but on the
        # wire it is what selects the command: a client must always send it.
        schema["required"] = ["type", *(f for f in schema.get("required", []) if f != "type")]
        schema["x-result-envelope"] = envelope_name(command)
    _name_tool_call_parts(definitions)
    return body, definitions


def _name_tool_call_parts(definitions: dict[str, Any]) -> None:
    """The tool call's two forms, its function and the provider's private fields as
    named components: openapi-python-client drops a union of inline objects (it builds
    their models twice and refuses the second), and with them every message schema."""
    tool_call = definitions.get("ToolCall")
    if tool_call is None:
        return
    private = {"type": "object", "additionalProperties": True, "title": "ProviderSpecificFields"}
    definitions["ProviderSpecificFields"] = private
    refs = []
    for form in tool_call["anyOf"]:
        form = copy.deepcopy(form)
        title = form["title"]
        for holder in (form, form["properties"].get("function")):
            if holder and "provider_specific_fields" in holder["properties"]:
                holder["properties"]["provider_specific_fields"] = {
                    "anyOf": [{"$ref": REF.format(model="ProviderSpecificFields")}, {"type": "null"}]}
        function = form["properties"].get("function")
        if function is not None:
            definitions[f"{title}Function"] = {**function, "title": f"{title}Function"}
            form["properties"]["function"] = {"$ref": REF.format(model=f"{title}Function")}
        definitions[title] = form
        refs.append({"$ref": REF.format(model=title)})
    definitions["ToolCall"] = {k: v for k, v in tool_call.items() if k != "anyOf"} | {"anyOf": refs}


def result_schemas() -> dict[str, Any]:
    """The result models as they are sent (serialization mode), every field required:
    ``dispatch_json`` dumps them whole, so a client never has to expect a field missing."""
    models = list(dict.fromkeys(RESULT_TYPES.values()))
    _, top = models_json_schema([(m, "serialization") for m in models], ref_template=REF)
    definitions: dict[str, Any] = top.get("$defs", {})
    for schema in definitions.values():
        if schema.get("type") == "object" and "properties" in schema:
            schema["required"] = list(schema["properties"])
    return definitions


def envelope_schemas(error_codes: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind, command in command_types().items():
        result = RESULT_TYPES[kind].__name__
        out[envelope_name(command)] = {
            "type": "object",
            "description": f"The answer to a successful `{kind}`: its result is a {result}.",
            "required": ["ok", "result"],
            "additionalProperties": False,
            "properties": {"ok": {"const": True}, "result": {"$ref": REF.format(model=result)}},
        }
    out["ErrorEnvelope"] = {
        "type": "object",
        "description": "The answer to a command that failed: nothing was changed.",
        "required": ["ok", "error"],
        "additionalProperties": False,
        "properties": {
            "ok": {"const": False},
            "error": {
                "type": "object",
                "required": ["code", "message", "details"],
                "properties": {
                    "code": {"type": "string", "enum": error_codes},
                    "message": {"type": "string"},
                    "details": {"type": "object"},
                },
            },
        },
    }
    return out


def success_schema() -> dict[str, Any]:
    return {"anyOf": [{"$ref": REF.format(model=envelope_name(c))} for c in command_types().values()]}


def components(error_codes: list[str], command_definitions: dict[str, Any]) -> dict[str, Any]:
    """Every schema the document refers to; a name used twice is a bug, not a merge."""
    out: dict[str, Any] = {}
    for part in (command_definitions, result_schemas(), envelope_schemas(error_codes)):
        clash = out.keys() & part.keys()
        if clash:
            raise RuntimeError(f"OpenAPI schema names used twice: {sorted(clash)}")
        out.update(part)
    return out
