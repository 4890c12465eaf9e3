"""Settings (pydantic-settings, ADR 0069): code (a ``ctxc`` option) wins over a JSON file,
the file over ``CTXC_*`` variables, the variables over the defaults; sections merge
field by field. Nested fields use ``__`` (``CTXC_CONTEXT_COMPACTION__RESERVE_TOKENS``),
maps and sections take JSON (``CTXC_MODELS='{"gpt-4o": {"token_limit": 64000}}'``);
names are not case sensitive.

Ours on top: a ``CTXC_*`` variable that names no setting is reported (an
``UnknownSettingWarning`` and a log line naming the closest setting, ADR 0029), not
silently ignored. ``CTXC_HTTP_TOKEN`` (``ctxc serve``) and ``CTXC_TEST_*`` (the test
suite) are our only other variables.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import warnings
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, EnvSettingsSource, JsonConfigSettingsSource, SettingsConfigDict
from pydantic_settings import PydanticBaseSettingsSource as Source, SettingsError

ENV_PREFIX = "CTXC_"
ENV_NESTED_DELIMITER = "__"
#: ``CTXC_*`` variables that are ours but not settings.
OTHER_VARIABLES = frozenset({"CTXC_HTTP_TOKEN"})
OTHER_PREFIXES = ("CTXC_TEST_",)

log = logging.getLogger("context_compaction.settings")

#: The file ``Settings.from_file`` reads: its one call's sources (the signature stays pydantic's).
_settings_file: ContextVar[Path | None] = ContextVar("ctxc_settings_file", default=None)


class UnknownSettingWarning(UserWarning):
    """A ``CTXC_*`` environment variable names no setting (most likely a typo)."""


# Errors never echo a value: it may be an API key or a password in a URL.
_CONFIG = ConfigDict(extra="forbid", defer_build=True, hide_input_in_errors=True)


class _Section(BaseModel):
    model_config = _CONFIG


class ToolResultsConfig(_Section):
    """Stage 1 of compaction, tool-result clearing (issue 17, ADR 0034)."""

    clear: bool = False
    """Off by default (ADR 0034): a placeholder hides output the model may still need,
    and only a host that lets the model recall it by seq should trade it for context."""
    keep_recent_tokens: int = Field(default=8000, ge=0)
    """The newest tool output (by tokens of the whole tail) is never cleared."""
    protected_tools: list[str] = Field(default_factory=list)
    """Tool names whose results are never cleared."""
    clear_at_least_tokens: int = Field(default=2000, ge=0)
    """Clearing alone replaces a summary only when it frees at least this many tokens
    (each clearing rewrites the provider's prompt cache from the first cleared result)."""


class CompactionConfig(_Section):
    """The three user-facing knobs of spec §8.1, and the stages of issue 17."""

    enabled: bool = True
    """Only controls automatic compaction before a turn; never /compact or overflow recovery."""
    reserve_tokens: int = Field(default=16384, ge=0)
    """Room kept for the model's output, the next tool call and estimation error."""
    keep_recent_tokens: int = Field(default=20000, ge=0)
    """How much recent history a checkpoint tries to keep verbatim."""
    tool_results: ToolResultsConfig = Field(default_factory=ToolResultsConfig)
    max_consecutive_failures: int = Field(default=3, ge=0)
    """Failed automatic summaries in a row that pause automatic summaries (0: never)."""
    breaker_pause_turns: int = Field(default=5, ge=1)
    """How many turns the pause lasts; the degraded trim still guards the hard window."""
    prompt_cache: Literal["auto", "off"] = "auto"
    """``auto``: place explicit prompt-cache breakpoints for providers that need them
    (Anthropic); ``off``: never (ADR 0035)."""
    summary_model: str | None = Field(default=None, min_length=1)
    """The model that writes summaries (a cheaper one, say); None: the session's model.
    Its own ``models`` entry (api_base, api_key, token_limit) applies to the call, and
    its window caps the summary request (ADR 0040)."""
    background_ratio: float | None = Field(default=None, gt=0, lt=1)
    """``TurnRunner`` only: start the summary in the background once a request uses this
    share of the threshold (e.g. 0.8), so the turn that crosses it need not wait for a
    summary call; None (default): off (ADR 0038)."""


class NativeCompactionConfig(_Section):
    """Provider-native compaction (``summarizer: "native"``, issue 17, ADR 0039)."""

    readable: str = Field(default="llm", min_length=1)
    """The summarizer that writes the readable shadow summary stored beside the native
    state: what every other provider and model, and every audit, gets. Any registered
    summarizer but ``native`` itself (bootstrap refuses others with ``invalid_command``)."""


class ModelConfig(_Section):
    token_limit: int | None = Field(default=None, gt=0)
    api_base: str | None = None
    api_key: SecretStr | None = None
    # USD per token, over litellm's cost map (a private deployment's prices, issue 43).
    input_cost_per_token: float | None = Field(default=None, ge=0)
    output_cost_per_token: float | None = Field(default=None, ge=0)
    cache_read_input_token_cost: float | None = Field(default=None, ge=0)
    cache_creation_input_token_cost: float | None = Field(default=None, ge=0)


class PostgresConfig(_Section):
    pool_size: int = Field(default=5, ge=1)
    """Connections kept open (eventsourcing's ``POSTGRES_POOL_SIZE``)."""
    max_overflow: int = Field(default=10, ge=0)
    connect_timeout: int = Field(default=10, gt=0)
    lock_timeout: int = Field(default=10, ge=0)
    """Seconds to wait for the event table's write lock (0 waits forever)."""
    idle_in_transaction_session_timeout: int = Field(default=10, ge=0)
    pre_ping: bool = False
    """Check each pooled connection before use. Off by default: a dropped connection
    fails fast and the command replaces every dead connection at once, then retries."""
    schema_name: str | None = Field(default=None, alias="schema")
    model_config = ConfigDict(**_CONFIG, populate_by_name=True)


class Limits(_Section):
    """Bounds on input, refused with ``invalid_command``/``invalid_message``."""

    max_message_chars: int = Field(default=4_000_000, gt=0)
    max_batch_messages: int = Field(default=1000, gt=0)
    max_request_bytes: int = Field(default=32 * 1024 * 1024, gt=0)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(**_CONFIG, validate_default=True, env_prefix=ENV_PREFIX,
                                      env_nested_delimiter=ENV_NESTED_DELIMITER, case_sensitive=False)

    database_url: str = "sqlite:///ctxc.db"
    context_compaction: CompactionConfig = Field(default_factory=CompactionConfig)
    models: dict[str, ModelConfig] = Field(default_factory=dict)
    summarizer: str = Field(default="llm", min_length=1)
    """A name in the summarizer registry (``llm``, ``extractive``, ``native`` and any
    added there): a new summarizer is its module and one registry entry, no settings
    change. Bootstrap refuses an unknown name with ``invalid_command``."""
    native_compaction: NativeCompactionConfig = Field(default_factory=NativeCompactionConfig)
    summary_timeout_seconds: float = Field(default=120.0, gt=0)
    snapshot_interval: int = Field(default=100, ge=0)
    """Take a snapshot of a session every N events (0 disables snapshots)."""
    sqlite_lock_timeout: int = Field(default=5, ge=1)
    postgres: PostgresConfig = Field(default_factory=PostgresConfig)
    limits: Limits = Field(default_factory=Limits)
    log_json: bool = False

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: Source,
                                   env_settings: Source, dotenv_settings: Source,
                                   file_secret_settings: Source) -> tuple[Source, ...]:
        # No .env file and no secrets directory: code, then the file, then CTXC_*.
        path = _settings_file.get()
        file = (_File(settings_cls, json_file=path, json_file_encoding="utf-8"),) if path else ()
        return (init_settings, *file, _Environment(settings_cls))

    @classmethod
    def from_file(cls, path: str | Path, **overrides: Any) -> Settings:
        """Settings from a JSON file: keyword arguments win over the file, the file over
        ``CTXC_*`` variables, the variables over the defaults. A relative SQLite path in
        the file's ``database_url`` is relative to the file's folder, not to the working
        directory: the same file names the same database from anywhere."""
        path = Path(path)
        path.open("rb").close()  # a missing file is an error here (the JSON source skips it)
        token = _settings_file.set(path)
        try:
            return cls(**overrides)
        finally:
            _settings_file.reset(token)

    def model_config_for(self, model: str) -> ModelConfig:
        return self.models.get(model) or ModelConfig()

    def summary_model_for(self, model: str) -> str:
        """The model that summarizes a session on ``model``: ``summary_model`` if set."""
        return self.context_compaction.summary_model or model


