"""What the stateful model tests (the session's, issue 5, and the tree's, issue 42)
share: a machine over one harness in a folder of its own, and the runner that runs it
again while some rule never took effect."""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from backends import Databases
from helpers import Harness


class HarnessMachine(RuleBasedStateMachine):
    """A rule-based machine over one harness on ``backend``; ``done`` counts what its
    rules did, for the runner's check."""

    backend = "sqlite"

    def __init__(self, name: str, **harness_settings: Any) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.dbs = Databases(self.backend, Path(self.tmp.name))
        self.h: Harness = self.dbs.harness(name, **harness_settings)
        self.done: Counter[str] = Counter()

    def close(self) -> None:
        self.dbs.cleanup()
        self.tmp.cleanup()

    def ok(self, command: dict[str, Any]) -> dict[str, Any]:
        envelope = self.h.do(command)
        assert envelope["ok"], (command, envelope)
        return envelope["result"]


def run_until_every_rule_ran(machine: type[HarnessMachine], tally: Counter[str], wanted: Iterable[str],
                             examples: int, steps: int) -> None:
    """Run the machine; a run in which a wanted rule never took effect (random examples
    can miss one) gets up to two more runs of fresh examples. The caller asserts."""
    for _ in range(3):
        run_state_machine_as_test(machine, settings=settings(
            max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))
        if all(tally[what] for what in wanted):
            break
