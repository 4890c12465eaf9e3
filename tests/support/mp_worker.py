"""A worker OS process for the concurrency and crash tests (not a test module).

    python tests/support/mp_worker.py hammer URL WORKER_NO OPS SEED OUT_FILE [GO_FILE]
    python tests/support/mp_worker.py crashloop URL SEED OUT_FILE [PAUSE_IN_COMMIT_SECONDS]

Every acknowledged result is appended (and flushed) to OUT_FILE as one JSON line, so a
parent can tell what was acknowledged even after killing the worker. With a pause, the
crash loop holds each checkpoint commit open (inside the event transaction, after the
checkpoint row is written) and first prints ``commit CHECKPOINT_ID`` on stdout, so the
parent can kill it inside a compaction's commit.
"""

from __future__ import annotations

import json
import os
import random
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from context_compaction import Settings, bootstrap  # noqa: E402
from harness import Inspect

SESSIONS = ("alpha", "beta")


def settings(url: str) -> Settings:
    return Settings(database_url=url, summarizer="extractive", snapshot_interval=20,
                    context_compaction={"keep_recent_tokens": 400})


def batch(tag: str, size: int, with_tools: bool) -> list[dict]:
    messages: list[dict] = [{"role": "user", "content": f"{tag}-0 please look at src/{tag}.py", "turn_id": tag}]
    if with_tools:
        messages.append({"role": "assistant", "content": None, "turn_id": tag,
                         "tool_calls": [{"id": f"{tag}-call", "name": "read_file", "arguments": "{}"}]})
        messages.append({"role": "tool", "tool_call_id": f"{tag}-call", "content": f"{tag}-1 " + "x" * 200,
                         "turn_id": tag})
    while len(messages) < size:
        messages.append({"role": "assistant", "content": f"{tag}-{len(messages)} done", "turn_id": tag})
    return messages


def start_barrier(ready_path: str, go_path: str) -> None:
    """Say we are ready (bootstrapped), then wait for the parent's go: all workers start
    writing at the same moment instead of one after another."""
    import time

    open(ready_path, "w").close()
    deadline = time.monotonic() + 120
    while not os.path.exists(go_path):
        if time.monotonic() > deadline:
            raise SystemExit("no go signal within 120 s")
        time.sleep(0.005)


def hammer(url: str, worker: int, ops: int, seed: int, out_path: str, go_path: str | None = None) -> None:
    rng = random.Random(seed)
    bus = bootstrap(settings(url))
    if go_path:
        start_barrier(out_path + ".ready", go_path)
    with open(out_path, "a", encoding="utf-8") as out:
        def emit(record: dict) -> None:
            out.write(json.dumps(record) + "\n")
            out.flush()

        for i in range(ops):
            sid = rng.choice(SESSIONS)
            op = rng.choices(["append", "retry", "compact", "clear", "rewind", "restore"],
                             [60, 6, 14, 3, 4, 8])[0]
            if op in ("append", "retry"):
                tag = f"w{worker}i{i}"
                size = rng.choice([1, 2, 3, 4])
                messages = batch(tag, max(size, 3) if size >= 3 else size, with_tools=size >= 3)
                command = {"type": "append_messages", "session_id": sid, "messages": messages,
                           "command_id": f"cmd-{tag}"}
                envelope = bus.dispatch_json(command)
                record = {"op": "append", "session": sid, "tag": tag, "n": len(messages), "envelope": envelope}
                if envelope["ok"] and op == "retry":
                    again = bus.dispatch_json(command)
                    record["retry"] = again
                emit(record)
            elif op == "compact":
                emit({"op": "compact", "session": sid, "envelope": bus.dispatch_json(
                    {"type": "compact", "session_id": sid})})
            elif op == "clear":
                emit({"op": "clear", "session": sid, "envelope": bus.dispatch_json(
                    {"type": "invalidate_history", "session_id": sid, "kind": "clear"})})
            elif op == "rewind":
                history = bus.dispatch_json({"type": "get_history", "session_id": sid})
                last = history["result"]["messages"][-1]["seq"] if history["ok"] and history["result"]["messages"] else 0
                emit({"op": "rewind", "session": sid, "envelope": bus.dispatch_json(
                    {"type": "invalidate_history", "session_id": sid, "kind": "rewind",
                     "to_seq": max(last - rng.randint(1, 6), 0)})})
            else:
                bus.close()
                bus = bootstrap(settings(url))
                emit({"op": "restore", "session": sid, "envelope": bus.dispatch_json(
                    {"type": "get_projection", "session_id": sid})})
    bus.close()


def pause_checkpoint_commits(bus, seconds: float, armed) -> None:  # type: ignore[no-untyped-def]
    """Hold every checkpoint commit open: a slow disk at the worst moment, for the kill.

    The read model is projected inside the event transaction, so the pause sits between
    the checkpoint's INSERTs and COMMIT.
    """
    import time

    from context_compaction.domain.session import Session

    projector = Inspect(bus).app.projector
    project = projector.handlers._handlers[Session.CheckpointCommitted]

    def paused(cur, event):  # type: ignore[no-untyped-def]
        project(cur, event)
        if armed():
            print(f"commit {event.checkpoint_id}", flush=True)
            time.sleep(seconds)

    projector.handlers._handlers[Session.CheckpointCommitted] = paused


def crashloop(url: str, seed: int, out_path: str, pause: float = 0.0) -> None:
    """Batched appends and compactions until killed."""
    rng = random.Random(seed)
    bus = bootstrap(settings(url))
    acknowledged = 0
    if pause:
        # Only once this process has acknowledged appends of its own: every trial adds some.
        pause_checkpoint_commits(bus, pause, lambda: acknowledged >= 2)
    with open(out_path, "a", encoding="utf-8") as out:
        i = 0
        while True:
            i += 1
            tag = f"s{seed}b{i}"
            if rng.random() < 0.3:
                envelope = bus.dispatch_json({"type": "compact", "session_id": "alpha"})
                out.write(json.dumps({"op": "compact", "envelope": envelope}) + "\n")
            else:
                envelope = bus.dispatch_json({"type": "append_messages", "session_id": "alpha",
                                              "messages": batch(tag, 5, with_tools=True),
                                              "command_id": f"cmd-{tag}"})
                out.write(json.dumps({"op": "append", "tag": tag, "envelope": envelope}) + "\n")
                acknowledged += bool(envelope["ok"])
            out.flush()


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "hammer":
        hammer(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6],
               sys.argv[7] if len(sys.argv) > 7 else None)
    elif mode == "crashloop":
        crashloop(sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5]) if len(sys.argv) > 5 else 0.0)
    else:
        raise SystemExit(f"unknown mode {mode}")
