"""What each inspector page shows, read through the bus's public queries only.

Every function returns a plain dict for its template; no value is marked safe except
the SVG and the rendered summary, which are built here from escaped pieces.
"""

from __future__ import annotations

import re
from html import escape
from typing import Any

from . import chart
from .reads import audit

SESSIONS_PER_PAGE = 25
EVENTS_PER_PAGE = 50
MESSAGES_PER_PAGE = 50
CHART_EVENTS = 2000
PROJECTION_SHOWN = 200
#: The sessions a filter looks through, at most (list_sessions has no filter of its own).
FILTER_SCAN = 100_000
#: The grid's parts, in the order /info's breakdown lists them, then what is left.
PARTS = ("overhead", "system", "tools", "knowledge", "plan", "summary", "pinned", "history")


class NotFound(LookupError):
    pass


class BadRequest(ValueError):
    """A parameter the page cannot use (the bus refused it, or it is no number): a 400."""


def _ok(envelope: dict[str, Any]) -> dict[str, Any]:
    if not envelope["ok"]:
        code = envelope["error"]["code"]
        # only a missing thing is a 404; a refused value (invalid_command) is the asker's fault
        raise (NotFound if code.endswith("_not_found") else BadRequest)(code)
    return envelope["result"]


def _ask(bus: Any, **command: Any) -> dict[str, Any]:
    return _ok(bus.dispatch_json(audit(command)))


# ------------------------------------------------------------------ sessions
def sessions_page(bus: Any, query: str, page: int) -> dict[str, Any]:
    start = page * SESSIONS_PER_PAGE
    if query:
        wanted = query.casefold()
        found: list[dict[str, Any]] = []
        offset = 0
        while offset < FILTER_SCAN and len(found) <= start + SESSIONS_PER_PAGE:
            batch = _ask(bus, type="list_sessions", limit=1000, offset=offset)["sessions"]
            found += [s for s in batch if wanted in s["session_id"].casefold()]
            if len(batch) < 1000:
                break
            offset += 1000
        rows = found[start:start + SESSIONS_PER_PAGE + 1]
    else:
        rows = _ask(bus, type="list_sessions", limit=SESSIONS_PER_PAGE + 1, offset=start)["sessions"]
    more = len(rows) > SESSIONS_PER_PAGE
    rows = rows[:SESSIONS_PER_PAGE]
    for row in rows:
        row["usage"] = None
        if not row["deleted"]:
            envelope = bus.dispatch_json({"type": "get_context_usage", "session_id": row["session_id"]})
            row["usage"] = envelope["result"] if envelope["ok"] else None
    return {"sessions": rows, "query": query, "page": page, "more": more}


# ------------------------------------------------------------------- session
def grid(usage: dict[str, Any]) -> dict[str, Any]:
    """The window split as /info counts it: the breakdown's parts, free, reserve."""
    window = usage["effective_window_tokens"]
    reserve = usage["reserve_tokens"]
    parts = [(name, usage["breakdown"].get(name, 0)) for name in PARTS]
    parts += [(k, v) for k, v in usage["breakdown"].items() if k not in PARTS]
    used = sum(v for _, v in parts)
    free = max(0, window - reserve - used)
    rows = [{"part": k, "tokens": v, "kind": "used"} for k, v in parts]
    rows += [{"part": "free", "tokens": free, "kind": "free"},
             {"part": "reserve", "tokens": reserve, "kind": "reserve"}]
    total = max(window, used + free + reserve, 1)
    x = 0.0
    for row in rows:
        row["share"] = row["tokens"] / total
        row["x"] = x * 1000
        row["w"] = row["share"] * 1000
        x += row["share"]
    return {"rows": rows, "window": window, "used": used, "threshold": usage["compression_threshold_tokens"],
            "trigger_x": usage["compression_threshold_tokens"] / total * 1000}


