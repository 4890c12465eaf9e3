#!/usr/bin/env python3
"""Rewrite imports of ``context_compaction.application`` after issue 38's move to rooms.

issue 38 moved the flat ``application/X.py`` modules into sub-packages ("rooms") by job.
This script maps every old module path to its new one and rewrites, in the files or
trees given (``.py``, ``.md``, ``.txt``, ``.toml``, ``.cfg``, ``.ini`` files):

* dotted paths: ``context_compaction.application.turns`` → ``...application.turn.turns``
  (import statements, ``monkeypatch``/``mock.patch`` strings, docs);
* ``from context_compaction.application import commands as c, turns`` → one line per
  room (``from context_compaction.application.contracts import commands as c`` ...);
* relative imports inside ``application/`` (a module written for the flat folder:
  ``from .turncontext import X`` in ``application/turn/turns.py`` becomes
  ``from ..runtime.turncontext import X``);
* file paths in text: ``application/turns.py`` → ``application/turn/turns.py``.

Idempotent (no room has an old module's name), so it is safe to run on a tree twice.

    python3 w38_rewrite_imports.py [--check] PATH...

``--check`` prints the files it would change and exits 1 if there are any.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

#: old module (``application/<old>.py``) → its room. The new path is
#: ``context_compaction.application.<room>.<old>`` (modules keep their names).
ROOMS: dict[str, str] = {
    # contracts: what the application exchanges with callers and adapters
    "commands": "contracts", "results": "contracts", "results_costs": "contracts",
    "views": "contracts", "ports": "contracts", "settings": "contracts",
    # state: what one process keeps in memory between commands
    "session_context": "state", "turnstate": "state", "calibration": "state",
    "drafts": "state", "background": "state",
    # runtime: what every handler runs on
    "bus": "runtime", "asyncbus": "runtime", "handout": "runtime", "telemetry": "runtime",
    "services": "runtime", "idempotency": "runtime", "turncontext": "runtime",
    "turnlease": "runtime",
    # history: the raw log's commands and queries, the event feed, what a session cost
    "sessions": "history", "queries": "history", "feed": "history", "costs": "history",
    # compacting: making, checking and recording checkpoints
    "compaction": "compacting", "background_compaction": "compacting",
    "staged": "compacting", "breaker": "compacting", "degraded": "compacting",
    "ledgers": "compacting", "attemptlog": "compacting", "candidates": "compacting",
    "resummarize": "compacting", "forecasting": "compacting",
    # turn: a provider request's lifecycle
    "turns": "turn", "recovery": "turn", "promptcache": "turn", "usage": "turn",
    # agent: the TurnRunner loop and the tools it offers the model
    "runner": "agent", "budget_tools": "agent", "recall": "agent",
}

#: Modules that stay directly in application/ (nothing to rewrite).
STAY = {"handlers", "__init__"}

PACKAGE = "context_compaction.application"
SUFFIXES = {".py", ".md", ".txt", ".toml", ".cfg", ".ini", ".rst"}
_NAMES = "|".join(sorted(ROOMS, key=len, reverse=True))

# context_compaction.application.<old>  (not already followed by a room)
_DOTTED = re.compile(rf"\bcontext_compaction\.application\.({_NAMES})\b(?!\.py)")
# application/<old>.py in prose and strings
_PATH = re.compile(rf"(?<![\w/])((?:\w+/)*)application/({_NAMES})\.py\b")
# from <base> import <names>   (base: the package, the facade's .application, or a
# relative import inside application/); names may be parenthesized over lines.
_FROM = re.compile(
    r"^(?P<indent>[ \t]*)from[ \t]+(?P<base>context_compaction\.application|\.+)"
    r"(?P<rest>(?:\.?\w+)*)[ \t]+import[ \t]+"
    r"(?P<names>\([^)]*\)|[^\n#]*?(?:\\\n[^\n#]*?)*)(?P<tail>[ \t]*(?:#[^\n]*)?)$",
    re.MULTILINE,
)


def _room_of(name: str) -> str | None:
    return ROOMS.get(name)


def _split_names(names: str) -> list[tuple[str, str | None]]:
    body = names.strip()
    if body.startswith("("):
        body = body[1:-1]
    body = re.sub(r"#[^\n]*", "", body).replace("\\\n", " ")
    out: list[tuple[str, str | None]] = []
    for part in body.split(","):
        part = " ".join(part.split())
        if not part:
            continue
        if " as " in part:
            name, alias = part.split(" as ")
            out.append((name.strip(), alias.strip()))
        else:
            out.append((part, None))
    return out


def _join(items: list[tuple[str, str | None]]) -> str:
    return ", ".join(f"{n} as {a}" if a else n for n, a in items)


def _in_application(path: Path) -> tuple[bool, str | None]:
    """Is ``path`` a module of the application folder; and its room if it is in one."""
    parts = path.resolve().parts
    if "application" not in parts:
        return False, None
    i = len(parts) - 1 - parts[::-1].index("application")
    below = parts[i + 1:]
    if len(below) == 1:
        return True, None
    return True, below[0]


def _target(room: str | None, file_room: str | None) -> str:
    """The relative package, seen from a module in ``file_room`` (None: application/
    itself), that holds a module of ``room`` (None: a name that did not move)."""
    if room is None or room == file_room:
        return "."
    return f"..{room}" if file_room else f".{room}"


def _regroup(indent: str, tail: str, names: str, base: str, key_of) -> str | None:
    groups: dict[str, list[tuple[str, str | None]]] = {}
    for name, alias in _split_names(names):
        groups.setdefault(key_of(name), []).append((name, alias))
    if list(groups) == [base]:
        return None
    lines = [f"{indent}from {key} import {_join(g)}" for key, g in groups.items()]
    lines[-1] += tail
    return "\n".join(lines)


def _rewrite_from(match: re.Match[str], file_room: str | None, in_app: bool) -> str:
    indent, base, rest, names, tail = (match[g] for g in ("indent", "base", "rest", "names", "tail"))
    if base.startswith("."):
        # Only a one-dot import inside application/, written for the flat folder, moves:
        # two dots are already written for the rooms; other packages' dots are theirs.
        if not in_app or base != ".":
            return match[0]
        if rest:
            room = _room_of(rest.lstrip(".").split(".")[0])
            if room is None:
                return match[0]
            new_base = _target(room, file_room)
            joined = f"{new_base}.{rest}" if new_base != "." else f".{rest}"
            return f"{indent}from {joined} import {names}{tail}"
        out = _regroup(indent, tail, names, ".", lambda n: _target(_room_of(n), file_room))
        return match[0] if out is None else out
    if rest:
        room = _room_of(rest.lstrip(".").split(".")[0])
        if room is None:
            return match[0]
        return f"{indent}from {base}.{room}{rest} import {names}{tail}"
    out = _regroup(indent, tail, names, base,
                   lambda n: base if _room_of(n) is None else f"{base}.{_room_of(n)}")
    return match[0] if out is None else out


def rewrite_text(text: str, path: Path) -> str:
    in_app, file_room = _in_application(path) if path.suffix == ".py" else (False, None)
    if path.suffix in {".py", ".md", ".rst", ".txt"}:  # (docs: their code blocks)
        text = _FROM.sub(lambda m: _rewrite_from(m, file_room, in_app), text)
    text = _DOTTED.sub(lambda m: f"context_compaction.application.{ROOMS[m[1]]}.{m[1]}", text)
    text = _PATH.sub(lambda m: f"{m[1]}application/{ROOMS[m[2]]}/{m[2]}.py", text)
    return text


def files_under(paths: list[str]) -> list[Path]:
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += [f for f in sorted(p.rglob("*")) if f.is_file() and f.suffix in SUFFIXES
                      and not any(part in {".git", ".venv", "build", "__pycache__", "node_modules"}
                                  or part.startswith(".venv") for part in f.parts)]
        elif p.is_file():
            found.append(p)
    return found


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [a for a in argv if a != "--check"]
    if not paths:
        print(__doc__)
        return 2
    changed = []
    for f in files_under(paths):
        try:
            old = f.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = rewrite_text(old, f)
        if new != old:
            changed.append(f)
            if not check:
                f.write_text(new, encoding="utf-8")
    for f in changed:
        print(("would rewrite " if check else "rewrote ") + str(f))
    return 1 if (check and changed) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
