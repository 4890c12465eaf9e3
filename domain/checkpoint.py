"""The checkpoint: one definition of the concept (spec §6.2, issue 14).

A ``Checkpoint`` is what ``Session.CheckpointCommitted`` records — a cumulative summary
that stands in for the history before ``first_retained_seq``. The aggregate commits
one, a compaction candidate is one that is not stored yet, the read model keeps one
row per checkpoint and the results report it. ``to_record`` is the event's payload
(stored field names: never rename them); ``from_record`` / ``from_row`` read one back
from that payload or from anything that has the fields as attributes (a read-model row).

The aggregate itself keeps only a ``CheckpointMark`` (id, generation, boundary): the
summary text stays out of its state, so snapshots stay small (DESIGN §3).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from .errors import InvalidCommand, StaleCandidate, SummaryFailed

TRIGGER_REASONS = ("manual", "auto", "overflow")

#: Placeholder id of a candidate: the real id is given when it is committed.
CANDIDATE_ID = "candidate"


@dataclass(frozen=True, slots=True)
class CheckpointMark:
    """Where the active checkpoint stands: the aggregate's pointer to it.

    Stored in snapshots as ``{"checkpoint_id", "generation", "first_retained_seq"}``.
    """

    checkpoint_id: str
    generation: int
    first_retained_seq: int

    @classmethod
    def from_json(cls, value: Any) -> CheckpointMark | None:
        """From a snapshot's JSON (a dict), or the mark itself."""
        if value is None or type(value) is cls:
            return value
        return cls(value["checkpoint_id"], value["generation"], value["first_retained_seq"])


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """All fields of spec §6.2 plus what the summary was made from (``summary_source``)."""

    checkpoint_id: str
    generation: int
    parent_checkpoint_id: str | None
    summary: str
    first_retained_seq: int
    source_max_seq: int
    trigger_reason: str
    """``manual``, ``auto`` or ``overflow``."""
    provider_kind: str
    """Who summarized: a provider, ``extractive``, or ``deterministic`` (degraded)."""
    model: str
    tokens_before: int
    tokens_after: int
    degraded: bool
    """No semantic summary: whole turns were dropped with a breadcrumb (spec §11.3)."""
    summary_source: Mapping[str, Any]
    """Counts of source / omitted / truncated messages and the strategy (spec §10.3)."""
    created_at: str
    ledger: Mapping[str, Any] | None = None
    """The must-keep ledger the summary was verified against (issue 16, ADR 0031):
    ``{items, superseded, report}``; None for checkpoints made before it existed and
    for degraded ones that read no messages."""
    provider_state: Mapping[str, Any] | None = None
    """Provider-native compaction state (issue 17, ADR 0039): ``{provider, model, kind,
    message}``, where ``message`` is what is sent in place of the summary block to that
    provider and model only (``domain/projection.py``); ``summary`` is its readable
    shadow, used for every other provider and model and for audits. None: no native
    state (every checkpoint made before it existed)."""

    @property
    def mark(self) -> CheckpointMark:
        return CheckpointMark(self.checkpoint_id, self.generation, self.first_retained_seq)

    def committed(self, checkpoint_id: str, created_at: str) -> Checkpoint:
        """This candidate with the id and time it is committed with."""
        return replace(self, checkpoint_id=checkpoint_id, created_at=created_at)

    def to_record(self) -> dict[str, Any]:
        """The ``CheckpointCommitted`` payload (the stored field names)."""
        record = {name: getattr(self, name) for name in FIELDS}
        record["summary_source"] = dict(self.summary_source)
        record["ledger"] = dict(self.ledger) if self.ledger is not None else None
        record["provider_state"] = dict(self.provider_state) if self.provider_state is not None else None
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Checkpoint:
        """From a ``CheckpointCommitted`` payload (other keys, e.g. a row's
        ``session_id`` or ``version``, are ignored)."""
        values = {name: record[name] for name in FIELDS if name not in OPTIONAL_FIELDS}
        values["ledger"] = record.get("ledger")  # (absent from events before issue 16)
        values["provider_state"] = record.get("provider_state")  # (absent before ADR 0039)
        values["summary_source"] = dict(values["summary_source"] or {})
        return cls(**values)

    @classmethod
    def from_row(cls, row: Any) -> Checkpoint:
        """From any object that has the fields as attributes (a read-model row)."""
        if isinstance(row, Checkpoint):
            return row  # a row type that is a Checkpoint (application/contracts/views.py)
        return cls.from_record({name: getattr(row, name, None) for name in FIELDS})

    @property
    def ledger_report(self) -> dict[str, Any] | None:
        """The coverage figures of the ledger check (``CompactOutcome.ledger``)."""
        report = (self.ledger or {}).get("report")
        return dict(report) if report is not None else None


def native_state_ok(state: Mapping[str, Any]) -> bool:
    """A checkpoint's provider state names who made it and holds the message to send."""
    return (
        isinstance(state, Mapping)
        and isinstance(state.get("provider"), str)
        and bool(state.get("provider"))
        and isinstance(state.get("model"), str)
        and bool(state.get("model"))
        and isinstance(state.get("message"), Mapping)
    )


def check_commit(
    checkpoint: Checkpoint,
    context_generation: int,
    previous: CheckpointMark | None,
    is_visible: Callable[[int], bool],
    split_group_seq: Callable[[int], int | None],
) -> None:
    """The rules a checkpoint must meet to become active after ``previous`` (spec §6.2,
    §9.3); ``split_group_seq(seq)`` is the seq of the tool group a cut before ``seq``
    would split, if any. Raises ``StaleCandidate`` (the generation CAS: it must be the
    session's next one), ``SummaryFailed`` or ``InvalidCommand``."""
    expected_generation = checkpoint.generation - 1
    if expected_generation != context_generation:
        raise StaleCandidate(
            f"context generation moved from {expected_generation} to "
            f"{context_generation} while the summary was produced",
            details={"expected_generation": expected_generation, "context_generation": context_generation},
        )
    first_retained_seq = checkpoint.first_retained_seq
    if not checkpoint.summary.strip():
        raise SummaryFailed("the summary is empty")
    if checkpoint.trigger_reason not in TRIGGER_REASONS:
        raise InvalidCommand(f"unknown trigger reason {checkpoint.trigger_reason!r}")
    if not is_visible(first_retained_seq):
        raise InvalidCommand(f"first_retained_seq {first_retained_seq} is not a visible message")
    if previous is not None and first_retained_seq <= previous.first_retained_seq:
        raise InvalidCommand(
            f"first_retained_seq {first_retained_seq} does not advance past "
            f"{previous.first_retained_seq}"
        )
    split = split_group_seq(first_retained_seq)
    if split is not None:
        raise InvalidCommand(
            f"first_retained_seq {first_retained_seq} falls inside the tool group "
            f"that starts at seq {split}"
        )
    if min(checkpoint.tokens_before, checkpoint.tokens_after) < 0:
        raise InvalidCommand("token figures must be >= 0")
    state = checkpoint.provider_state
    if state is not None and not native_state_ok(state):
        raise InvalidCommand("provider_state needs a provider, a model and a message object")


FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Checkpoint))
#: Fields a stored payload may lack (added after the first events were written).
OPTIONAL_FIELDS: tuple[str, ...] = ("ledger", "provider_state")
