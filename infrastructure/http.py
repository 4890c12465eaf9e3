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

from context_compaction.application.runtime.bus import MessageBus

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
    "session_has_children": 409,
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


def create_app(
    bus: MessageBus, *, token: "str | None", max_body_bytes: int, public_docs: bool = False
) -> Any:
    from fastapi import FastAPI

    from context_compaction import __version__

    app = FastAPI(
        title="context-compaction",
        version=__version__,
        description="Event-sourced session history and context compaction: the command bus over HTTP.",
        docs_url=None,  # served below, behind the token
        redoc_url=None,
        openapi_url=None,
    )
    refused = _bearer_check(token)
    _answer_errors_with_envelopes(app)
    from .openapi import command_schemas

    command_schema, definitions = command_schemas()
    responses = _documented_responses()
    _add_command_routes(app, bus, refused, responses, command_schema, max_body_bytes)
    from .inspector import mount  # the read-only browser inspector at /ui (issue 41)
    from .inspector.routes import COOKIE, cookie_ok

    def docs_refused(request: Any) -> Any:
        """A browser cannot send the bearer token: the inspector's login cookie opens the
        API documents too (they hold no session data; issue 35)."""
        if token is not None and cookie_ok(token, request.cookies.get(COOKIE, "")):
            return None
        return refused(request)

    _add_document_routes(app, None if public_docs else docs_refused, definitions)

    mount(app, bus, token)
    return app


def _bearer_check(token: "str | None") -> Any:
    """A function of a request: the 401 answer when it lacks the bearer token, else None."""
    from fastapi.responses import JSONResponse

    def refused(request: Any) -> "JSONResponse | None":
        if token is None:
            return None
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode()):
            return None
        return JSONResponse(_error("unauthorized", "a valid bearer token is required"),
                            status_code=401, headers={"WWW-Authenticate": "Bearer"})

    return refused


def _answer_errors_with_envelopes(app: Any) -> None:
    from fastapi import Request
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException

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


