"""Provider-native compaction as a summarizer (issue 17, ADR 0039).

``NativeCompactionSummarizer`` (``settings.summarizer = "native"``) asks the provider to
compact the summarized range server-side and keeps what it returns as the checkpoint's
provider state, tagged with the provider and model that made it:

* OpenAI (and Azure) Responses: ``POST /v1/responses/compact`` through
  ``litellm.compact_responses`` → the input's user messages and one opaque
  ``compaction`` item;
* Anthropic on-demand compaction: ``POST /v1/messages`` with ``compaction`` through
  ``litellm.completion`` → one signed ``compaction`` block.

Beside it, the configured readable summarizer (``native_compaction.readable``) writes
the checkpoint's summary: what every other provider and model, the ledger check and
every audit get. Providers without native compaction get the readable summary alone.

The state is stored as the message that replaces the summary block in a request to
that provider and model (``domain/projection.py``). For Anthropic that is litellm's own
form, ready for ``litellm.completion``: ``{"role": "assistant", "content": None,
"provider_specific_fields": {"compaction_blocks": [block]}}``. Chat completions has no
OpenAI compaction item, so OpenAI's is ``{"role": "user", "content": None,
"provider_specific_fields": {"responses_items": [...]}}``, meaningful to the Responses
API only: ``responses_input`` turns a prepared request into its ``instructions`` and
``input``, the stored items verbatim.

Research: docs/research/provider-native-compaction.md. Nothing here logs message text,
summaries or the opaque state.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from context_compaction.application.contracts.ports import Summarizer, SummaryRequest, SummaryResult
from context_compaction.application.contracts.settings import Settings
from context_compaction.domain.errors import SummaryFailed
from context_compaction.domain.projection import summary_message
from context_compaction.domain.provider_messages import ProviderIdentity
from context_compaction.domain.summary import SourceEntry

from .catalog import LiteLLMCatalog
from .failure_causes import provider_failure

log = logging.getLogger("context_compaction.summarizer")

#: The kinds of state this module writes (stored in each checkpoint's provider state).
OPENAI_COMPACT = "openai_responses_compact"
ANTHROPIC_COMPACT = "anthropic_compaction"
#: Where OpenAI's items travel inside the replacement message (our name: chat
#: completions has no such message; ``responses_input`` unpacks it).
ITEMS_FIELD = "responses_items"
#: Where litellm carries Anthropic compaction blocks in a chat message (research §3).
BLOCKS_FIELD = "compaction_blocks"
#: Provider → the kind of native compaction it has: OpenAI's Responses compact endpoint
#: (litellm's Responses config: openai, azure), Anthropic's on-demand compaction.
NATIVE_KINDS = {"openai": OPENAI_COMPACT, "azure": OPENAI_COMPACT, "anthropic": ANTHROPIC_COMPACT}


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
        kind = NATIVE_KINDS.get(provider)
        if kind is None:
            if provider not in self._unsupported_logged:
                self._unsupported_logged.add(provider)
                log.warning(
                    "no native compaction for this provider: readable summary only",
                    extra={"session_id": request.session_id, "provider": provider},
                )
            return self.readable.summarize(request)
        identity = ProviderIdentity(provider, request.model)
        if kind == OPENAI_COMPACT:
            message = self._openai(request, identity)
        else:
            message = self._anthropic(request, identity)
        shadow = self.readable.summarize(request)
        state = {
            "provider": provider,
            "model": request.model,
            "kind": kind,
            "shadow_by": shadow.provider_kind,
            "message": message,
        }
        return SummaryResult(
            text=shadow.text, provider_kind=f"native:{provider}", model=request.model, provider_state=state
        )

    def _call(self, request: SummaryRequest, function: str, **kwargs: Any) -> Any:
        config = self.settings.model_config_for(request.model)
        kwargs.update(model=request.model, timeout=self.timeout)
        if config.api_base:
            kwargs["api_base"] = config.api_base
        if config.api_key is not None:
            kwargs["api_key"] = config.api_key.get_secret_value()
        try:
            return getattr(self._litellm(), function)(**kwargs)
        except Exception as exc:  # noqa: BLE001 - every provider failure is a summary failure
            log.warning(
                "native compaction call failed",
                extra={"session_id": request.session_id, "error_class": type(exc).__name__},
            )
            raise provider_failure(exc, self.settings, request.model, "native compaction call",
                                   self._litellm()) from None

    def _openai(self, request: SummaryRequest, identity: ProviderIdentity) -> dict[str, Any]:
        """``POST /v1/responses/compact``: the input's user messages and one compaction item."""
        response = self._call(
            request, "compact_responses", input=compact_input(request, identity), max_retries=0
        )
        items = compacted_items(getattr(response, "output", None))
        return {"role": "user", "content": None, "provider_specific_fields": {ITEMS_FIELD: items}}

    def _anthropic(self, request: SummaryRequest, identity: ProviderIdentity) -> dict[str, Any]:
        """``POST /v1/messages`` with ``compaction: {type: summarize}`` (beta header added by
        litellm): one compaction block, replayed byte-exact as the first block of an
        assistant message (litellm's own form for it)."""
        response = self._call(
            request,
            "completion",
            messages=compaction_messages(request, identity),
            compaction={"type": "summarize"},
            max_tokens=request.provider_max_tokens,  # (Claude counts x1.25 here: ADR 0111)
            num_retries=0,
        )
        return {"role": "assistant", "content": None,
                "provider_specific_fields": {BLOCKS_FIELD: [compaction_block(response)]}}


def compaction_block(response: Any) -> dict[str, Any]:
    """The one compaction block of an Anthropic response. litellm reports a compaction
    as ``finish_reason == "length"``: the block, not the finish reason, is the test. No
    block (the soft failure: empty content) is ``SummaryFailed``."""
    try:
        fields = response.choices[0].message.provider_specific_fields or {}
    except (AttributeError, IndexError, TypeError):
        raise SummaryFailed("the native compaction response was malformed") from None
    blocks = fields.get(BLOCKS_FIELD) if isinstance(fields, Mapping) else None
    if not isinstance(blocks, list) or len(blocks) != 1 or not isinstance(blocks[0], Mapping):
        raise SummaryFailed("the native compaction response has no single compaction block")
    block = dict(blocks[0])
    if block.get("type") != "compaction" or not block.get("signature") or not block.get("content"):
        raise SummaryFailed("the native compaction block is empty or unsigned")
    return block


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


def compaction_messages(request: SummaryRequest, identity: ProviderIdentity) -> list[dict[str, Any]]:
    """The summarized range as chat messages for Anthropic's compaction: the previous
    checkpoint's block when this provider and model made it (it must come first), else
    its readable summary block; then the range's messages, tool calls paired."""
    messages: list[dict[str, Any]] = []
    previous = request.previous_provider_state
    if previous and previous.get("kind") == ANTHROPIC_COMPACT and identity.matches(dict(previous)):
        messages.append(copy.deepcopy(dict(previous["message"])))
    elif request.source.previous_summary:
        messages.append(summary_message(request.source.previous_summary))
    for item in _paired(_entry_items(request.source.entries)):
        kind = item.get("type")
        if kind == "function_call":
            call = {"id": item["call_id"], "type": "function",
                    "function": {"name": item["name"], "arguments": item["arguments"]}}
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant" and BLOCKS_FIELD not in (last.get("provider_specific_fields") or {}):
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]})
        else:
            messages.append({"role": item["role"], "content": item["content"]})
    if not messages:
        raise SummaryFailed("nothing to compact natively: the summary source is empty")
    return messages


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
