"""``ctxc cost``, ``ctxc commit-candidate`` and ``ctxc simulate`` (issue 43): their options
and what they run; cli.py and cli_parser.py only register them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .cli_common import emit, open_bus
from .cli_setup import UsageError


def add_parsers(add: Any) -> None:
    p = add("cost", "what a session's recorded requests and summary calls cost, per model, and each "
                    "compaction's balance", session=True, read_only=True)
    p = add("preview", "compact {dry_run: true}: make the candidate a compaction would commit, show it with "
                       "its cost and candidate id, commit nothing", session=True)
    p.add_argument("--model", help="summarize with this model (default: the session's)")
    part = p.add_mutually_exclusive_group()
    part.add_argument("--up-to-seq", type=int, metavar="SEQ", help="summarize only whole turns ending at or before SEQ")
    part.add_argument("--fraction", type=float, help="summarize only the oldest whole turns, at most this share")
    p = add("commit-candidate", "commit a dry run's candidate (compact {dry_run: true}) if the session's "
                                "generation is unchanged", session=True)
    p.add_argument("candidate", help="candidate id")
    p = add("simulate", "replay a recorded session under other settings (in memory, offline) and print "
                        "the policies side by side, the peers' defaults among them", read_only=True)
    p.add_argument("--session", required=True, help="the recorded session")
    p.add_argument("--settings", action="append", default=[], metavar="FILE",
                   help="a JSON settings file over the session's settings: one policy each (repeatable)")
    p.add_argument("--system-prompt-file", metavar="FILE", help="the system prompt its requests carried")
    p.add_argument("--tools-file", metavar="FILE", help="the tools its requests carried (a JSON list)")
    p.add_argument("--no-peers", action="store_true", help="leave out the peers' default policies")


def cmd_cost(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c


    with open_bus(args) as bus:
        result = bus.dispatch(c.GetSessionCost(session_id=args.session))
    return emit(args, result, cost_text(result))


def cost_text(result: Any) -> str:
    def line(label: str, f: Any) -> str:
        return (f"{label:<22}${f.total_usd:,.6f}  {f.calls:,} calls, prompt {f.prompt_tokens:,} "
                f"(cached {f.cached_tokens:,}, written {f.cache_creation_tokens:,}), "
                f"completion {f.completion_tokens:,}" + ("" if f.priced else "  (some unpriced)"))

    lines = [line("Total", result.total), line("Requests", result.requests), line("Summaries", result.summaries)]
    lines += [line(f"  {m.model} ({m.prices_source})", _sum(m)) for m in result.per_model]
    for cp in result.compactions:
        n = cp.net
        lines.append(f"Compaction {cp.at[:19]}  shed {n.tokens_shed:,} x {n.requests} requests"
                     f"{' so far' if n.open else ''}: saved {_money(n.saved_usd)}, spent {_money(n.spent_usd)} "
                     f"(summary {_money(n.summary_usd)}, cache {_money(n.invalidated_cache_usd)}), "
                     f"net {_money(n.net_usd)}")
    return "\n".join(lines)


def _money(usd: float | None) -> str:
    return "unknown" if usd is None else f"${usd:,.6f}"


def _sum(model: Any) -> Any:
    r, s = model.requests, model.summaries
    return r.model_copy(update={k: getattr(r, k) + getattr(s, k) for k in (
        "calls", "prompt_tokens", "cached_tokens", "cache_creation_tokens", "completion_tokens", "total_usd")}
        | {"priced": r.priced and s.priced})


def cmd_preview(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c

    with open_bus(args) as bus:
        result = bus.dispatch(c.Compact(session_id=args.session, model=args.model, dry_run=True,
                                        up_to_seq=args.up_to_seq, fraction=args.fraction))
    if result.status != "candidate":
        return emit(args, result, result.report)
    net = result.net
    cost = "unknown" if result.summary_cost_usd is None else f"${result.summary_cost_usd:,.6f}"
    text = [result.report, "", result.summary or "", "",
            f"Summary call cost    {cost}"]
    if net is not None:
        text.append(f"Forecast balance     saves {_money(net.saved_usd)} over ~{net.requests} requests, "
                    f"spends {_money(net.spent_usd)}: net {_money(net.net_usd)}")
    text.append(f"Commit it with       ctxc commit-candidate {args.session} {result.candidate_id}")
    return emit(args, result, "\n".join(text))


def cmd_commit_candidate(args: argparse.Namespace) -> int:
    from context_compaction.application.contracts import commands as c


    with open_bus(args) as bus:
        result = bus.dispatch(c.CommitCandidate(session_id=args.session, candidate_id=args.candidate))
    return emit(args, result, result.report)


def cmd_simulate(args: argparse.Namespace) -> int:
    from .simulate import Policy, simulate

    policies = [Policy(Path(f).stem, f"settings file {f}", _json_file(f, dict)) for f in args.settings]
    system = Path(args.system_prompt_file).read_text(encoding="utf-8") if args.system_prompt_file else None
    tools = _json_file(args.tools_file, list) if args.tools_file else None
    with open_bus(args) as bus:
        result = simulate(bus, args.session, policies, system_prompt=system, tools=tools, peers=not args.no_peers)
    return emit(args, result, result.text)


def _json_file(path: str, kind: type) -> Any:
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {path}: {exc}") from None
    if not isinstance(value, kind):
        raise UsageError(f"{path} must hold a JSON {'object' if kind is dict else 'list'}")
    return value
