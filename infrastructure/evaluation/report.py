"""``evaluate``: every drive of ``ctxc eval`` for one summarizer, and its Markdown report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .blind import BLIND
from .blind2 import BLIND2
from .blind3 import BLIND3
from .blind4 import BLIND4
from .blind5 import BLIND5
from .canaries import KINDS
from .fresh import FRESH
from .harness import Bootstrap, run_conversation, run_rounds
from .heldout import HELD_OUT
from .phrasings import TUNING
from .review3 import REVIEW
from .spoken import SPOKEN

SHARES = (0.1, 0.2, 0.3)
WINDOWS = (8_000, 32_000, 128_000)
SETS = {"tuning": TUNING, "held-out": HELD_OUT, "review": REVIEW, "spoken": SPOKEN, "fresh": FRESH,
        "blind": BLIND, "blind2": BLIND2, "blind3": BLIND3, "blind4": BLIND4,
        "blind5": BLIND5}


def evaluate(bootstrap: Bootstrap, *, summarizer: str = "extractive", shares: Sequence[float] = SHARES,
             windows: Sequence[int] = WINDOWS, sets: Sequence[str] = ("tuning", "held-out"), seed: int = 44,
             on_step: Callable[[str], None] = lambda _s: None) -> dict[str, Any]:
    out: dict[str, Any] = {"summarizer": summarizer, "seed": seed, "rounds": [], "conversations": []}
    for name in sets:
        for share in shares:
            on_step(f"{name}: rounds at {share:.0%}")
            out["rounds"].append(run_rounds(SETS[name], summarizer=summarizer, share=share, seed=seed,
                                            bootstrap=bootstrap))
        for window in windows:
            on_step(f"{name}: conversation at {window:,}")
            out["conversations"].append(run_conversation(SETS[name], summarizer=summarizer, window=window,
                                                         seed=seed, bootstrap=bootstrap))
    return out


def _pct(kept: int, total: int) -> str:
    return f"{kept / total:.0%}" if total else "-"


def targets(result: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(what, measured, met) for the issue's targets."""
    rows = []
    floors = {0.3: 0.95, 0.2: 0.85}
    for run in result["rounds"]:
        last = run["rounds"][-1]
        name = f"{run['phrasings']} rounds {run['share']:.0%}"
        if run["share"] in floors:
            worst = min((v["kept"] / v["total"], k) for k, v in last["per_kind"].items() if v["total"])
            rows.append((f"{name}: worst kind after 5 rounds >= {floors[run['share']]:.0%}",
                         f"{worst[0]:.0%} ({worst[1]})", worst[0] >= floors[run["share"]]))
        rows.append((f"{name}: never summary_failed", str(run["summary_failed"]), run["summary_failed"] == 0))
        for r in run["rounds"]:
            if r["lost"] != r["lost_reported"] or r["superseded_current"]:
                rows.append((f"{name} round {r['round']}: losses reported, no superseded value current",
                             f"{r['lost_reported']}/{r['lost']} reported, {r['superseded_current']} current", False))
                break
        else:
            rows.append((f"{name}: every loss reported, no superseded value current", "yes", True))
    for conv in result["conversations"]:
        floor = 0.75 if conv["window"] < 32_000 else 0.90
        share = conv["kept"] / conv["total"] if conv["total"] else 1.0
        name = f"{conv['phrasings']} conversation {conv['window']:,}"
        rows.append((f"{name}: facts kept >= {floor:.0%}", f"{share:.0%}", share >= floor))
        rows.append((f"{name}: losses reported", f"{conv['lost_reported']}/{conv['lost']}",
                     conv["lost_reported"] == conv["lost"]))
        rows.append((f"{name}: superseded values current", str(conv["superseded_current"]),
                     conv["superseded_current"] == 0))
    return rows


