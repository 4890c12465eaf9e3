"""The command bus: it routes each command to its handler, and that is all it does.

Around the handler call run the bus's wrappers, outermost first, each its own piece:
the running-command lifecycle (``lifecycle.py``: ``close`` lets running commands
finish) and telemetry (``observe.py``: span, metrics, one log line). After it, the typed
path hands out the result's messages as the caller's own copy (``handout.py``); the
JSON path parses and renders (``jsoncodec.py``). Issue 38.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

from pydantic import BaseModel

from context_compaction.domain.errors import InvalidCommand

from . import asyncbus, jsoncodec
from ..contracts.commands import Command
from ..contracts.results import Result
from .handout import hand_out
from .lifecycle import Running
from .observe import Observed
from .services import Services

# (the JSON edge's helpers, importable from the bus as before issue 38)
from .jsoncodec import JsonReply, decode_command, envelope_bytes, validation_error  # noqa: F401
from .jsoncodec import _result_bytes  # noqa: F401

Handler = Callable[[Any, Services], BaseModel]
#: ``(command, call)``: runs ``call(command)`` (the next wrapper, or the handler) and
#: returns what it returns.
Wrapper = Callable[[Any, Callable[[Any], Any]], Any]
R = TypeVar("R", bound=Result)


class MessageBus:
    """Routes each command to its handler (a plain dict, ADR 0024) through its wrappers."""

    def __init__(
        self,
        services: Services,
        handlers: Mapping[type[Command[Any]], Handler],
        on_close: Callable[[], None] | None = None,
        wrappers: Sequence[Wrapper] | None = None,
    ) -> None:
        self.services = services
        self.handlers = dict(handlers)
        self._on_close = on_close
        self.running = Running()
        self.wrappers: tuple[Wrapper, ...] = (
            tuple(wrappers) if wrappers is not None
            else (self.running.around, Observed(services).around)
        )

    @property
    def _closed(self) -> bool:
        return self.running.closed

    # ---------------------------------------------------------------- routing
    def _handle(self, command: Command[Any]) -> Any:
        handler = self.handlers.get(type(command))
        if handler is None:
            raise InvalidCommand(f"no handler for {type(command).__name__}")
        services = self.services
        call: Callable[[Any], Any] = lambda cmd: handler(cmd, services)  # noqa: E731
        for wrap in reversed(self.wrappers):
            call = partial(wrap, call=call)
        return call(command)

    # ---------------------------------------------------------------- typed
    def dispatch(self, command: Command[R]) -> R:
        """Run one command; raises ``ContextCompactionError`` (with ``.code``) on failure.

        Typed: ``dispatch(PrepareTurn(...))`` is a ``TurnRequest`` to a type checker (the
        command's ``Command[...]`` argument, ADR 0040)."""
        return hand_out(self._handle(command))  # type: ignore[no-any-return]

    async def adispatch(self, command: Command[R]) -> R:
        """``dispatch`` for asyncio callers, typed as ``dispatch`` (ADR 0040): the command
        runs in a command thread, its summary call is ``litellm.acompletion`` on the
        library's summary loop; nothing blocks the caller's loop (``asyncbus``, ADR 0042)."""
        return await asyncbus.off_loop(self.dispatch, command)

    # ----------------------------------------------------------------- JSON
    def dispatch_json(self, data: Mapping[str, Any] | str | bytes) -> dict[str, Any]:
        """Run one JSON command; never raises for bad input, returns an envelope.

        ``{"ok": true, "result": {...}}`` or
        ``{"ok": false, "error": {"code", "message", "details"}}``.
        """
        return jsoncodec.envelope(self._handle, data, self._limit())

    async def adispatch_json(self, data: Mapping[str, Any] | str | bytes) -> dict[str, Any]:
        """``dispatch_json`` for asyncio callers, as ``adispatch``."""
        return await asyncbus.off_loop(self.dispatch_json, data)

    def dispatch_json_bytes(self, data: Mapping[str, Any] | str | bytes) -> bytes:
        """``dispatch_json``'s envelope as compact UTF-8 JSON bytes, built in one walk."""
        return self.dispatch_json_reply(data).body

    def dispatch_json_reply(self, data: Mapping[str, Any] | str | bytes) -> JsonReply:
        """The envelope's bytes and its error code (``None`` when ok), for an edge that
        maps codes to statuses (the HTTP edge) without parsing its own answer."""
        return jsoncodec.reply(self._handle, data, self._limit())

    def parse(self, data: Mapping[str, Any] | str | bytes) -> Command[Any]:
        """Validate a JSON command (dict or text) into its typed model."""
        return jsoncodec.parse(data, self._limit())

    def _limit(self) -> int:
        return self.services.settings.limits.max_request_bytes

    # ------------------------------------------------------------ lifecycle
    def close(self) -> None:
        """Refuse new commands, let the running ones finish (a compaction in its summary
        call: at most the summary timeout), then close the store."""
        self.running.close(self.services.settings.summary_timeout_seconds, self._on_close)

    def __enter__(self) -> MessageBus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