def session_page(bus: Any, session_id: str, page: int, chart_page: int, count: Any) -> dict[str, Any]:
    answer = bus.dispatch_json({"type": "get_context_usage", "session_id": session_id})
    if not answer["ok"] and answer["error"]["code"] in ("session_not_found", "invalid_command"):
        _ok(answer)
    # A deleted session keeps its history; a window it no longer fits still has one.
    usage = answer["result"] if answer["ok"] else None
    usage_error = None if answer["ok"] else answer["error"]["code"]
    head = _ask(bus, type="read_session_events", session_id=session_id, limit=1)
    version = head["version"]
    last = max(1, version - page * EVENTS_PER_PAGE)
    first = max(1, last - EVENTS_PER_PAGE + 1)
    # one event past the page too: where the newer page's stretch of time begins
    events = _ask(bus, type="read_session_events", session_id=session_id, from_version=first,
                  limit=last - first + 2)["events"] if page * EVENTS_PER_PAGE < version else []
    newer, events = events[last - first + 1:], events[:last - first + 1]
    checkpoints = _ask(bus, type="list_checkpoints", session_id=session_id)
    attempts = _ask(bus, type="list_compaction_attempts", session_id=session_id, limit=200)["attempts"]
    rows = [describe(e) for e in events]
    if events:  # the failed attempts of this page's stretch of time (their own stream):
        # from its oldest event up to the newer page's oldest, so one between pages is on one
        lo = (events[0]["at"] or "") if first > 1 else ""
        hi = (newer[0]["at"] or "") if newer else "\uffff"
        rows += [failed(a) for a in attempts if a["outcome"] not in ("compacted", "nothing_to_compact")
                 and lo <= a["at"] < hi]
    rows.sort(key=lambda r: (r["at"] or "", r["version"] or 0), reverse=True)
    c_last = max(1, version - chart_page * CHART_EVENTS)
    c_first = max(1, c_last - CHART_EVENTS + 1)
    s = chart.series(bus, session_id, c_first, c_last, count)
    threshold = usage["compression_threshold_tokens"] if usage else None
    return {
        "session_id": session_id, "usage": usage, "usage_error": usage_error,
        "grid": grid(usage) if usage else None, "version": version,
        "events": rows, "page": page,
        "more_events": first > 1, "checkpoints": checkpoints["checkpoints"],
        "attempts": attempts[:50], "chart_svg": chart.svg(s, threshold, usage["effective_window_tokens"] if usage else None),
        "chart": s, "chart_page": chart_page, "more_chart": c_first > 1,
    }


def failed(attempt: dict[str, Any]) -> dict[str, Any]:
    """A failed compaction attempt as a timeline row (no version: not a session event)."""
    text = (f"compaction attempt failed ({attempt['reason']}): {attempt['outcome']}"
            + (f" ({attempt['error_code']})" if attempt["error_code"] not in (None, attempt["outcome"]) else "")
            + f", stage {attempt['stage'] or '—'}, {attempt['duration_ms']:,} ms")
    return {"version": None, "type": "AttemptFailed", "at": attempt["at"], "text": text,
            "seq": None, "checkpoint": None}