def markdown(result: dict[str, Any]) -> list[str]:
    lines = [f"Summarizer `{result['summarizer']}`, seed {result['seed']}.", ""]
    for run in result["rounds"]:
        lines += [f"**{run['phrasings']} phrasings, rounds at {run['share']:.0%}** (session "
                  f"{run['session_tokens']:,} tokens, window {run['window']:,}, summary_failed "
                  f"{run['summary_failed']}):", ""]
        head = "| kind | " + " | ".join(f"round {r['round']}" for r in run["rounds"]) + " | truncation, round 5 |"
        lines += [head, "|---" * (len(run["rounds"]) + 2) + "|"]
        for kind in KINDS:
            cells = [_pct(r["per_kind"][kind]["kept"], r["per_kind"][kind]["total"]) for r in run["rounds"]]
            last = run["rounds"][-1]["per_kind"][kind]
            lines.append(f"| {kind} | " + " | ".join(cells) + f" | {_pct(last['truncation'], last['total'])} |")
        cells = [f"{_pct(r['kept'], r['total'])} ({r['context_tokens']:,} tok)" for r in run["rounds"]]
        last = run["rounds"][-1]
        lines.append("| **all** | " + " | ".join(cells) + f" | {_pct(last['truncation_kept'], last['total'])} |")
        lost = " | ".join(f"{r['lost_reported']}/{r['lost']}" for r in run["rounds"])
        lines.append(f"| lost: in dropped_items | {lost} | |")
        cur = " | ".join(str(r["superseded_current"]) for r in run["rounds"])
        flag = " | ".join(str(r.get("kept_flagged_possibly_superseded", 0)) for r in run["rounds"])
        lines += [f"| superseded stated as current | {cur} | |",
                  f"| kept, flagged possibly superseded | {flag} | |", ""]
    if result["conversations"]:
        lines += ["**Conversations** (120 turns, host loop, default settings):", "",
                  "| phrasings | window | session tokens | compactions | " + " | ".join(KINDS)
                  + " | all | truncation | lost: in dropped_items | lost: found by search | superseded current | summary_failed |",
                  "|---" * (len(KINDS) + 10) + "|"]
        for c in result["conversations"]:
            cells = [_pct(c["per_kind"][k]["kept"], c["per_kind"][k]["total"]) for k in KINDS]
            lines.append(
                f"| {c['phrasings']} | {c['window']:,} | {c.get('session_tokens', 0):,} | {c['compactions']} | "
                + " | ".join(cells)
                + f" | {_pct(c['kept'], c['total'])} | {_pct(c['truncation_kept'], c['total'])} | "
                f"{c['lost_reported']}/{c['lost']} | {c['lost_found_by_search']}/{c['lost']} | "
                f"{c['superseded_current']} | {c['summary_failed']} |")
        lines.append("")
    lines += ["| target | measured | met |", "|---|---|---|"]
    lines += [f"| {what} | {got} | {'yes' if ok else 'NO'} |" for what, got, ok in targets(result)]
    return lines


def across_seeds(results: Sequence[dict[str, Any]]) -> list[str]:
    """One line per drive over several seeds: share kept (min–max), worst kind, losses
    reported, superseded values stated as current, ``summary_failed``."""
    rows: dict[tuple[str, str], list[tuple[float, float, int, int, int, int]]] = {}
    for result in results:
        for run in result["rounds"]:
            last = run["rounds"][-1]
            worst = min(v["kept"] / v["total"] for v in last["per_kind"].values() if v["total"])
            rows.setdefault((run["phrasings"], f"5 rounds, {run['share']:.0%}"), []).append(
                (last["kept"] / last["total"], worst, last["lost_reported"], last["lost"],
                 max(r["superseded_current"] for r in run["rounds"]), run["summary_failed"]))
        for conv in result["conversations"]:
            worst = min(v["kept"] / v["total"] for v in conv["per_kind"].values() if v["total"])
            rows.setdefault((conv["phrasings"], f"conversation, {conv['window']:,}"), []).append(
                (conv["kept"] / conv["total"], worst, conv["lost_reported"], conv["lost"],
                 conv["superseded_current"], conv["summary_failed"]))
    seeds = ", ".join(str(r["seed"]) for r in results)
    lines = [f"Seeds {seeds}:", "", "| phrasings | drive | kept (min–max) | worst kind (min) | losses in dropped_items "
             "| superseded stated as current (total) | summary_failed |", "|---|---|---|---|---|---|---|"]
    for (phrasings, drive), vals in rows.items():
        kept = [v[0] for v in vals]
        lines.append(f"| {phrasings} | {drive} | {min(kept):.0%}–{max(kept):.0%} | {min(v[1] for v in vals):.0%} | "
                     f"{sum(v[2] for v in vals)}/{sum(v[3] for v in vals)} | {sum(v[4] for v in vals)} | "
                     f"{sum(v[5] for v in vals)} |")
    return lines
