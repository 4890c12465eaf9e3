"""``adr/README.md`` indexes every ADR with its status, and the status agrees with the ADR's
own first line (issue 39: a withdrawn or superseded ADR says so in its first line)."""

from __future__ import annotations

import re
from pathlib import Path

ADR = Path(__file__).resolve().parents[2] / "adr"
_TITLE = re.compile(r"^# (?P<number>\d{4}):? (?P<title>.+)$")
_ROW = re.compile(r"^\| \[(?P<number>\d{4})\]\((?P<file>[^)]+)\) \| (?P<title>.+?) \| (?P<status>.+?) \|$")


def status_of(first_line: str) -> str:
    """What the first line says: ``withdrawn``, ``superseded by …`` or ``accepted``."""
    found = re.search(r"\((withdrawn|superseded by [^)]+)\)\s*$", first_line, re.I)
    return found.group(1).lower() if found else "accepted"


def adrs() -> dict[str, tuple[str, str, str]]:
    out = {}
    for path in sorted(ADR.glob("[0-9][0-9][0-9][0-9]-*.md")):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        match = _TITLE.match(first)
        assert match, f"{path.name}: the first line is not '# NNNN Title': {first!r}"
        assert match["number"] == path.name[:4], f"{path.name}: its title has another number"
        title = re.sub(r"\s*\((withdrawn|superseded by [^)]+)\)\s*$", "", match["title"], flags=re.I)
        out[match["number"]] = (path.name, title, status_of(first))
    return out


def index_rows() -> dict[str, tuple[str, str, str]]:
    rows = {}
    for line in (ADR / "README.md").read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line)
        if match:
            rows[match["number"]] = (match["file"], match["title"], match["status"])
    return rows


def render_index_rows() -> str:
    """The table body as the index holds it (paste it when an ADR is added)."""
    return "\n".join(f"| [{n}]({f}) | {t} | {s} |" for n, (f, t, s) in adrs().items())


def test_every_adr_is_in_the_index_with_the_status_its_first_line_gives() -> None:
    assert index_rows() == adrs(), "adr/README.md is out of date; its rows should be:\n" + render_index_rows()


def test_a_superseded_adr_names_an_existing_successor() -> None:
    known = set(adrs()) | {p.name for p in (ADR.parent / "docs").glob("*.md")}
    for name, _, status in adrs().values():
        if status.startswith("superseded by "):
            successor = status.removeprefix("superseded by ").strip()
            assert successor in known or Path(successor).name in known, (name, successor)
