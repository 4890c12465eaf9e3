"""The JSON edge of the bus (issue 38): a JSON command in, an envelope out.

``run_json`` parses a command (``parse``: size limit, portable-JSON check, the
discriminated union), runs it through the bus's typed path and renders the result;
bad input becomes an error envelope, never an exception (the envelope promise).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import orjson
from pydantic import BaseModel, ValidationError

from context_compaction.domain.errors import (
    ContextCompactionError,
    InvalidCommand,
    InvalidMessage,
)
from context_compaction.domain.messages import PORTABLE_CHECKED_CONTEXT, json_problem
from context_compaction.domain.portable_json import parsed_fine

from ..contracts.commands import COMMAND_ADAPTER, Command, command_types
from .handout import SHARING_MESSAGES, handed_out

log = logging.getLogger("context_compaction.bus")


class JsonReply(NamedTuple):
    body: bytes
    error_code: str | None


def envelope(handle: Callable[[Command[Any]], Any], data: Mapping[str, Any] | str | bytes,
             limit: int) -> dict[str, Any]:
    """``{"ok": true, "result": {...}}`` or ``{"ok": false, "error": {...}}``."""
    result, error = run_json(handle, data, limit, _jsonable)
    return {"ok": False, "error": error} if error is not None else {"ok": True, "result": result}


def reply(handle: Callable[[Command[Any]], Any], data: Mapping[str, Any] | str | bytes,
          limit: int) -> JsonReply:
    """The envelope's bytes and its error code (``None`` when ok)."""
    result, error = run_json(handle, data, limit, _result_bytes)
    if error is not None:
        return JsonReply(envelope_bytes({"ok": False, "error": error}), error["code"])
    return JsonReply(result, None)


def run_json(
    handle: Callable[[Command[Any]], Any], data: Mapping[str, Any] | str | bytes, limit: int,
    render: Callable[[Any], Any],
) -> tuple[Any, dict[str, Any] | None]:
    try:
        command = parse(data, limit)
        return render(handle(command)), None
    except ContextCompactionError as exc:
        return None, exc.to_dict()
    except Exception as exc:  # noqa: BLE001 - the envelope promise
        log.exception(
            "command failed unexpectedly", extra={"error_class": type(exc).__name__}
        )
        return None, {
            "code": "internal_error",
            "message": f"unexpected {type(exc).__name__}; see the service log",
            "details": {},
        }


def parse(data: Mapping[str, Any] | str | bytes, limit: int) -> Command[Any]:
    """Validate a JSON command (dict or text) into its typed model."""
    checked = False
    if isinstance(data, (str, bytes, bytearray)):
        if len(data) > limit:
            raise InvalidCommand(f"request larger than {limit:,} bytes")
        data, checked = decode_command(data)
    if not isinstance(data, Mapping):
        raise InvalidCommand("a command must be a JSON object")
    if not checked:
        problem = json_problem(dict(data))
        if problem:
            if problem.startswith("messages."):
                raise InvalidMessage(problem)
            raise InvalidCommand(problem)
    kind = data.get("type")
    if not isinstance(kind, str) or kind not in command_types():
        raise InvalidCommand(
            f"unknown command type {kind!r}" if isinstance(kind, str) else "missing type",
            details={"known_types": sorted(command_types())},
        )
    try:
        # The command was checked whole above: its messages skip their own walk.
        return COMMAND_ADAPTER.validate_python(dict(data), context=PORTABLE_CHECKED_CONTEXT)  # type: ignore[no-any-return]
    except ValidationError as exc:
        raise validation_error(exc) from None
    except RecursionError:
        raise InvalidCommand("command nested too deeply") from None


