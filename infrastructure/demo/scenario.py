"""A deterministic synthetic coding-agent session: the demo's script and the benchmarks' workload.

Each turn has the user's request, the provider's scripted steps (assistant messages,
some with 1-3 parallel tool calls), the tool outputs for those calls (short to ~30 KB,
now and then a base64 blob), and steering messages that arrive while tools run.
"""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Iterator
from itertools import count, islice
from dataclasses import dataclass, field
from typing import Any

FILES = [
    "src/payments/refunds.py",
    "src/payments/ledger.py",
    "src/payments/api.py",
    "libs/locks.py",
    "config/staging.yaml",
    "tests/test_refunds.py",
    "tests/test_ledger.py",
    "docs/runbook.md",
]

REQUESTS = [
    "CI for payments-api is red: test_refund_idempotency fails intermittently. "
    "The repo is at /srv/payments-api and the service listens on port 8443. Find and fix it.",
    "Use the existing Redis lock helper in libs/locks.py; do not add new dependencies.",
    "Add a regression test that issues the same refund twice concurrently.",
    "The ledger totals drift by one cent on partial refunds; check the rounding in ledger.py.",
    "Run the whole test suite and summarise what still fails.",
    "Update docs/runbook.md with the new lock timeout (REFUND_LOCK_TTL=30s).",
    "Bump the service version to 2.14.1 in pyproject and the changelog.",
    "Check the staging config for the payments queue name and the retry policy.",
]

CORRECTIONS = [
    "Correction: the staging port is 9443, not 8443. Update config/staging.yaml too.",
    "Actually keep Python 3.9 compatibility: no match statements, no X | Y unions.",
    "No, the lock TTL must be 45 seconds, not 30. Ticket PAY-2291 says so.",
    "Stop: do not touch ledger.py migrations, only the rounding helper.",
]

STEERING = [
    "Also log the refund id (but never the card number) when the lock is contended.",
    "While you are at it, the flaky test is in tests/test_refunds.py::test_refund_idempotency.",
    "Use ROUND_HALF_EVEN for the cents, that is what finance uses.",
]


@dataclass
class Step:
    """One provider reply: an assistant message, maybe with tool calls."""

    content: str | None
    reasoning: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)

    def message(self, turn_id: str) -> dict[str, Any]:
        m: dict[str, Any] = {"role": "assistant", "content": self.content, "turn_id": turn_id}
        if self.reasoning:
            m["reasoning"] = self.reasoning
        if self.tool_calls:
            m["tool_calls"] = [dict(c) for c in self.tool_calls]
        return m


@dataclass
class Turn:
    turn_id: str
    request: dict[str, Any]
    steps: list[Step]
    tool_outputs: dict[str, str]
    tool_names: dict[str, str]
    steering: dict[int, str] = field(default_factory=dict)
    """step index → a steering message that arrives after that step's tools ran."""

    def messages(self) -> list[dict[str, Any]]:
        """The turn as the raw log records it (what a host appends)."""
        out = [self.request]
        for index, step in enumerate(self.steps):
            out.append(step.message(self.turn_id))
            for call in step.tool_calls:
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "name": call["function"]["name"],
                        "content": self.tool_outputs[call["id"]],
                        "turn_id": self.turn_id,
                    }
                )
            if index in self.steering:
                out.append(
                    {
                        "role": "user",
                        "content": self.steering[index],
                        "steering": True,
                        "turn_id": self.turn_id,
                    }
                )
        return out


