"""Running the canary sessions through the real bus and scoring what the context keeps.

Two drives:

* ``run_rounds``: a session of 5 rounds compacted once after each round (manual
  ``compact``), the window set so that the compaction threshold is 10, 20 or 30 % of
  the whole generated session; survival per kind per round.
* ``run_conversation``: a long coding conversation driven like the README's host loop
  (append, ``prepare_turn`` after every user message and every tool result) at a given
  window with default settings otherwise; survival per kind at the end.

Both report, for every canary not kept, whether some checkpoint's ``dropped_items``
names its value (each checkpoint lists what left in its own compaction, ADR 0107, so all
of them are read) and whether ``search_history`` finds it; superseded values the summary
still states as current; ``summary_failed`` outcomes; and what a plain truncation to the
same token size keeps.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from context_compaction.application.contracts.settings import Settings

from .canaries import KINDS, Canary, Phrasings, about, flagged, kept, stated_as_current
from .sessions import Session, generate

MODEL = "gpt-4o"
Bootstrap = Callable[..., Any]


def _ok(env: dict[str, Any]) -> dict[str, Any]:
    if not env.get("ok"):
        raise RuntimeError(f"eval command failed: {env.get('error')}")
    return env["result"]


def _text(messages: list[dict[str, Any]]) -> str:
    parts = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts += [p.get("text") or "" for p in content if isinstance(p, dict)]
    return "\n".join(parts)


def _bus(tmp: str, summarizer: str, window: int, context: dict[str, Any], bootstrap: Bootstrap) -> Any:
    settings = Settings(
        database_url=f"sqlite:///{Path(tmp) / 'eval.db'}",
        summarizer=summarizer,
        models={MODEL: {"token_limit": window}},
        context_compaction=context,
    )
    return bootstrap(settings)


class Scorer:
    """Scores one context against the canaries planted so far."""

    def __init__(self, bus: Any, sid: str) -> None:
        self.bus, self.sid = bus, sid
        tokens = bus.services.tokens
        self.count = lambda m: tokens.count_message(m, tokens.encoding_for(MODEL))

    def checkpoints(self) -> list[dict[str, Any]]:
        return _ok(self.bus.dispatch_json({"type": "list_checkpoints", "session_id": self.sid}))["checkpoints"]

    def score(self, canaries: list[Canary], context: str, summary: str, history: list[dict[str, Any]],
              size: int, search: bool = False) -> dict[str, Any]:
        per_cp = [(cp.get("ledger") or {}).get("dropped_items") or [] for cp in self.checkpoints()]
        dropped = [d for items in per_cp for d in items]
        truncated = _text(_truncate(history, size, self.count))
        per_kind: dict[str, list[int]] = {k: [0, 0, 0] for k in KINDS}  # kept, total, truncation kept
        lost, reported, found, current, doubted = [], 0, 0, [], 0
        for c in canaries:
            if c.superseded_by is not None and c.superseded_by in canaries:
                if summary and stated_as_current(c, summary):
                    current.append(c)
                continue
            row = per_kind[c.kind]
            row[1] += 1
            row[2] += kept(c, truncated)
            if kept(c, context):
                row[0] += 1
                doubted += flagged(c, context)
                continue
            lost.append(c)
            # (reported only by a dropped item naming its subject and its value: a value or a
            # subject alone in some other item is another statement)
            if any(about(c, str(d.get("value", ""))) for d in dropped):
                reported += 1
            if search and self._found(c):
                found += 1
        return {
            "per_kind": {k: {"kept": v[0], "total": v[1], "truncation": v[2]} for k, v in per_kind.items()},
            "kept": sum(v[0] for v in per_kind.values()), "total": sum(v[1] for v in per_kind.values()),
            "truncation_kept": sum(v[2] for v in per_kind.values()),
            "lost": len(lost), "lost_reported": reported, "lost_found_by_search": found if search else None,
            "lost_examples": [{"kind": c.kind, "value": c.value, "text": c.text} for c in lost[:6]],
            "superseded_current": len(current),
            "kept_flagged_possibly_superseded": doubted,
            "superseded_current_examples": [c.text for c in current[:3]],
            "dropped_items": len(dropped),
            # (what one checkpoint's report carries at most: ADR 0099 bounds it)
            "dropped_items_max": max(map(len, per_cp), default=0),
        }

    def _found(self, c: Canary) -> bool:
        env = self.bus.dispatch_json({"type": "search_history", "session_id": self.sid, "query": c.value, "limit": 5})
        return bool(env.get("ok")) and bool(env["result"].get("hits"))


def _truncate(history: list[dict[str, Any]], size: int, count: Callable[[dict[str, Any]], int]) -> list[dict[str, Any]]:
    """The newest messages whose tokens fit ``size``: a plain truncation."""
    out: list[dict[str, Any]] = []
    spent = 0
    for m in reversed(history):
        cost = count(m)
        if spent + cost > size:
            break
        out.append(m)
        spent += cost
    return out[::-1]


def _clean(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k != "turn_id"}


def _context(bus: Any, sid: str) -> tuple[str, int, dict[str, Any]]:
    req = _ok(bus.dispatch_json({"type": "prepare_turn", "session_id": sid}))
    return _text(req["messages"]), req["usage"]["estimated_tokens"], req


def session_tokens(session: Session, bootstrap: Bootstrap) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        bus = _bus(tmp, "extractive", 10_000_000, {}, bootstrap)
        try:
            count = Scorer(bus, "-").count
            return sum(count(_clean(m)) for turn in session.turns for m in turn)
        finally:
            bus.close()


def run_rounds(phrasings: Phrasings, *, summarizer: str, share: float, seed: int, bootstrap: Bootstrap,
               rounds: int = 5, turns_per_round: int = 8, tool_chars: int = 3_000) -> dict[str, Any]:
    session = generate(phrasings, seed, rounds=rounds, turns_per_round=turns_per_round, per_kind=1,
                       tool_chars=tool_chars)
    total = session_tokens(session, bootstrap)
    threshold = int(total * share)
    window = threshold * 10 // 9
    context = {"reserve_tokens": window - threshold, "keep_recent_tokens": max(64, threshold // 4)}
    out: dict[str, Any] = {"phrasings": phrasings.name, "share": share, "session_tokens": total,
                           "window": window, "threshold": threshold, "rounds": [], "summary_failed": 0}
    with tempfile.TemporaryDirectory() as tmp:
        bus = _bus(tmp, summarizer, window, context, bootstrap)
        sid = "eval-rounds"
        _ok(bus.dispatch_json({"type": "start_session", "session_id": sid, "model": MODEL}))
        scorer, history = Scorer(bus, sid), []
        try:
            for r in range(rounds):
                turns = [t for t, rr in zip(session.turns, session.rounds) if rr == r]
                for turn in turns:
                    msgs = [_clean(m) for m in turn]
                    _ok(bus.dispatch_json({"type": "append_messages", "session_id": sid, "messages": turn}))
                    history += msgs
                env = bus.dispatch_json({"type": "compact", "session_id": sid})
                status = env["result"]["status"] if env.get("ok") else env["error"]["code"]
                out["summary_failed"] += status == "summary_failed"
                text, size, _ = _context(bus, sid)
                cps = scorer.checkpoints()
                summary = cps[-1]["summary"] if cps else ""
                planted = [c for c in session.canaries if c.round <= r]
                row = scorer.score(planted, text, summary, history, size, search=r == rounds - 1)
                out["rounds"].append({"round": r + 1, "status": status, "context_tokens": size, **row})
        finally:
            bus.close()
    return out


def run_conversation(phrasings: Phrasings, *, summarizer: str, window: int, seed: int, bootstrap: Bootstrap,
                     turns: int = 120, per_kind: int = 4, sessions_tokens: float = 2.5) -> dict[str, Any]:
    """A ``turns``-turn conversation of about ``sessions_tokens`` windows, host-loop driven."""
    tool_chars = max(200, int(window * sessions_tokens * 3.6 / turns) - 400)
    session = generate(phrasings, seed, rounds=per_kind, turns_per_round=turns // per_kind, per_kind=1,
                       tool_chars=tool_chars, update_share=0.3)
    out: dict[str, Any] = {"phrasings": phrasings.name, "window": window, "turns": turns, "compactions": 0,
                           "summary_failed": 0, "restored": 0}
    with tempfile.TemporaryDirectory() as tmp:
        bus = _bus(tmp, summarizer, window, {}, bootstrap)
        sid = "eval-conversation"
        _ok(bus.dispatch_json({"type": "start_session", "session_id": sid, "model": MODEL}))
        scorer, history = Scorer(bus, sid), []

        def prepare() -> None:
            env = bus.dispatch_json({"type": "prepare_turn", "session_id": sid})
            if not env.get("ok"):
                out["summary_failed"] += env["error"]["code"] == "summary_failed"
                return
            comp = env["result"].get("compaction") or {}
            if comp.get("status") == "compacted":
                out["compactions"] += 1
                out["restored"] += (comp.get("ledger") or {}).get("restored", 0)

        try:
            for turn in session.turns:
                for part in (turn[:1], turn[1:3], turn[3:]):
                    _ok(bus.dispatch_json({"type": "append_messages", "session_id": sid, "messages": part}))
                    history += [_clean(m) for m in part]
                    if part is not turn[3:] or turn is session.turns[-1]:
                        prepare()
            text, size, _ = _context(bus, sid)
            cps = scorer.checkpoints()
            summary = cps[-1]["summary"] if cps else ""
            out["session_tokens"] = sum(scorer.count(m) for m in history)
            out.update(scorer.score(session.canaries, text, summary, history, size, search=True))
        finally:
            bus.close()
    return out
