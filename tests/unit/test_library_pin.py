"""eventsourcing beneath its public API: three private names, each with its reason (ADR 0073).

``infrastructure/eventstore/internals/`` is the one place that uses private names of
eventsourcing: its recorders' insert hooks and ``Application._notify``. The requirement
is ``eventsourcing>=9.5,<10`` (CI runs the storage tests on the newest 9.x too), so
these tests check, on whatever release is installed, that each declared name still
exists, that no other is used, and that each has its reason written down.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from eventsourcing.utils import resolve_topic

from context_compaction.infrastructure.eventstore import internals
from context_compaction.infrastructure.eventstore.internals import PRIVATE_NAMES
from layering_checks import LIBRARY_INTERNALS, ROOT, library_private_names, private_library_uses


def _assigns(source: str, name: str) -> bool:
    """``source`` assigns ``self.<name>`` or declares it (``self._expire_at: float``)."""
    assigned = re.compile(rf"\bself\.{re.escape(name)}\b\s*(:[^=\n]*)?=(?!=)")
    declared = re.compile(rf"^\s*self\.{re.escape(name)}\s*:[^=\n]*$", re.MULTILINE)
    return bool(assigned.search(source) or declared.search(source))


def _defines(cls: type, name: str) -> bool:
    """A method or class attribute of ``cls``, or an attribute its code assigns or declares."""
    if hasattr(cls, name):
        return True
    return any(
        _assigns(inspect.getsource(klass), name)
        for klass in cls.__mro__
        if klass.__module__.startswith(("eventsourcing", "psycopg"))
    )


def test_an_assignment_or_a_declaration_counts_a_read_does_not() -> None:
    source = """
        self._set = 1
        self._typed: int = 2
        self._declared: float
        if self._set == 1 or self._compared == 2:
            print(self._read)
        return self._returned
    """
    assert [n for n in ("_set", "_typed", "_declared") if not _assigns(source, n)] == []
    assert [n for n in ("_compared", "_read", "_returned") if _assigns(source, n)] == []


def test_every_private_name_the_internals_declare_still_exists() -> None:
    missing = [
        f"{topic}.{name}"
        for topic, names in PRIVATE_NAMES.items()
        for name in names
        if not _defines(resolve_topic(topic), name)
    ]
    assert missing == []


def test_the_internals_declare_every_private_name_they_use() -> None:
    used = {
        use.split(":")[0]
        for module, uses in private_library_uses(ROOT, library_private_names()).items()
        if module.startswith(LIBRARY_INTERNALS)
        for use in uses
    }
    declared = {name for names in PRIVATE_NAMES.values() for name in names}
    assert used - declared == set()
    assert declared - used == set()



def test_at_most_three_private_names_each_with_its_reason() -> None:
    declared = [name for names in PRIVATE_NAMES.values() for name in names]
    assert len(declared) <= 3, declared
    adr = (Path(ROOT) / "adr" / "0073-storage-on-the-librarys-seams.md").read_text(encoding="utf-8")
    for name in declared:
        assert f".{name}(" in (internals.__doc__ or ""), f"{name}: no reason in the internals' docstring"
        assert f"`{name}` (" in adr, f"{name}: no reason in ADR 0073"
