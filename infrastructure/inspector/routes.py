"""The inspector's routes under ``/ui``: GET pages, the login form, a stylesheet.

Read-only: no route dispatches a command that changes state (the login form sets a
cookie and nothing else). Auth is the HTTP API's bearer token: an ``Authorization:
Bearer`` header, or the cookie the login form sets (an HMAC of the token, never the
token itself; HttpOnly, SameSite=Strict). Every answer carries a Content Security Policy
that allows no script at all and nothing from another origin (ADR 0075).
"""

# No ``from __future__ import annotations``: FastAPI reads the handlers' annotations.
import hashlib
import hmac
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from . import views

HERE = Path(__file__).parent
COOKIE = "ctxc_inspector"
CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
       "frame-ancestors 'none'; base-uri 'none'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}
MAX_LOGIN_BYTES = 4096
#: The largest page, seq or version a query string may name: below any store's integer
#: limit once multiplied by a page size, far above any real session.
MAX_NUMBER = 10**12


class BadParameter(ValueError):
    pass


def number(params: Any, name: str, default: "int | None", minimum: int = 0) -> "int | None":
    """The query parameter ``name`` as a whole number, ``default`` when absent or empty;
    anything else is a 400, not silently the default (the last non-empty value counts:
    the version picker sends its number box and its checkpoint list under one name)."""
    given = [v for v in params.getlist(name) if v != ""]
    if not given:
        return default
    value = given[-1]
    if not (value.isascii() and value.isdigit()) or not minimum <= int(value) <= MAX_NUMBER:
        raise BadParameter(f"{name} must be a whole number from {minimum} to {MAX_NUMBER:,}")
    return int(value)


#: How long a login lasts, in seconds: the cookie's Max-Age, and checked on the server
#: too (a copied cookie stops working, short of the token being rotated).
COOKIE_MAX_AGE = 12 * 3600
#: How far ahead of this server's clock an issue time may be (several workers' clocks).
CLOCK_SKEW = 60


def cookie_value(token: str, issued: "int | None" = None) -> str:
    """What the cookie holds: when it was issued and an HMAC of that under the token, so
    the cookie is not the API token and cannot be made to last longer."""
    issued = int(time.time()) if issued is None else issued
    mac = hmac.new(token.encode(), f"ctxc-inspector-session:{issued}".encode(), hashlib.sha256).hexdigest()
    return f"{issued}.{mac}"


def cookie_ok(token: str, value: str) -> bool:
    issued, _, _ = value.partition(".")
    if not (issued.isascii() and issued.isdigit()) or len(issued) > 12:
        return False
    age = time.time() - int(issued)
    return -CLOCK_SKEW <= age <= COOKIE_MAX_AGE and hmac.compare_digest(
        value.encode(), cookie_value(token, int(issued)).encode())


