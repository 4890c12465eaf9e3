"""The command bus: typed ``dispatch`` and the JSON envelope ``dispatch_json``."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from context_compaction.domain.errors import (
    ContextCompactionError,
    InvalidCommand,
    InvalidMessage,
)
from context_compaction.domain.messages import PORTABLE_CHECKED_CONTEXT, json_problem
from context_compaction.domain.portable_json import parsed_fine

from . import asyncbus
from . import telemetry as tel
from ..contracts.commands import COMMAND_ADAPTER, Command, command_types
from .handout import handed_out
from ..contracts.results import ProjectionResult, Result, TurnRequest
from .services import Services

log = logging.getLogger("context_compaction.bus")

_SHARING_MESSAGES = (TurnRequest, ProjectionResult)

Handler = Callable[[Any, Services], BaseModel]
R = TypeVar("R", bound=Result)


class JsonReply(NamedTuple):
    body: bytes
    error_code: str | None


class MessageBus:
    """Routes each command to its handler (a plain dict, ADR 0024)."""

    def __init__(
        self,
        services: Services,
        handlers: Mapping[type[Command[Any]], Handler],
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.services = services
        self.handlers = dict(handlers)
        self._on_close = on_close
        self._closed = False
        # Commands running now (``dispatch`` in any thread, ``adispatch``'s command
        # threads): ``close`` lets them finish before it closes the store under them.
        self._running = 0
        self._idle = threading.Condition()

    # ---------------------------------------------------------------- typed
    def dispatch(self, command: Command[R]) -> R:
        """Run one command; raises ``ContextCompactionError`` (with ``.code``) on failure.

        Typed: ``dispatch(PrepareTurn(...))`` is a ``TurnRequest`` to a type checker (the
        command's ``Command[...]`` argument, ADR 0040)."""
        result: R = self._handle(command)
        if isinstance(result, _SHARING_MESSAGES):
            # Their messages come from the process's cached projection: the typed caller
            # gets its own copy to mark or edit (ADR 0058; ``dispatch_json`` serializes
            # the cached ones, never handing them out).
            result.messages = handed_out(result.messages)
        return result

    def _handle(self, command: Command[Any]) -> Any:
        handler = self.handlers.get(type(command))
        if handler is None:
            raise InvalidCommand(f"no handler for {type(command).__name__}")
        with self._idle:
            if self._closed:
                raise InvalidCommand("the bus is closed")
            self._running += 1
        try:
            return self._observed(handler, command)
        finally:
            with self._idle:
                self._running -= 1
                self._idle.notify_all()

    def _observed(self, handler: Handler, command: Command[Any]) -> Any:
        """The handler in a ``ctxc.command`` span, its metrics and a completion log line
        with its duration (issue 15): ids, codes and figures only, never content."""
        telemetry = self.services.telemetry
        kind, session_id = str(command.type), getattr(command, "session_id", None)
        started = time.perf_counter()
        result, code, outcome = None, None, None
        try:
            with telemetry.span("ctxc.command", {"ctxc.command": kind}) as span:
                try:
                    result = handler(command, self.services)
                except ContextCompactionError as exc:
                    code = exc.code
                    raise
                except Exception:
                    code = "internal_error"
                    raise
                finally:
                    # A session id that names no session may be any text a caller sent
                    # (content, even): it is reported only when the session exists.
                    if not tel.names_no_session(code) and isinstance(session_id, str):
                        span.set("ctxc.session_id", session_id)
                        tel.genai_attributes(span, kind, session_id, result)
                outcome = tel.outcome_of(result)
                span.set("ctxc.outcome", outcome)
        finally:
            log.info("command completed" if code is None else "command failed", extra={
                "command": kind, "outcome": (outcome or tel.outcome_of(result)) if code is None else None,
                "session_id": None if tel.names_no_session(code) else session_id, "error_code": code,
                "duration_ms": round((time.perf_counter() - started) * 1000, 3),
            })
            tel.count_command(telemetry, kind, result, code)
        return result

    # ---------------------------------------------------------------- async
    async def adispatch(self, command: Command[R]) -> R:
        """``dispatch`` for asyncio callers, typed as ``dispatch`` (ADR 0040): the command
        runs in a command thread, its summary call is ``litellm.acompletion`` on the
        library's summary loop; nothing blocks the caller's loop (``asyncbus``, ADR 0042)."""
        return await asyncbus.off_loop(self.dispatch, command)

    async def adispatch_json(self, data: Mapping[str, Any] | str | bytes) -> dict[str, Any]:
        """``dispatch_json`` for asyncio callers, as ``adispatch``."""
        return await asyncbus.off_loop(self.dispatch_json, data)

    # ----------------------------------------------------------------- JSON
    def dispatch_json(self, data: Mapping[str, Any] | str | bytes) -> dict[str, Any]:
        """Run one JSON command; never raises for bad input, returns an envelope.

        ``{"ok": true, "result": {...}}`` or
        ``{"ok": false, "error": {"code", "message", "details"}}``.
        """
        result, error = self._run_json(data, _jsonable)
        return {"ok": False, "error": error} if error is not None else {"ok": True, "result": result}

    def dispatch_json_bytes(self, data: Mapping[str, Any] | str | bytes) -> bytes:
        """``dispatch_json``'s envelope as compact UTF-8 JSON bytes, built in one walk."""
        return self.dispatch_json_reply(data).body

    def dispatch_json_reply(self, data: Mapping[str, Any] | str | bytes) -> JsonReply:
        """The envelope's bytes and its error code (``None`` when ok), for an edge that
        maps codes to statuses (the HTTP edge) without parsing its own answer."""
        result, error = self._run_json(data, _result_bytes)
        if error is not None:
            return JsonReply(envelope_bytes({"ok": False, "error": error}), error["code"])
        return JsonReply(result, None)

    def _run_json(
        self, data: Mapping[str, Any] | str | bytes, render: Callable[[Any], Any]
    ) -> tuple[Any, dict[str, Any] | None]:
        try:
            command = self.parse(data)
            return render(self._handle(command)), None
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

    def parse(self, data: Mapping[str, Any] | str | bytes) -> Command[Any]:
        """Validate a JSON command (dict or text) into its typed model."""
        limit = self.services.settings.limits.max_request_bytes
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

    def close(self) -> None:
        """Refuse new commands, let the running ones finish (a compaction in its summary
        call: at most the summary timeout), then close the store."""
        with self._idle:
            if self._closed:
                return
            self._closed = True
            self._idle.wait_for(
                lambda: self._running == 0, timeout=self.services.settings.summary_timeout_seconds
            )
        if self._on_close is not None:
            self._on_close()

    def __enter__(self) -> MessageBus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
    if isinstance(result, _SHARING_MESSAGES):
        # The messages are the cached projection's, JSON-shaped already (decoded from
        # the store or built from validated records): one C-level copy of them, as the
        # typed caller gets, instead of pydantic walking each value to build the same
        # dicts (1.2x typed ``dispatch`` at 10k messages; issue 18, ADR 0062).
        return _dump_beside(result, handed_out(result.messages), mode="json")
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
    if isinstance(result, _SHARING_MESSAGES):
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
