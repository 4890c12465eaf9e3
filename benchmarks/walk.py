"""The walk of one ``PrepareTurn`` that compacts: which application modules it visits, in
what order (issue 38).

A call profile (``sys.setprofile``) of one dispatch, read as a reader reads the code:
each function once, at its first call, then back to its caller (a function called
again is not read again). Every frame is mapped to the application module it runs in
(a frame outside ``application/`` — domain, infrastructure, libraries — counts as the
innermost application frame below it; a comprehension counts as the function it is
written in). A *stay* is a run of the walk in one module; a
*return* is a stay in a module the walk had already left; *visits* counts a module's
stays. Prints JSON:

    python benchmarks/walk.py            # the installed package, inside turn_request
    python benchmarks/walk.py --tree DIR # a checkout (e.g. ``git archive`` of main)
    python benchmarks/walk.py --sequence # the stays one a line, with the function entered

Targets (issue 38): returns at most a third of main's before the issue, no module
visited more than 3 times.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

#: Code objects that are part of the function they are written in, not functions of their own.
_COMPREHENSIONS = frozenset({"<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"})


def link_tree(tree: Path) -> Path:
    """A folder where ``import context_compaction`` finds ``tree``'s source folders
    (the package-dir mapping of pyproject.toml, ADR 0002)."""
    root = Path(tempfile.mkdtemp(prefix="walk-"))
    pkg = root / "context_compaction"
    pkg.mkdir()
    for entry in (tree / "facade").iterdir():
        (pkg / entry.name).symlink_to(entry.resolve())
    for layer in ("domain", "application", "infrastructure"):
        (pkg / layer).symlink_to((tree / layer).resolve())
    return root


def scenario() -> tuple[object, object]:
    """A bus whose next ``PrepareTurn`` crosses the threshold and compacts (extractive
    summarizer: no network), and that command. A turn below the threshold runs first,
    so the walk is a running host's, not the imports and first-use schema builds."""
    from context_compaction import Settings, bootstrap, commands as c

    bus = bootstrap(Settings(database_url="memory://", summarizer="extractive",
                             models={"gpt-4o": {"token_limit": 12_000}}))
    bus.dispatch(c.StartSession(session_id="walk", model="gpt-4o"))
    prepare = c.PrepareTurn(session_id="walk", system_prompt="You are helpful.")
    for turn in range(40):
        bus.dispatch(c.AppendMessages(session_id="walk", messages=[
            {"role": "user", "content": f"question {turn}: " + "words " * 120},
            {"role": "assistant", "content": f"answer {turn}: " + "more " * 120},
        ]))
        if turn == 5:
            assert bus.dispatch(prepare).compaction is None
    return bus, prepare


def walk(bus, command, start: str | None, entries: list[str] | None = None) -> list[str]:
    """The stays of the dispatch of ``command``; with ``start``, only those inside the
    first call of the function of that name (the rest of the dispatch is not walked).
    ``entries``, when given, receives for each stay how the walk got there: the function
    first read there (``name``) or the function it came back to (``<- name``)."""
    marker = f"{os.sep}application{os.sep}"
    stack: list[str | None] = [None]
    # the function each stack entry is read in (the application one for outside frames)
    functions: list[str] = [""]
    inside = [start is None, 0]  # (walking?, the stack depth of ``start``'s frame)
    stays: list[str] = []
    names: dict[str, str | None] = {}

    def module_of(filename: str) -> str | None:
        if filename not in names:
            i = filename.rfind(marker)
            names[filename] = filename[i + len(marker):-3] if i >= 0 and filename.endswith(".py") else None
        return names[filename]

    read: set[object] = set()

    def profile(frame, event, arg):  # noqa: ANN001
        if event == "call":
            code = frame.f_code
            # (a comprehension is read with the function it is written in: on 3.12+ most are
            # inlined into it, PEP 709, and the walk must not depend on the interpreter)
            if code in read or code.co_name in _COMPREHENSIONS:  # the reader does not go there again
                stack.append(stack[-1])
                functions.append(functions[-1])
                return
            read.add(code)
            module = module_of(code.co_filename)
            stack.append(module or stack[-1])
            functions.append(code.co_name if module else functions[-1])
            how = functions[-1]
            if start is not None and code.co_name == start and not stays:
                inside[:] = [True, len(stack)]
        elif event == "return" and len(stack) > 1:
            if inside[0] and len(stack) == inside[1]:
                inside[0] = False
            stack.pop()
            functions.pop()
            how = f"<- {functions[-1]}"
        else:
            return
        here = stack[-1]
        if inside[0] and here is not None and (not stays or stays[-1] != here):
            stays.append(here)
            if entries is not None:
                entries.append(how)

    sys.setprofile(profile)
    try:
        result = bus.dispatch(command)
    finally:
        sys.setprofile(None)
    assert result.compaction is not None, "the scenario did not compact"
    return stays


def figures(stays: list[str]) -> dict[str, object]:
    visits = Counter(stays)
    return {
        "stays": len(stays),
        "rooms": len(visits),
        "returns_to_left_rooms": len(stays) - len(visits),
        "max_visits": max(visits.values()),
        "most_visited": visits.most_common(5),
        "walk": stays,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, help="a source checkout to walk instead of the installed package")
    parser.add_argument("--start", default="turn_request",
                        help="walk only inside this function's first call (default: turn_request, "
                             "PrepareTurn's request building); '' walks the whole dispatch")
    parser.add_argument("--quiet", action="store_true", help="leave the walk itself out")
    parser.add_argument("--sequence", action="store_true",
                        help="print the ordered stays, one a line, with the function each was entered by, "
                             "then the figures")
    args = parser.parse_args()
    if args.tree:
        sys.path.insert(0, str(link_tree(args.tree)))
    bus, command = scenario()
    entries: list[str] = []
    stays = walk(bus, command, args.start or None, entries)
    out = figures(stays)
    if args.sequence:
        for number, (room, how) in enumerate(zip(stays, entries, strict=True)):
            print(f"{number:3d}  {room:32s} {how}")
        out.pop("walk")
    if args.quiet:
        out.pop("walk")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
