"""The HTTP edge of ``ctxc serve`` (ADR 0020, 0070): uvicorn's h11 protocol with what its
public options (``timeout_keep_alive``, ``backlog``: used as they are) cannot do — a
deadline for a request's head (uvicorn times nothing before it; ASGI middleware runs only
after it), a cap that evicts the longest-waiting idle connection (``limit_concurrency``
refuses requests instead, so idle sockets could shut everyone out), 400/408/503 answers
as JSON envelopes (uvicorn's are plain text) — and a descriptor limit that fits the cap.
Imported only by ``serve`` (it needs uvicorn, the ``[http]`` extra)."""

# No ``from __future__ import annotations``: the class body's annotations are plain.
import asyncio
import contextlib
import json
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("context_compaction.http")


def _raw_response(status: int, reason: str, code: str, message: str) -> bytes:
    """An envelope as a complete HTTP/1.1 response, for answers outside any request."""
    body = json.dumps({"ok": False, "error": {"code": code, "message": message, "details": {}}}).encode()
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n").encode() + body


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the edge limits of ADR 0020 (see ``http``'s module text);
    ``guarded_protocol`` makes the subclass that carries the two limits."""

    max_connections: int
    request_timeout: float

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._timer: "asyncio.TimerHandle | None" = None
        self._waiting_since: "float | None" = None  # waiting for a request since
        self._partial = False  # bytes of the awaited request have arrived
        self._read_cycle: Any = None  # the last request read completely

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait_for_request()
        if len(self.connections) > self.max_connections:
            self._make_room()

    def connection_lost(self, exc: "Exception | None") -> None:
        self._cancel_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._partial = self._waiting_since is not None
        super().data_received(data)
        self._note_progress()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._wait_for_request()
            self._note_progress()  # a pipelined request may have started meanwhile

    def _wait_for_request(self) -> None:
        self._cancel_timer()
        self._waiting_since = self.loop.time()
        self._partial = False
        self._timer = self.loop.call_later(self.request_timeout, self._timed_out)

    def _note_progress(self) -> None:
        cycle = self.cycle
        if cycle is not None and cycle is not self._read_cycle and not cycle.more_body:
            # The whole request is in: the application has it, however long it takes.
            self._read_cycle = cycle
            self._waiting_since = None
            self._cancel_timer()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timed_out(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        if self._partial and self.conn.our_state is h11.IDLE:
            self.transport.write(_raw_response(
                408, "Request Timeout", "request_timeout",
                f"the request did not arrive within {self.request_timeout:g} s"))
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        # h11 refused the bytes as HTTP (uvicorn's own answer is plain text).
        self._cancel_timer()
        self.transport.write(_raw_response(
            400, "Bad Request", "invalid_command", "the request is not valid HTTP/1.1"))
        self.transport.close()

    def _make_room(self) -> None:
        waiting = [
            c for c in self.connections
            if c is not self and isinstance(c, GuardedH11Protocol)
            and c._waiting_since is not None and not c.transport.is_closing()
        ]
        if waiting:  # the connection that has kept us waiting longest goes
            min(waiting, key=lambda c: c._waiting_since or 0.0).transport.close()
            return
        self._cancel_timer()
        self.transport.write(_raw_response(
            503, "Service Unavailable", "too_many_connections",
            f"all {self.max_connections} connections are busy; retry"))
        self.transport.close()


def guarded_protocol(*, max_connections: int, request_timeout: float) -> type:
    """The protocol class to pass uvicorn as ``http=``, carrying the two limits."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,),
                {"max_connections": max_connections, "request_timeout": request_timeout})


#: Descriptors the process needs besides its connections (database, logs, libraries).
_SPARE_DESCRIPTORS = 64


def fit_descriptors(max_connections: int) -> int:
    """Make room for the connections a burst can hold open (the cap, one accepted batch
    of the same size being turned away, spares): raise the soft descriptor limit if the
    hard one allows, else lower the cap."""
    import resource

    needed = 2 * max_connections + _SPARE_DESCRIPTORS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        with contextlib.suppress(ValueError, OSError):  # (the cap is lowered below)
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        if soft < needed:
            fitted = max((soft - _SPARE_DESCRIPTORS) // 2, 1)
            log.warning("connection limit lowered to fit the descriptor limit",
                        extra={"max_connections": fitted, "descriptor_limit": soft})
            return fitted
    return max_connections


