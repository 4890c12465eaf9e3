"""Settings: one pydantic model, from code, ``CTXC_*`` environment variables or a JSON file.

Nested fields use ``__`` in environment variables, e.g.
``CTXC_CONTEXT_COMPACTION__RESERVE_TOKENS=8192``; maps and sections take JSON, e.g.
``CTXC_MODELS='{"gpt-4o": {"token_limit": 64000}}'``. Variable names are not case
sensitive; values given in code win over the environment (ADR 0012).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_origin

from pydantic import BaseModel, ConfigDict, Field, SecretStr

ENV_PREFIX = "CTXC_"
ENV_NESTED_DELIMITER = "__"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class CompactionConfig(_Section):
    """The three user-facing knobs of spec §8.1."""

    enabled: bool = True
    """Only controls automatic compaction before a turn; never /compact or overflow recovery."""
    reserve_tokens: int = Field(default=16384, ge=0)
    """Room kept for the model's output, the next tool call and estimation error."""
    keep_recent_tokens: int = Field(default=20000, ge=0)
    """How much recent history a checkpoint tries to keep verbatim."""


class ModelConfig(_Section):
    token_limit: int | None = Field(default=None, gt=0)
    api_base: str | None = None
    api_key: SecretStr | None = None


class PostgresConfig(_Section):
    pool_size: int = Field(default=5, ge=1)
    max_overflow: int = Field(default=10, ge=0)
    connect_timeout: int = Field(default=10, gt=0)
    lock_timeout: int = Field(default=10, ge=0)
    """Seconds to wait for the event table's write lock (0 waits forever)."""
    idle_in_transaction_session_timeout: int = Field(default=10, ge=0)
    pre_ping: bool = False
    """Check each pooled connection before use. Off by default: a dropped connection
    fails fast and the command replaces every dead connection at once, then retries."""
    schema_name: str | None = Field(default=None, alias="schema")
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Limits(_Section):
    """Bounds on input, refused with ``invalid_command``/``invalid_message``."""

    max_message_chars: int = Field(default=4_000_000, gt=0)
    max_batch_messages: int = Field(default=1000, gt=0)
    max_request_bytes: int = Field(default=32 * 1024 * 1024, gt=0)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True, defer_build=True)

    database_url: str = "sqlite:///ctxc.db"
    context_compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    summarizer: Literal["llm", "extractive"] = "llm"
    summary_timeout_seconds: float = Field(default=120.0, gt=0)
    snapshot_interval: int = Field(default=100, ge=0)
    """Take a snapshot of a session every N events (0 disables snapshots)."""
    sqlite_lock_timeout: int = Field(default=5, ge=1)
    postgres: PostgresConfig = Field(default_factory=PostgresConfig)
    limits: Limits = Field(default_factory=Limits)
    log_json: bool = False

    def __init__(self, **values: Any) -> None:
        super().__init__(**_deep_merge(environment_values(os.environ), values))

    @classmethod
    def from_file(cls, path: str | Path, **overrides: Any) -> Settings:
        """Settings from a JSON file; keyword arguments override the file."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"{path}: settings file must hold a JSON object")
        data.update(overrides)
        return cls(**data)

    def model_config_for(self, model: str) -> ModelConfig:
        return self.models.get(model) or ModelConfig()


def environment_values(environ: Mapping[str, str]) -> dict[str, Any]:
    """The ``CTXC_*`` variables that name a setting, as nested values for ``Settings``.

    ``__`` separates nesting levels; a variable naming a section or a map directly
    holds JSON, and nested variables are merged into it. Other ``CTXC_*`` variables
    (``CTXC_HTTP_TOKEN``, ...) are not settings and are left alone.
    """
    fields = Settings.model_fields
    out: dict[str, Any] = {}
    nested: list[tuple[list[str], str]] = []
    for key, value in environ.items():
        if key[: len(ENV_PREFIX)].upper() != ENV_PREFIX:
            continue
        path = key[len(ENV_PREFIX) :].lower().split(ENV_NESTED_DELIMITER)
        if path[0] not in fields:
            continue
        if len(path) > 1:
            nested.append((path, value))
        elif _holds_json(fields[path[0]].annotation):
            try:
                out = _deep_merge(out, {path[0]: json.loads(value)})
            except ValueError:
                # The value may be a secret: name the variable, never echo it.
                raise ValueError(f"environment variable {key} must hold JSON") from None
        else:
            out[path[0]] = value
    for path, value in sorted(nested):
        node = out
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[path[-1]] = value
    return out


def _holds_json(annotation: Any) -> bool:
    return get_origin(annotation) in (dict, list) or (
        isinstance(annotation, type) and issubclass(annotation, BaseModel)
    )


def _deep_merge(base: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out
