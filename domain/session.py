"""The Session aggregate: the immutable raw history of one agent session.

Every public method validates first and triggers events last, so a refused command
emits nothing. The ``@event`` methods are the mutators; they run again on replay and
therefore never validate and never depend on settings (ADR 0001).

The state holds counters, open tool calls, tool-group extents, invalidated ranges,
the active checkpoint pointer and a window of recent command ids. Message bodies
live only in the events and the read model, so snapshots stay small (DESIGN §3).
Closed tool groups behind a checkpoint boundary leave the state a snapshot carries
(ADR 0051), so what an append loads is bounded by the open work, not by the history.
The state's accessors are in ``session_state.py``, the rules in pure modules
(``pins``, ``toolgroups``, ``checkpoint``, ``clearing``); here: events, thin commands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from .checkpoint import Checkpoint, CheckpointMark, check_commit
from .clearing import check_clear_request
from .errors import InvalidCommand
from .messages import Message
from .pins import pin_scope, pins_of_append
from .session_state import SessionState
from .tree import born_in_tree
from .toolgroups import check_tool_chain, invalidation_ranges, merge_ranges, split_group_seq

__all__ = ["Invalidation", "Session", "session_aggregate_id"]

SESSION_NAMESPACE = UUID("7d1c2f0e-4b7a-5c55-9a53-3f0c9b6e2a11")


def session_aggregate_id(session_id: str) -> UUID:
    """Deterministic aggregate id from the natural key (uuid5)."""
    return uuid5(SESSION_NAMESPACE, session_id)


class Session(SessionState, Aggregate):
    TOPIC = "context_compaction:Session"

    class Created(Aggregate.Created):
        # Unused (``Started`` is the creation event) but every nested event class of
        # an aggregate with an explicit topic needs one.
        TOPIC = "context_compaction:Session.Created"

    @staticmethod
    def create_id(session_id: str) -> UUID:
        return session_aggregate_id(session_id)

    # ------------------------------------------------------------------ start
    @classmethod
    def start(
        cls,
        session_id: str, model: str, agent_token_limit: int | None, created_at: str,
        command_id: str | None = None, parent: dict[str, Any] | None = None,
    ) -> Session:
        if not session_id or len(session_id) > 256:
            raise InvalidCommand("session_id must be 1..256 characters")
        if not model:
            raise InvalidCommand("model must not be empty")
        _check_limit(agent_token_limit)
        return cls(
            session_id=session_id, model=model, agent_token_limit=agent_token_limit,
            created_at=created_at, command_id=command_id, **({"parent": parent} if parent else {}),
        )

    @event("Started", topic="context_compaction:Session.Started")
    def __init__(
        self,
        session_id: str, model: str, agent_token_limit: int | None, created_at: str,
        command_id: str | None,
        parent: dict[str, Any] | None = None,  # issue 42: absent from older events
        inherited: dict[str, Any] | None = None,  # issue 42: a fork's state at birth
    ) -> None:
        self.session_id = session_id
        self.start_command_id = command_id
        self.model = model
        self.agent_token_limit = agent_token_limit
        self.created_at = created_at
        self.next_seq = 1
        self.message_count = 0
        self.context_generation = 0
        self.active_checkpoint = None
        self.checkpoint_count = 0
        self.invalidated = []
        self.open_calls = {}
        self.tool_groups = []
        self._closed_groups = []  # (a slot: see SessionState)
        self.recent_commands = {}
        self.deleted = False
        if parent is not None:
            born_in_tree(self, parent, inherited)

    # ------------------------------------------------------------ configure
    def configure(
        self,
        *, model: str | None, agent_token_limit: int | None, set_limit: bool, created_at: str,
    ) -> None:
        self._ensure_live()
        if model is not None and not model:
            raise InvalidCommand("model must not be empty")
        _check_limit(agent_token_limit)
        new_model = model if model is not None else self.model
        new_limit = agent_token_limit if set_limit else self.agent_token_limit
        if new_model == self.model and new_limit == self.agent_token_limit:
            return
        self._configured(model=new_model, agent_token_limit=new_limit, created_at=created_at)

    @event("ModelConfigured", topic="context_compaction:Session.ModelConfigured")
    def _configured(self, model: str, agent_token_limit: int | None, created_at: str) -> None:
        self.model = model
        self.agent_token_limit = agent_token_limit

    # --------------------------------------------------------------- append
    def append_messages(
        self,
        messages: Sequence[Message], *, command_id: str | None, created_at: str,
        created_ats: Sequence[str] | None = None, producer: tuple[str, str] | None = None,
        command_generated: bool = False,
    ) -> list[int]:
        """Assign seqs and record the messages; returns their seqs.

        A command id seen before returns the seqs it got then and records nothing.
        ``created_ats`` (one per message) keeps original times, e.g. of imported history.
        ``producer`` (provider, model) produced the assistant messages: their provider
        output fields are bound to it (default: the session's model). A
        ``command_generated`` id was made by us, not given by the host (ADR 0019).
        """
        if created_ats is not None and len(created_ats) != len(messages):
            raise InvalidCommand("created_ats must give one time per message")
        self._ensure_live()
        if command_id is not None:
            earlier = self.seqs_for_command(command_id)
            if earlier is not None:
                return earlier
        if not messages:
            raise InvalidCommand("messages must not be empty")
        check_tool_chain(messages, self.open_calls, self.next_seq)
        seqs = []
        timestamp = Session.MessageAppended.create_timestamp()
        by = producer or ("unknown", self.model)
        for index, message in enumerate(messages):
            seqs.append(self.next_seq)
            self._record_message(
                Session.MessageAppended,
                message.to_record(by),
                command_id,
                created_ats[index] if created_ats is not None else created_at,
                timestamp,
                command_generated,
            )
        if self.pinned_seqs or any(m.pinned for m in messages):
            new = pins_of_append(messages, seqs, self.pinned_seqs, self.is_visible, self.group_finder())
            if new:
                self._messages_pinned(seqs=new, created_at=created_at)
        return seqs

    @event("MessageAppended", topic="context_compaction:Session.MessageAppended")
    def _message_appended(
        self,
        seq: int, role: str, content: Any, reasoning: str | None, tool_calls: list[dict[str, Any]],
        tool_call_id: str | None, name: str | None, turn_id: str | None, steering: bool,
        provider_state: dict[str, Any] | None, command_id: str | None, created_at: str,
        command_generated: bool,
    ) -> None:
        self._apply_message(seq, role, tool_calls, tool_call_id, command_id)

    # ------------------------------------------------------------------ pins
    def pin(self, seqs: Sequence[int], *, created_at: str) -> list[int]:
        """Pin visible messages with their whole tool groups (issue 16); returns every
        pinned seq. Pins do not move ``context_generation``: a summary stays true."""
        self._ensure_live()
        new = sorted(pin_scope(seqs, self.is_visible, self.group_finder()) - set(self.pinned_seqs))
        if new:
            self._messages_pinned(seqs=new, created_at=created_at)
        return list(self.pinned_seqs)

    def unpin(self, seqs: Sequence[int], *, created_at: str) -> list[int]:
        self._ensure_live()
        gone = sorted(pin_scope(seqs, self.is_visible, self.group_finder()) & set(self.pinned_seqs))
        if gone:
            self._messages_unpinned(seqs=gone, created_at=created_at)
        return list(self.pinned_seqs)

    @event("MessagesPinned", topic="context_compaction:Session.MessagesPinned")
    def _messages_pinned(self, seqs: list[int], created_at: str) -> None:
        self._keep("pinned", sorted({*self.pinned_seqs, *seqs}))

    @event("MessagesUnpinned", topic="context_compaction:Session.MessagesUnpinned")
    def _messages_unpinned(self, seqs: list[int], created_at: str) -> None:
        gone = set(seqs)
        self._keep("pinned", [s for s in self.pinned_seqs if s not in gone])

    # ----------------------------------------------------------- invalidate
    def invalidate(
        self,
        *, kind: str, to_seq: int | None = None, seqs: Sequence[int] | None = None,
        expand_tool_groups: bool = False, reason: str = "", created_at: str,
    ) -> Invalidation:
        """Exclude seqs from the projection (clear / rewind / delete), spec §6.3, §12.3.

        A rewind that excludes nothing is not a change of history and records nothing.
        """
        self._ensure_live()
        ranges = invalidation_ranges(kind, self.max_seq, to_seq, seqs, self.group_finder(),
                                     self.is_visible, expand_tool_groups)
        if ranges is None:
            return Invalidation(self.context_generation, [])
        if self.needs_closed_groups(ranges, merge_ranges([*self.invalidated, *ranges])):
            self._closed_or_history()  # its event may reopen calls of closed groups: they must be held
        self._history_invalidated(
            kind=kind, ranges=ranges, reason=reason, generation=self.context_generation + 1,
            created_at=created_at,
        )
        return Invalidation(self.context_generation, ranges)

    @event("HistoryInvalidated", topic="context_compaction:Session.HistoryInvalidated")
    def _history_invalidated(
        self,
        kind: str, ranges: list[list[int]], reason: str, generation: int, created_at: str,
    ) -> None:
        self.invalidated = merge_ranges([*self.invalidated, *ranges])
        self.context_generation = generation
        self.active_checkpoint = None
        self._keep("checkpoint_parents", [])
        self._hide_invalidated_groups(ranges)
        if self.pinned_seqs:  # an invalidated message is no longer pinned (ADR 0033)
            self._keep("pinned", [s for s in self.pinned_seqs if self.is_visible(s)])

    # ----------------------------------------------------------- checkpoint
    def commit_checkpoint(self, checkpoint: Checkpoint) -> int:
        """Make ``checkpoint`` active: the generation CAS of spec §12.1 (DESIGN §4).

        Its ``generation`` must be the session's next one (else ``StaleCandidate``); its
        parent is recorded as the active checkpoint. Returns the new generation.
        """
        self._ensure_live()
        active = self.active_checkpoint
        if active is not None and active.checkpoint_id == checkpoint.checkpoint_id:
            return self.context_generation  # already committed (a retried, acknowledged-late commit)
        check_commit(checkpoint, self.context_generation, active, self.is_visible, lambda seq: split_group_seq(
            self.tool_groups, seq, self.archived_upto, self._closed_or_history))
        record = checkpoint.to_record()
        # The parent is the checkpoint active now, whatever the candidate saw (its
        # context may have set aside an unusable checkpoint, spec §14).
        record["parent_checkpoint_id"] = active.checkpoint_id if active else None
        self._checkpoint_committed(**record)
        return self.context_generation

    @event("CheckpointCommitted", topic="context_compaction:Session.CheckpointCommitted")
    def _checkpoint_committed(
        self,
        checkpoint_id: str,
        generation: int,
        parent_checkpoint_id: str | None,
        summary: str, first_retained_seq: int, source_max_seq: int, trigger_reason: str,
        provider_kind: str, model: str, tokens_before: int, tokens_after: int, degraded: bool,
        summary_source: dict[str, Any], created_at: str,
        ledger: dict[str, Any] | None = None,  # issue 16: absent from older events
        provider_state: dict[str, Any] | None = None,  # ADR 0039: absent from older events
    ) -> None:
        previous = self.active_checkpoint
        self._keep("checkpoint_parents", [*self.checkpoint_parents, previous] if previous else [])
        self.active_checkpoint = CheckpointMark(checkpoint_id, generation, first_retained_seq)
        self.context_generation = generation
        self.checkpoint_count += 1
        # Groups behind the new boundary that no result can join any more are packed:
        # only a command naming an old seq reads them again (ADR 0051).
        self._archive_closed(first_retained_seq)

    # ---------------------------------------------------------------- revert
    def revert_checkpoint(self, checkpoint_id: str, *, command_id: str | None, created_at: str) -> int:
        """Withdraw the active checkpoint (issue 16): the projection returns to its
        parent, or to raw history when there is none since the last invalidation. The
        generation moves, so a candidate built on it goes stale. Returns the generation.
        """
        self._ensure_live()
        active = self.active_checkpoint
        if active is None or active.checkpoint_id != checkpoint_id:
            raise InvalidCommand(
                f"checkpoint {checkpoint_id!r} is not the active checkpoint; only the active one can be reverted",
                details={"active_checkpoint_id": active.checkpoint_id if active else None},
            )
        parents = self.checkpoint_parents
        self._checkpoint_reverted(
            checkpoint_id=checkpoint_id, now_active=parents[-1].checkpoint_id if parents else None,
            generation=self.context_generation + 1, command_id=command_id, created_at=created_at,
        )
        return self.context_generation

    @event("CheckpointReverted", topic="context_compaction:Session.CheckpointReverted")
    def _checkpoint_reverted(
        self,
        checkpoint_id: str, now_active: str | None, generation: int, command_id: str | None,
        created_at: str,
    ) -> None:
        # Follow the event: the parent it names, found among the known ancestors.
        parents = self.checkpoint_parents
        found = [i for i, mark in enumerate(parents) if mark.checkpoint_id == now_active]
        if found:
            self.active_checkpoint = parents[found[-1]]
            self._keep("checkpoint_parents", parents[: found[-1]])
        else:
            self.active_checkpoint = None
            self._keep("checkpoint_parents", [])
        self.context_generation = generation

    # --------------------------------------------------------- learned window
    def learn_window(
        self,
        *, provider: str, model: str, window: int, prompt_tokens: int | None,
        estimated_tokens: int | None, created_at: str,
    ) -> None:
        """Record the context window a provider reported in an overflow error (spec §11.3).

        ``window`` is the provider's own number; ``prompt_tokens`` (what the provider
        counted for the refused request) and ``estimated_tokens`` (our count of the same
        request) let a budget express it in our units. It does not move
        ``context_generation``: a budget input, not context content (DESIGN §15).
        """
        self._ensure_live()
        if not provider or not model:
            raise InvalidCommand("a learned window needs its provider and model")
        for name, value in (("window", window), ("prompt_tokens", prompt_tokens),
                            ("estimated_tokens", estimated_tokens)):
            if value is not None and (isinstance(value, bool) or value <= 0):
                raise InvalidCommand(f"{name} must be a positive integer")
        self._window_learned(
            provider=provider, model=model, window=window, prompt_tokens=prompt_tokens,
            estimated_tokens=estimated_tokens, created_at=created_at,
        )

    @event("WindowLearned", topic="context_compaction:Session.WindowLearned")
    def _window_learned(
        self,
        provider: str, model: str, window: int, prompt_tokens: int | None,
        estimated_tokens: int | None, created_at: str,
    ) -> None:
        # Kept for a fork, whose child starts with the windows learned so far (issue 42).
        learned = dict(self.__dict__.get("learned", {}))
        learned[model] = {"provider": provider, "model": model, "window": window,
                          "prompt_tokens": prompt_tokens, "estimated_tokens": estimated_tokens}
        self._keep_value("learned", learned)

    # ------------------------------------------------------ tool-result clearing
    def clear_tool_results(
        self,
        *, seqs: Sequence[int], placeholders: Sequence[str], tokens_freed: int, created_at: str,
    ) -> None:
        """Record that the content of old tool results is replaced by a placeholder in
        every projection from now on (issue 17, stage 1; DESIGN §15).

        The raw messages are untouched. It does not move ``context_generation``: a
        summary candidate reads the raw text either way, so one in flight stays valid.
        The placeholders are stored (not recomputed) so a restart restores the same bytes.
        """
        self._ensure_live()
        check_clear_request(seqs, placeholders, tokens_freed, self.is_visible, self.group_finder())
        self._tool_results_cleared(
            seqs=list(seqs), placeholders=list(placeholders), tokens_freed=tokens_freed,
            created_at=created_at,
        )

    @event("ToolResultsCleared", topic="context_compaction:Session.ToolResultsCleared")
    def _tool_results_cleared(
        self, seqs: list[int], placeholders: list[str], tokens_freed: int, created_at: str
    ) -> None:
        pass  # applied by every projection through the read model; no aggregate rule reads it

    # --------------------------------------------------------------- import
    def record_import(
        self,
        *, source: str, imported_messages: int, skipped_messages: int, legacy_seq_upto: int,
        last_compressed_message_at: int | None, created_at: str,
    ) -> None:
        """Note that history was imported from a legacy store (spec §15).

        ``last_compressed_message_at`` is kept as a diagnostic only: it never sets a
        checkpoint boundary (lazy migration).
        """
        self._ensure_live()
        self._legacy_imported(
            source=source, imported_messages=imported_messages, skipped_messages=skipped_messages,
            legacy_seq_upto=legacy_seq_upto, last_compressed_message_at=last_compressed_message_at,
            created_at=created_at,
        )

    @event("LegacyImported", topic="context_compaction:Session.LegacyImported")
    def _legacy_imported(
        self,
        source: str, imported_messages: int, skipped_messages: int, legacy_seq_upto: int,
        last_compressed_message_at: int | None, created_at: str,
    ) -> None:
        self.legacy_last_compressed_message_at = last_compressed_message_at

    # --------------------------------------------------------------- delete
    def delete(self, *, created_at: str) -> None:
        self._ensure_live()
        self._deleted(created_at=created_at)

    @event("Deleted", topic="context_compaction:Session.Deleted")
    def _deleted(self, created_at: str) -> None:
        self.deleted = True

    def purge(self, *, created_at: str) -> None:
        """Record that the session's content is erased (issue 35, ADR 0072): a deleted
        session, or a live one, which it deletes. The store rewrites the content of its
        events in the same command; what remains is that it existed and was purged.
        Again on a purged session: recorded again, the erasure runs again (harmless)."""
        self._purged(created_at=created_at)

    @event("Purged", topic="context_compaction:Session.Purged")
    def _purged(self, created_at: str) -> None:
        self.deleted = True
        self.__dict__["purged"] = True  # (its forks' parent may be purged after it, ADR 0081)


@dataclass(frozen=True)
class Invalidation:
    generation: int
    ranges: list[list[int]]


def _check_limit(limit: int | None) -> None:
    if limit is not None and (isinstance(limit, bool) or limit <= 0):
        raise InvalidCommand("agent_token_limit must be a positive integer or null")


def _upcast_message_v1_v2(state: dict[str, Any]) -> None:
    """Before class version 2, generated command ids were told apart by their ``auto_``
    prefix only (a host id with that prefix was mistaken for one, ADR 0019)."""
    command_id = state.get("command_id")
    state["command_generated"] = isinstance(command_id, str) and command_id.startswith("auto_")


# Version 2 marks generated command ids explicitly (``command_generated``); stored
# version-1 events are upcast on read. The class is made by ``@event``, so the
# version and its upcaster are set here, once, at import.
Session.MessageAppended.class_version = 2  # type: ignore[attr-defined]
Session.MessageAppended.upcast_v1_v2 = staticmethod(_upcast_message_v1_v2)  # type: ignore[attr-defined]