def describe(event: dict[str, Any]) -> dict[str, Any]:
    """A timeline row: what happened, in words, and where it links (seq or checkpoint)."""
    p, kind = event["payload"], event["type"]
    text, seq, checkpoint = "", None, None
    if kind == "MessageAppended":
        seq = p["seq"]
        calls = len(p.get("tool_calls") or [])
        text = f"{p['role']} message seq {seq}" + (f", {calls} tool call(s)" if calls else "")
    elif kind == "CheckpointCommitted":
        checkpoint = p["checkpoint_id"]
        text = (f"compaction ({p['trigger_reason']}): {p['tokens_before']:,} → {p['tokens_after']:,} "
                f"tokens, summary of seq ≤ {p['source_max_seq']}, tail from seq {p['first_retained_seq']}")
    elif kind == "CheckpointReverted":
        checkpoint = p["checkpoint_id"]
        text = f"checkpoint reverted; now active: {p.get('now_active') or 'raw history'}"
    elif kind == "HistoryInvalidated":
        text = f"history {p['kind']}: seq " + ", ".join(f"{lo}–{hi}" for lo, hi in p.get("ranges", []))
    elif kind in ("MessagesPinned", "MessagesUnpinned"):
        verb = "pinned" if kind == "MessagesPinned" else "unpinned"
        text = f"{verb} seq " + ", ".join(str(s) for s in p.get("seqs", [])[:20])
    elif kind == "WindowLearned":
        text = f"overflow: {p['provider']}/{p['model']} window learned as {p['window']:,} tokens"
    elif kind == "ToolResultsCleared":
        text = f"{len(p.get('seqs', []))} tool result(s) cleared, {p.get('tokens_freed', 0):,} tokens freed"
    elif kind == "Started":
        text = f"session started with model {p.get('model')}"
    elif kind == "ModelConfigured":
        text = f"model set to {p.get('model')}"
    else:
        text = kind
    return {"version": event["version"], "type": kind, "at": event["at"], "text": text,
            "seq": seq, "checkpoint": checkpoint}


# ---------------------------------------------------------------- checkpoint
CITATION = re.compile(r"\(seqs? (\d+)(?:[–-](\d+))?\)")


def render_summary(text: str, history_url: str) -> str:
    """A summary as HTML: headings, bullet lists, paragraphs; every ``(seq N)`` citation
    links to the message. Each line is escaped before any tag is added."""
    out: list[str] = []
    in_list = False
    for raw in text.splitlines():
        line = raw.rstrip()
        body = CITATION.sub(
            lambda m: f'<a href="{history_url}&amp;from={m.group(1)}#m-{m.group(1)}">{m.group(0)}</a>',
            escape(line.lstrip("-*# ").strip() if line.lstrip().startswith(("-", "*", "#")) else line))
        bullet = line.lstrip().startswith(("- ", "* "))
        if in_list and not bullet:
            out.append("</ul>")
            in_list = False
        if line.startswith("#"):
            level = min(4, 2 + len(line) - len(line.lstrip("#")))
            out.append(f"<h{level}>{body}</h{level}>")
        elif bullet:
            if not in_list:
                out.append("<ul>")
                in_list = True
            out.append(f"<li>{body}</li>")
        elif line.strip():
            out.append(f"<p>{body}</p>")
    if in_list:
        out.append("</ul>")
    return "\n".join(out)


def summary_diff(before: str, after: str) -> dict[str, list[str]]:
    """Lines of the previous summary this one lacks ("forgotten") and new lines ("added"),
    compared without list marks and surrounding blanks."""
    def lines(text: str) -> list[str]:
        return [s for s in (x.strip().lstrip("-* ").strip() for x in text.splitlines()) if s]

    old, new = lines(before), lines(after)
    return {"forgotten": [x for x in old if x not in set(new)], "added": [x for x in new if x not in set(old)]}


def checkpoint_page(bus: Any, session_id: str, checkpoint_id: str, history_url: str) -> dict[str, Any]:
    listing = _ask(bus, type="list_checkpoints", session_id=session_id)["checkpoints"]
    cps = {cp["checkpoint_id"]: cp for cp in listing}
    cp = cps.get(checkpoint_id)
    if cp is None:
        raise NotFound("checkpoint_not_found")
    index = listing.index(cp)
    previous = cps.get(cp["parent_checkpoint_id"] or "") or (listing[index - 1] if index > 0 else None)
    tail = _ask(bus, type="get_history", session_id=session_id, from_seq=cp["first_retained_seq"],
                limit=20, include_invalidated=True)["messages"]
    attempts = _ask(bus, type="list_compaction_attempts", session_id=session_id)["attempts"]
    attempt = _attempt_of(cp, attempts)
    return {
        "session_id": session_id, "cp": cp, "previous": previous, "tail": tail,
        "summary_html": render_summary(cp["summary"], history_url),
        "diff": summary_diff(previous["summary"] if previous else "", cp["summary"]),
        "ledger": cp.get("ledger"), "attempt": attempt,
    }


