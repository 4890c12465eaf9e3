"""What every ``ctxc`` subcommand module uses: the exit codes, the bus its options
name, and its answer as JSON (``--json``) or as text for a terminal (stored text
escaped, tables). Here, not in cli.py, so the subcommand modules cli.py imports can
use them too."""

from __future__ import annotations

import argparse
import json
from typing import Any

from .cli_setup import require_database, settings_for

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_DIFFERENT, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_CLOSED_PIPE = 128 + 13  # what a shell reports for a process killed by SIGPIPE
EXIT_INTERRUPTED = 128 + 2  # Ctrl-C, as a shell reports SIGINT


def open_bus(args: argparse.Namespace, **extra: Any) -> Any:
    from .bootstrap import bootstrap

    settings = settings_for(args, **extra)
    if getattr(args, "read_only", False):
        require_database(settings, args.command)
    bus = bootstrap(settings)
    reason = bus.services.store.read_only if bus.services.store else None
    # Detected at start (issue 36): a subcommand that always writes is refused before it
    # reads its input; ``dispatch`` and ``serve`` run queries, the bus refuses their writes.
    if reason and args.command in ("compact", "import-legacy", "demo"):
        from context_compaction.domain.errors import StorageError

        bus.close()
        raise StorageError(f"the database is open read-only ({reason}): `ctxc {args.command}` writes",
                           details={"cause": "read_only"})
    return bus


# What a terminal acts on instead of showing: C0 controls (newline aside), DEL, C1
# controls, bidi embeddings, overrides and isolates. Stored text (messages, ids, tool
# names) is data: it reaches the operator's terminal escaped, never as a command to it.
_SHOWN = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x0A), *range(0x0B, 0x20), *range(0x7F, 0xA0))}
_SHOWN.update({c: f"\\u{c:04x}" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))})


def shown(text: str) -> str:
    return text.translate(_SHOWN)


def emit(args: argparse.Namespace, result: Any, text: str) -> int:
    if args.json:
        data = result.model_dump(mode="json") if hasattr(result, "model_dump") else result
        print(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        print(shown(text))
    return EXIT_OK


def table(rows: list[list[Any]], header: list[str]) -> str:
    """A table as text (rich): a header, its rule, one line per row, never wrapped.
    Cells are ``Text``: stored text is shown as it is, never read as rich markup."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    grid = Table(*header, box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="")
    for row in rows:
        grid.add_row(*(Text("" if c is None else shown(str(c))) for c in row))
    console = Console(width=100_000, no_color=True, highlight=False, emoji=False, legacy_windows=False)
    with console.capture() as captured:
        console.print(grid)
    return "\n".join(line.rstrip() for line in str(captured.get()).splitlines())


def preview(value: Any, width: int = 60) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        parts = []
        for part in value:
            kind = part.get("type")
            parts.append(part.get("text", "") if kind == "text" else f"[{kind}]")
        value = " ".join(parts)
    value = " ".join(value.split())
    return value if len(value) <= width else value[: width - 1] + "…"


def chars(value: Any) -> int:
    return len(value) if isinstance(value, str) else len(json.dumps(value or "", ensure_ascii=False))
