"""Read-model rows as the application's views (``application/contracts/views.py``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from context_compaction.application.contracts.views import CheckpointRow, SessionRow
from context_compaction.domain.budget import LearnedWindow
from context_compaction.domain.errors import StorageError
from context_compaction.domain.messages import MessageRecord

from ..transcoding import corrupt_event, message_problem

_BODY_FIELDS = (
    "role",
    "content",
    "reasoning",
    "tool_calls",
    "tool_call_id",
    "name",
    "turn_id",
    "steering",
    "provider_state",
    "created_at",
)
_ENVELOPE_FIELDS = ("timestamp", "command_id", "command_generated", "class_version")


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def session_row(row: Sequence[Any]) -> SessionRow:
    return SessionRow(
        session_id=row[0],
        model=row[1],
        agent_token_limit=row[2],
        version=int(row[3]),
        next_seq=int(row[4]),
        context_generation=int(row[5]),
        active_checkpoint_id=row[6],
        message_count=int(row[7]),
        invalidated_count=int(row[8]),
        checkpoint_count=int(row[9]),
        deleted=bool(row[10]),
        created_at=row[11],
        updated_at=row[12],
        learned_windows={m: LearnedWindow(**value) for m, value in json.loads(row[13] or "{}").items()},
        cleared_count=int(row[14] or 0),
        parent_session_id=row[15],
    )


def checkpoint_row(
    row: Sequence[Any],
    ledger_of: Callable[[str], Any] = json.loads,
    fetch_ledger: Callable[[str], str] | None = None,
) -> CheckpointRow:
    """``ledger_of`` parses the stored ledger text (``LedgerCache`` reuses a parse). With
    ``fetch_ledger`` (checkpoint id → stored text), the row holds only whether there is a
    ledger (``EventsTable.session_view_sql``), fetched when first used."""
    if fetch_ledger is None or not row[16]:
        ledger = LazyLedger(row[16], ledger_of) if row[16] else None
    else:
        checkpoint_id = row[0]
        ledger = LazyLedger(lambda: fetch_ledger(checkpoint_id), ledger_of)
    return CheckpointRow(
        checkpoint_id=row[0],
        session_id=row[1],
        generation=int(row[2]),
        parent_checkpoint_id=row[3],
        summary=row[4],
        first_retained_seq=int(row[5]),
        source_max_seq=int(row[6]),
        trigger_reason=row[7],
        provider_kind=row[8],
        model=row[9],
        tokens_before=int(row[10]),
        tokens_after=int(row[11]),
        degraded=bool(row[12]),
        summary_source=json.loads(row[13]),
        created_at=row[14],
        version=int(row[15]),
        ledger=ledger,
        provider_state=json.loads(row[17]) if row[17] else None,
    )


class LazyLedger(Mapping[str, Any]):
    """A checkpoint's stored ledger, parsed on first use (ADR 0044) and, given as a
    function, read on first use too (ADR 0059): most reads of a checkpoint never look
    at it, and it is its one large value (0.8 MB of JSON at 20k messages)."""

    __slots__ = ("_text", "_parse", "_value")

    def __init__(self, text: str | Callable[[], str], parse: Callable[[str], Any]) -> None:
        self._text = text
        self._parse = parse
        self._value: Mapping[str, Any] | None = None

    def _parsed(self) -> Mapping[str, Any]:
        if self._value is None:
            text = self._text
            if not isinstance(text, str):
                text = self._text = text()
            self._value = _ledger_value(text, self._parse)
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self._parsed()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._parsed())

    def __len__(self) -> int:
        return len(self._parsed())

    def __bool__(self) -> bool:
        return True  # (stored only when not empty: no parse to answer this)

    def __repr__(self) -> str:
        if not isinstance(self._text, str):
            return "LazyLedger(not read yet)"
        return f"LazyLedger({len(self._text)} characters)"


def _ledger_value(text: str, parse: Callable[[str], Any]) -> Mapping[str, Any]:
    # An empty text is no ledger; a damaged one is the read model's fault, named so.
    if not text.strip():
        return {}
    try:
        value = parse(text)
    except ValueError as exc:
        raise StorageError("a checkpoint's ledger in the read model is not JSON") from exc
    if not isinstance(value, Mapping):
        raise StorageError("a checkpoint's ledger in the read model is not a JSON object")
    return value


class LedgerCache:
    """Parsed ledgers by their stored text (ADR 0044): each compaction reads the active
    one again. Keyed by the whole text, a hit is exactly what parsing would give; its
    readers copy what they hand on, so one parse is shared."""

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._parsed: dict[str, Any] = {}

    def __call__(self, text: str) -> Any:
        parsed = self._parsed.get(text)
        if parsed is None:
            parsed = json.loads(text)
            if len(self._parsed) >= self.size:
                self._parsed.pop(next(iter(self._parsed)))  # the oldest
            self._parsed[text] = parsed
        return parsed


class DamagedMessage(Exception):
    """A message row that cannot be served (``_messages`` names it as ``CorruptEvent``)."""

    def __init__(self, seq: int, problem: str) -> None:
        super().__init__(problem)
        self.seq = seq
        self.problem = problem


def message_record(row: Sequence[Any], decode: Callable[[bytes], dict[str, Any]]) -> MessageRecord:
    """(seq, event state, visible, is a MessageAppended row) → the message as stored.

    The freshly decoded state becomes the record, minus the envelope fields (no copy
    per message). A row that is no message is refused, never served as half of one.
    """
    try:
        record = decode(bytes(row[1]))
    except Exception as exc:  # noqa: BLE001 - any undecodable row is the same fault
        raise DamagedMessage(row[0], f"state does not decode: {type(exc).__name__}") from None
    if not row[3]:
        raise DamagedMessage(row[0], "unknown event topic")
    if type(record) is not dict:
        raise DamagedMessage(row[0], "state is not an object")
    problem = message_problem(record)
    if problem is None and record["seq"] != row[0]:
        problem = "seq differs from its read-model row"
    if problem is not None:
        raise DamagedMessage(row[0], problem)
    for name in _ENVELOPE_FIELDS:
        record.pop(name, None)
    for name in _BODY_FIELDS:
        if name not in record:
            record[name] = None
    record["tool_calls"] = record["tool_calls"] or []
    record["steering"] = bool(record["steering"])
    record["seq"] = int(row[0])
    record["visible"] = bool(row[2])
    return record  # type: ignore[no-any-return]


def refuse_damaged(session_id: str, damage: Sequence[Any]) -> None:
    """``damage`` is (version, problem) of the session's row in ``rm_damaged``, or Nones."""
    if damage[0] is not None:
        raise corrupt_event(str(damage[1]), version=int(damage[0]), session_id=session_id)

