"""Tool-result clearing, the first compaction stage (issue 17; seed 003's first tier). Pure.

Old tool output is what fills an agent's context, and what it needs least verbatim
once the step that read it is over. Clearing replaces the content of old tool results
with a short placeholder that names the tool, the size and the seq and says the output
is recallable; the raw history keeps every byte. Never cleared: results of protected
tools, results of the newest turn, results inside the keep window (the newest
``keep_recent_tokens`` of the context), and results already smaller than their
placeholder. Only the content changes, so every tool group stays valid: the call and
its result keep their ids and their places.

The placeholder is a function of the stored message alone, so a context rebuilt from
the events after a restart is byte-identical to the one the turn saw.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .budget import Count
from .errors import InvalidCommand
from .messages import MessageRecord
from .toolgroups import ToolGroup

PLACEHOLDER = (
    "[tool result cleared to save context: {tool} output of {chars:,} characters "
    "(about {tokens:,} tokens), message seq {seq}. The full output is kept in the "
    "session history and can be recalled by its seq.]"
)
#: Clearing a result must free at least this many times its placeholder's tokens.
MIN_GAIN = 2


@dataclass(frozen=True)
class ClearingPlan:
    """What to clear: seq -> placeholder, and the tokens that frees (estimated)."""

    placeholders: Mapping[int, str]
    tokens_freed: int

    @property
    def seqs(self) -> list[int]:
        return sorted(self.placeholders)

    def __bool__(self) -> bool:
        return bool(self.placeholders)


def placeholder(record: MessageRecord, tool: str | None, tokens: int) -> str:
    return PLACEHOLDER.format(
        tool=tool or "tool", chars=len(_text(record.get("content"))), tokens=tokens, seq=record["seq"]
    )


def plan_clearing(
    records: Sequence[MessageRecord],
    tokens: Mapping[int, int],
    *,
    keep_recent_tokens: int,
    protected_tools: Collection[str] = (),
    cleared: Collection[int] = (),
    count: Count,
) -> ClearingPlan:
    """The old, unprotected tool results worth clearing in ``records`` (seq order).

    ``tokens`` holds each record's token count; ``cleared`` the seqs cleared before.
    """
    if not records:
        return ClearingPlan({}, 0)
    names = result_tools(records)
    newest_turn = _newest_turn_start(records)
    kept = 0
    inside_keep: set[int] = set()
    for m in reversed(records):
        kept += tokens.get(m["seq"], 0)
        if kept > keep_recent_tokens:
            break
        inside_keep.add(m["seq"])
    out: dict[int, str] = {}
    freed = 0
    for m in records:
        seq = m["seq"]
        if m["role"] != "tool" or seq >= newest_turn or seq in inside_keep or seq in cleared:
            continue
        tool = names.get(seq) or m.get("name")
        if tool in protected_tools:
            continue
        before = tokens.get(seq, 0)
        text = placeholder(m, tool, before)
        after = count(text)
        if before < MIN_GAIN * after:
            continue
        out[seq] = text
        freed += before - after
    return ClearingPlan(out, freed)


def apply_clearing(records: Sequence[MessageRecord], placeholders: Mapping[int, str]) -> list[MessageRecord]:
    """Request-local copies with cleared results' content replaced; the rest untouched."""
    if not placeholders:
        return list(records)
    out: list[MessageRecord] = []
    for m in records:
        text = placeholders.get(m["seq"])
        if text is None or m["role"] != "tool":
            out.append(m)
        else:
            copy = dict(m)
            copy["content"] = text
            out.append(copy)  # type: ignore[arg-type]
    return out


def check_clear_request(
    seqs: Sequence[int],
    placeholders: Sequence[str],
    tokens_freed: int,
    is_visible: Callable[[int], bool],
    find: Callable[[int], ToolGroup | None],
) -> None:
    """What ``Session.clear_tool_results`` accepts: one non-empty placeholder per seq,
    each seq a visible tool result. Raises ``InvalidCommand``."""
    if not seqs or len(seqs) != len(placeholders):
        raise InvalidCommand("clearing needs one placeholder per seq, and at least one seq")
    if isinstance(tokens_freed, bool) or tokens_freed < 0:
        raise InvalidCommand("tokens_freed must be >= 0")
    for seq, text in zip(seqs, placeholders):
        is_seq = isinstance(seq, int) and not isinstance(seq, bool)
        group = find(seq) if is_seq and is_visible(seq) else None
        if group is None or group.seq == seq:
            raise InvalidCommand(f"seq {seq} is not a visible tool result")
        if not isinstance(text, str) or not text:
            raise InvalidCommand("a placeholder must be a non-empty string")


def tool_names(records: Sequence[MessageRecord]) -> dict[str, str]:
    """tool_call_id -> the function name the assistant called."""
    names: dict[str, str] = {}
    for m in records:
        for call in m.get("tool_calls") or ():
            fn = call.get("function") if isinstance(call.get("function"), dict) else call
            if call.get("id") and isinstance(fn, dict) and fn.get("name"):
                names[str(call["id"])] = str(fn["name"])
    return names


def result_tools(records: Sequence[MessageRecord]) -> dict[int, str]:
    """seq of each tool result -> the function name of the call it answers: the newest
    call with its id before it. A call id may be reused once answered (some providers
    send ``call_0`` every turn), so one id -> name map for the whole list would name
    (and protect) an older result by a later call."""
    names: dict[str, str] = {}
    out: dict[int, str] = {}
    for m in records:
        if m["role"] == "tool":
            name = names.get(m.get("tool_call_id") or "")
            if name:
                out[m["seq"]] = name
            continue
        names.update(tool_names([m]))
    return out


def _newest_turn_start(records: Sequence[MessageRecord]) -> int:
    """The seq where the newest turn begins: its first message with the newest turn id,
    or the newest non-steering user message when messages carry no turn ids."""
    last = records[-1]
    if last.get("turn_id"):
        return next(m["seq"] for m in records if m.get("turn_id") == last["turn_id"])
    for m in reversed(records):
        if m["role"] == "user" and not m.get("steering"):
            return m["seq"]
    return records[0]["seq"]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""
