"""``ctxc eval``: the typed-canary evaluation of a summarizer (issue 44, ADR 0077)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_parser(add: Any) -> None:
    p = add("eval", "measure what a summarizer keeps: typed canaries over 5 compaction rounds at "
                    "10/20/30 %% budgets and long conversations at 8K/32K/128K windows")
    p.add_argument("--shares", default="0.1,0.2,0.3", help="output budgets, shares of the session")
    p.add_argument("--windows", default="8000,32000,128000", help="conversation windows (empty: none)")
    p.add_argument("--sets", default="tuning,held-out",
                   help="phrasing sets: tuning, held-out, review, spoken, fresh, blind, blind2, blind3, blind4, "
                        "blind5")
    p.add_argument("--seed", type=int, default=44, help="the generation seed (default 44)")
    p.add_argument("--seeds", default="", help="several seeds (comma-separated): one line per drive over them")


def cmd_eval(args: argparse.Namespace) -> int:
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from .bootstrap import bootstrap
    from .evaluation.report import evaluate, markdown

    def boot(settings: Any) -> Any:
        if args.config or args.db:  # (a host's model settings: api_base, keys for the llm summarizer)
            from .cli_setup import settings_for

            base = settings_for(args)
            settings = settings.model_copy(update={"models": {**base.models, **settings.models}})
        return bootstrap(settings)

    from .evaluation.report import SETS, across_seeds

    seeds, shares, windows, sets = _options(args, SETS)
    results = [evaluate(
        boot,
        summarizer=args.summarizer or "extractive",
        shares=shares,
        windows=windows,
        sets=sets,
        seed=seed,
        on_step=(lambda s: None) if args.json else (lambda s: print(f"... {s}", file=sys.stderr)),
    ) for seed in seeds]
    if args.json:
        print(json.dumps(results[0] if len(results) == 1 else results, indent=2, default=str))
    elif len(results) == 1:
        print("\n".join(markdown(results[0])))
    else:
        print("\n".join(across_seeds(results)))
    return 0


def _options(args: argparse.Namespace, known_sets: Any) -> tuple[list[int], list[float], list[int], list[str]]:
    """The options, checked before anything runs: a usage error, never an internal one."""
    from .cli_setup import UsageError

    def many(text: str, kind: Any, name: str) -> list[Any]:
        try:
            return [kind(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise UsageError(f"--{name}: {text!r} is not a comma-separated list of numbers") from None

    seeds = many(args.seeds, int, "seeds") or [args.seed]
    shares, windows = many(args.shares, float, "shares"), many(args.windows, int, "windows")
    sets = [x.strip() for x in args.sets.split(",") if x.strip()]
    if any(not 0 < s < 1 for s in shares):
        raise UsageError(f"--shares: each budget is a share of the session between 0 and 1, got {args.shares!r}")
    if any(w <= 0 for w in windows):
        raise UsageError(f"--windows: each window is a positive number of tokens, got {args.windows!r}")
    unknown = [x for x in sets if x not in known_sets]
    if unknown or not sets:
        raise UsageError(f"--sets: unknown phrasing set {', '.join(unknown) or '(none)'}; known: {', '.join(known_sets)}")
    return seeds, shares, windows, sets
