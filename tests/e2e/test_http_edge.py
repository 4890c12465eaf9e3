"""The HTTP edge of ``ctxc serve`` and the database files (issue 13, item 6).

Idle and slow sockets cannot take the server down, the docs need the token, every
error is an envelope, a weak token is refused at start, and SQLite files are private.
"""

from __future__ import annotations

import os
import resource
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from helpers import serving
from context_compaction import Settings, bootstrap

TOKEN = "edge-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CTXC = str(Path(sys.executable).with_name("ctxc"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(tmp_path: Path, *extra: str, fd_limit: int = 256) -> Iterator[str]:
    """``ctxc serve`` in its own process, with a descriptor limit like a small host's."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "CTXC_HTTP_TOKEN"}

    def limit_descriptors() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, fd_limit))

    proc = subprocess.Popen(
        [CTXC, "serve", "--db", str(tmp_path / "edge.db"), "--port", str(port), "--token", TOKEN, *extra],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=limit_descriptors)
    yield from serving(proc, port)


@pytest.fixture
def edge_server(tmp_path: Path) -> Iterator[str]:
    yield from _serve(tmp_path, "--max-connections", "64", "--request-timeout", "2")


def _answered(url: str, within: float) -> httpx.Response:
    """A command sent like a client that retries a dropped connection."""
    deadline = time.monotonic() + within
    while True:
        try:
            return httpx.post(f"{url}/v1/commands", headers=AUTH, timeout=3,
                              json={"type": "list_sessions"})
        except httpx.TransportError:
            assert time.monotonic() < deadline, "the server did not answer"
            time.sleep(0.2)


def _closed_by_peer(s: socket.socket) -> bool:
    s.settimeout(0.01)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_eleven_hundred_idle_sockets_do_not_stop_the_server_answering(edge_server: str) -> None:
    port = int(edge_server.rsplit(":", 1)[1])
    idle = []
    try:
        for _ in range(1100):  # more than the server process may hold open
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            idle.append(s)
        started = time.monotonic()
        response = _answered(edge_server, within=10)
        assert response.status_code == 200 and response.json()["ok"] is True
        assert time.monotonic() - started < 10
        # The idle ones were closed (to make room, or after the request timeout).
        deadline = time.monotonic() + 10
        still_open = idle
        while still_open and time.monotonic() < deadline:
            time.sleep(0.5)
            still_open = [s for s in still_open if not _closed_by_peer(s)]
        assert not still_open, f"{len(still_open)} idle sockets are still open"
    finally:
        for s in idle:
            s.close()


def test_a_request_that_does_not_arrive_in_time_gets_a_408_envelope(edge_server: str) -> None:
    port = int(edge_server.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as slow:
        slow.sendall(b"POST /v1/commands HTTP/1.1\r\nHost: x\r\n")  # ...and the rest never comes
        started = time.monotonic()
        reply = b""
        while chunk := slow.recv(4096):
            reply += chunk
        assert 1.5 < time.monotonic() - started < 8
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408")
    assert httpx.Response(408, content=body).json()["error"]["code"] == "request_timeout"
    assert _answered(edge_server, within=5).status_code == 200


def test_docs_need_the_token_and_every_error_is_an_envelope(edge_server: str) -> None:
    for path in ("/openapi.json", "/docs"):
        r = httpx.get(edge_server + path)
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized", path
        assert httpx.get(edge_server + path, headers=AUTH).status_code == 200, path
    assert httpx.get(edge_server + "/redoc", headers=AUTH).status_code == 404
    r = httpx.get(f"{edge_server}/v1/commands", headers=AUTH)
    assert r.status_code == 405 and r.json() == {"ok": False, "error": {
        "code": "method_not_allowed", "message": "Method Not Allowed", "details": {}}}
    assert r.headers["allow"] == "POST"
    r = httpx.get(f"{edge_server}/nowhere", headers=AUTH)
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    r = httpx.delete(f"{edge_server}/healthz")
    assert r.status_code == 405 and r.json()["error"]["code"] == "method_not_allowed"


def test_a_request_that_is_not_http_gets_a_400_envelope(edge_server: str) -> None:
    """h11 refuses it before any application code runs; uvicorn answered in plain text."""
    port = int(edge_server.rsplit(":", 1)[1])
    for raw in (b"GARBAGE\r\n\r\n", b"POST /v1/commands HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
                b"GET /healthz HTTP/1.1\r\nHost x\r\n\r\n"):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            client.sendall(raw)
            reply = b""
            while chunk := client.recv(4096):
                reply += chunk
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400"), reply
        assert b"content-type: application/json" in head.lower(), reply
        assert httpx.Response(400, content=body).json()["error"]["code"] == "invalid_command", reply
    assert _answered(edge_server, within=5).status_code == 200


def test_public_docs_serve_the_documents_without_the_token(tmp_path: Path) -> None:
    for url in _serve(tmp_path, "--public-docs"):
        assert httpx.get(f"{url}/openapi.json").json()["paths"].keys() == {"/healthz", "/v1/commands", "/v1/events"}
        assert httpx.get(f"{url}/docs").status_code == 200
        r = httpx.post(f"{url}/v1/commands", json={"type": "list_sessions"})
        assert r.status_code == 401  # the commands still need it


@pytest.mark.parametrize(("token", "problem"), [
    ("   ", "must not contain whitespace"),
    ("short-token", "at least 16 characters"),
    ("a long token with spaces", "must not contain whitespace"),
])
def test_a_weak_token_is_refused_at_start(tmp_path: Path, token: str, problem: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "CTXC_HTTP_TOKEN"}
    proc = subprocess.run([CTXC, "serve", "--db", str(tmp_path / "x.db"), "--token", token],
                          capture_output=True, text=True, timeout=60, env=env, check=False)
    assert proc.returncode == 2 and problem in proc.stderr, proc.stderr


def test_sqlite_files_are_created_readable_by_their_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "private.db"
    bus = bootstrap(Settings(database_url=f"sqlite:///{path}", summarizer="extractive"))
    try:
        assert bus.dispatch_json({"type": "start_session", "session_id": "s", "model": "gpt-4o"})["ok"]
        files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
        assert all(f.exists() for f in files)
        assert {f.name: stat.S_IMODE(f.stat().st_mode) for f in files} == {f.name: 0o600 for f in files}
    finally:
        bus.close()


@pytest.mark.parametrize("form", ["file:{path}", "file:{path}?mode=rwc&cache=private", "file://{path}"])
def test_sqlite_uri_files_are_created_readable_by_their_owner_only(tmp_path: Path, form: str) -> None:
    path = tmp_path / "uri private.db"
    quoted = str(path).replace(" ", "%20")
    previous = os.umask(0o022)
    try:
        bus = bootstrap(Settings(database_url="sqlite:///" + form.format(path=quoted), summarizer="extractive"))
    finally:
        os.umask(previous)
    try:
        assert bus.dispatch_json({"type": "start_session", "session_id": "s", "model": "gpt-4o"})["ok"]
        files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
        assert {f.name: stat.S_IMODE(f.stat().st_mode) for f in files} == {f.name: 0o600 for f in files}
    finally:
        bus.close()


def test_a_read_write_sqlite_uri_never_creates_the_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    with pytest.raises(Exception) as raised:
        bootstrap(Settings(database_url=f"sqlite:///file:{path}?mode=rw", summarizer="extractive"))
    assert getattr(raised.value, "code", None) == "storage_error"
    assert not path.exists()
