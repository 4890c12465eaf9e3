"""The session chart: estimated prompt tokens per turn over a window of the session's
events, drawn as SVG by the server (no script, no charting library; ADR 0075).

No event stores what a provider counted for each request, so the figure is our local
estimate of the history part of the request after each user message: the active
checkpoint's summary, the pinned messages before its boundary and the visible raw tail
(tool results cleared in stage 1 count less by what the clearing freed). The series is
rebuilt from the session's own events (``read_session_events``); the state before the
window comes from ``replay_state`` at the version before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import Any

from .reads import audit

#: Events of the session the chart reads per request (one page of the window).
EVENTS_PER_READ = 1000
#: Raw messages before the window the starting state may read (its visible tail).
MAX_START_TAIL = 5000

#: Event type -> (marker kind, label) for what the chart marks.
MARKS = {
    "CheckpointCommitted": ("compaction", "compaction"),
    "ToolResultsCleared": ("clearing", "tool results cleared"),
    "HistoryInvalidated": ("invalidation", "history cleared / rewound"),
    "WindowLearned": ("overflow", "overflow recovery (window learned)"),
    "CheckpointReverted": ("revert", "checkpoint reverted"),
}


@dataclass
class Point:
    version: int
    tokens: int


@dataclass
class Mark:
    version: int
    kind: str
    label: str


@dataclass
class Series:
    first_version: int
    last_version: int
    points: list[Point] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)


class _State:
    """The parts of the context the estimate follows, by seq."""

    def __init__(self, count: Any) -> None:
        self.count = count
        self.tokens: dict[int, int] = {}
        self.invalid: list[tuple[int, int]] = []
        self.pinned: set[int] = set()
        self.checkpoints: dict[str, tuple[int, int]] = {}  # id -> (summary tokens, first_retained)
        self.active: str | None = None
        self.parents: list[str | None] = []
        self.clears: list[tuple[int, int]] = []  # (lowest seq, tokens freed)
        self.cached: int | None = None

    def visible(self, seq: int) -> bool:
        return not any(lo <= seq <= hi for lo, hi in self.invalid)

    def total(self) -> int:
        """Summed again only after an event that moves a boundary; an append adds its own
        tokens (a new seq is past every boundary), so a window of n events costs O(n)."""
        if self.cached is None:
            summary, first = self.checkpoints.get(self.active, (0, 1)) if self.active else (0, 1)
            raw = sum(t for s, t in self.tokens.items() if (s >= first or s in self.pinned) and self.visible(s))
            freed = sum(f for lo, f in self.clears if lo >= first)
            self.cached = summary + raw - freed
        return max(0, self.cached)

    def apply(self, kind: str, p: dict[str, Any]) -> None:
        if kind == "MessageAppended":
            tokens = self.count({"role": p.get("role"), "content": p.get("content"),
                                 "tool_calls": p.get("tool_calls")})
            self.tokens[p["seq"]] = tokens
            if self.cached is not None:
                self.cached += tokens
            return
        self.cached = None
        if kind == "CheckpointCommitted":
            self.checkpoints[p["checkpoint_id"]] = (self.count({"role": "user", "content": p["summary"]}),
                                                    p["first_retained_seq"])
            self.parents.append(self.active)
            self.active = p["checkpoint_id"]
        elif kind == "CheckpointReverted":
            self.active = p.get("now_active")
        elif kind == "HistoryInvalidated":
            self.invalid += [(lo, hi) for lo, hi in p.get("ranges", [])]
            self.active = None
        elif kind == "MessagesPinned":
            self.pinned |= set(p.get("seqs", []))
        elif kind == "MessagesUnpinned":
            self.pinned -= set(p.get("seqs", []))
        elif kind == "ToolResultsCleared" and p.get("seqs"):
            self.clears.append((min(p["seqs"]), int(p.get("tokens_freed", 0))))


def series(bus: Any, session_id: str, first: int, last: int, count: Any) -> Series:
    """The estimate after each user message and each marked event of versions
    ``first``..``last``; ``count`` estimates one message's tokens."""
    state = _State(count)
    if first > 1:
        _start_state(bus, session_id, first - 1, state)
    out = Series(first, last)
    version = first
    while version <= last:
        page = _ok(bus.dispatch_json(audit({"type": "read_session_events", "session_id": session_id,
                                      "from_version": version,
                                      "limit": min(EVENTS_PER_READ, last - version + 1)})))
        if not page["events"]:
            break
        for event in page["events"]:
            kind, payload = event["type"], event["payload"]
            state.apply(kind, payload)
            if kind in MARKS:
                mark, label = MARKS[kind]
                if kind == "CheckpointCommitted" and payload.get("trigger_reason") == "overflow":
                    label = "compaction after an overflow"
                out.marks.append(Mark(event["version"], mark, label))
            if (kind == "MessageAppended" and payload.get("role") == "user") or kind in MARKS:
                out.points.append(Point(event["version"], state.total()))
        version = page["events"][-1]["version"] + 1
    return out


