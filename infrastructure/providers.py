"""The ChatProvider adapter for the TurnRunner: ``litellm.acompletion``; a
context-window error becomes ``ContextOverflow``. (The demo's scripted provider is in
``demo/scripted.py``.)"""

from __future__ import annotations

from typing import Any

from context_compaction.application.ports import ContextOverflow, ProviderReply
from context_compaction.application.settings import Settings
from context_compaction.domain.overflow import is_overflow

from .summarizers import import_litellm


class LiteLLMChatProvider:
    def __init__(self, settings: Settings, *, timeout: float = 600.0) -> None:
        self.settings = settings
        self.timeout = timeout

    async def complete(
        self, *, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ProviderReply:
        litellm = import_litellm()
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
        usage = getattr(response, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", None) if usage is not None else None
        return ProviderReply(message=out, prompt_tokens=prompt_tokens)
