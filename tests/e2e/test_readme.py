"""The README's embedding example runs as written (against a local fake provider)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from context_compaction import Settings, bootstrap
from context_compaction.application.contracts import commands as c
from fakeprovider import Reply

README = Path(__file__).resolve().parents[2] / "README.md"


def embedding_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Embedding", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _run_example(tmp_path: Path, provider) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "example.py"
    script.write_text(embedding_example(), encoding="utf-8")
    env = {**os.environ, "OPENAI_API_BASE": provider.base_url, "OPENAI_API_KEY": "test-key",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_the_embedding_example_runs_and_runs_again_on_its_own_database(tmp_path: Path, provider) -> None:
    """The example as written, on a fresh database; then a second run continues the
    session (get or start), where ``StartSession`` alone failed with ``SessionExists``
    (issue 35, finding 5). One test: its first run is the fresh one (ADR 0089)."""
    provider.queue(Reply(text="A race between two refund requests.", prompt_tokens=321))
    proc = _run_example(tmp_path, provider)
    assert "A race between two refund requests." in proc.stdout
    assert "Compaction threshold" in proc.stdout
    # /info after record_usage: the provider's 321 tokens plus the appended answer.
    assert "(provider-measured + tail estimate" in proc.stdout
    assert provider.calls == 1
    sent = provider.requests[0].messages
    assert sent[0] == {"role": "system", "content": "You are a careful coding agent."}
    assert sent[-1]["content"] == "Why does test_refund_idempotency fail intermittently?"
    # The example appends response.choices[0].message itself: it is stored as the answer.
    with bootstrap(Settings(database_url=f"sqlite:///{tmp_path / 'agent.db'}")) as bus:
        history = bus.dispatch(c.GetHistory(session_id="ticket-4711")).messages
    assert [(m.role, m.content) for m in history] == [
        ("user", "Why does test_refund_idempotency fail intermittently?"),
        ("assistant", "A race between two refund requests."),
    ]

    provider.queue(Reply(text="second answer", prompt_tokens=321))
    assert "second answer" in _run_example(tmp_path, provider).stdout
    with bootstrap(Settings(database_url=f"sqlite:///{tmp_path / 'agent.db'}")) as bus:
        history = bus.dispatch(c.GetHistory(session_id="ticket-4711")).messages
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant"]
    assert provider.requests[1].messages[-1]["content"] == provider.requests[0].messages[-1]["content"]
    assert len(provider.requests[1].messages) == len(provider.requests[0].messages) + 2
