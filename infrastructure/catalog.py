"""litellm's local model catalog, read from the JSON file litellm ships.

Reading the file directly (not ``import litellm``) keeps commands that never call a
model fast to start, and can never touch the network (ADR 0005).
"""

from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path
from typing import Any

_CATALOG_FILE = "model_prices_and_context_window_backup.json"
_WELL_KNOWN: tuple[tuple[tuple[str, ...], str], ...] = (
    (("gpt-", "o1", "o3", "o4", "chatgpt-"), "openai"),
    (("claude-",), "anthropic"),
)


def litellm_package_dir() -> Path:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("litellm is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


class LiteLLMCatalog:
    """Implements the application's ModelCatalog port."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._data: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def _entries(self) -> dict[str, Any]:
        if self._data is None:
            with self._lock:
                if self._data is None:
                    path = self._path or litellm_package_dir() / _CATALOG_FILE
                    data = json.loads(path.read_text(encoding="utf-8"))
                    data.pop("sample_spec", None)
                    self._data = data
        return self._data

    def entry(self, model: str) -> dict[str, Any] | None:
        entries = self._entries()
        found = entries.get(model)
        if found is None and "/" in model:
            provider, bare = model.split("/", 1)
            candidate = entries.get(bare)
            if candidate is not None and candidate.get("litellm_provider") in (provider, None):
                found = candidate
        return found if isinstance(found, dict) else None

    def max_input_tokens(self, model: str) -> int | None:
        entry = self.entry(model)
        value = entry.get("max_input_tokens") if entry else None
        return int(value) if isinstance(value, int) and value > 0 else None

    def max_output_tokens(self, model: str) -> int | None:
        entry = self.entry(model)
        value = entry.get("max_output_tokens") if entry else None
        return int(value) if isinstance(value, int) and value > 0 else None

    def provider_of(self, model: str) -> str:
        if "/" in model:
            return model.split("/", 1)[0]
        for prefixes, provider in _WELL_KNOWN:
            if model.startswith(prefixes) and ":" not in model and "instruct" not in model:
                return provider  # what the catalog says too, without reading 3.5 MB of it
        entry = self.entry(model)
        provider = entry.get("litellm_provider") if entry else None
        return str(provider) if provider else "unknown"
