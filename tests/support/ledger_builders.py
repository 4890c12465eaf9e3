"""Builders of the checklist and supersession tests: the ledger a first compaction of
some messages carries."""

from __future__ import annotations

from context_compaction.domain.ledger import Ledger, LedgerItem, extract
from context_compaction.domain.summary import SourceEntry


def ledger_of(*entries: SourceEntry) -> Ledger:
    """The ledger an empty one becomes once ``entries`` are merged into it."""
    ledger, _ = Ledger().merge(extract(list(entries)))
    return ledger


def merged(*texts: str, role: str = "user", step: int = 2) -> Ledger:
    """The ledger of ``texts`` said in turn by ``role`` at seqs 1, 1 + step, 1 + 2 * step, ...
    (step 2 leaves room for the replies between them)."""
    return ledger_of(*(SourceEntry(seq=n * step + 1, role=role, text=t) for n, t in enumerate(texts)))


def current(ledger: Ledger, value: str) -> LedgerItem | None:
    """The ledger's current item whose value is ``value``, if any."""
    return next((i for i in ledger.items if i.value == value), None)


def replaced(ledger: Ledger, value: str) -> bool:
    return any(i.value == value for i in ledger.superseded)


def doubted(ledger: Ledger, value: str) -> bool:
    """Whether ``value`` is current and flagged possibly superseded."""
    item = current(ledger, value)
    return item is not None and item.doubt is not None
