"""``context_compaction.integrations`` imports no framework (issue 40): a host without
the extras imports the package; a framework module without its framework says which
extra to install."""

from __future__ import annotations

import subprocess
import sys

BLOCKER = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"langchain", "langchain_core", "langgraph", "agents", "pydantic_ai"}:
            raise ImportError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, Block())
"""


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCKER + code], capture_output=True, text=True, timeout=120,
                          check=False)


def test_the_package_imports_without_any_framework() -> None:
    proc = run("import context_compaction.integrations, context_compaction.integrations.openai_agents\n"
               "import context_compaction.integrations.litellm_proxy\n"
               "print(sorted(m for m in sys.modules if m.split('.')[0] in "
               "{'langchain', 'langchain_core', 'langgraph', 'agents', 'pydantic_ai'}))")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_a_framework_module_without_its_framework_names_the_extra() -> None:
    for module, extra in (("langchain", "langchain"), ("pydantic_ai", "pydantic-ai")):
        proc = run(f"import context_compaction.integrations.{module}")
        assert proc.returncode != 0
        assert f"pip install 'context-compaction[{extra}]'" in proc.stderr, proc.stderr
