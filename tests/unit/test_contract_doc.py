"""docs/CONTRACT.md names every public name the code offers, so that it cannot rot.

A command type in the handler registry or the JSON union, an error code, a Settings
field (nested ones by their own name) or a ``ctxc`` subcommand that the document does
not mention fails here: add it to its topic in docs/CONTRACT.md in the same
change that adds it to the code.
"""

from __future__ import annotations

import argparse
import inspect
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from context_compaction.application.contracts import commands as c
from context_compaction.application.handlers import HANDLERS
from context_compaction.application.contracts.settings import Settings
from context_compaction.domain import errors
from context_compaction.infrastructure.cli_parser import build_parser

DOC = Path(__file__).resolve().parents[2] / "docs" / "CONTRACT.md"


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text(encoding="utf-8")


def quoted(doc: str, name: str) -> bool:
    """Mentioned as code: `name`, or `name` among others in one code span."""
    return re.search(r"`[^`\n]*(?<![\w.])" + re.escape(name) + r"(?![\w])[^`\n]*`", doc) is not None


def word(doc: str, name: str) -> bool:
    return re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", doc) is not None


def command_type_names() -> set[str]:
    registry = {cls.model_fields["type"].default for cls in HANDLERS}
    return registry | set(c.command_types())


def error_codes() -> set[str]:
    return {
        cls.code
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, errors.ContextCompactionError)
    }


def setting_names(model: type[BaseModel] = Settings, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(dotted path, the name a reader looks for) of every Settings field, nested too."""
    for name, field in model.model_fields.items():
        shown = field.alias or name
        yield prefix + shown, shown
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            yield from setting_names(kind, prefix + shown + ".")


def subcommands() -> set[str]:
    class Everything(dict):
        def __missing__(self, key: str):  # every subcommand gets a dummy function
            return lambda _args: 0

    parser = build_parser(Everything())
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(actions[0].choices)


def test_the_lists_are_read_from_the_code() -> None:
    # (a check that cannot fail is a defect: the walks must find what we know exists)
    assert {"start_session", "search_history", "revert_checkpoint", "read_events"} <= command_type_names()
    assert {"invalid_command", "idempotency_conflict", "corrupt_event"} <= error_codes()
    assert ("context_compaction.tool_results.protected_tools", "protected_tools") in set(setting_names())
    assert ("postgres.schema", "schema") in set(setting_names())
    assert {"demo", "resummarize", "events", "verify"} <= subcommands()


def test_every_command_type_is_in_the_contract(doc: str) -> None:
    missing = sorted(t for t in command_type_names() if not quoted(doc, t))
    assert not missing, f"docs/CONTRACT.md does not name these command types: {missing}"


def test_every_error_code_is_in_the_contract(doc: str) -> None:
    missing = sorted(code for code in error_codes() if not quoted(doc, code))
    assert not missing, f"docs/CONTRACT.md does not name these error codes: {missing}"


def test_every_setting_is_in_the_contract(doc: str) -> None:
    missing = sorted(path for path, name in setting_names() if not word(doc, name))
    assert not missing, f"docs/CONTRACT.md does not name these settings: {missing}"


def test_every_cli_command_is_in_the_contract(doc: str) -> None:
    missing = sorted(name for name in subcommands() if not word(doc, name))
    assert not missing, f"docs/CONTRACT.md does not name these ctxc commands: {missing}"


def test_a_name_missing_from_the_document_is_caught() -> None:
    text = "`start_session` and `invalid_command`, `postgres` {pool_size}"
    assert quoted(text, "start_session") and not quoted(text, "session")
    assert not quoted(text, "search_history") and word(text, "pool_size") and not word(text, "pool")


def test_each_command_type_has_one_row(doc: str) -> None:
    # (by topic, not by history: a command is described in one place, with its fields)
    for name in command_type_names():
        rows = re.findall(r"^\| [^|\n]*`" + re.escape(name) + r"`[^|\n]*\|", doc, flags=re.M)
        assert len(rows) == 1, (name, rows)
