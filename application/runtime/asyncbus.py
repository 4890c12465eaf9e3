"""Async dispatch (issue 15, ADR 0042): ``await bus.adispatch(cmd)`` never blocks the loop.

A command runs in a command thread: its storage work (SQLite and psycopg are blocking
drivers) and its CPU work are the same handlers ``dispatch`` runs. Its summary call is
``litellm.acompletion`` (the summarizer's ``asummarize``), awaited on the library's own
summary loop, a daemon thread with one event loop for the process: the command thread
waits for it, the caller's loop never runs any of it. On the caller's loop, litellm's
first ``acompletion`` imported ~1 s of modules and every response did 50-130 ms of
synchronous work (measured, ADR 0042) — enough to break "nothing blocks the loop".

Synchronous ``dispatch`` is unchanged: outside an ``adispatch``, ``summarize`` is
called as before.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from context_compaction.domain.errors import SummaryFailed

from ..contracts.ports import AsyncSummarizer, Summarizer, SummaryRequest, SummaryResult

T = TypeVar("T")

#: Threads that run async-dispatched commands, shared by every bus of the process. More
#: than the loop's default executor (cpu + 4): a compaction holds its thread while its
#: summary call runs, and other commands must not queue behind a few of them.
MAX_COMMAND_THREADS = 32

#: True in the context of a command run for an ``adispatch`` (set in the command's own
#: context copy, never in the caller's).
_ASYNC_COMMAND: contextvars.ContextVar[bool] = contextvars.ContextVar("ctxc_async_command", default=False)

_guard = threading.Lock()
#: The command threads and the summary loop, and the process that started them (a
#: forked child has neither thread: it starts its own).
_started: tuple[int, concurrent.futures.ThreadPoolExecutor, asyncio.AbstractEventLoop] | None = None


def _machinery() -> tuple[concurrent.futures.ThreadPoolExecutor, asyncio.AbstractEventLoop]:
    global _started
    with _guard:
        if _started is None or _started[0] != os.getpid():
            threads = concurrent.futures.ThreadPoolExecutor(
                max_workers=MAX_COMMAND_THREADS, thread_name_prefix="ctxc-command"
            )
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="ctxc-summaries", daemon=True).start()
            _started = (os.getpid(), threads, loop)
        return _started[1], _started[2]


async def off_loop(call: Callable[..., T], *args: Any) -> T:
    """``call(*args)`` in a command thread, its summary call awaited on the summary loop."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    context.run(_ASYNC_COMMAND.set, True)
    return await loop.run_in_executor(_machinery()[0], context.run, call, *args)


def summarize(summarizer: Summarizer, request: SummaryRequest, *, timeout: float) -> SummaryResult:
    """The summary call of a command: ``asummarize`` awaited on the summary loop when the
    command runs for an ``adispatch`` and the summarizer can await, else ``summarize``
    in this thread. ``timeout`` bounds the wait (the summarizer's own timeout normally
    ends the call first)."""
    if not _ASYNC_COMMAND.get() or not isinstance(summarizer, AsyncSummarizer):
        return summarizer.summarize(request)
    future = asyncio.run_coroutine_threadsafe(summarizer.asummarize(request), _machinery()[1])
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise SummaryFailed(
            f"the summary call did not finish within {timeout:g} s",
            details={"error_class": "Timeout"},
        ) from None
    except concurrent.futures.CancelledError:  # cancelled by the timeout above, or at exit
        raise SummaryFailed(
            "the summary call was cancelled", details={"error_class": "CancelledError"}
        ) from None
