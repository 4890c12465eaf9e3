"""Provider-native compaction as a summarizer (issue 17, ADR 0039).

``NativeCompactionSummarizer`` (``settings.summarizer = "native"``) asks the provider to
compact the summarized range server-side — OpenAI's ``POST /v1/responses/compact``
through ``litellm.compact_responses`` — and keeps what it returns (the input's user
messages and one opaque ``compaction`` item) as the checkpoint's provider state,
tagged with the provider and model that made it. Beside it, the configured readable
summarizer (``native_compaction.readable``) writes the checkpoint's summary: what
every other provider and model, the ledger check and every audit get.

The state is stored as the message that replaces the summary block in a request to
that provider and model (``domain/projection.py``): ``{"role": "user", "content":
None, "provider_specific_fields": {"responses_items": [...]}}``. Chat completions has no
such item, so that message is only meaningful to the Responses API: ``responses_input``
turns a prepared request into Responses ``instructions`` + ``input``, the stored items
verbatim. Providers without a compact endpoint get the readable summary alone.

Research: docs/research/provider-native-compaction.md. Nothing here logs message text,
summaries or the opaque state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from context_compaction.application.ports import Summarizer, SummaryRequest, SummaryResult
from context_compaction.application.settings import Settings
from context_compaction.domain.errors import SummaryFailed
from context_compaction.domain.projection import ProviderIdentity, summary_message
from context_compaction.domain.summary import SourceEntry

from .catalog import LiteLLMCatalog

log = logging.getLogger("context_compaction.summarizer")

#: The kind of state this module writes (stored in each checkpoint's provider state).
OPENAI_COMPACT = "openai_responses_compact"
#: Where the items travel inside the replacement message.
ITEMS_FIELD = "responses_items"
#: Providers whose Responses config in litellm has the compact endpoint (research §3).
COMPACT_PROVIDERS = frozenset({"openai", "azure"})


class NativeCompactionSummarizer:
    """One native compaction call plus one readable summary per compaction; either
    failing is ``SummaryFailed`` — never a fallback to another summarizer."""

    def __init__(
        self,
        settings: Settings,
        *,
        readable: Summarizer,
        litellm: Callable[[], Any],
        provider_of: Callable[[str], str] | None = None,
        timeout: float = 120.0,
    ) -> None:
        self.settings = settings
        self.readable = readable
        self._litellm = litellm
        # The same provider names as the projection's identity, so that the state
        # matches exactly when prepare_turn's provider and model are the ones that made it.
        self.provider_of = provider_of or LiteLLMCatalog().provider_of
        self.timeout = timeout
        self._unsupported_logged: set[str] = set()

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        provider = self.provider_of(request.model)
        if provider not in COMPACT_PROVIDERS:
            if provider not in self._unsupported_logged:
                self._unsupported_logged.add(provider)
                log.warning(
                    "no native compaction for this provider: readable summary only",
                    extra={"session_id": request.session_id, "provider": provider},
                )
            return self.readable.summarize(request)
        items = self._compact(request, provider)
        shadow = self.readable.summarize(request)
        state = {
            "provider": provider,
            "model": request.model,
            "kind": OPENAI_COMPACT,
            "shadow_by": shadow.provider_kind,
            "message": {"role": "user", "content": None, "provider_specific_fields": {ITEMS_FIELD: items}},
        }
        return SummaryResult(
            text=shadow.text, provider_kind=f"native:{provider}", model=request.model, provider_state=state
        )

    def _compact(self, request: SummaryRequest, provider: str) -> list[dict[str, Any]]:
        litellm = self._litellm()
        config = self.settings.model_config_for(request.model)
        kwargs: dict[str, Any] = {
            "model": request.model,
            "input": compact_input(request, ProviderIdentity(provider, request.model)),
            "timeout": self.timeout,
            "max_retries": 0,
        }
        if config.api_base:
            kwargs["api_base"] = config.api_base
        if config.api_key is not None:
            kwargs["api_key"] = config.api_key.get_secret_value()
        try:
            response = litellm.compact_responses(**kwargs)
        except Exception as exc:  # noqa: BLE001 - every provider failure is a summary failure
            log.warning(
                "native compaction call failed",
                extra={"session_id": request.session_id, "error_class": type(exc).__name__},
            )
            raise SummaryFailed(
                f"the native compaction call failed: {type(exc).__name__}",
                details={"error_class": type(exc).__name__},
            ) from None
        return compacted_items(getattr(response, "output", None))


def compacted_items(output: Any) -> list[dict[str, Any]]:
    """The compact response's items as plain JSON (unset fields left out); exactly one
    ``compaction`` item with its ``encrypted_content``, last, else ``SummaryFailed``."""
    if not isinstance(output, list) or not output:
        raise SummaryFailed("the native compaction response has no output")
    items: list[dict[str, Any]] = []
    for item in output:
        plain = item.model_dump(mode="json") if hasattr(item, "model_dump") else item
        if not isinstance(plain, dict):
            raise SummaryFailed("the native compaction response was malformed")
        items.append({k: v for k, v in plain.items() if v is not None})
    compactions = [i for i in items if i.get("type") == "compaction"]
    last = items[-1]
    if (
        len(compactions) != 1
        or last.get("type") != "compaction"
        or not isinstance(last.get("encrypted_content"), str)
        or not last["encrypted_content"]
    ):
        raise SummaryFailed("the native compaction response has no single compaction item")
    return items


def compact_input(request: SummaryRequest, identity: ProviderIdentity) -> list[dict[str, Any]]:
    """The summarized range as Responses input items: the previous checkpoint's native
    items when this provider and model made them, else its readable summary block; then
    the range's messages (as the summary source serialized them: bounded, tool output
    head/tail-truncated). Tool outputs without their call, and calls without their
    output, are left out (the source may have dropped the older half of a pair)."""
    items: list[dict[str, Any]] = []
    previous = request.previous_provider_state
    if previous and previous.get("kind") == OPENAI_COMPACT and identity.matches(dict(previous)):
        items.extend(_items_of(previous.get("message") or {}))
    elif request.source.previous_summary:
        block = summary_message(request.source.previous_summary)
        items.append({"role": "user", "content": block["content"]})
    items.extend(_paired(_entry_items(request.source.entries)))
    if not items:
        raise SummaryFailed("nothing to compact natively: the summary source is empty")
    return items


def _entry_items(entries: Sequence[SourceEntry]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for e in entries:
        if e.role == "tool":
            items.append({"type": "function_call_output", "call_id": e.tool_call_id or "", "output": e.text})
            continue
        role = e.role if e.role in ("user", "assistant", "system", "developer") else "user"
        if e.text:
            items.append({"role": role, "content": e.text})
        for call_id, name, arguments in e.tool_calls:
            items.append({"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments})
    return items


def _paired(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    calls = {i["call_id"] for i in items if i.get("type") == "function_call"}
    outputs = {i["call_id"] for i in items if i.get("type") == "function_call_output"}
    return [
        i
        for i in items
        if not (i.get("type") == "function_call" and i["call_id"] not in outputs)
        and not (i.get("type") == "function_call_output" and i["call_id"] not in calls)
    ]


def _items_of(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    fields = message.get("provider_specific_fields")
    items = fields.get(ITEMS_FIELD) if isinstance(fields, Mapping) else None
    return [dict(i) for i in items] if isinstance(items, list) else []


def responses_input(messages: Sequence[Mapping[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """A prepared request (``prepare_turn.messages``) as the Responses API's
    ``instructions`` and ``input``: the leading system message becomes the
    instructions, a native checkpoint's items are passed verbatim, chat messages and
    tool calls become their Responses items. Ready for
    ``litellm.responses(model=..., instructions=..., input=...)``."""
    instructions: str | None = None
    items: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        native = _items_of(message)
        if native:
            items.extend(native)
        elif role == "system" and index == 0 and isinstance(message.get("content"), str):
            instructions = message["content"]
        elif role == "tool":
            items.append({"type": "function_call_output", "call_id": message.get("tool_call_id"),
                          "output": _text(message.get("content"))})
        else:
            if message.get("content") not in (None, "", []):
                items.append({"role": role, "content": _text(message.get("content"))})
            for call in message.get("tool_calls") or []:
                fn = call.get("function") or {}
                items.append({"type": "function_call", "call_id": call.get("id"),
                              "name": fn.get("name"), "arguments": fn.get("arguments") or ""})
    return instructions, items


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)
