"""Shared by the tests of purge and their neighbours."""

from __future__ import annotations

from typing import Any
import pytest
from backends import MakeHarness
from helpers import Harness, RecordingSummarizer, assistant, err, ok, tool, user


def _dump(h: Harness) -> bytes:
    """Every table's every row, as bytes (events, snapshots, read model, caches)."""
    if h.is_postgres:
        schema = h.url.split("schema=")[1]
        names = [r[0] for r in h.query("SELECT table_name FROM information_schema.tables WHERE table_schema = ?",
                                       (schema,))]
        rows = [h.query(f'SELECT * FROM "{schema}"."{name}"') for name in names]
    else:
        names = [r[0] for r in h.query("SELECT name FROM sqlite_master WHERE type = 'table'")]
        rows = [h.query(f'SELECT * FROM "{name}"') for name in names]
    return repr(rows).encode() + b"".join(bytes(v) for table in rows for r in table for v in r
                                          if isinstance(v, (bytes, memoryview)))
