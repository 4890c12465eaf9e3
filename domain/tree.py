"""Sessions as a tree (issue 42, ADR 0081): forks and sub-agent sessions.

A session's first event (``Started``) may name a parent: ``parent`` says which
session, what kind of link (``fork`` or ``subagent``), and for a fork the parent's
version and last seq at the fork point. A fork's ``Started`` also carries
``inherited``: the parent's aggregate state at that version — counters, hidden seq
ranges, open calls, tool-group extents, the checkpoint pointer and its ancestors,
pins and learned windows — never a message body. The child's raw prefix stays in
the parent's events; reads resolve it there (``TreeReadModel``).

Pure functions: no I/O. ``born_in_tree`` runs inside the ``Started`` mutator, so it
never validates; ``fork_of`` validates before anything is triggered.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .checkpoint import CheckpointMark
from .errors import InvalidCommand, SessionDeleted
from .toolgroups import ToolGroup, groups_from_json

FORK = "fork"
SUBAGENT = "subagent"

#: The aggregate state a fork starts from (``SessionState`` attributes). Not the
#: recent command ids: a command id belongs to the session that ran it.
INHERITED_KEYS = (
    "next_seq", "message_count", "context_generation", "active_checkpoint", "checkpoint_count",
    "invalidated", "open_calls", "tool_groups", "checkpoint_parents", "pinned", "archived_upto",
    "learned",
)


@dataclass(frozen=True)
class TreeLink:
    """Where a session hangs in the tree (its ``Started`` event's ``parent``)."""

    parent_session_id: str
    kind: str
    fork_version: int = 0
    """The parent's version the child was born at (0: a sub-agent, nothing inherited)."""
    fork_seq: int = 0
    """The parent's last seq at that version: the child's seqs ``<= fork_seq`` are
    the parent's (resolved from its events), later ones are the child's own."""
    parent_tool_call_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, value: dict[str, Any] | None) -> TreeLink | None:
        if not value:
            return None
        return cls(
            parent_session_id=str(value["parent_session_id"]), kind=str(value.get("kind", FORK)),
            fork_version=int(value.get("fork_version", 0)), fork_seq=int(value.get("fork_seq", 0)),
            parent_tool_call_id=value.get("parent_tool_call_id"),
        )


def _plain(value: Any) -> Any:
    """The JSON form of a state value (typed values become what a snapshot stores)."""
    if isinstance(value, CheckpointMark):
        return {"checkpoint_id": value.checkpoint_id, "generation": value.generation,
                "first_retained_seq": value.first_retained_seq}
    if isinstance(value, ToolGroup):
        return {"seq": value.seq, "calls": list(value.calls), "results": [list(r) for r in value.results]}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def inherited_state(parent: Any, closed_groups: Sequence[ToolGroup] | None) -> dict[str, Any]:
    """The parent's state to start a fork from (JSON, what ``Started.inherited`` stores).

    ``closed_groups``: the parent's tool groups behind its checkpoint boundary (ADR
    0051), which the child needs for a command naming an old seq; None when there are
    none (``archived_upto`` 0).
    """
    state = parent.__dict__
    inherited = {key: _plain(state[key]) for key in INHERITED_KEYS if key in state}
    if closed_groups:
        inherited["closed_groups"] = _plain(list(closed_groups))
    return inherited


def born_in_tree(session: Any, parent: dict[str, Any], inherited: dict[str, Any] | None) -> None:
    """The ``Started`` mutator's part for a child (replayed: no validation)."""
    session.__dict__["tree_link"] = dict(parent)
    if not inherited:
        return
    state = copy.deepcopy(inherited)
    closed = state.pop("closed_groups", None)
    for key in INHERITED_KEYS:
        if key in state:
            session.__dict__[key] = state[key]
    session.__dict__["message_count"] = int(state.get("message_count", 0))
    # The closed groups are the child's own from birth: an aggregate replayed from its
    # first event holds them, as a parent replayed from its first event does.
    session._closed_groups = groups_from_json(closed) if closed else []


def link_of(session: Any) -> TreeLink | None:
    return TreeLink.from_json(session.__dict__.get("tree_link"))


def fork_of(
    parent: Any, new_session_id: str, *, created_at: str, command_id: str | None,
    closed_groups: Sequence[ToolGroup] | None, cleared: dict[int, str] | None = None,
) -> Any:
    """A new session, born as ``parent`` is at its version (``parent`` is that state)."""
    if not new_session_id or len(new_session_id) > 256:
        raise InvalidCommand("new_session_id must be 1..256 characters")
    if new_session_id == parent.session_id:
        raise InvalidCommand("a fork needs a new session id, not its parent's")
    if parent.deleted:
        raise SessionDeleted(f"session {parent.session_id!r} is deleted at that version; it cannot be forked")
    link = TreeLink(parent.session_id, FORK, fork_version=parent.version, fork_seq=parent.next_seq - 1)
    inherited = inherited_state(parent, closed_groups)
    if cleared:  # the placeholders of the results cleared by then (the read model's rows)
        inherited["cleared"] = [[seq, text] for seq, text in sorted(cleared.items())]
    return type(parent)(
        session_id=new_session_id, model=parent.model, agent_token_limit=parent.agent_token_limit,
        created_at=created_at, command_id=command_id, parent=link.to_json(), inherited=inherited,
    )


def subagent_link(parent_session_id: str, parent_tool_call_id: str | None) -> dict[str, Any]:
    return TreeLink(parent_session_id, SUBAGENT, parent_tool_call_id=parent_tool_call_id).to_json()


def owner_of(seq: int, chain: Sequence[TreeLink], session_id: str) -> str:
    """Which session's events hold ``seq`` of ``session_id``: ``chain`` is its links,
    the session's own first, then its parent's, up to the root."""
    owner = session_id
    for link in chain:
        if link.kind != FORK or seq > link.fork_seq:
            return owner
        owner = link.parent_session_id
    return owner


def in_any(ranges: Sequence[Sequence[int]], seq: int) -> bool:
    return any(lo <= seq <= hi for lo, hi in ranges)
