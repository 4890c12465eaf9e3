"""``ctxc serve``: the command bus over HTTP (optional extra ``[http]``: FastAPI + uvicorn).

``POST /v1/commands`` takes the same JSON commands as ``dispatch_json`` and answers with
the same envelopes; the OpenAPI document is generated from the pydantic command models;
``GET /healthz`` checks the database. Bearer-token auth: without a token the server
refuses to start unless it is bound to loopback with ``--insecure-local``; ``/docs`` and
``/openapi.json`` need the token too unless ``--public-docs``. Every error, the HTTP
layer's own included (400, 404, 405, 408, 503), is an envelope.

The edge (ADR 0020): at most ``--max-connections`` open connections, the oldest one
still waiting for its request closed to make room; a request must arrive complete within
``--request-timeout`` seconds of the connection (or of the previous response); idle
keep-alive connections close after ``--idle-timeout`` seconds.
"""

# No ``from __future__ import annotations`` here: FastAPI reads the handlers' annotations
# (``Request``) at runtime, and fastapi is imported lazily inside ``create_app``.
import argparse
import asyncio
import hmac
import ipaddress
import json
import logging
import os
import re
import sys
from typing import Any

from context_compaction.application.bus import MessageBus

log = logging.getLogger("context_compaction.http")

STATUS = {
    "invalid_command": 400,
    "invalid_message": 400,
    "unauthorized": 401,
    "session_not_found": 404,
    "unknown_request": 404,
    "not_found": 404,
    "method_not_allowed": 405,
    "request_timeout": 408,
    "session_exists": 409,
    "stale_candidate": 409,
    "turn_in_progress": 409,
    "idempotency_conflict": 409,
    "session_deleted": 410,
    "fixed_context_exceeds_budget": 422,
    "overflow_retry_exhausted": 422,
    "overflow_not_recoverable": 422,
    "summary_failed": 422,
    "internal_error": 500,
    "storage_error": 503,
    "too_many_connections": 503,
    "corrupt_event": 500,
}

#: A bearer token shorter than this, or with whitespace, is refused at start.
MIN_TOKEN_CHARS = 16

ENVELOPE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["ok"],
    "properties": {
        "ok": {"type": "boolean"},
        "result": {"type": "object"},
        "error": {
            "type": "object",
            "required": ["code", "message", "details"],
            "properties": {
                "code": {"type": "string", "enum": sorted(STATUS)},
                "message": {"type": "string"},
                "details": {"type": "object"},
            },
        },
    },
}


def _error(code: str, message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "message": message, "details": {}}}


def _raw_response(status: int, reason: str, code: str, message: str) -> bytes:
    """An envelope as a complete HTTP/1.1 response, for answers outside any request."""
    body = json.dumps(_error(code, message)).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


