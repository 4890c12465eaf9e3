"""Pin rules (issue 16, ADR 0033): a pin takes a whole tool group. Pure.

Split from ``session.py`` (ADR 0051): the aggregate asks these functions which seqs a
command pins, then records them with its own events.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .errors import InvalidCommand
from .messages import Message
from .toolgroups import ToolGroup

GroupFinder = Callable[[int], "ToolGroup | None"]


def pin_scope(seqs: Sequence[int], is_visible: Callable[[int], bool], find: GroupFinder) -> set[int]:
    """The seqs pinning (or unpinning) ``seqs`` touches: each one, or its whole group's
    visible members. Raises ``InvalidCommand`` for an empty list or a seq not visible."""
    if not seqs:
        raise InvalidCommand("seqs must not be empty")
    scope: set[int] = set()
    for seq in seqs:
        if isinstance(seq, bool) or not isinstance(seq, int) or not is_visible(seq):
            raise InvalidCommand(f"seq {seq} is not a visible message")
        group = find(seq)
        if group is None:
            scope.add(seq)
        else:
            scope.add(group.seq)
            scope.update(s for s, _ in group.results if is_visible(s))
    return scope


def pins_of_append(
    messages: Sequence[Message],
    seqs: Sequence[int],
    pinned: Sequence[int],
    is_visible: Callable[[int], bool],
    find: GroupFinder,
) -> list[int]:
    """The new pins an append makes: messages given ``pinned: true`` (with their tool
    group), and tool results that join a pinned group (a pin takes the whole group)."""
    if not pinned and not any(m.pinned for m in messages):
        return []  # the common case: no group lookup per appended message
    already = set(pinned)
    wanted: set[int] = set()
    for message, seq in zip(messages, seqs):
        if message.pinned:
            wanted |= pin_scope([seq], is_visible, find)
        elif already or wanted:
            group = find(seq)
            if group is not None and group.seq in already | wanted:
                wanted.add(seq)
    return sorted(wanted - already)