def _attempt_of(cp: dict[str, Any], attempts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The attempt that made ``cp``: the one that names it. Records written before
    attempts named their checkpoint: one with the same tokens, and of those (a checkpoint
    made again after a revert has the same numbers) the one recorded nearest its commit."""
    from datetime import datetime

    named = [a for a in attempts if a.get("checkpoint_id") == cp["checkpoint_id"]]
    if named:
        return named[0]

    def apart(a: dict[str, Any]) -> float:
        return abs((datetime.fromisoformat(a["at"]) - datetime.fromisoformat(cp["created_at"])).total_seconds())

    same = [a for a in attempts if a["outcome"] in ("compacted", "degraded") and not a.get("checkpoint_id")
            and a["tokens_before"] == cp["tokens_before"] and a["tokens_after"] == cp["tokens_after"]]
    return min(same, key=apart, default=None)


# ------------------------------------------------------------------- history
def history_page(bus: Any, session_id: str, from_seq: int | None, query: str,
                 at_version: int | None) -> dict[str, Any]:
    # the state only: without a checkpoint the projection would be every message
    now = _ask(bus, type="replay_state", session_id=session_id)
    if at_version is not None and at_version > now["version"]:
        raise NotFound("version_not_found")
    last_seq = now["next_seq"] - 1
    start = from_seq if from_seq is not None else max(1, last_seq - MESSAGES_PER_PAGE + 1)
    start = max(1, min(start, max(1, last_seq)))
    messages = _ask(bus, type="get_history", session_id=session_id, from_seq=start,
                    limit=MESSAGES_PER_PAGE, include_invalidated=True)["messages"] if last_seq else []
    pinned, cleared = set(now.get("pinned_seqs", [])), set(now.get("cleared_seqs", []))
    checkpoints = _ask(bus, type="list_checkpoints", session_id=session_id)["checkpoints"]
    active = next((cp for cp in checkpoints if cp["checkpoint_id"] == now["active_checkpoint_id"]), None)
    boundary = active["first_retained_seq"] if active else None
    calls: dict[str, int] = {}
    for m in messages:
        m["pinned"] = m["seq"] in pinned
        m["cleared"] = m["seq"] in cleared
        # only the active checkpoint's summary stands for it (expand: this very page)
        m["summarized"] = boundary is not None and m["seq"] < boundary and not m["pinned"] and not m["invalidated"]
        m["text"] = _text(m["content"])
        for call in m["tool_calls"]:
            calls[call["id"]] = m["seq"]
        m["call_seq"] = calls.get(m["tool_call_id"] or "")
    hits = _ask(bus, type="search_history", session_id=session_id, query=query, limit=50,
                include_invalidated=True)["hits"] if query else None
    replay = None
    if at_version is not None:
        replay = _ask(bus, type="replay_session", session_id=session_id, at_version=at_version)
        replay["shown"] = [{"role": m.get("role", ""), "text": _text(m.get("content")),
                            "calls": [_call(c) for c in m.get("tool_calls") or []]}
                           for m in replay["projection"]["messages"][:PROJECTION_SHOWN]]
    return {
        "session_id": session_id, "messages": messages, "start": start, "last_seq": last_seq,
        "prev_from": max(1, start - MESSAGES_PER_PAGE) if start > 1 else None,
        "next_from": start + MESSAGES_PER_PAGE if start + MESSAGES_PER_PAGE <= last_seq else None,
        "query": query, "hits": hits, "version": now["version"], "at_version": at_version,
        "replay": replay, "checkpoints": checkpoints,
    }


def _call(call: dict[str, Any]) -> dict[str, str]:
    function = call.get("function") or call
    return {"id": str(call.get("id", "")), "name": str(function.get("name", "")),
            "arguments": str(function.get("arguments", ""))}


def _text(content: Any) -> str:
    """Content as text: a string as is, parts as their text (other parts named)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") if p.get("type") == "text" else f"[{p.get('type')}]"
                     for p in content if isinstance(p, dict))
