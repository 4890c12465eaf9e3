"""Async service latency during a compaction (issue 15): ``adispatch`` against a blocking call.

An asyncio HTTP service (the standard library's streams, no framework) answers a
trivial route ``GET /ping`` and runs ``POST /compact`` for one session. The summary
model is a local OpenAI-compatible fake that answers after ``--delay`` seconds, reached
through litellm over real HTTP. A client in another process pings every 10 ms, starts
one compaction, and keeps pinging until it has finished: the worst ping latency while
the compaction runs is what a service's other users wait.

Two services, each on its own SQLite file and session, the same history:

* ``blocking``: the route calls ``bus.dispatch_json`` (what an async service could do
  before issue 15: the summary call, ``litellm.completion``, blocks the loop);
* ``adispatch``: the route awaits ``bus.adispatch_json`` (storage in a command thread,
  the summary via ``litellm.acompletion`` on the service's loop, ADR 0042).

Runs in its own process and prints JSON (``--client`` is the pinging process).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"

MODEL = "openai/bench-summary-model"
SESSION = "s"
PING_EVERY = 0.010
SUMMARY = ("## Objective\n- Fix the flaky refund test (seq 1).\n\n## Progress\n- Tests were run and "
           "patches applied over the earlier turns.\n\n## Outstanding Work\n- Re-run the suite.")


# --------------------------------------------------------------- fake model
def fake_model(delay: float) -> ThreadingHTTPServer:
    """An OpenAI-compatible chat endpoint that answers every request after ``delay`` s."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server API
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            time.sleep(delay)
            data = json.dumps({
                "id": "chatcmpl-bench", "object": "chat.completion", "created": 0,
                "model": body.get("model", "bench"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": SUMMARY}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


# ------------------------------------------------------------------ service
def make_bus(path: Path, api_base: str) -> Any:
    from context_compaction import Settings, bootstrap
    from context_compaction.infrastructure.demo.scenario import coding_session

    bus = bootstrap(Settings(
        database_url=f"sqlite:///{path}", summarizer="llm", summary_timeout_seconds=60,
        models={MODEL: {"api_base": api_base, "api_key": "bench", "token_limit": 100_000}},
        context_compaction={"keep_recent_tokens": 3_000},
    ))
    assert bus.dispatch_json({"type": "start_session", "session_id": SESSION, "model": MODEL})["ok"]
    for turn in coding_session(6, big_output_chars=3_000):
        assert bus.dispatch_json({"type": "append_messages", "session_id": SESSION,
                                  "messages": turn.messages()})["ok"]
    # As after the session's last turn: its token counts are known (and tiktoken's
    # encoding, whose first load holds the GIL ~0.3 s, is loaded).
    assert bus.dispatch_json({"type": "get_context_usage", "session_id": SESSION})["ok"]
    return bus


async def serve(bus: Any, mode: str, ready: socket.socket) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request = await reader.readline()
                if not request:
                    return
                while (await reader.readline()) not in (b"\r\n", b""):
                    pass
                if request.startswith(b"POST /compact"):
                    command = {"type": "compact", "session_id": SESSION}
                    if mode == "adispatch":
                        envelope = await bus.adispatch_json(command)
                    else:
                        envelope = bus.dispatch_json(command)
                    body = json.dumps({"ok": envelope["ok"], "status": (envelope.get("result") or {})
                                       .get("status"), "error": envelope.get("error")}).encode()
                elif request.startswith(b"GET /stop"):
                    stop.set()
                    body = b"{}"
                else:
                    body = b'{"pong": true}'
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass  # (the pinging connection is still open when the service stops)
        finally:
            writer.close()

    stop = asyncio.Event()
    server = await asyncio.start_server(handle, sock=ready)
    async with server:
        await stop.wait()


# ------------------------------------------------------------------- client
def _request(conn: socket.socket, line: bytes) -> bytes:
    conn.sendall(line + b"\r\nHost: x\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, rest = data.partition(b"\r\n\r\n")
    length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1])
    while len(rest) < length:
        rest += conn.recv(65536)
    return rest


def client(port: int) -> dict[str, Any]:
    pings = socket.create_connection(("127.0.0.1", port))
    for _ in range(20):  # warm the route
        _request(pings, b"GET /ping HTTP/1.1")
    outcome: dict[str, Any] = {}

    def compact() -> None:
        with socket.create_connection(("127.0.0.1", port)) as conn:
            started = time.perf_counter()
            outcome.update(json.loads(_request(conn, b"POST /compact HTTP/1.1")))
            outcome["seconds"] = time.perf_counter() - started

    worker = threading.Thread(target=compact)
    during: list[float] = []
    worker.start()
    while worker.is_alive():
        started = time.perf_counter()
        _request(pings, b"GET /ping HTTP/1.1")
        during.append(time.perf_counter() - started)
        time.sleep(PING_EVERY)
    worker.join()
    _request(pings, b"GET /stop HTTP/1.1")
    return {"compaction": outcome, "pings": len(during),
            "worst_ms": round(max(during) * 1000, 2),
            "median_ms": round(statistics.median(during) * 1000, 3)}


# -------------------------------------------------------------------- driver
def measure(mode: str, work: Path, api_base: str, freeze: bool) -> dict[str, Any]:
    from context_compaction.infrastructure.summarizers import import_litellm

    import_litellm()  # its first import (~2 s) is not what is measured
    bus = make_bus(work / f"{mode}-{int(freeze)}.db", api_base)
    if freeze:
        # What a long-running service with litellm's large start-up heap does (Python's gc
        # docs): a full collection of that heap pauses every thread for ~0.6-1.2 s here.
        gc.collect()
        gc.freeze()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    pinger = subprocess.Popen([sys.executable, __file__, "--client", str(port)],
                              stdout=subprocess.PIPE, text=True)
    try:
        asyncio.run(serve(bus, mode, listener))
        out, _ = pinger.communicate(timeout=120)
    finally:
        if pinger.poll() is None:
            pinger.kill()
        bus.close()
    result = json.loads(out)
    result["mode"] = mode
    result["gc_freeze"] = freeze
    return result


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=3.0, help="seconds per summary call")
    parser.add_argument("--no-unfrozen", action="store_true", help="skip the row without gc.freeze()")
    parser.add_argument("--client", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        print(json.dumps(client(args.client)))
        return 0
    model = fake_model(args.delay)
    api_base = f"http://127.0.0.1:{model.server_address[1]}/v1"
    work = Path(tempfile.mkdtemp(prefix="ctxc-bench-async-"))
    try:
        rows = [measure(mode, work, api_base, freeze=True) for mode in ("blocking", "adispatch")]
        if not args.no_unfrozen:
            rows.append(measure("adispatch", work, api_base, freeze=False))
    finally:
        model.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({"delay_s": args.delay, "rows": rows}))
    return 0


def markdown(result: dict[str, Any]) -> list[str]:
    lines = ["| route handler | `gc.freeze()` after start-up | compaction (summary call) | outcome "
             "| pings during it | worst `/ping` latency | median |", "|---|---|---|---|---|---|---|"]
    names = {"blocking": "`bus.dispatch_json` (blocks the loop)",
             "adispatch": "`await bus.adispatch_json`"}
    for row in result["rows"]:
        c = row["compaction"]
        outcome = c.get("status") or (c.get("error") or {}).get("code")
        lines.append(f"| {names[row['mode']]} | {'yes' if row['gc_freeze'] else 'no'} | {c['seconds']:.2f} s ({result['delay_s']:g} s) | {outcome} "
                     f"| {row['pings']} | {row['worst_ms']:,.1f} ms | {row['median_ms']:.2f} ms |")
    return lines


def targets(result: dict[str, Any]) -> list[tuple[str, Any, str, bool]]:
    row = next(r for r in result["rows"] if r["mode"] == "adispatch" and r["gc_freeze"])
    compacted = row["compaction"].get("status") == "compacted"
    return [("async: worst trivial-route latency during a compaction (ms)", row["worst_ms"], "< 50",
             compacted and row["worst_ms"] < 50)]


if __name__ == "__main__":
    raise SystemExit(main())