def _python_source(rng: random.Random, path: str, lines: int) -> str:
    out = [f'"""{path}: payment refunds."""', "from decimal import Decimal, ROUND_HALF_EVEN", ""]
    for i in range(lines // 6):
        name = rng.choice(["refund", "settle", "reverse", "ledger_entry", "lock_key", "audit"])
        out += [
            f"def {name}_{i}(amount: Decimal, refund_id: str) -> Decimal:",
            f"    key = f\"refund:{{refund_id}}:{i}\"",
            f"    if amount <= Decimal('0.{rng.randint(10, 99)}'):",
            "        raise ValueError('amount too small')",
            f"    return amount.quantize(Decimal('0.01'), rounding=ROUND_HALF_EVEN)  # {rng.random():.6f}",
            "",
        ]
    return "\n".join(out)


def _test_log(rng: random.Random, size: int) -> str:
    lines = ["============================= test session starts =============================",
             "platform linux -- Python 3.11.7, pytest-8.3.2", "collected 214 items", ""]
    while sum(len(x) + 1 for x in lines) < size:
        test = rng.choice(["test_refunds.py", "test_ledger.py", "test_api.py"])
        status = rng.choices(["PASSED", "FAILED", "ERROR"], [0.9, 0.08, 0.02])[0]
        lines.append(f"tests/{test}::test_case_{rng.randint(1, 999)} {status} [{rng.randint(1, 99)}%]")
        if status != "PASSED":
            lines += [
                "Traceback (most recent call last):",
                f'  File "/srv/payments-api/src/payments/refunds.py", line {rng.randint(10, 400)}, in refund',
                "    assert ledger.balance(account) == expected",
                f"AssertionError: Decimal('{rng.randint(1, 9999)}.{rng.randint(0, 99):02d}') != expected",
            ]
    lines.append(f"=========== {rng.randint(1, 5)} failed, {rng.randint(150, 210)} passed in 12.31s ===========")
    return "\n".join(lines)


def _blob(rng: random.Random, size: int) -> str:
    raw = bytes(rng.getrandbits(8) for _ in range(size))
    return "data:image/png;base64," + base64.b64encode(raw).decode()


def coding_session(turns: int, seed: int = 7, big_output_chars: int = 30_000) -> list[Turn]:
    """``turns`` deterministic turns (same seed, same session)."""
    return list(islice(iter_turns(seed, big_output_chars), turns))


def iter_turns(seed: int = 7, big_output_chars: int = 30_000) -> Iterator[Turn]:
    rng = random.Random(seed)
    call_no = 0
    for t in count():
        turn_id = f"turn-{t + 1}"
        if t > 0 and t % 5 == 3:
            text = CORRECTIONS[(t // 5) % len(CORRECTIONS)]
        else:
            text = REQUESTS[t % len(REQUESTS)]
        request: dict[str, Any] = {"role": "user", "content": text, "turn_id": turn_id}
        steps: list[Step] = []
        outputs: dict[str, str] = {}
        names: dict[str, str] = {}
        steering: dict[int, str] = {}
        for s in range(rng.choice([1, 2, 2, 3])):
            calls = []
            for _ in range(rng.choice([1, 1, 2, 3])):
                call_no += 1
                cid = f"call_{call_no:05d}"
                tool = rng.choice(["read_file", "run_tests", "grep", "apply_patch", "screenshot"])
                path = rng.choice(FILES)
                if tool == "read_file":
                    args = {"path": path}
                    outputs[cid] = _python_source(rng, path, rng.choice([30, 60, 120]))
                elif tool == "run_tests":
                    args = {"cmd": f"pytest -q {rng.choice(FILES[5:7])}", "timeout": 600}
                    size = rng.choice([400, 2_000, 8_000, big_output_chars])
                    outputs[cid] = _test_log(rng, size)
                elif tool == "grep":
                    args = {"pattern": rng.choice(["REFUND_LOCK_TTL", "8443", "quantize"]), "path": "src/"}
                    outputs[cid] = "\n".join(
                        f"{rng.choice(FILES)}:{rng.randint(1, 400)}: matched line {i}" for i in range(rng.randint(1, 12))
                    )
                elif tool == "apply_patch":
                    args = {"path": path, "patch": f"@@ -{rng.randint(1, 90)},7 +{rng.randint(1, 90)},9 @@\n-    old\n+    new"}
                    outputs[cid] = rng.choice(["patch applied", "error: patch does not apply (exit status 1)"])
                else:
                    args = {"url": "https://staging.payments.internal:9443/dashboard"}
                    outputs[cid] = _blob(rng, rng.choice([600, 3_000]))
                names[cid] = tool
                calls.append({"id": cid, "type": "function",
                              "function": {"name": tool, "arguments": json.dumps(args)}})
            reasoning = (
                f"Step {s + 1}: need to inspect {', '.join(c['function']['name'] for c in calls)} "
                "before changing anything."
            )
            steps.append(Step(content=None if rng.random() < 0.5 else "Let me look.", reasoning=reasoning,
                              tool_calls=calls))
            if rng.random() < 0.15:
                steering[s] = STEERING[t % len(STEERING)]
        steps.append(Step(content=f"Done with {turn_id}: updated {rng.choice(FILES)}; "
                                  f"{rng.randint(0, 3)} tests still failing.",
                          reasoning="Summarise for the user."))
        yield Turn(turn_id, request, steps, outputs, names, steering)


def session_messages(n_messages: int, seed: int = 7, big_output_chars: int = 30_000) -> list[list[dict[str, Any]]]:
    """Whole turns (as raw-log messages) adding up to at least ``n_messages``."""
    turns: list[list[dict[str, Any]]] = []
    total = 0
    for turn in iter_turns(seed, big_output_chars):
        if total >= n_messages:
            break
        msgs = turn.messages()
        turns.append(msgs)
        total += len(msgs)
    return turns