def _start_state(bus: Any, session_id: str, version: int, state: _State) -> None:
    replay = _ok(bus.dispatch_json(audit({"type": "replay_state", "session_id": session_id,
                                    "at_version": version})))
    state.pinned = set(replay.get("pinned_seqs", []))
    checkpoints = _ok(bus.dispatch_json(audit({"type": "list_checkpoints", "session_id": session_id})))
    for cp in checkpoints["checkpoints"]:
        state.checkpoints[cp["checkpoint_id"]] = (
            state.count({"role": "user", "content": cp["summary"]}), cp["first_retained_seq"])
    state.active = replay["active_checkpoint_id"]
    first = state.checkpoints.get(state.active, (0, 1))[1] if state.active else 1
    last_seq = replay["next_seq"] - 1
    if last_seq < 1:
        return
    first = max(first, last_seq - MAX_START_TAIL + 1)
    history = _ok(bus.dispatch_json(audit({"type": "get_history", "session_id": session_id,
                                     "from_seq": first, "to_seq": last_seq, "include_invalidated": True})))
    for m in history["messages"]:
        if not m["invalidated"]:
            state.tokens[m["seq"]] = state.count(m)


def _ok(envelope: dict[str, Any]) -> dict[str, Any]:
    if not envelope["ok"]:
        raise LookupError(envelope["error"]["code"])
    return envelope["result"]


# ------------------------------------------------------------------- drawing
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 880, 240, 64, 28, 12
COLORS = {"compaction": "#2f7d32", "clearing": "#8a6d00", "invalidation": "#6a4c93",
          "overflow": "#c62828", "revert": "#1565c0"}


def svg(s: Series, threshold: int | None, window: int | None) -> str:
    """The chart as an inline SVG element: every number and label is escaped."""
    top = max([p.tokens for p in s.points] + [threshold or 0, 1])
    if window and window <= top * 1.25:
        top = max(top, window)
    span = max(1, s.last_version - s.first_version)
    plot_w, plot_h = WIDTH - LEFT - 12, HEIGHT - BOTTOM - TOP

    def x(v: int) -> float:
        return LEFT + (v - s.first_version) / span * plot_w

    def y(t: int) -> float:
        return TOP + plot_h - t / top * plot_h

    parts = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'role="img" aria-label="estimated prompt tokens per turn">']
    for i in range(5):
        t = round(top * i / 4)
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - 12}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#e3e3e3"/>'
                     f'<text x="{LEFT - 6}" y="{y(t) + 4:.1f}" text-anchor="end" class="axis">{t:,}</text>')
    parts.append(f'<text x="{LEFT}" y="{HEIGHT - 6}" class="axis">version {s.first_version:,}</text>'
                 f'<text x="{WIDTH - 12}" y="{HEIGHT - 6}" text-anchor="end" class="axis">'
                 f'version {s.last_version:,}</text>')
    if threshold:
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - 12}" y1="{y(threshold):.1f}" y2="{y(threshold):.1f}" '
                     f'stroke="#c62828" stroke-dasharray="6 4"><title>compaction threshold '
                     f'{threshold:,}</title></line>')
    for m in s.marks:
        parts.append(f'<line class="mark mark-{escape(m.kind)}" x1="{x(m.version):.1f}" x2="{x(m.version):.1f}" '
                     f'y1="{TOP}" y2="{TOP + plot_h}" stroke="{COLORS.get(m.kind, "#555")}" stroke-width="2">'
                     f'<title>{escape(m.label)} at version {m.version:,}</title></line>')
    if s.points:
        line = " ".join(f"{x(p.version):.1f},{y(p.tokens):.1f}" for p in s.points)
        parts.append(f'<polyline fill="none" stroke="#24527a" stroke-width="2" points="{line}"/>')
        for p in s.points[-400:] if len(s.points) > 400 else s.points:
            parts.append(f'<circle cx="{x(p.version):.1f}" cy="{y(p.tokens):.1f}" r="2.5" fill="#24527a">'
                         f'<title>version {p.version:,}: ≈{p.tokens:,} tokens</title></circle>')
    parts.append("</svg>")
    return "".join(parts)