def _environment() -> Any:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    env = Environment(loader=FileSystemLoader(HERE / "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["q"] = lambda value: quote(str(value), safe="")
    env.filters["n"] = lambda value: "—" if value is None else f"{value:,}"
    return env


def mount(app: Any, bus: Any, token: "str | None", *, count: Any = None) -> None:
    """Add the inspector's routes to ``app``; ``count`` estimates a message's tokens for
    the chart (default: the local tiktoken counter on the message as JSON text)."""
    from fastapi import Request
    from fastapi.responses import HTMLResponse, RedirectResponse, Response
    from starlette.concurrency import run_in_threadpool

    env = _environment()
    count = count or _default_count()

    def allowed(request: Request) -> bool:
        if token is None:
            return True
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode()):
            return True
        return cookie_ok(token, request.cookies.get(COOKIE, ""))

    def cross_site(request: Request) -> bool:
        """A form another site's page posted (login CSRF, forced logout). Sec-Fetch-Site
        decides where the browser sends it; else an Origin naming another host. Origin
        "null" is no evidence: under our no-referrer policy Chromium sends it for our
        own login form. Without either header (curl, a script) it is no browser's post."""
        site = request.headers.get("sec-fetch-site")
        if site is not None:
            return site not in ("same-origin", "none")
        origin = request.headers.get("origin", "null")
        return origin != "null" and urlsplit(origin).netloc != request.headers.get("host", "")

    def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(name).render(auth=token is not None, **context)
        return HTMLResponse(html, status_code=status, headers=HEADERS)

    async def guarded(request: Request, build: Any, template: str, arguments: Any) -> Response:
        """``arguments()`` reads the query string only once the request is allowed."""
        if not allowed(request):
            if "authorization" in request.headers:  # an API client: a plain refusal
                refused = page("login.html", 401, failed=True)
                refused.headers["WWW-Authenticate"] = "Bearer"
                return refused
            return RedirectResponse("/ui/login", status_code=303, headers=HEADERS)
        try:
            context = await run_in_threadpool(build, *arguments(request.query_params))
        except views.NotFound as missing:
            return page("missing.html", 404, title="Not found", what=str(missing))
        except (BadParameter, views.BadRequest) as bad:
            return page("missing.html", 400, title="Bad request", what=str(bad))
        return page(template, **context)

    @app.get("/ui", include_in_schema=False)
    @app.get("/ui/", include_in_schema=False)
    async def sessions(request: Request) -> Response:
        return await guarded(request, views.sessions_page, "sessions.html",
                             lambda p: (bus, p.get("q", "")[:256], number(p, "page", 0)))

    @app.get("/ui/session", include_in_schema=False)
    async def session(request: Request) -> Response:
        return await guarded(request, views.session_page, "session.html",
                             lambda p: (bus, p.get("id", ""), number(p, "page", 0), number(p, "chart", 0), count))

    @app.get("/ui/checkpoint", include_in_schema=False)
    async def checkpoint(request: Request) -> Response:
        sid, cid = request.query_params.get("id", ""), request.query_params.get("cp", "")
        history = f"/ui/history?id={quote(sid, safe='')}"
        return await guarded(request, views.checkpoint_page, "checkpoint.html", lambda p: (bus, sid, cid, history))

    @app.get("/ui/history", include_in_schema=False)
    async def history(request: Request) -> Response:
        # The picker's number box and its checkpoint list are both ``at``: a chosen
        # checkpoint (the later field) wins over the number.
        return await guarded(request, views.history_page, "history.html",
                             lambda p: (bus, p.get("id", ""), number(p, "from", None, 1),
                                        p.get("q", "").strip()[:1000], number(p, "at", None, 1)))

    @app.get("/ui/static/inspector.css", include_in_schema=False)
    async def stylesheet() -> Response:
        return Response((HERE / "static" / "inspector.css").read_bytes(), media_type="text/css",
                        headers={**HEADERS, "Cache-Control": "max-age=300"})

    @app.get("/ui/login", include_in_schema=False)
    async def login_form(request: Request) -> Response:
        return page("login.html", failed=False)

    @app.post("/ui/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        if cross_site(request):
            return page("missing.html", 403, title="Forbidden", what="a login posted from another site")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_LOGIN_BYTES:
                return page("login.html", 413, failed=True)
        given = parse_qs(body.decode("utf-8", "replace")).get("token", [""])[0].strip()
        if token is None or not hmac.compare_digest(given.encode(), token.encode()):
            return page("login.html", 401, failed=token is not None)
        done = RedirectResponse("/ui", status_code=303, headers=HEADERS)
        done.set_cookie(COOKIE, cookie_value(token), max_age=COOKIE_MAX_AGE, httponly=True, samesite="strict",
                        # "/": the API documents (/docs, /openapi.json) take the login too;
                        # the command routes never read a cookie (bearer only: no CSRF).
                        path="/", secure=request.url.scheme == "https")
        return done

    @app.post("/ui/logout", include_in_schema=False)
    async def logout(request: Request) -> Response:
        if cross_site(request):
            return page("missing.html", 403, title="Forbidden", what="a logout posted from another site")
        done = RedirectResponse("/ui/login", status_code=303, headers=HEADERS)
        done.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return done


def _default_count() -> Any:
    import json

    from ..tokens import TiktokenCounter

    counter = TiktokenCounter()
    encoding = counter.encoding_for("gpt-4o")

    def count(message: dict[str, Any]) -> int:
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content or "", ensure_ascii=False)
        calls = message.get("tool_calls")
        if calls:
            text += json.dumps(calls, ensure_ascii=False)
        return int(counter.count_text(text, encoding))

    return count
