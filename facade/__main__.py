"""``python -m context_compaction`` runs the ``ctxc`` CLI."""

from context_compaction.infrastructure.cli import run

run()
