"""``ctxc serve``: the command bus over HTTP (optional extra ``[http]``: FastAPI + uvicorn).

``POST /v1/commands`` takes the same JSON commands as ``dispatch_json`` and answers with
the same envelopes; the OpenAPI document is generated from the pydantic command models;
``GET /healthz`` checks the database. Bearer-token auth: without a token the server
refuses to start unless it is bound to loopback with ``--insecure-local``.
"""

# No ``from __future__ import annotations`` here: FastAPI reads the handlers' annotations
# (``Request``) at runtime, and fastapi is imported lazily inside ``create_app``.
import argparse
import hmac
import ipaddress
import logging
import os
import sys
from typing import Any

from context_compaction.application.bus import MessageBus
from context_compaction.application.commands import COMMAND_ADAPTER

log = logging.getLogger("context_compaction.http")

STATUS = {
    "invalid_command": 400,
    "invalid_message": 400,
    "unauthorized": 401,
    "session_not_found": 404,
    "unknown_request": 404,
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
    "corrupt_event": 500,
}

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


def create_app(bus: MessageBus, *, token: "str | None", max_body_bytes: int) -> Any:
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse
    from starlette.concurrency import run_in_threadpool

    from context_compaction import __version__

    app = FastAPI(
        title="context-compaction",
        version=__version__,
        description="Event-sourced session history and context compaction: the command bus over HTTP.",
    )
    command_schema = COMMAND_ADAPTER.json_schema(ref_template="#/components/schemas/{model}")
    definitions = command_schema.pop("$defs", {})
    envelope = {"application/json": {"schema": {"$ref": "#/components/schemas/Envelope"}}}
    responses: dict[int | str, Any] = {
        code: {"description": text, "content": envelope}
        for code, text in (
            (200, "the command's result"),
            (400, "invalid command or message"),
            (401, "missing or wrong bearer token"),
            (404, "unknown session or request"),
            (409, "conflict: exists, stale candidate, turn in progress"),
            (410, "the session is deleted"),
            (413, "request too large"),
            (422, "the command could not be carried out"),
            (503, "storage unavailable, retry"),
        )
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
    async def commands(request: Request) -> JSONResponse:
        if token is not None:
            given = request.headers.get("authorization", "")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
                return JSONResponse(_error("unauthorized", "a valid bearer token is required"),
                                    status_code=401, headers={"WWW-Authenticate": "Bearer"})
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
        result = await run_in_threadpool(bus.dispatch_json, text)
        status = 200 if result["ok"] else STATUS.get(result["error"]["code"], 400)
        return JSONResponse(result, status_code=status)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            document = get_openapi(title=app.title, version=app.version, description=app.description,
                                   routes=app.routes)
            schemas = document.setdefault("components", {}).setdefault("schemas", {})
            schemas.update(definitions)
            schemas["Envelope"] = ENVELOPE_SCHEMA
            document["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
            document["security"] = [{"bearer": []}]
            document["paths"]["/healthz"]["get"]["security"] = []  # probes need no token
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


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
    if token is None and not (args.insecure_local and is_loopback(args.host)):
        print(
            "error: refusing to serve without a bearer token (--token or CTXC_HTTP_TOKEN); "
            "for local development bind to 127.0.0.1 and pass --insecure-local",
            file=sys.stderr,
        )
        return 2
    from .bootstrap import bootstrap
    from .logs import configure_logging

    configure_logging(json_lines=settings.log_json, verbose=getattr(args, "verbose", False))
    bus = bootstrap(settings)
    limit = args.max_body_bytes or settings.limits.max_request_bytes
    app = create_app(bus, token=token, max_body_bytes=limit)
    log.warning("serving", extra={"host": args.host, "port": args.port, "auth": token is not None})
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    finally:
        bus.close()
    return 0
