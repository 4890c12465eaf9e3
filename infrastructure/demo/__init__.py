"""``ctxc demo`` and its workload: an example host, not an adapter.

``run`` (the demo), ``scenario`` (the synthetic coding-agent session, also the
benchmarks' workload), ``scripted`` (an offline provider and tools that replay it).
Only the CLI imports this package (``tests/unit/test_layering.py``).
"""

from .run import PROVIDER_WINDOW, run_demo

__all__ = ["PROVIDER_WINDOW", "run_demo"]
