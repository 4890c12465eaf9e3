"""The Session aggregate's state and its queries (split from ``session.py``, ADR 0051).

``SessionState`` is a plain base class: properties and lookups over the attributes the
``Session`` event methods set. It defines no event, so every event class stays nested
in ``Session`` (the store's allow-list reads ``vars(Session)``, ADR 0022) with its topic.

A snapshot sets the aggregate's ``__dict__`` to the stored JSON (eventsourcing's
``Snapshot.mutate``), so typed values are made on first use, from snapshots of any
age (ADR 0025). Tool groups are split in two (ADR 0051): ``tool_groups``, the groups
an append can still touch (an open call, or not behind the checkpoint boundary when
it was committed); and the closed groups at or before ``archived_upto``, which only a
command naming an old seq reads. Those are held in a slot, so no snapshot carries
them: an aggregate loaded from a snapshot does not have them, and a command that needs
them raises ``HistoryNeeded``; the caller rebuilds the session from its events (which
does have them) and decides again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .checkpoint import CheckpointMark
from .errors import SessionDeleted
from .toolgroups import (
    ToolGroup,
    group_at,
    group_containing,
    groups_from_json,
    in_ranges,
    split_closed,
    visible_groups,
)

#: How many recent command ids the aggregate remembers; older ones are answered from
#: the read model (ADR 0004), so a snapshot does not grow with every command.
COMMAND_WINDOW = 512

GroupFinder = Callable[[int], "ToolGroup | None"]


class HistoryNeeded(Exception):
    """A command needs tool groups this copy of the aggregate does not hold (it was
    loaded from a snapshot): rebuild it from its events and decide again. Raised before
    any event, so nothing changed. Not an error of the contract: the application's
    command loop handles it (``services.mutate``)."""


class SessionState:
    """State accessors of ``Session``; the attributes are set by its event methods."""

    # Not in ``__dict__``, so not in snapshots (``Snapshot.take`` copies ``vars``):
    # set by the creation event, so only an aggregate replayed from its first event
    # has it (ADR 0051).
    __slots__ = ("_closed_groups", "__dict__")  # (``__dict__``: the aggregate's own)
    _closed_groups: list[ToolGroup]

    __dict__: dict[str, Any]
    session_id: str
    next_seq: int
    message_count: int
    deleted: bool
    version: int
    modified_on: Any
    pending_events: list[Any]
    id: Any
    invalidated: list[list[int]]
    recent_commands: dict[str, list[int]]
    open_calls: dict[str, int]

    @property
    def max_seq(self) -> int:
        return self.next_seq - 1

    def is_visible(self, seq: int) -> bool:
        return 1 <= seq < self.next_seq and not in_ranges(self.invalidated, seq)

    def seqs_for_command(self, command_id: str) -> list[int] | None:
        span = self.recent_commands.get(command_id)
        return list(range(span[0], span[1] + 1)) if span else None

    def _ensure_live(self) -> None:
        if self.__dict__.get("groups_incomplete"):
            raise HistoryNeeded("an invalidation reached tool groups this copy does not hold")
        if self.deleted:
            raise SessionDeleted(f"session {self.session_id!r} is deleted")

    def _record_message(
        self,
        event_class: type,
        record: dict[str, Any], command_id: str | None, created_at: str, timestamp: Any,
        command_generated: bool,
    ) -> None:
        # The append hot path does what calling the @event method does (a new event at
        # version + 1, applied, kept pending) without eventsourcing re-filtering the
        # kwargs through the method signature twice per message. The event object is
        # built the way eventsourcing's mapper rebuilds a stored one (its state set
        # directly, no dataclass __init__). Replay goes through the decorated method;
        # both run ``_apply_message``.
        new_event: Any = object.__new__(event_class)
        state = new_event.__dict__
        state["originator_id"] = self.id
        state["originator_version"] = version = self.version + 1
        state["timestamp"] = timestamp
        state["seq"] = seq = self.next_seq
        state.update(record)
        state["command_id"] = command_id
        state["created_at"] = created_at
        state["command_generated"] = command_generated
        self._apply_message(seq, record["role"], record["tool_calls"], record["tool_call_id"], command_id)
        self.version = version
        self.modified_on = timestamp
        self.pending_events.append(new_event)  # (the library's list itself)

    def _apply_message(
        self,
        seq: int,
        role: str,
        tool_calls: list[dict[str, Any]],
        tool_call_id: str | None,
        command_id: str | None,
    ) -> None:
        """What one message changes, in an append and on replay."""
        self.next_seq = seq + 1
        self.message_count += 1
        if role == "assistant" and tool_calls:
            ids = [c["id"] for c in tool_calls]
            for call_id in ids:
                self.open_calls[call_id] = seq
            self.tool_groups.append(ToolGroup(seq, ids, []))
        elif role == "tool" and tool_call_id is not None:
            assistant_seq = self.open_calls.pop(tool_call_id, None)
            if assistant_seq is not None:
                group = group_at(self.tool_groups, assistant_seq)
                if group is not None:
                    group.results.append((seq, tool_call_id))
        if command_id is not None:
            span = self.recent_commands.get(command_id)
            if span is None:
                self.recent_commands[command_id] = [seq, seq]
                if len(self.recent_commands) > COMMAND_WINDOW:
                    del self.recent_commands[next(iter(self.recent_commands))]
            else:
                span[1] = seq

    @property
    def active_checkpoint(self) -> CheckpointMark | None:
        value = self.__dict__["active_checkpoint"]
        if value is not None and type(value) is not CheckpointMark:
            value = self.__dict__["active_checkpoint"] = CheckpointMark.from_json(value)
        return value  # type: ignore[no-any-return]

    @active_checkpoint.setter
    def active_checkpoint(self, value: CheckpointMark | None) -> None:
        self.__dict__["active_checkpoint"] = value

    @property
    def tool_groups(self) -> list[ToolGroup]:
        """The groups an append can still touch (open calls, or not behind a
        checkpoint boundary when it was committed), ascending by seq."""
        value = self.__dict__["tool_groups"]
        if value and type(value[0]) is not ToolGroup:
            value = self.__dict__["tool_groups"] = groups_from_json(value)
        return value  # type: ignore[no-any-return]

    @tool_groups.setter
    def tool_groups(self, value: list[ToolGroup]) -> None:
        self.__dict__["tool_groups"] = value

    @property
    def archived_upto(self) -> int:
        """The highest seq of a closed group moved out of ``tool_groups`` (0: none);
        absent from snapshots older than ADR 0051."""
        return self.__dict__.get("archived_upto", 0)  # type: ignore[no-any-return]

    def _held_closed(self) -> list[ToolGroup] | None:
        """The closed groups, if this copy holds them: replayed from the first event, or
        loaded from a snapshot taken before any group was closed (all are live then)."""
        try:
            return self._closed_groups
        except AttributeError:
            if self.archived_upto:
                return None
            self._closed_groups = []
            return self._closed_groups

    def _closed_or_history(self) -> list[ToolGroup]:
        """The closed groups, or ``HistoryNeeded`` when this copy does not hold them."""
        closed = self._held_closed()
        if closed is None:
            raise HistoryNeeded("tool groups behind the checkpoint are not loaded")
        return closed

    def _archive_closed(self, horizon: int) -> None:
        """Move the groups that end before ``horizon`` and have no open call out of
        ``tool_groups``, into the slot when this copy has it (else only the events
        keep them)."""
        kept, closed = split_closed(self.tool_groups, self.open_calls, horizon)
        if not closed:
            return
        self.tool_groups = kept
        held = self._held_closed()
        if held is not None:
            # In call order, which ``group_split_by`` bisects on: a group whose call
            # stayed open across an earlier checkpoint is archived after later ones.
            held.extend(closed)
            held.sort(key=lambda group: group.seq)
        self.__dict__["archived_upto"] = max(self.archived_upto, *(g.last_seq for g in closed))

    def needs_closed_groups(self, ranges: list[list[int]], invalidated: list[list[int]]) -> bool:
        """Does hiding ``ranges`` (``invalidated``: every hidden range with them) touch
        closed groups it does not hide whole? Hiding all of ``1..archived_upto`` (a
        clear, a rewind before them) drops them all and reopens nothing."""
        upto = self.archived_upto
        if not (upto and any(lo <= upto for lo, _ in ranges)):
            return False
        return not (invalidated and invalidated[0][0] <= 1 and invalidated[0][1] >= upto)

    def _hide_invalidated_groups(self, ranges: list[list[int]]) -> None:
        """Groups and open calls after an invalidation (``visible_groups``); runs after
        ``invalidated`` took ``ranges``."""
        upto = self.archived_upto
        reaches_back = bool(upto) and any(lo <= upto for lo, _ in ranges)
        if reaches_back and not self.needs_closed_groups(ranges, self.invalidated):
            self._closed_groups = []  # every closed group is hidden whole
            self._keep_value("archived_upto", 0)
            reaches_back = False
        if not reaches_back:
            self.tool_groups, self.open_calls = visible_groups(self.tool_groups, self.open_calls, self.is_visible)
            return
        # It reaches back to closed groups: every group is checked, and the ones whose
        # calls reopen become live again (a result may join them).
        held = self._held_closed()
        if held is None:
            # Replayed after a snapshot without them: the open calls this event reopens
            # are unknown. Mark it, so that the next command rebuilds the copy.
            self.__dict__["groups_incomplete"] = True
            self.tool_groups, self.open_calls = visible_groups(self.tool_groups, self.open_calls, self.is_visible)
            return
        every = sorted([*held, *self.tool_groups], key=lambda g: g.seq)
        groups, self.open_calls = visible_groups(every, self.open_calls, self.is_visible)
        self.tool_groups, self._closed_groups = split_closed(groups, self.open_calls, upto + 1)
        self._keep_value("archived_upto", max((g.last_seq for g in self._closed_groups), default=0))

    def all_tool_groups(self) -> list[ToolGroup]:
        """Every group, ascending by seq (``HistoryNeeded`` if the closed ones are not held)."""
        closed = self._closed_or_history()
        return sorted([*closed, *self.tool_groups], key=lambda g: g.seq) if closed else self.tool_groups

    def group_finder(self) -> GroupFinder:
        """A lookup of the group a seq belongs to. Closed groups are asked only for a
        seq at or before ``archived_upto`` (``HistoryNeeded`` if not held)."""
        live, upto = self.tool_groups, self.archived_upto
        index: dict[int, ToolGroup] | None = None

        def find(seq: int) -> ToolGroup | None:
            nonlocal index
            group = group_containing(live, seq)
            if group is None and seq <= upto:
                if index is None:
                    index = {m: g for g in self._closed_or_history() for m in g.members()}
                group = index.get(seq)
            return group

        return find

    def tool_group_containing(self, seq: int) -> ToolGroup | None:
        """The tool group (assistant call + its results) that ``seq`` belongs to."""
        return self.group_finder()(seq)

    @property
    def checkpoint_parents(self) -> list[CheckpointMark]:
        """The active checkpoint's ancestors back to the last invalidation, oldest
        first: where a revert returns to (ADR 0033). Absent from snapshots older than
        reverts: none known, so a revert from such a state returns to raw history."""
        value = self.__dict__.get("checkpoint_parents")
        if not value:
            return []
        if type(value[0]) is not CheckpointMark:
            value = self.__dict__["checkpoint_parents"] = [CheckpointMark.from_json(v) for v in value]
        return value  # type: ignore[no-any-return]

    @property
    def pinned_seqs(self) -> list[int]:
        """Pinned seqs, ascending (issue 16); absent from snapshots older than pins."""
        return self.__dict__.get("pinned", [])  # type: ignore[no-any-return]

    def _keep(self, name: str, value: list[Any]) -> None:
        self._keep_value(name, value)

    def _keep_value(self, name: str, value: Any) -> None:
        # State added since issue 16 is stored only while it is not empty: snapshots of
        # sessions that do not use it keep their old shape.
        if value:
            self.__dict__[name] = value
        else:
            self.__dict__.pop(name, None)
