"""``ctxc inspect``: the read-only session inspector alone, on 127.0.0.1 (issue 41).

Only the inspector's routes are served (no ``/v1/commands``): nothing reachable from
this server changes state. Loopback only; a bearer token guards it all the same (other
users of the machine reach loopback too): ``--token``, ``$CTXC_HTTP_TOKEN``, or one made
for this run and printed beside the URL (``--no-token`` serves without one).
"""

from __future__ import annotations

import argparse
import secrets
import socket
import sys
from typing import Any

from .cli_setup import require_database, settings_for


def _port(text: str) -> int:
    """A TCP port, refused by argparse (exit 2) when out of range, not by bind() later."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, not {port}")
    return port


def add_inspect_command(add: Any) -> None:
    p = add("inspect", "serve the read-only browser inspector on 127.0.0.1 and print its URL "
                       "(needs the [http] extra)", read_only=True)
    p.add_argument("--port", type=_port, default=8765, help="port on 127.0.0.1 (0: any free port)")
    p.add_argument("--token", help="bearer token (default: $CTXC_HTTP_TOKEN, else one made for this run)")
    p.add_argument("--no-token", action="store_true", help="serve without a token (loopback only)")


def cmd_inspect(args: argparse.Namespace) -> int:
    import os

    try:
        import uvicorn
        from fastapi import FastAPI
    except ImportError:
        print("error: ctxc inspect needs the [http] extra: pip install 'context-compaction[http]'",
              file=sys.stderr)
        return 2
    from .bootstrap import bootstrap
    from .http import token_problem
    from .inspector import mount

    token = None if args.no_token else (args.token or os.environ.get("CTXC_HTTP_TOKEN")
                                        or secrets.token_urlsafe(24))
    problem = token_problem(token) if token is not None else None
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    settings = settings_for(args)
    require_database(settings, "inspect")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", args.port))
    except OSError as exc:
        print(f"error: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}", file=sys.stderr)
        return 2
    sock.listen(128)  # listening before the URL is printed: an early request waits, not refused
    port = sock.getsockname()[1]
    bus = bootstrap(settings)
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    mount(app, bus, token)
    print(f"inspector: http://127.0.0.1:{port}/ui", flush=True)
    if token is not None and not (args.token or os.environ.get("CTXC_HTTP_TOKEN")):
        print(f"token (paste it into the login form): {token}", flush=True)
    try:
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        bus.close()
        sock.close()
    return 0
