"""The bus counts its running commands so that ``close`` lets them finish (issue 38); an
interrupt anywhere in a command's way in leaves no command counted that is not running,
or ``close`` would wait the summary timeout for it."""

from __future__ import annotations

import itertools
import sys
import time
from typing import Any

import pytest

from context_compaction.application.runtime.lifecycle import Running
from context_compaction.domain.errors import InvalidCommand

#: What ``close`` may wait for a command that never ends: long beside a close that
#: waits for nothing, short enough for a failing run.
TIMEOUT = 3.0


def _interrupted_at(n: int) -> tuple[Running, bool, bool]:
    """``around`` with a KeyboardInterrupt raised before its ``n``-th bytecode, as a SIGINT
    raises it between two bytecodes, until its command's body has run: the counter,
    whether the interrupt was raised, whether the body ran."""
    running = Running()
    code = Running.around.__code__
    ran: list[object] = []
    seen = 0

    def each_opcode(frame: Any, event: str, arg: Any) -> Any:
        nonlocal seen
        # (CPython 3.13 ignores ``f_trace_opcodes`` set in the call event: set again here,
        # and a line event is an injection point too, before the first opcode event)
        frame.f_trace_opcodes = True
        if event in ("line", "opcode") and not ran:
            seen += 1
            if seen == n:
                raise KeyboardInterrupt  # (a raising tracer is unset: one interrupt only)
        return each_opcode

    def on_call(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code is not code:
            return None
        frame.f_trace_opcodes = True
        return each_opcode

    previous = sys.gettrace()
    sys.settrace(on_call)
    try:
        running.around("command", ran.append)
        interrupted = False
    except KeyboardInterrupt:
        interrupted = True
    finally:
        sys.settrace(previous)
    return running, interrupted, bool(ran)


def _close_takes(running: Running) -> float:
    closed: list[bool] = []
    began = time.monotonic()
    running.close(TIMEOUT, lambda: closed.append(True))
    assert closed == [True]
    return time.monotonic() - began


def test_an_interrupt_at_any_bytecode_before_the_body_leaves_no_command_counted() -> None:
    waited = []
    interrupts = 0
    for n in itertools.count(1):
        running, interrupted, ran = _interrupted_at(n)
        interrupts += interrupted
        if _close_takes(running) > TIMEOUT / 2:
            waited.append(n)
        if ran:
            break
    assert interrupts > 5  # (the interrupt really landed, at many places)
    assert waited == []


def test_a_command_that_raises_is_no_longer_counted() -> None:
    running = Running()

    def interrupted(command: object) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        running.around("command", interrupted)
    assert _close_takes(running) < TIMEOUT / 2


def test_a_closed_bus_refuses_a_command_and_counts_nothing() -> None:
    running = Running()
    running.close(TIMEOUT, None)
    ran: list[object] = []
    with pytest.raises(InvalidCommand):
        running.around("command", ran.append)
    assert ran == []