def _documented_responses() -> "dict[int | str, Any]":
    from .openapi import success_schema

    failed = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}
    return {
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


async def _read_body(request: Any, max_body_bytes: int) -> "str | Any":
    """The request's text, or the envelope response that refuses it (413, 400)."""
    from fastapi.responses import JSONResponse

    too_large = f"request larger than {max_body_bytes:,} bytes"
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
        return JSONResponse(_error("invalid_command", too_large), status_code=413)
    body = bytearray()
    async for chunk in request.stream():
        body.extend(chunk)
        if len(body) > max_body_bytes:
            return JSONResponse(_error("invalid_command", too_large), status_code=413)
    try:
        return bytes(body).decode("utf-8")
    except UnicodeDecodeError:
        return JSONResponse(_error("invalid_command", "the body is not UTF-8"), status_code=400)


_EVENTS_PARAMS = ("after", "limit", "max_bytes")


def _events_query_problem(request: Any, given: "dict[str, str]") -> "str | None":
    bad = next((f"{k}: not an integer" for k, v in given.items() if not re.fullmatch(r"-?[0-9]{1,19}", v)),
               next((f"unknown parameter {k!r}" for k in request.query_params if k not in _EVENTS_PARAMS), None))
    # (FastAPI keeps the last of repeated values: refuse the ambiguity instead)
    return bad or next((f"{k}: given more than once" for k in _EVENTS_PARAMS
                        if len(request.query_params.getlist(k)) > 1), None)


def _add_command_routes(app: Any, bus: MessageBus, refused: Any, responses: Any,
                        command_schema: Any, max_body_bytes: int) -> None:
    from fastapi import Request
    from fastapi.responses import JSONResponse, Response
    from starlette.concurrency import run_in_threadpool

    events_responses = {**responses, 200: {
        "description": "the events after `after`", "content": {"application/json": {"schema": {
            "$ref": "#/components/schemas/ReadEventsEnvelope"}}}}}

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
        text = await _read_body(request, max_body_bytes)
        if not isinstance(text, str):
            return text
        # One walk from result to bytes (ADR 0030, R7): the envelope is not built as
        # JSON-ready dicts and then walked again by JSONResponse.
        reply = await run_in_threadpool(bus.dispatch_json_reply, text)
        status = 200 if reply.error_code is None else STATUS.get(reply.error_code, 400)
        return Response(reply.body, status_code=status, media_type="application/json")

    # The parameters are documented as the integers they are, and read as text here so
    # that a bad number gets our envelope, not FastAPI's 422.
    @app.get("/v1/events", responses=events_responses, openapi_extra={"parameters": [
        {"name": "after", "in": "query", "required": False, "description": "the position to read after",
         "schema": {"type": "integer", "minimum": 0, "default": 0}},
        {"name": "limit", "in": "query", "required": False, "description": "at most this many events",
         "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100}},
        {"name": "max_bytes", "in": "query", "required": False,
         "description": "at most about this many bytes of events (a page holds at least one)",
         "schema": {"type": "integer", "minimum": 1}}]})
    async def events(request: Request) -> JSONResponse:
        """The event feed, ``read_events``. ``result.more``: the page stopped at ``limit``
        or ``max_bytes``; ask again at once."""
        given = {k: request.query_params[k] for k in ("after", "limit", "max_bytes") if k in request.query_params}
        bad = _events_query_problem(request, given)
        denied = refused(request)
        if denied is not None or bad is not None:
            return denied or JSONResponse(_error("invalid_command", str(bad)), status_code=400)
        command = {"type": "read_events", **{k: int(v) for k, v in given.items()}}
        result = await run_in_threadpool(bus.dispatch_json, command)
        return JSONResponse(result, status_code=200 if result["ok"] else STATUS.get(result["error"]["code"], 400))


def _add_document_routes(app: Any, refused: Any, definitions: Any) -> None:
    """``/openapi.json`` and ``/docs``; ``refused`` None: public (``--public-docs``)."""
    from fastapi import Request
    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.responses import HTMLResponse, JSONResponse

    from .openapi import components

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

    app.openapi = openapi

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi_document(request: Request) -> JSONResponse:
        denied = None if refused is None else refused(request)
        return denied or JSONResponse(openapi())

    @app.get("/docs", include_in_schema=False)
    async def docs(request: Request) -> "HTMLResponse | JSONResponse":
        denied = None if refused is None else refused(request)
        return denied or get_swagger_ui_html(
            openapi_url="/openapi.json", title=app.title, swagger_js_url="/docs/static/swagger-ui-bundle.js",
            swagger_css_url="/docs/static/swagger-ui.css", swagger_favicon_url="/docs/static/favicon-32x32.png",
            # Swagger UI's default validator is swagger.io's: no origin but ours, ever.
            swagger_ui_parameters={"validatorUrl": None})

    # Swagger UI from the swagger-ui-py package, not a CDN: /docs works offline. Public:
    # the files are the library's, they hold no data (ADR 0070).
    @app.get("/docs/static/{name}", include_in_schema=False)
    async def docs_asset(name: str) -> Any:
        from fastapi.responses import FileResponse

        folder = _swagger_ui_folder()
        if name not in DOC_ASSETS or folder is None:
            return JSONResponse(_error("not_found", f"no document asset {name!r}"), status_code=404)
        return FileResponse(folder / name, media_type=DOC_ASSETS[name],
                            headers={"Cache-Control": "public, max-age=86400"})


DOC_ASSETS = {"swagger-ui-bundle.js": "text/javascript", "swagger-ui.css": "text/css",
              "favicon-32x32.png": "image/png"}


def _swagger_ui_folder() -> "Any | None":
    try:
        import swagger_ui  # type: ignore[import-untyped]
    except ImportError:  # the http extra installs it; without it /docs has no assets
        return None
    from pathlib import Path

    return Path(swagger_ui.__file__).parent / "static"


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
    from .http_edge import fit_descriptors, guarded_protocol

    bus = bootstrap(settings)
    limit = args.max_body_bytes or settings.limits.max_request_bytes
    app = create_app(bus, token=token, max_body_bytes=limit, public_docs=args.public_docs)
    max_connections = fit_descriptors(args.max_connections)
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
