"""``ctxc`` run in the test process, leaving logging as it found it (not a test module).

``main`` configures the package logger for a terminal (its own handler, no
propagation); a later test in the same process must still see the records.
"""

from __future__ import annotations

import logging

from context_compaction.infrastructure.cli import main


def run_cli(argv: list[str]) -> int:
    logger = logging.getLogger("context_compaction")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    try:
        return main(argv)
    finally:
        logger.handlers[:], logger.level, logger.propagate = saved