def decode_command(text: str | bytes | bytearray) -> tuple[Any, bool]:
    """The JSON text's value, and whether it is known to be portable JSON (ADR 0056).

    orjson parses the common command (~2.6x faster than ``json`` here) and one quick
    walk (``parsed_fine``: ``plainly_fine`` for what orjson returns) then settles both
    questions at once: orjson gives what ``json.loads`` gives for every text it
    accepts, except an integer beyond 64 bits, which it turns into a float that the
    walk refuses (as it refuses every integer beyond ``MAX_INT``). Anything else — text orjson refuses (NaN, lone surrogates,
    ``1e400``, bad JSON) or a value the walk does not pass — is parsed by
    ``json.loads`` and checked by ``json_problem`` as before, so its answer and error
    are the ones it always was.
    """
    try:
        value = orjson.loads(text)
    except (ValueError, RecursionError):  # (orjson.JSONDecodeError is a ValueError)
        pass
    else:
        if type(value) is dict and parsed_fine(value):
            return value, True
    try:
        return json.loads(text), False
    except (ValueError, RecursionError) as exc:
        raise InvalidCommand(f"not valid JSON: {type(exc).__name__}") from None


def validation_error(exc: ValidationError) -> ContextCompactionError:
    """Map a pydantic error: problems inside ``messages[i]`` are ``invalid_message``."""
    errors = exc.errors(include_input=False, include_url=False, include_context=False)
    problems = [
        {"loc": [p if isinstance(p, (int, str)) else str(p) for p in e["loc"]], "msg": e["msg"]}
        for e in errors[:20]
    ]
    in_messages = all(
        len(e["loc"]) >= 3 and e["loc"][-1] != "messages" and e["loc"][1] == "messages"
        for e in errors
    )
    first = problems[0] if problems else {"loc": [], "msg": "invalid"}
    where = ".".join(str(p) for p in first["loc"][1:]) or "command"
    text = f"{where}: {first['msg']}"
    if in_messages:
        return InvalidMessage(text, details={"errors": problems})
    return InvalidCommand(text, details={"errors": problems})


def _dump_beside(result: BaseModel, messages: list[Any], **dump: Any) -> dict[str, Any]:
    """A result holding the cached projection's messages, dumped without walking them:
    ``messages`` (the cache's own, or a copy) put in their place."""
    plain = result.model_dump(exclude={"messages"}, **dump)
    plain["messages"] = messages
    return plain


def _jsonable(result: Any) -> Any:
    if isinstance(result, SHARING_MESSAGES):
        # The messages are the cached projection's, JSON-shaped already (decoded from
        # the store or built from validated records): one C-level copy of them, as the
        # typed caller gets, instead of pydantic walking each value to build the same
        # dicts (1.2x typed ``dispatch`` at 10k messages; issue 18, ADR 0062).
        # (with the builder's record of which messages are flat, as the typed caller's
        # copy has it: without it every message is looked at, ~2x at 10k; ADR 0098)
        return _dump_beside(result, handed_out(result.messages, result.known_flat()), mode="json")
    if isinstance(result, BaseModel):
        return result.model_dump(mode="json")
    return result


#: Types orjson would write its own way (datetimes, dataclasses, str/int/dict
#: subclasses) go to ``default``, which has none: they take the exact path instead.
_ORJSON_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _result_bytes(result: Any) -> bytes:
    """``{"ok": true, "result": ...}`` as bytes: python-mode ``model_dump`` walked once by
    orjson (ADR 0030, R7; ~6x faster than ``model_dump(mode="json")`` + ``json.dumps``
    on a 3 MB ``prepare_turn``). What orjson refuses (ints beyond 64 bits, lone
    surrogates, non-string keys, types it would write differently) takes the exact
    path, so the parsed JSON is always what ``dispatch_json`` + ``envelope_bytes`` gives."""
    if isinstance(result, SHARING_MESSAGES):
        # The messages are JSON-shaped dicts already (the cached projection's, only
        # read here): orjson walks them once, not model_dump's copy of them first.
        plain = _dump_beside(result, result.messages)
    else:
        plain = result.model_dump() if isinstance(result, BaseModel) else result
    try:
        return orjson.dumps({"ok": True, "result": plain}, option=_ORJSON_OPTIONS)
    except (orjson.JSONEncodeError, TypeError):
        return envelope_bytes({"ok": True, "result": _jsonable(result)})


def envelope_bytes(envelope: Mapping[str, Any]) -> bytes:
    """An envelope as compact UTF-8 JSON, exactly as Starlette's ``JSONResponse`` renders it."""
    return json.dumps(
        envelope, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
    ).encode("utf-8")
