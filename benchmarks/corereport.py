"""The core section's (issue 6) targets and markdown table, from its report."""

from __future__ import annotations

from typing import Any


def targets(report: dict[str, Any], sizes: list[int]) -> list[dict[str, Any]]:
    s = report["sizes"]
    low, ref = str(min(sizes)), str(10_000 if 10_000 in sizes else max(sizes))
    big = str(max(sizes))
    out = []

    def add(name: str, value: float, limit: str, ok: bool) -> None:
        out.append({"target": name, "value": value, "limit": limit, "ok": bool(ok)})

    flat = s[ref]["ours"]["per_turn_ms"] / s[low]["ours"]["per_turn_ms"]
    add(f"per-turn N={ref} / N={low}", round(flat, 2), "<= 1.5", flat <= 1.5)
    floor = s[ref]["ours"]["per_turn_ms"] / s[ref]["floor"]["floor_ms"]
    add(f"per-turn / physical floor at N={ref}", round(floor, 2), "<= 5", floor <= 5)
    peers = s[ref]["peers"]
    if "langchain_summarization_tiktoken_ms" in peers:
        speed = peers["langchain_summarization_tiktoken_ms"] / s[ref]["ours"]["per_turn_ms"]
        add(f"LangChain check (tiktoken) / ours at N={ref}", round(speed, 1), ">= 100", speed >= 100)
        speed = peers["langchain_summarization_default_ms"] / s[ref]["ours"]["per_turn_ms"]
        add(f"LangChain check (default counter) / ours at N={ref}", round(speed, 2), "> 1", speed > 1)
    restore = s[big]["restore_compacted"]["ratio"]
    add(f"cold restore (compacted) / raw SELECT at N={big}", restore, "<= 3", restore <= 3)
    flat_restore = s[big]["restore_compacted"]["ours_ms"] / s[low]["restore_compacted"]["ours_ms"]
    add(f"cold restore (compacted) N={big} / N={low}", round(flat_restore, 2), "<= 1.5", flat_restore <= 1.5)
    throughput = report["append_throughput"]["ratio"]
    add("append throughput / raw INSERT", throughput, ">= 0.5", throughput >= 0.5)
    add("ctxc start (s)", report["cli_start_s"], "< 0.5", report["cli_start_s"] < 0.5)
    for model, acc in report["token_accuracy"].items():
        if acc["encoding"].startswith(("o200k", "cl100k_base")) and "*" not in acc["encoding"]:
            add(f"token estimate / litellm ({model})", acc["ratio"], "1.00-1.05", 1.0 <= acc["ratio"] <= 1.05)
    return out


def markdown(report: dict[str, Any], sizes: list[int]) -> str:
    lines = ["| N messages | ours: append + prepare_turn | physical floor | LangChain check (tiktoken) | "
             "LangChain check (default) | LangChain trim_messages | llama-index buffer | "
             "cold restore, compacted (raw SELECT) | cold restore, uncompacted (raw SELECT) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for n in sizes:
        e = report["sizes"][str(n)]
        p = e["peers"]

        def peer(key: str) -> str:
            return f"{p[key]:,.1f} ms" if key in p else "n/a"

        rc, ru = e["restore_compacted"], e["restore_uncompacted"]
        lines.append(
            f"| {n:,} | {e['ours']['per_turn_ms']:.2f} ms | {e['floor']['floor_ms']:.2f} ms | "
            f"{peer('langchain_summarization_tiktoken_ms')} | {peer('langchain_summarization_default_ms')} | "
            f"{peer('langchain_trim_messages_tiktoken_ms')} | {peer('llama_index_chat_summary_buffer_get_ms')} | "
            f"{rc['ours_ms']:.2f} ms ({rc['raw_select_ms']:.2f}) | {ru['ours_ms']:.1f} ms ({ru['raw_select_ms']:.1f}) |"
        )
    a = report["append_throughput"]
    rss = report["restore_rss_mb"]
    lines += [
        "",
        f"Append throughput: {a['ours_per_s']:,} messages/s vs raw sqlite3 INSERT {a['raw_insert_per_s']:,}/s "
        f"(same durability: WAL, synchronous=FULL, one transaction per turn) = {a['ratio']:.0%} "
        f"(median of three runs: {', '.join(f'{r:.0%}' for r in a.get('ratios', [a['ratio']]))}).",
        f"Peak RSS restoring a {rss['messages']:,}-message session: {rss['uncompacted']} MB uncompacted, "
        f"{rss['compacted']} MB compacted.",
        f"`ctxc sessions` wall time: {report['cli_start_s']} s.",
        "",
        "| model | our encoding | ours / litellm.token_counter |",
        "|---|---|---|",
    ]
    for model, acc in report["token_accuracy"].items():
        lines.append(f"| {model} | {acc['encoding']} | {acc['ratio']:.3f} |")
    return "\n".join(lines)
