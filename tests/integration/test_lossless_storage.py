"""Lossless compaction (issue 16): the verified ledger, provenance, the attempt log and
``resummarize``, through the bus on SQLite and PostgreSQL; the LLM through the fake
provider over real HTTP."""

from __future__ import annotations

import pytest

import threading

from context_compaction.domain.checkpoint import Checkpoint
from context_compaction.domain.summary import HEADINGS, PROMPT_VERSION
from context_compaction.infrastructure.demo.scenario import coding_session
from backends import MakeHarness
from fakeprovider import FakeProvider, Reply
from helpers import (
    FAKE_MODEL,
    Harness,
    RecordingSummarizer,
    attempt_count,
    err,
    fingerprint,
    llm_settings,
    ok,
    user,
)
from lossless_builders import filler, turn, build, compact, attempts, llm


SID = "s"
EMPTY = "\n\n".join(f"## {h}\nNone." for h in HEADINGS)
PLANTED = (
    "The config lives in src/app/settings_prod.py and this is tracked as PAY-4411. "
    "You must never push to the release branch directly. "
    "Actually, the staging host listens on port 8443, not on port 8080."
)


# ------------------------------------------------------------------ ledger


def test_an_older_read_model_gains_the_ledger_column_in_place(make_harness: MakeHarness) -> None:
    h = make_harness("u", summarizer="extractive", context_compaction={"keep_recent_tokens": 2000})
    build(h)
    compact(h)
    h.execute("ALTER TABLE {t}rm_checkpoints DROP COLUMN ledger")
    h.execute("UPDATE {t}rm_position SET notification_id = 6 WHERE name = 'schema'")
    bus = h.reopen()
    cps = ok(bus.dispatch_json({"type": "list_checkpoints", "session_id": SID}))["checkpoints"]
    assert len(cps) == 1 and cps[0]["ledger"] is None  # (events before it had none)
    h.close()


# ------------------------------------------------------------ attempt log


# ------------------------------------------------------------ resummarize
