"""The sections of ``make bench`` beyond the issue-6 core (issue 18), run from ``run.py``.

Each section measures ours and its reference in the same minutes and reports ratios;
``run`` returns the section's targets and appends its markdown to ``text``.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

ALL = ["core", "pg", "json", "long", "turn", "compaction", "retention", "staged", "async", "policies",
       "integrations", "eval"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pg-writers", default="1,2,4,8", help="writer process counts")
    parser.add_argument("--pg-seconds", type=float, default=3.0, help="seconds each configuration appends")
    parser.add_argument("--pg-repeats", type=int, default=3,
                        help="interleaved rounds of each distinct-session row (the median is reported)")
    parser.add_argument("--json-sizes", default="1000,10000", help="session sizes of the JSON section")
    parser.add_argument("--json-turns", type=int, default=30, help="turns measured per size")
    parser.add_argument("--long-sizes", default="1000,10000,100000", help="long-session sizes")
    parser.add_argument("--long-turns", type=int, default=40, help="turns measured per long-session size")
    parser.add_argument("--turn-messages", type=int, default=10_000, help="history size of the turn section")
    parser.add_argument("--turn-repeats", type=int, default=31, help="interleaved repeats of the turn section")
    parser.add_argument("--staged-turns", type=int, default=300, help="turns of the staged-compaction section")
    parser.add_argument("--staged-delay", type=float, default=0.2, help="seconds per fake summary call")
    parser.add_argument("--policies-turns", type=int, default=60, help="turns of the policy-replay section")
    parser.add_argument("--async-delay", type=float, default=3.0, help="seconds of the async section's summary call")
    parser.add_argument("--integrations-sizes", default="1000,10000", help="history sizes of the integrations section")
    parser.add_argument("--integrations-turns", type=int, default=20, help="turns measured per size and framework")


def pg_peers_missing() -> list[str]:
    """The PostgreSQL peers' modules (benchmarks/requirements.txt) this venv lacks."""
    return [name for name in ("langgraph.checkpoint.postgres", "agents.extensions.memory", "sqlalchemy")
            if _find(name) is None]


def _find(name: str) -> Any:
    try:
        return importlib.util.find_spec(name)
    except ImportError:  # (a parent package missing)
        return None


def _target(name: str, value: Any, limit: str, ok: bool) -> dict[str, Any]:
    return {"target": name, "value": value, "limit": limit, "ok": bool(ok)}


def run(name: str, args: argparse.Namespace, report: dict[str, Any], text: list[str]) -> list[dict[str, Any]]:
    print(f"section {name} ...", file=sys.stderr, flush=True)
    return {"pg": _pg, "json": _json, "long": _long, "turn": _turn, "compaction": _compaction,
            "retention": _retention, "staged": _staged, "async": _async,
            "policies": _policies, "integrations": _integrations, "eval": _eval}[name](args, report, text)