class _File(JsonConfigSettingsSource):
    """The settings file, a relative SQLite path in it anchored at the file's folder (run
    from another directory, a write would otherwise open a new, empty store there)."""

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        try:
            data = super()._read_file(file_path)
        except ValueError as exc:
            raise ValueError(f"{file_path}: settings file is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError(f"{file_path}: settings file must hold a JSON object")
        name = str(data.get("database_url", ""))
        if name.startswith("sqlite:///") and name[10:] not in ("", ":memory:") and not name[10:].startswith("file:"):
            data["database_url"] = f"sqlite:///{Path(file_path).resolve().parent / name[10:]}"
        return data


class _Environment(EnvSettingsSource):
    """``CTXC_*`` less the variables that name no setting (reported, then left out:
    pydantic would refuse the whole settings for one nested typo); a variable for a
    section, map or list that does not hold JSON is named (pydantic-settings names the
    top-level field only; the value may be a secret and is never echoed)."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        unknown = {key.lower() for key in unknown_variables(os.environ)}
        found = {k: v for k, v in super()._load_env_vars().items() if k not in unknown}
        bad = sorted(k.upper() for k, v in found.items() if v is not None and k.upper().startswith(ENV_PREFIX) and _not_json(k, v))
        if bad:
            raise SettingsError(f"environment variable {' or '.join(bad)} must hold JSON")
        return found


def _not_json(key: str, value: str) -> bool:
    node = _shape(key[len(ENV_PREFIX):].lower().split(ENV_NESTED_DELIMITER))[0]
    if (isinstance(node, type) and issubclass(node, BaseModel)) or get_origin(node) in (dict, list):
        try:
            json.loads(value)
        except ValueError:
            return True
    return False


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """The ``CTXC_*`` variables in ``environ`` with a part that names no setting
    (``CTXC_SUMARIZER``, ``CTXC_LIMITS__MAX_BATCH``), each reported
    (``UnknownSettingWarning``); ``CTXC_HTTP_TOKEN`` and ``CTXC_TEST_*`` are ours but no
    settings and are left alone."""
    found = []
    for key in environ:
        name = key.upper()
        if not name.startswith(ENV_PREFIX) or name in OTHER_VARIABLES or name.startswith(OTHER_PREFIXES):
            continue
        path = key[len(ENV_PREFIX):].lower().split(ENV_NESTED_DELIMITER)
        if (unknown := _shape(path)[1]) is not None:
            _report_unknown(key, path, *unknown)
            found.append(key)
    return found


_reported: set[str] = set()


def _shape(path: list[str]) -> tuple[Any, tuple[int, list[str]] | None]:
    """The type ``path`` names in ``Settings``, or where it leaves its shape: the index
    of the first part that names nothing and the names known at that level (None:
    every part names a field, an alias, or a key of a map)."""
    node: Any = Settings
    for index, part in enumerate(path):
        if isinstance(node, type) and issubclass(node, BaseModel):
            names = {alias: f.annotation for name, f in node.model_fields.items()
                     for alias in (name, f.alias) if alias}
            if part not in names:
                return None, (index, sorted(names))
            node = names[part]
        elif get_origin(node) is dict:
            node = get_args(node)[1]  # any key: a model name in ``models``
        else:  # a scalar has no parts
            return None, (index, [])
    return node, None


def _report_unknown(key: str, path: list[str], index: int, known: list[str]) -> None:
    stem = ENV_PREFIX + "".join(f"{p}{ENV_NESTED_DELIMITER}" for p in path[:index]).upper()
    candidates = [stem + k.upper() for k in known]
    close = difflib.get_close_matches(stem + path[index].upper(), candidates, n=1, cutoff=0.6)
    if close:
        hint = f"; did you mean {close[0]}?"
    elif candidates:
        hint = f"; known here: {', '.join(candidates)}"
    else:
        hint = f"; {stem.rstrip('_')} takes no nested variables"
    text = f"environment variable {key} names no setting and is ignored{hint}"
    # Warned every time (a filter may turn it into an error), logged once per process.
    warnings.warn(text, UnknownSettingWarning, stacklevel=2)
    if key not in _reported:
        _reported.add(key)
        log.warning("unknown setting variable ignored",
                    extra={"variable": key, "suggestion": close[0] if close else None})


def problems(exc: ValidationError, environ: Mapping[str, str] | None = None) -> list[str]:
    """One line per invalid setting: its dotted name, the variable that set it when one
    did, and why it is refused (never the value: it may be a secret)."""
    environ = os.environ if environ is None else environ
    upper = {k.upper(): k for k in environ}
    lines = []
    for error in exc.errors(include_input=False, include_url=False, include_context=False):
        loc = [str(part) for part in error["loc"]]
        variable = None
        for depth in range(len(loc), 0, -1):  # the deepest variable that exists
            name = ENV_PREFIX + ENV_NESTED_DELIMITER.join(loc[:depth]).upper()
            if name in upper:
                variable = upper[name]
                break
        where = ".".join(loc) or "settings"
        reason = error["msg"]
        if error["type"] == "extra_forbidden":  # a misspelled key in a file or in code
            unknown = _shape(loc)[1]
            close = difflib.get_close_matches(loc[unknown[0]], unknown[1], n=1) if unknown else []
            reason = "no such setting" + (f"; did you mean {'.'.join([*loc[:unknown[0]], close[0]])}?"
                                          if unknown and close else "")
        lines.append(f"{where}{f' (from {variable})' if variable else ''}: {reason}")
    return lines
