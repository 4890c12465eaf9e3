"""Logging for the CLI and servers: key=value lines or JSON lines, never content.

The library itself only logs through ``logging.getLogger("context_compaction…")`` with
structured ``extra`` fields (session id, checkpoint id, generation, reason, token
figures, error class); hosts configure handlers as they like.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

_STANDARD = set(vars(logging.LogRecord("x", 0, "x", 0, "x", None, None))) | {"message", "asctime"}


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    out = {}
    for key, value in vars(record).items():
        if key in _STANDARD or key.startswith("_"):
            continue
        out[key] = value if isinstance(value, (str, int, float, bool)) or value is None else repr(value)
    if record.exc_info and record.exc_info[0] is not None:
        # The class only: exception messages may quote input.
        out.setdefault("error_class", record.exc_info[0].__name__)
    return out


class JsonLinesFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
            **_fields(record),
        }
        return json.dumps(data, ensure_ascii=False, default=str)


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.fromtimestamp(record.created, UTC).strftime("%H:%M:%S")
        fields = " ".join(f"{k}={v}" for k, v in _fields(record).items())
        return f"{ts} {record.levelname.lower():7} {record.name}: {record.getMessage()} {fields}".rstrip()


def configure_logging(*, json_lines: bool = False, verbose: bool = False) -> None:
    """Log our package to stderr (WARNING, or INFO with ``verbose``)."""
    logger = logging.getLogger("context_compaction")
    for handler in list(logger.handlers):
        if getattr(handler, "_ctxc", False):
            logger.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler._ctxc = True  # type: ignore[attr-defined]
    handler.setFormatter(JsonLinesFormatter() if json_lines else KeyValueFormatter())
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbose else logging.WARNING)
    logger.propagate = False
