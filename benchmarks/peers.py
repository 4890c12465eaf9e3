"""The peers of the core section (LangChain, llama-index): their per-call checks on the
same history. Run by ``run.py --peers-only N`` in a process of its own."""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

from context_compaction.domain.messages import Message
from context_compaction.infrastructure.tokens import offline_encoding


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def as_openai(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from context_compaction.domain.provider_messages import to_provider_message

    out = []
    for seq, m in enumerate(messages, 1):
        record = {**Message.model_validate(m).to_record(), "seq": seq}
        out.append(to_provider_message(record, None))
    return out


def per_call_peers(history: list[dict[str, Any]], repeats: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    enc = offline_encoding("cl100k_base")
    try:
        from langchain.agents.middleware import SummarizationMiddleware
        from langchain_core.language_models.fake_chat_models import FakeListChatModel
        from langchain_core.messages import convert_to_messages, trim_messages
    except ImportError as exc:
        results["langchain"] = f"not installed ({exc.name})"
    else:
        lc_messages = convert_to_messages(history)

        def tiktoken_counter(messages: Any) -> int:
            total = 0
            for m in messages:
                content = m.content if isinstance(m.content, str) else json.dumps(m.content)
                total += 3 + len(enc.encode_ordinary(content))
                for call in getattr(m, "tool_calls", None) or []:
                    total += len(enc.encode_ordinary(json.dumps(call.get("args", {}))))
            return total

        model = FakeListChatModel(responses=["summary"])
        exact = SummarizationMiddleware(model, trigger=("tokens", 10**12), token_counter=tiktoken_counter)
        approx = SummarizationMiddleware(model, trigger=("tokens", 10**12))
        state = {"messages": lc_messages}
        exact.before_model(state, None)  # assigns message ids once
        results["langchain_summarization_tiktoken_ms"] = ms(_best(lambda: exact.before_model(state, None), repeats))
        results["langchain_summarization_default_ms"] = ms(_best(lambda: approx.before_model(state, None), repeats))
        results["langchain_trim_messages_tiktoken_ms"] = ms(_best(
            lambda: trim_messages(lc_messages, max_tokens=10**12, token_counter=tiktoken_counter,
                                  strategy="last"), repeats))
        approx_total = approx.token_counter(lc_messages)
        exact_total = tiktoken_counter(lc_messages)
        results["langchain_default_counter_vs_tiktoken"] = round(approx_total / exact_total, 3)
    try:
        from llama_index.core.base.llms.types import ChatMessage
        from llama_index.core.memory import ChatSummaryMemoryBuffer
    except ImportError as exc:
        results["llama_index"] = f"not installed ({exc.name})"
    else:
        li_messages = [ChatMessage(role=m["role"], content=m.get("content") if isinstance(m.get("content"), str)
                                   else json.dumps(m.get("content"))) for m in history]
        memory = ChatSummaryMemoryBuffer.from_defaults(chat_history=li_messages, token_limit=10**12,
                                                       tokenizer_fn=enc.encode_ordinary)
        results["llama_index_chat_summary_buffer_get_ms"] = ms(_best(memory.get, repeats))
    return results


def _best(fn: Any, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return median(times)
