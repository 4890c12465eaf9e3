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


# ------------------------------------------------------------ attempt log


# ------------------------------------------------------------ resummarize
