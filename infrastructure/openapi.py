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

from context_compaction.application.contracts.commands import COMMAND_ADAPTER, command_types

REF = "#/components/schemas/{model}"

#: What each command answers with (CONTRACT.md "Commands"). ``test_openapi`` checks that
#: every command type has an entry and that real answers validate against it.
#: Command ``type`` → its result model, read from each command's ``Command[...]``
#: argument (issue 38: not a second list).
RESULT_TYPES: dict[str, type[BaseModel]] = {
    kind: command.result_type() for kind, command in command_types().items()
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
