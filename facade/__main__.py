"""``python -m context_compaction`` runs the ``ctxc`` CLI."""

import sys

from context_compaction.infrastructure.cli import main

sys.exit(main())
