"""The ChatProvider adapter for the TurnRunner: ``litellm.acompletion``; a
context-window error becomes ``ContextOverflow``. (The demo's scripted provider is in
``demo/scripted.py``.)"""

from __future__ import annotations

from typing import Any

from context_compaction.application.contracts.ports import ContextOverflow, ProviderReply
from context_compaction.application.contracts.settings import Settings
from context_compaction.domain.overflow import is_overflow

from .summarizers import import_litellm_off_loop


class LiteLLMChatProvider:
    def __init__(self, settings: Settings, *, timeout: float = 600.0) -> None:
        self.settings = settings
        self.timeout = timeout

    async def complete(
        self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ProviderReply:
        litellm = await import_litellm_off_loop()
        config = self.settings.model_config_for(model)
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "timeout": self.timeout,
            "num_retries": 0,
        }
        if tools:
            kwargs["tools"] = tools
        if config.api_base:
            kwargs["api_base"] = config.api_base
        if config.api_key is not None:
            kwargs["api_key"] = config.api_key.get_secret_value()
        try:
            response = await litellm.acompletion(**kwargs)
        except litellm.ContextWindowExceededError as exc:
            raise ContextOverflow(str(exc)) from None
        except litellm.BadRequestError as exc:
            if is_overflow(str(exc)):
                raise ContextOverflow(str(exc)) from None
            raise
        # The message as the provider returned it: appended with the request's model, its
        # provider output (thinking blocks, signatures, ...) is replayed only to that model.
        out: dict[str, Any] = response.choices[0].message.model_dump()
        return ProviderReply(message=out, **usage_of(getattr(response, "usage", None)))


def usage_of(usage: Any) -> dict[str, int | None]:
    """The token figures of a litellm usage (ADR 0035): ``prompt_tokens`` already holds the
    cache reads and writes; reads are ``prompt_tokens_details.cached_tokens`` (OpenAI,
    and Anthropic through litellm), writes ``cache_creation_input_tokens`` (Anthropic)."""
    if usage is None:
        return {"prompt_tokens": None}
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    created = getattr(usage, "cache_creation_input_tokens", None)
    return {
        "prompt_tokens": _count(getattr(usage, "prompt_tokens", None)),
        "cached_tokens": _count(cached),
        "cache_creation_tokens": _count(created),
        "completion_tokens": _count(getattr(usage, "completion_tokens", None)),
    }


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