def create_app(
    bus: MessageBus, *, token: "str | None", max_body_bytes: int, public_docs: bool = False
) -> Any:
    from fastapi import FastAPI, Request
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.responses import HTMLResponse, JSONResponse, Response
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException

    from context_compaction import __version__

    app = FastAPI(
        title="context-compaction",
        version=__version__,
        description="Event-sourced session history and context compaction: the command bus over HTTP.",
        docs_url=None,  # served below, behind the token
        redoc_url=None,
        openapi_url=None,
    )

    def refused(request: Request) -> "JSONResponse | None":
        """The 401 answer when the request lacks the bearer token (None: it has it)."""
        if token is None:
            return None
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode()):
            return None
        return JSONResponse(_error("unauthorized", "a valid bearer token is required"),
                            status_code=401, headers={"WWW-Authenticate": "Bearer"})

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
        if code is None:
            code = "invalid_command" if exc.status_code < 500 else "internal_error"
        return JSONResponse(_error(code, str(exc.detail)), status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)  # the last resort: still an envelope
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.error("request failed unexpectedly", extra={"error_class": type(exc).__name__})
        return JSONResponse(_error("internal_error", f"unexpected {type(exc).__name__}"),
                            status_code=500)
    from .openapi import command_schemas, components, success_schema

    command_schema, definitions = command_schemas()
    failed = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}
    responses: dict[int | str, Any] = {
        200: {
            "description": "the command's result, in the envelope its command schema names in "
                           "`x-result-envelope` (`<Command>Envelope`)",
            "content": {"application/json": {"schema": success_schema()}},
        },
        **{
            code: {"description": text, "content": failed}
            for code, text in (
                (400, "invalid command or message"),
                (401, "missing or wrong bearer token"),
                (404, "unknown session or request"),
                (409, "conflict: exists, stale candidate, turn in progress"),
                (410, "the session is deleted"),
                (413, "request too large"),
                (422, "the command could not be carried out"),
                (503, "storage unavailable, retry"),
            )
        },
    }

    @app.get("/healthz", responses={200: {"description": "ok"}, 503: {"description": "database unavailable"}})
    async def healthz() -> JSONResponse:
        envelope_ = await run_in_threadpool(bus.dispatch_json, {"type": "list_sessions", "limit": 1})
        return JSONResponse({"ok": envelope_["ok"]}, status_code=200 if envelope_["ok"] else 503)

    @app.post(
        "/v1/commands",
        responses=responses,
        openapi_extra={"requestBody": {"required": True, "content": {"application/json": {"schema": command_schema}}}},
    )
    async def commands(request: Request) -> Response:
        denied = refused(request)
        if denied is not None:
            return denied
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
            return JSONResponse(_error("invalid_command", f"request larger than {max_body_bytes:,} bytes"),
                                status_code=413)
        body = bytearray()
        async for chunk in request.stream():
            body.extend(chunk)
            if len(body) > max_body_bytes:
                return JSONResponse(_error("invalid_command", f"request larger than {max_body_bytes:,} bytes"),
                                    status_code=413)
        try:
            text = bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            return JSONResponse(_error("invalid_command", "the body is not UTF-8"), status_code=400)
        # One walk from result to bytes (ADR 0030, R7): the envelope is not built as
        # JSON-ready dicts and then walked again by JSONResponse.
        reply = await run_in_threadpool(bus.dispatch_json_reply, text)
        status = 200 if reply.error_code is None else STATUS.get(reply.error_code, 400)
        return Response(reply.body, status_code=status, media_type="application/json")

    @app.get("/v1/events", responses=responses)
    async def events(request: Request, after: "str | None" = None, limit: "str | None" = None) -> JSONResponse:
        """The event feed, ``read_events``; a bad number gets our envelope, not FastAPI's 422."""
        given = {k: v for k, v in (("after", after), ("limit", limit)) if v is not None}
        bad = next((f"{k}: not an integer" for k, v in given.items() if not re.fullmatch(r"-?[0-9]{1,19}", v)),
                   next((f"unknown parameter {k!r}" for k in request.query_params if k not in ("after", "limit")), None))
        # (FastAPI keeps the last of repeated values: refuse the ambiguity instead)
        bad = bad or next((f"{k}: given more than once" for k in ("after", "limit")
                           if len(request.query_params.getlist(k)) > 1), None)
        denied = refused(request)
        if denied is not None or bad is not None:
            return denied or JSONResponse(_error("invalid_command", str(bad)), status_code=400)
        command = {"type": "read_events", **{k: int(v) for k, v in given.items()}}
        result = await run_in_threadpool(bus.dispatch_json, command)
        return JSONResponse(result, status_code=200 if result["ok"] else STATUS.get(result["error"]["code"], 400))

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            document = get_openapi(title=app.title, version=app.version, description=app.description,
                                   routes=app.routes)
            schemas = document.setdefault("components", {}).setdefault("schemas", {})
            schemas.update(components(sorted(STATUS), definitions))
            schemas["Envelope"] = ENVELOPE_SCHEMA  # the untyped form, kept for existing clients
            document["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
            document["security"] = [{"bearer": []}]
            document["paths"]["/healthz"]["get"]["security"] = []  # probes need no token
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi_document(request: Request) -> JSONResponse:
        denied = None if public_docs else refused(request)
        return denied or JSONResponse(openapi())

    @app.get("/docs", include_in_schema=False)
    async def docs(request: Request) -> "HTMLResponse | JSONResponse":
        denied = None if public_docs else refused(request)
        return denied or get_swagger_ui_html(openapi_url="/openapi.json", title=app.title)

    return app


def guarded_protocol(*, max_connections: int, request_timeout: float) -> type:
    """uvicorn's h11 protocol with the edge limits of ADR 0020 (see the module text)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._timer: "asyncio.TimerHandle | None" = None
            self._waiting_since: "float | None" = None  # waiting for a request since
            self._partial = False  # bytes of the awaited request have arrived
            self._read_cycle: Any = None  # the last request read completely

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._wait_for_request()
            if len(self.connections) > max_connections:
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
            self._timer = self.loop.call_later(request_timeout, self._timed_out)

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
                    f"the request did not arrive within {request_timeout:g} s"))
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
                f"all {max_connections} connections are busy; retry"))
            self.transport.close()

    return GuardedH11Protocol


#: Descriptors the process needs besides its connections (database, logs, libraries).
_SPARE_DESCRIPTORS = 64


def _fit_descriptors(max_connections: int) -> int:
    """Make room for the connections a burst can hold open (the cap, one accepted batch
    of the same size being turned away, spares): raise the soft descriptor limit if the
    hard one allows, else lower the cap."""
    import resource

    needed = 2 * max_connections + _SPARE_DESCRIPTORS
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
        if soft < needed:
            fitted = max((soft - _SPARE_DESCRIPTORS) // 2, 1)
            log.warning("connection limit lowered to fit the descriptor limit",
                        extra={"max_connections": fitted, "descriptor_limit": soft})
            return fitted
    return max_connections


def token_problem(token: str) -> "str | None":
    """Why ``token`` is not fit to guard the server (None: it is)."""
    if any(c.isspace() for c in token):
        return "the bearer token must not contain whitespace"
    if len(token) < MIN_TOKEN_CHARS:
        return f"the bearer token must be at least {MIN_TOKEN_CHARS} characters"
    return None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(args: argparse.Namespace, settings: Any) -> int:
    try:
        import uvicorn
    except ImportError:
        print("error: ctxc serve needs the [http] extra: pip install 'context-compaction[http]'", file=sys.stderr)
        return 2
    token = args.token or os.environ.get("CTXC_HTTP_TOKEN") or None
    problem = token_problem(token) if token is not None else None
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if token is None and not (args.insecure_local and is_loopback(args.host)):
        print(
            "error: refusing to serve without a bearer token (--token or CTXC_HTTP_TOKEN); "
            "for local development bind to 127.0.0.1 and pass --insecure-local",
            file=sys.stderr,
        )
        return 2
    from .bootstrap import bootstrap

    bus = bootstrap(settings)
    limit = args.max_body_bytes or settings.limits.max_request_bytes
    app = create_app(bus, token=token, max_body_bytes=limit, public_docs=args.public_docs)
    max_connections = _fit_descriptors(args.max_connections)
    protocol = guarded_protocol(max_connections=max_connections, request_timeout=args.request_timeout)
    # The address an operator needs, shown without -v: this logger alone goes to INFO.
    log.setLevel(logging.INFO)
    url = f"http://{f'[{args.host}]' if ':' in args.host else args.host}:{args.port}"
    log.info("serving", extra={"url": url, "auth": token is not None, "max_connections": max_connections})
    try:
        # The backlog is also how many connections asyncio accepts in one go before any
        # of them is seen: kept at the cap, a burst cannot exhaust the descriptors.
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning", http=protocol,
                    timeout_keep_alive=args.idle_timeout, backlog=max_connections)
    finally:
        bus.close()
    return 0