def _in_process(script: str, *argv: str, python: str | None = None) -> dict[str, Any]:
    """A section module run as its own process: its heap, caches and collector state
    are its own (the core section leaves a large frozen heap behind)."""
    out = subprocess.run([python or sys.executable, str(HERE / script), *argv], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{script} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def _json(args: argparse.Namespace, report: dict[str, Any], text: list[str]) -> list[dict[str, Any]]:
    import jsonpath

    result = _in_process("jsonpath.py", "--sizes", args.json_sizes, "--turns", str(args.json_turns))
    report["json"] = result
    text += ["", "JSON path (`dispatch_json` with the command as JSON text; + wire: the HTTP edge's "
             "`json.dumps` of the envelope) against typed `dispatch`, interleaved turn by turn on "
             "two copies of an uncompacted session:", ""]
    text += jsonpath.markdown(result)
    return [_target(*t) for t in jsonpath.targets(result)]


def _pg(args: argparse.Namespace, report: dict[str, Any], text: list[str]) -> list[dict[str, Any]]:
    import importlib.util
    import os

    import pg

    missing = pg_reason = pg.pg_available()
    if missing:
        report["pg"] = {"skipped": pg_reason}
        text += ["", f"PostgreSQL section skipped: {pg_reason}"]
        return [_target("PG section ran", 0, "PostgreSQL at 127.0.0.1:5432", False)]

    def measured(impl: str, writers: str, modes: str, extra: tuple[str, ...] = ()) -> dict[str, Any]:
        # psycopg picks its implementation on import: one process per client (ADR 0062).
        env = {**os.environ, "PSYCOPG_IMPL": impl}
        out = subprocess.run([sys.executable, str(HERE / "pg.py"), "--writers", writers,
                              "--seconds", str(args.pg_seconds), "--repeats", str(args.pg_repeats),
                              "--modes", modes, *extra], capture_output=True, text=True, env=env)
        if out.returncode != 0:
            raise RuntimeError(f"pg.py ({impl}) failed:\n{out.stderr[-3000:]}")
        return json.loads(out.stdout)  # type: ignore[no-any-return]

    result = measured("python", args.pg_writers, "distinct,shared")
    report["pg"] = result
    text += ["", f"PostgreSQL appends, psycopg's pure-Python implementation (`pip install psycopg`; one "
             f"scenario turn each, {args.pg_seconds:g} s per run, distinct sessions the median of "
             f"{args.pg_repeats} interleaved rounds):", ""]
    text += pg.pg_markdown(result)
    found = [_target(*t) for t in pg.pg_targets(result, "PG (python psycopg)")]
    if importlib.util.find_spec("psycopg_binary") is not None:
        # What the ``postgres`` extra installs (psycopg[binary]): the target rows again.
        ends = args.pg_writers.split(",")
        binary = measured("binary", f"{ends[0]},{ends[-1]}", "distinct")
        report["pg_binary"] = binary
        text += ["", "The same rows with psycopg's binary build (`context-compaction[postgres]` installs it; "
                 "ours and raw both use it):", ""]
        text += pg.pg_markdown(binary)
        found += [_target(*t) for t in pg.pg_targets(binary, "PG (binary psycopg)")]
    missing = pg_peers_missing()
    if missing:  # (a target not measured is reported as missed, not left out)
        found.append(_target("PG peers: ours faster per turn and restore than LangGraph and the Agents SDK",
                             f"not measured: {', '.join(missing)} not installed", "measured", False))
    else:
        # Issue 37's peers on PostgreSQL: LangGraph's PostgresSaver, the Agents SDK's
        # SQLAlchemySession, the same turns; and the restore of a 10k-message session.
        import pg_peers

        ends = args.pg_writers.split(",")
        peers = _in_process("pg_peers.py", "--writers", f"{ends[0]},{ends[-1]}", "--seconds", str(args.pg_seconds),
                            "--repeats", str(args.pg_repeats))
        report["pg_peers"] = peers
        text += ["", "PostgreSQL peers, the same turns (turns/s, p50 per turn), and a 10k-message restore:", ""]
        text += pg_peers.markdown(peers)
        found += [_target(*t) for t in pg_peers.targets(peers)]
    return found


def _long(args: argparse.Namespace, report: dict[str, Any], text: list[str]) -> list[dict[str, Any]]:
    import longsession

    result = _in_process("longsession.py", "--sizes", args.long_sizes, "--turns", str(args.long_turns))
    report["long"] = result
    text += ["", f"Long sessions ({result['window']:,}-token window, automatic compaction on, extractive "
             "summaries; per turn = append + prepare_turn, sizes interleaved turn by turn):", ""]
    text += longsession.markdown(result)
    return [_target(*t) for t in longsession.targets(result)]


#: Where ``.ci/run`` keeps its CPython 3.13 venv; the turn section makes it the same way.
VENV_313 = HERE.parent / ".venv-313"


def python_313() -> str | None:
    """The python of ``.venv-313``, a CPython 3.13 venv with this package; made when missing
    from ``$PY313`` or the first python3.13 that runs, as ``.ci/run`` does; else ``None``."""
    venv = VENV_313 / "bin" / "python"
    if not venv.exists():
        for candidate in [os.environ.get("PY313", ""), shutil.which("python3.13") or "",
                          *sorted(glob.glob("/root/.pyenv/versions/3.13*/bin/python3.13")),
                          "/usr/bin/python3.13", "/usr/local/bin/python3.13"]:
            ok = candidate and subprocess.run([candidate, "-c", "import sys; assert sys.version_info[:2] == (3, 13)"],
                                              capture_output=True).returncode == 0
            if ok:
                print(f"turn: making {VENV_313} from {candidate} ...", file=sys.stderr, flush=True)
                subprocess.run([candidate, "-m", "venv", str(VENV_313)], check=True)
                subprocess.run([str(venv), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                                "-e", str(HERE.parent)], check=True)
                break
    return str(venv) if venv.exists() else None


def _turn(args: argparse.Namespace, report: dict[str, Any], text: list[str]) -> list[dict[str, Any]]:
    """Issue 38's target (a): ``prepare_turn`` at 10,000 uncompacted messages against one
    Python pass over them, on the bench interpreter (both hand-out paths) and CPython 3.13."""
    import handout_turn

    argv = ("--messages", str(args.turn_messages), "--repeats", str(args.turn_repeats))
    results = [_in_process("handout_turn.py", *argv),
               _in_process("handout_turn.py", *argv, "--without-lazy-tracking")]
    found: list[dict[str, Any]] = []
    py313 = None if sys.version_info[:2] == (3, 13) else python_313()
    if py313 is None and sys.version_info[:2] != (3, 13):
        found.append(_target("prepare_turn at 10,000 uncompacted / one Python pass over the history (CPython 3.13)",
                             "not measured", "<= 2 (no CPython 3.13 found: set PY313)", False))
    elif py313 is not None:
        results.append(_in_process("handout_turn.py", *argv, python=py313))
    report["turn"] = results
    text += ["", f"`prepare_turn` of an uncompacted {args.turn_messages:,}-message session (`memory://`) against "
             "one Python pass over the same messages, interleaved, medians (`handout_turn.py`, ADR 0088):", ""]
    text += handout_turn.markdown(results)
    for result in results:
        found += [_target(*t) for t in handout_turn.targets(result)]
    return found


def _compaction(args: argparse.Namespace, report: dict[str, Any], text: list[str]) -> list[dict[str, Any]]:
    import compactcost

    result = _in_process("compactcost.py")
    report["compaction"] = result
    text += ["", "Compaction cost on a full 128K-token context (gpt-4o, o200k_base), against one tiktoken "
             "pass over the same text (medians, the three alternating):", ""]
    text += compactcost.markdown(result)
    return []  # issue 18 asks for these ratios, with no limit on them


def _retention(args: argparse.Namespace, report: dict[str, Any], text: list[str]) -> list[dict[str, Any]]:
    import retention

    results = []
    for window in (128_000, 12_000):  # the done-when window, and a small one that drops items
        results += _in_process("retention.py", "--turns", "200", "--window", str(window), "--print-json")
    report["retention"] = results
    text += ["", "Retention (issue 16): planted must-keep items present verbatim in the final projection "
             "after 200 turns; `forgetful` is a fake LLM that drops 50 % of the facts from its summary:", ""]
    text += retention.markdown(results)
    return [_target(*t) for t in retention.targets(results, 128_000)]


def _staged(args: argparse.Namespace, report: dict[str, Any], text: list[str]) -> list[dict[str, Any]]:
    import staged

    result = _in_process("staged.py", "--turns", str(args.staged_turns), "--delay", str(args.staged_delay))
    report["staged"] = result
    text += ["", "Staged compaction (issue 17): the coding-agent workload with a fake LLM summarizer, "
             "tool-result clearing off and on, the same turns:", ""]
    text += staged.markdown(result)
    return [_target(*t) for t in staged.targets(result)]


def _async(args: argparse.Namespace, report: dict[str, Any], text: list[str]) -> list[dict[str, Any]]:
    import asyncbench

    result = _in_process("asyncbench.py", "--delay", str(args.async_delay))
    report["async"] = result
    text += ["", f"Async service (issue 15): an asyncio HTTP service answers `GET /ping` (pinged every "
             f"10 ms from another process) while one `compact` with a {result['delay_s']:g} s summary call "
             "(a local fake model through litellm) runs in it:", ""]
    text += asyncbench.markdown(result)
    return [_target(*t) for t in asyncbench.targets(result)]


def _policies(args: argparse.Namespace, report: dict[str, Any], text: list[str]) -> list[dict[str, Any]]:
    import policies

    result = _in_process("policies.py", "--turns", str(args.policies_turns))
    report["policies"] = result
    text += ["", "Policy replay (issue 43): the workload recorded once, replayed in memory under our "
             "policy and the peers' default policies (extractive summaries, offline):", ""]
    text += policies.markdown(result)
    return [_target(*t) for t in policies.targets(result)]


def _integrations(args: argparse.Namespace, report: dict[str, Any], text: list[str]) -> list[dict[str, Any]]:
    import integrations

    result = _in_process("integrations.py", "--sizes", args.integrations_sizes,
                         "--turns", str(args.integrations_turns))
    report["integrations"] = result
    text += ["", "Framework integrations (issue 40): per turn, with each framework's test model answering "
             "at once, the adapter against the framework's own memory (median of "
             f"{result['turns']} interleaved turns):", ""]
    text += integrations.markdown(result)
    return [_target(*t) for t in integrations.targets(result)]


def _eval(args: argparse.Namespace, report: dict[str, Any], text: list[str]) -> list[dict[str, Any]]:
    """Issue 44: ``ctxc eval`` (typed canaries), extractive: the tuning and held-out sets,
    ``fresh``, ``blind`` to ``blind4`` (written without reading the extractor, ADR 0097,
    ADR 0102, ADR 0105 and ADR 0108, since used to diagnose it), and ``blind5``, written under
    the same rule and never used to diagnose or tune the summarizer: its figures are the
    honest ones (ADR 0113)."""
    from context_compaction import bootstrap
    from context_compaction.infrastructure.evaluation.report import evaluate, markdown, targets

    result = evaluate(bootstrap, summarizer="extractive",
                      sets=("tuning", "held-out", "fresh", "blind", "blind2", "blind3", "blind4", "blind5"))
    report["eval"] = result
    text += ["", "Typed canaries (`ctxc eval`, issue 44):", ""]
    text += markdown(result)
    return [_target(what, got, "issue 44", ok) for what, got, ok in targets(result)]
