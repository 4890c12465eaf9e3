""""A summarizer is 2 files" (its module, one ``SUMMARIZERS``
entry; docs/architecture.md "Where to add"). The CLI's ``--summarizer`` flag keeps its
own list (``cli_parser.py``: ``choices=["llm", "extractive"]``), so a registered
summarizer — ``native`` today, any new one tomorrow — is refused by ``ctxc
--summarizer NAME`` (argparse exit 2) although settings, ``--config`` and
``CTXC_SUMMARIZER`` accept it. Adding a summarizer usable from the flag is 3 files, and
the registry is not the one list of summarizers.
"""

from __future__ import annotations

import pytest

from context_compaction.infrastructure.cli import build_parser
from context_compaction.infrastructure.summarizers import SUMMARIZERS


@pytest.mark.parametrize("name", sorted(SUMMARIZERS))
def test_the_cli_flag_takes_every_registered_summarizer(name: str) -> None:
    args = build_parser().parse_args(["--summarizer", name, "sessions"])
    assert args.summarizer == name
