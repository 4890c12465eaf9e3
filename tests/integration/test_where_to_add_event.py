"""Adding a throwaway event with its own table, following
docs/architecture.md "Where to add" to the letter (the event and its command method in
``domain/session.py``, an application function calling ``mutate``, a handler + its
``handler_table`` entry, a ``Table`` in ``PROJECTED`` and ``SCHEMA_VERSION`` + 1), works
on ``memory://`` but fails on SQLite and PostgreSQL with "no such table": the SQL DDL
is the hand-written ``SCHEMA`` tuple, which lists each table by name, and the doc does
not say to add the table's ``ddl()`` there. With that line added (same file) the event
works and answers the same on all three backends, so the rule "4 files" holds; the
instructions do not. (``tests/unit/test_projection_tables.py`` does catch the omission.)
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_where_to_add_an_event_says_to_list_a_new_table_in_schema() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| an event with its projection"))
    assert re.search(r"`SCHEMA`", row), row
