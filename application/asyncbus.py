"""Async dispatch (issue 15, ADR 0042): ``await bus.adispatch(cmd)`` never blocks the loop.

A command's storage work runs in a worker thread (SQLite and psycopg are blocking
drivers, and the handlers are the same ones ``dispatch`` runs). The one slow step that
is not storage, the summary call, is handed back to the caller's event loop: the worker
thread schedules the summarizer's ``asummarize`` coroutine (``litellm.acompletion``) on
that loop and waits for it. So while a compaction waits seconds for its summary, the
loop serves other requests, and the summary travels over the loop's own async HTTP
client like every other call of an async service.

Synchronous ``dispatch`` is unchanged: with no caller loop in the thread's context,
``summarize`` is called as before.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from context_compaction.domain.errors import SummaryFailed

from .ports import AsyncSummarizer, Summarizer, SummaryRequest, SummaryResult

T = TypeVar("T")

#: Threads that run async-dispatched commands, shared by every bus of the process. More
#: than the loop's default executor (cpu + 4): a compaction holds its thread while its
#: summary runs on the loop, and other commands must not queue behind a few of them.
MAX_COMMAND_THREADS = 32

#: The event loop of the ``adispatch`` a worker thread is running a command for (set in
#: the command's own context copy, never in the caller's).
_CALLER_LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "ctxc_caller_loop", default=None
)

_executor: concurrent.futures.ThreadPoolExecutor | None = None
_executor_guard = threading.Lock()


def _threads() -> concurrent.futures.ThreadPoolExecutor:
    global _executor
    with _executor_guard:
        if _executor is None:
            _executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=MAX_COMMAND_THREADS, thread_name_prefix="ctxc-command"
            )
        return _executor


async def off_loop(call: Callable[..., T], *args: Any) -> T:
    """``call(*args)`` in a command thread; a summary it needs comes back to this loop."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    context.run(_CALLER_LOOP.set, loop)
    return await loop.run_in_executor(_threads(), context.run, call, *args)


def summarize(summarizer: Summarizer, request: SummaryRequest, *, timeout: float) -> SummaryResult:
    """The summary call of a command: awaited on the caller's loop when the command runs
    for an ``adispatch`` and the summarizer can await (``asummarize``), else
    ``summarize`` in this thread. ``timeout`` bounds the wait for the loop (the
    summarizer's own timeout normally ends the call first)."""
    loop = _CALLER_LOOP.get()
    if loop is None or not isinstance(summarizer, AsyncSummarizer):
        return summarizer.summarize(request)
    try:
        future = asyncio.run_coroutine_threadsafe(summarizer.asummarize(request), loop)
    except RuntimeError:  # the loop has closed meanwhile: nobody awaits this command
        raise SummaryFailed("the summary call could not start: the event loop has closed") from None
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise SummaryFailed(
            f"the summary call did not finish within {timeout:g} s",
            details={"error_class": "Timeout"},
        ) from None
    except concurrent.futures.CancelledError:  # the loop is shutting down
        raise SummaryFailed(
            "the summary call was cancelled", details={"error_class": "CancelledError"}
        ) from None
