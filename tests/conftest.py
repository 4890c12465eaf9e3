from __future__ import annotations

import os

# No network, ever: litellm must use its bundled model map (LIBRARY-NOTES §9).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# The fake provider listens on loopback; never send it through a proxy.
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"

from collections.abc import Iterator
from pathlib import Path
import pytest

from context_compaction.application.bus import MessageBus
from fakeprovider import FakeProvider
from helpers import Harness


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    h = Harness(tmp_path / "ctx.db", summarizer="extractive")
    yield h
    h.close()


@pytest.fixture
def bus(harness: Harness) -> MessageBus:
    return harness.bus


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    fake = FakeProvider().start()
    yield fake
    fake.stop()

