"""ContextProjection (spec §7.1, DESIGN §6): a pure function of
(active checkpoint, visible raw messages, provider identity).

Same inputs give byte-identical provider messages; nothing here calls a provider or
writes anything, so restore (spec §14) is this function over stored data.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .checkpoint import Checkpoint
from .messages import MessageRecord
from .provider_messages import ProviderIdentity, converted

SUMMARY_HEADER = "[Historical conversation summary — reference only, not a new user request]"
SUMMARY_FOOTER = "[End historical conversation summary]"
#: Told to the model with every summary: nothing summarized is gone (issue 16).
RECALL_NOTE = "(Summarized messages stay recallable by seq: recall_history.)"


@dataclass(frozen=True)
class KnownFlat:
    """What a builder learned of its stable messages when it converted them, once each
    (issue 38): ``messages[start:stop]`` are those messages; the ones at ``start + i``
    hold a dict or list for ``i`` in ``calls`` (tool calls only, of the shape
    ``provider_messages.calls_only`` names) or in ``nested`` (any other); all the rest
    are flat.

    Valid for this very ``messages`` list (checked by identity) while nobody changed it:
    the hand-out copy (``handout.py``) reads it instead of looking at every message.
    """

    messages: list[dict[str, Any]]
    start: int
    stop: int
    nested: Sequence[int]
    calls: Sequence[int] = ()

    def moved(self, messages: list[dict[str, Any]], by: int) -> KnownFlat:
        """The same knowledge for ``messages``: this list with ``by`` messages put before it."""
        return KnownFlat(messages, self.start + by, self.stop + by, self.nested, self.calls)


@dataclass
class ContextProjection:
    """The history part of a provider request, and where it came from."""

    messages: list[dict[str, Any]]
    checkpoint_id: str | None
    context_generation: int
    first_raw_seq: int | None
    max_raw_seq: int
    included_seqs: list[int] = field(default_factory=list)
    diagnostics: list[str] = field(default_factory=list)
    summary_included: bool = False
    pinned_seqs: list[int] = field(default_factory=list)
    """Pinned messages shown after the summary block (below ``first_raw_seq``)."""
    pinned_count: int = 0
    """How many provider messages the pinned part has (after the summary block)."""
    known_flat: KnownFlat | None = field(default=None, compare=False, repr=False)
    """Which of ``messages`` are flat, as the builder found them (``None``: not known)."""

    @property
    def raw_start(self) -> int:
        """Index of the first raw-tail message in ``messages``."""
        return (1 if self.summary_included else 0) + self.pinned_count

    def to_result(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "checkpoint_id": self.checkpoint_id,
            "context_generation": self.context_generation,
            "first_raw_seq": self.first_raw_seq,
            "max_raw_seq": self.max_raw_seq,
            "diagnostics": list(self.diagnostics),
        }


def summary_message(summary: str) -> dict[str, Any]:
    """The summary block: a user message framed as reference material (spec §7.1)."""
    return {
        "role": "user",
        "content": f"{SUMMARY_HEADER}\n{summary.strip()}\n{RECALL_NOTE}\n{SUMMARY_FOOTER}",
    }


def summary_block(checkpoint: Checkpoint, identity: ProviderIdentity | None) -> dict[str, Any]:
    """The message that stands for ``checkpoint`` in a request (ADR 0039): its
    provider-native state, verbatim, to the provider and model that made it; the
    readable summary block to every other (and to no identity at all: audits, replay).
    """
    state = checkpoint.provider_state
    if state is not None and identity is not None and identity.matches(dict(state)):
        return copy.deepcopy(dict(state["message"]))  # the caller's own copy
    return summary_message(checkpoint.summary)


def checkpoint_problem(
    checkpoint: Checkpoint | None, tail: Sequence[MessageRecord]
) -> str | None:
    """Why an active checkpoint cannot be used (spec §14), or None when it can."""
    if checkpoint is None:
        return None
    if not checkpoint.summary.strip():
        return f"checkpoint {checkpoint.checkpoint_id} has an empty summary"
    if checkpoint.first_retained_seq < 1:
        return f"checkpoint {checkpoint.checkpoint_id} has an illegal boundary"
    if not tail or tail[0]["seq"] != checkpoint.first_retained_seq:
        return (
            f"checkpoint {checkpoint.checkpoint_id} boundary seq "
            f"{checkpoint.first_retained_seq} is not a visible message"
        )
    return None


def build_projection(
    *,
    checkpoint: Checkpoint | None,
    messages: Sequence[MessageRecord],
    context_generation: int,
    identity: ProviderIdentity | None,
    diagnostics: Sequence[str] = (),
    pinned: Sequence[MessageRecord] = (),
) -> ContextProjection:
    """Summary block (if any) + pinned messages below its boundary + the given visible
    raw messages, tool chains repaired.

    ``messages`` must be the visible raw messages from ``first_retained_seq`` on (all
    visible ones when ``checkpoint`` is None), in seq order; ``pinned`` the pinned
    visible ones (those below the boundary are shown).
    """
    repaired, notes = repair_tool_chains(messages)
    out: list[dict[str, Any]] = []
    if checkpoint is not None:
        out.append(summary_block(checkpoint, identity))
    held, held_seqs, held_notes = pinned_part(checkpoint, pinned, identity)
    out.extend(held)
    out.extend(converted(repaired, identity)[0])
    seqs = [m["seq"] for m in repaired]
    return ContextProjection(
        messages=out,
        checkpoint_id=checkpoint.checkpoint_id if checkpoint else None,
        context_generation=context_generation,
        first_raw_seq=seqs[0] if seqs else None,
        max_raw_seq=max(seqs) if seqs else 0,
        included_seqs=seqs,
        diagnostics=[*diagnostics, *held_notes, *notes],
        summary_included=checkpoint is not None,
        pinned_seqs=held_seqs,
        pinned_count=len(held),
    )


def pinned_part(
    checkpoint: Checkpoint | None,
    pinned: Sequence[MessageRecord],
    identity: ProviderIdentity | None,
) -> tuple[list[dict[str, Any]], list[int], list[str]]:
    """The pinned messages below the checkpoint's boundary, verbatim and in seq order,
    for after the summary block (issue 16). Without a checkpoint every visible message
    is in the tail already: nothing."""
    if checkpoint is None or not pinned:
        return [], [], []
    below = [m for m in pinned if m["seq"] < checkpoint.first_retained_seq]
    repaired, notes = repair_tool_chains(below)
    return converted(repaired, identity)[0], [m["seq"] for m in repaired], notes


def repair_tool_chains(
    messages: Sequence[MessageRecord],
) -> tuple[list[MessageRecord], list[str]]:
    """Make the tool chains legal for a provider request (request-local copies only).

    * a tool result must directly follow the assistant call group it answers: a
      message that arrived between the results of one group (steering) moves after
      the group's last result;
    * a tool result that answers no preceding call is dropped;
    * a call that never got a result is removed from the assistant copy (the
      assistant is dropped if nothing is left of it).
    """
    out: list[MessageRecord] = []
    notes: list[str] = []
    messages = _pull_late_results(messages, notes)
    deferred: list[MessageRecord] = []
    open_ids: dict[str, None] = {}
    assistant_index = -1
    answered: set[str] = set()

    def close_group() -> None:
        nonlocal open_ids, deferred, answered
        if open_ids:
            _strip_unanswered(out, assistant_index, answered, notes)
        out.extend(deferred)
        deferred, open_ids, answered = [], {}, set()

    for message in messages:
        role = message["role"]
        if role == "tool":
            call_id = message["tool_call_id"]
            if call_id in open_ids:
                out.append(message)
                del open_ids[call_id]
                answered.add(call_id)
                if not open_ids:
                    close_group()
            else:
                notes.append(f"dropped tool result seq {message['seq']}: it answers no open call")
            continue
        if open_ids:
            if role == "user":
                notes.append(
                    f"moved seq {message['seq']} after the tool results of seq "
                    f"{out[assistant_index]['seq']}"
                )
                deferred.append(message)
                continue
            close_group()
        out.append(message)
        if role == "assistant" and message["tool_calls"]:
            assistant_index = len(out) - 1
            open_ids = {c["id"]: None for c in message["tool_calls"]}
            answered = set()
    close_group()
    return out, notes


def _pull_late_results(messages: Sequence[MessageRecord], notes: list[str]) -> Sequence[MessageRecord]:
    """A result that arrived after later assistant messages (a sub-agent's, a human
    confirmation's, issue 42) moves up to its call, so that it pairs with it instead
    of being dropped with it; results that follow their group stay where they are."""
    call_at: dict[str, int] = {}
    late: dict[int, list[MessageRecord]] = {}
    pulled: set[int] = set()
    last_assistant = -1
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            for call in message["tool_calls"] or ():
                call_at[call["id"]] = index
            last_assistant = index
        elif message["role"] == "tool":
            at = call_at.pop(message["tool_call_id"] or "", None)  # (its first result only)
            if at is not None and at != last_assistant:
                late.setdefault(at, []).append(message)
                pulled.add(index)
                notes.append(f"moved tool result seq {message['seq']} up to its call at seq {messages[at]['seq']}")
    if not late:
        return messages
    out: list[MessageRecord] = []
    for index, message in enumerate(messages):
        if index in pulled:
            continue
        out.append(message)
        out.extend(late.get(index, ()))
    return out


def _strip_unanswered(
    out: list[MessageRecord], index: int, answered: set[str], notes: list[str]
) -> None:
    assistant = out[index]
    kept = [c for c in assistant["tool_calls"] if c["id"] in answered]
    for call in assistant["tool_calls"]:
        if call["id"] not in answered:
            notes.append(f"dropped unanswered tool call {call['id']!r} of seq {assistant['seq']}")
    if kept or assistant["content"]:
        copy = dict(assistant)
        copy["tool_calls"] = kept
        out[index] = copy  # type: ignore[assignment]
    else:
        del out[index]




def closed_prefix_length(messages: Sequence[MessageRecord]) -> int:
    """The longest prefix after which no tool-call group is open and nothing is deferred.

    Repairing such a prefix gives the same output whatever follows it, so it can be
    projected once and kept (see :class:`ProjectionBuilder`).
    """
    open_ids: set[str] = set()
    # Calls a later assistant message left unanswered: a result may still come and
    # move up to its call (issue 42), so nothing after such a call is stable yet.
    waiting: set[str] = set()
    deferred = False
    closed = 0
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            open_ids.discard(message["tool_call_id"] or "")
            waiting.discard(message["tool_call_id"] or "")
            if not open_ids:
                deferred = False
        elif open_ids and role == "user":
            deferred = True
        else:
            if open_ids:
                waiting |= open_ids
                open_ids, deferred = set(), False
            if role == "assistant" and message["tool_calls"]:
                open_ids = {c["id"] for c in message["tool_calls"]}
        if not open_ids and not deferred and not waiting:
            closed = index + 1
    return closed


class ProjectionBuilder:
    """The projection of a growing list of visible messages, built incrementally.

    Messages up to the last point where every tool group is closed are repaired and
    converted once ("stable"); only the open remainder is redone per request. The
    result equals :func:`build_projection` over all messages (a property test pins it).
    """

    def __init__(self, identity: ProviderIdentity | None) -> None:
        self.identity = identity
        self._stable_records: list[MessageRecord] = []
        self._stable_messages: list[dict[str, Any]] = []
        self._stable_nested: list[int] = []
        self._stable_calls: list[int] = []
        """Indexes in ``_stable_messages`` of the ones holding a dict or list (``KnownFlat``)."""
        self._stable_seqs: list[int] = []
        self._stable_notes: list[str] = []
        self._stable_max = 0
        self._pending: list[MessageRecord] = []
        self._sums: dict[str, tuple[int, int]] = {}
        self._chain: list[bytes] = []

    @property
    def open_records(self) -> Sequence[MessageRecord]:
        """The records after the last point where every tool group was closed: the only
        place a call can still wait for its result (ADR 0082)."""
        return self._pending

    def extend(self, messages: Sequence[MessageRecord]) -> None:
        if not messages:
            return
        self._pending.extend(messages)
        split = closed_prefix_length(self._pending)
        if split:
            repaired, notes = repair_tool_chains(self._pending[:split])
            self._stable_records.extend(repaired)
            provider, calls, nested = converted(repaired, self.identity)
            known = len(self._stable_messages)
            self._stable_messages.extend(provider)
            self._stable_calls.extend(known + index for index in calls)
            self._stable_nested.extend(known + index for index in nested)
            self._stable_seqs.extend(m["seq"] for m in repaired)
            self._stable_max = max(self._stable_max, *(m["seq"] for m in repaired), 0)
            self._stable_notes.extend(notes)
            del self._pending[:split]

    def build(
        self,
        *,
        checkpoint: Checkpoint | None,
        context_generation: int,
        diagnostics: Sequence[str] = (),
        pinned: Sequence[MessageRecord] = (),
    ) -> ContextProjection:
        repaired, notes = repair_tool_chains(self._pending)
        messages: list[dict[str, Any]] = [summary_block(checkpoint, self.identity)] if checkpoint else []
        held, held_seqs, held_notes = pinned_part(checkpoint, pinned, self.identity)
        messages.extend(held)
        start = len(messages)
        messages.extend(self._stable_messages)
        # (a copy of the indexes: a later ``extend`` by another command appends to them)
        known = KnownFlat(messages, start, len(messages), self._stable_nested[:], self._stable_calls[:])
        messages.extend(converted(repaired, self.identity)[0])
        seqs = self._stable_seqs + [m["seq"] for m in repaired]
        return ContextProjection(
            messages=messages,
            checkpoint_id=checkpoint.checkpoint_id if checkpoint else None,
            context_generation=context_generation,
            first_raw_seq=seqs[0] if seqs else None,
            max_raw_seq=max(self._stable_max, max((m["seq"] for m in repaired), default=0)),
            included_seqs=seqs,
            diagnostics=[*diagnostics, *held_notes, *self._stable_notes, *notes],
            summary_included=checkpoint is not None,
            pinned_seqs=held_seqs,
            pinned_count=len(held),
            known_flat=known,
        )

    def history_tokens(self, projection: ContextProjection, tokens: dict[int, int], key: str) -> int:
        """Sum of per-message tokens over ``projection`` (built by this builder), adding
        up the stable part only once per encoding ``key``."""
        done, total = self._sums.get(key, (0, 0))
        stable = self._stable_seqs
        if done < len(stable):
            total += sum(tokens.get(seq, 0) for seq in stable[done:])
            done = len(stable)
            self._sums[key] = (done, total)
        rest = projection.included_seqs[len(stable) :]
        return total + sum(tokens.get(seq, 0) for seq in rest)

    def history_digest(self, projection: ContextProjection, count: int) -> str:
        """A digest of the first ``count`` raw (non-summary) messages of ``projection``
        (built by this builder); chained, so the stable part is hashed once."""
        raw = projection.messages[projection.raw_start :]
        if count > len(raw):
            raise ValueError("count exceeds the projection's raw messages")
        stable = min(count, len(self._stable_messages))
        while len(self._chain) < stable:
            previous = self._chain[-1] if self._chain else b""
            self._chain.append(_chain(previous, self._stable_messages[len(self._chain)]))
        digest = self._chain[stable - 1] if stable else b""
        for message in raw[stable:count]:
            digest = _chain(digest, message)
        return digest.hex()


def _chain(previous: bytes, message: dict[str, Any]) -> bytes:
    text = json.dumps(message, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(previous + text, digest_size=16).digest()
