"""Generated coding sessions that carry canaries: seeded, varied, natural-ish prose.

Routine requests deliberately use the words a keyword extractor trips on ("instead of",
"make sure", "must", "rather than"), so that a mechanism which files them as rules or
corrections pays for it in budget, as it would on a real session.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from .canaries import KINDS, Canary, Phrasings, Planter

MODULES = ("billing/invoices.py", "api/routes/users.py", "workers/export.py", "core/cache.py",
           "search/indexer.py", "auth/tokens.py", "reports/pdf.py", "notifications/email.py")
TESTS = ("test_totals_round_half_even", "test_user_patch_partial", "test_export_resumes",
         "test_cache_eviction_order", "test_reindex_batches", "test_token_refresh_expiry",
         "test_pdf_page_breaks", "test_digest_grouping")
ASKS = (
    "Can you look at why {t} fails in {m}?",
    "Please refactor {m} a bit, the function is too long to follow.",
    "Use a dataclass instead of the dict in {m}.",
    "Make sure the linter passes on {m} after your change.",
    "Could you add a test for the empty case in {m}?",
    "I'd rather see the early return than the nested if in {m}.",
    "Run the suite again, {t} was flaky yesterday.",
    "The logging in {m} is noisy; trim it down to warnings.",
)
ANSWERS = (
    "I traced {t} to an off-by-one in the loop over line items in {m}. The fix keeps the "
    "existing behaviour for full pages and the test passes now.",
    "The function in {m} is split into three helpers with the same signature as before; "
    "nothing outside the module changes.",
    "I added the test and it caught a None that {m} returned for an empty list. It now "
    "returns an empty tuple.",
    "The suite ran twice without a failure; {t} depended on dict ordering, which I made explicit.",
    "I reduced the log calls in {m} to two warnings and one error, and the output is much shorter.",
    "The linter is clean on {m}. Two unused imports went away along the way.",
)
CODE = ("def {f}(items, *, limit=None):", "    total = sum(i.amount for i in items)",
        "    if limit is not None and total > limit:", "        raise ValueError('over limit')",
        "    return round(total, 2)", "assert {f}([]) == 0", "PASSED tests/{t}.py::{t}",
        "collected 214 items / 2 deselected", "    for row in rows: cursor.execute(sql, row)")


@dataclass
class Session:
    turns: list[list[dict[str, Any]]] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)  # the round of each turn
    canaries: list[Canary] = field(default_factory=list)


def _filler_turn(rng: random.Random, n: int, tool_chars: int, canaries: list[Canary]) -> list[dict[str, Any]]:
    m, t = rng.choice(MODULES), rng.choice(TESTS)
    user = [rng.choice(ASKS).format(m=m, t=t)]
    answer = [rng.choice(ANSWERS).format(m=m, t=t)]
    for c in canaries:  # user-ish kinds are said by the user, the rest by the assistant
        side = user if c.kind in ("rule", "preference", "person", "date", "question", "setting") else answer
        side.insert(rng.randint(0, len(side)), c.text)
    lines, f = [], f"step_{n}"
    while sum(len(x) + 1 for x in lines) < tool_chars:
        lines.append(rng.choice(CODE).format(f=f, t=t))
    tid = f"t{n}"
    call = {"id": f"call_{n}", "type": "function",
            "function": {"name": rng.choice(("read_file", "run_tests", "grep")), "arguments": json.dumps({"path": m})}}
    return [
        {"role": "user", "content": " ".join(user), "turn_id": tid},
        {"role": "assistant", "content": None, "tool_calls": [call], "turn_id": tid},
        {"role": "tool", "tool_call_id": f"call_{n}", "content": "\n".join(lines), "turn_id": tid},
        {"role": "assistant", "content": " ".join(answer), "turn_id": tid},
    ]


def generate(phrasings: Phrasings, seed: int, *, rounds: int, turns_per_round: int, per_kind: int,
             tool_chars: int, update_share: float = 0.3) -> Session:
    """``rounds`` rounds of ``turns_per_round`` turns; each round plants ``per_kind``
    canaries of every kind and updates about ``update_share`` of the earlier updatable ones."""
    rng = random.Random(f"session-{phrasings.name}-{seed}")
    planter = Planter(phrasings, seed)
    out = Session()
    n = 0
    for r in range(rounds):
        fresh = [planter.plant(k, r) for k in KINDS for _ in range(per_kind)]
        if r:
            candidates = [c for c in out.canaries if c.superseded_by is None and c.round < r
                          and c.kind in phrasings.updates]
            for old in rng.sample(candidates, k=min(len(candidates), int(len(candidates) * update_share / r) or 1)):
                new = planter.update(old, r)
                if new is not None:
                    fresh.append(new)
        rng.shuffle(fresh)
        slots: list[list[Canary]] = [[] for _ in range(turns_per_round)]
        for i, c in enumerate(fresh):
            slots[i % turns_per_round].append(c)
        for slot in slots:
            out.turns.append(_filler_turn(rng, n, tool_chars, slot))
            out.rounds.append(r)
            n += 1
        out.canaries += fresh
    return out
