"""Token counting with tiktoken, loaded offline from the BPE files litellm ships.

Never the network (tiktoken would download, or hang behind a silent proxy), never a
change to ``TIKTOKEN_CACHE_DIR`` (ADR 0007). OpenAI models use their own
encoding; other models are counted with cl100k_base times a safety factor that biases
the estimate high (ADR 0008).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import struct
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import tiktoken

from context_compaction.domain.messages import OUTPUT_ONLY_FIELDS, MessageRecord

from .catalog import litellm_package_dir

#: Bump when the counting rules change: cached counts carry it in their key.
RULES_VERSION = "v2"  # v2: output-only provider fields are not counted

PER_MESSAGE = 3
PER_NAME = 1
PER_TOOL_CALL = 3
REQUEST_PRIMER = 3
TOOLS_OVERHEAD = 9

#: Upward safety factors for models tiktoken has no tokenizer for (ADR 0008).
SAFETY_FACTORS: dict[str, float] = {
    "anthropic": 1.25,
    "bedrock": 1.25,
    "vertex_ai": 1.25,
    "gemini": 1.20,
    "mistral": 1.25,
    "deepseek": 1.20,
    "unknown": 1.30,
}
DEFAULT_FACTOR = 1.30

_BPE_URLS = {
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "p50k_base": "https://openaipublic.blob.core.windows.net/encodings/p50k_base.tiktoken",
}
_OPENAI_PREFIXES = ("gpt-", "o1", "o3", "o4", "chatgpt", "text-embedding")
_lock = threading.Lock()


def _bundled_ranks(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
    path = litellm_package_dir() / "litellm_core_utils" / "tokenizers" / hashlib.sha1(url.encode()).hexdigest()
    data = path.read_bytes()
    if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
        raise RuntimeError(f"tokenizer file {path} failed its hash check")
    return {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }


def offline_encoding(name: str) -> tiktoken.Encoding:
    """The named tiktoken encoding built from litellm's bundled files (no download)."""
    # Imported on first use: `ctxc` commands that count no tokens start without it.
    import tiktoken
    import tiktoken_ext.openai_public as openai_public
    from tiktoken import registry

    found = registry.ENCODINGS.get(name)
    if found is not None:
        return found
    if name not in _BPE_URLS:
        raise ValueError(f"no bundled tokenizer file for {name}")
    with _lock:
        found = registry.ENCODINGS.get(name)
        if found is not None:
            return found
        original = openai_public.load_tiktoken_bpe
        openai_public.load_tiktoken_bpe = _bundled_ranks  # type: ignore[assignment]
        try:
            params = openai_public.ENCODING_CONSTRUCTORS[name]()
        finally:
            openai_public.load_tiktoken_bpe = original  # type: ignore[assignment]
        encoding = tiktoken.Encoding(**params)
        registry.ENCODINGS[name] = encoding
        return encoding


class TiktokenCounter:
    """Implements the application's TokenCounter port."""

    def __init__(self, provider_of: Any = None) -> None:
        self._provider_of = provider_of
        self._keys: dict[str, str] = {}
        # The fixed parts (system prompt, tool schemas, knowledge, plan) repeat every
        # turn: count each distinct text once.
        self._texts: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._texts_lock = threading.Lock()

    # ------------------------------------------------------------- keys
    def encoding_for(self, model: str) -> str:
        """``o200k_base`` for gpt-4o, ``cl100k_base*1.25`` for a Claude model, ..."""
        key = self._keys.get(model)
        if key is None:
            key = self._keys[model] = self._resolve(model)
        return key

    def _resolve(self, model: str) -> str:
        provider = (self._provider_of(model) if self._provider_of else None) or "unknown"
        bare = model.split("/", 1)[-1]
        openai_like = provider in ("openai", "azure", "text-completion-openai") or (
            provider == "unknown" and bare.startswith(_OPENAI_PREFIXES)
        )
        if openai_like:
            import tiktoken.model

            try:
                name = tiktoken.model.encoding_name_for_model(bare)
            except KeyError:
                name = "o200k_base"  # every OpenAI model since gpt-4o
            return name if name in _BPE_URLS else "cl100k_base*1.10"
        factor = SAFETY_FACTORS.get(provider, DEFAULT_FACTOR)
        return f"cl100k_base*{factor:.2f}"

    @staticmethod
    def cache_key(encoding: str) -> str:
        return f"{encoding}@{RULES_VERSION}"

    @staticmethod
    def safety_factor(encoding: str) -> float:
        """The upward factor ``encoding`` counts with (1.0 for a model's own encoding)."""
        return float(encoding.partition("*")[2] or 1.0)

    @staticmethod
    def _split(encoding: str) -> tuple[tiktoken.Encoding, float]:
        name, _, factor = encoding.partition("*")
        return offline_encoding(name), float(factor) if factor else 1.0

    # ----------------------------------------------------------- counting
    def count_text(self, text: str, encoding: str) -> int:
        key = (encoding, text)
        with self._texts_lock:
            found = self._texts.get(key)
            if found is not None:
                self._texts.move_to_end(key)
                return found
        enc, factor = self._split(encoding)
        n = len(enc.encode_ordinary(text)) if text else 0
        n = math.ceil(n * factor) if factor != 1.0 else n
        with self._texts_lock:
            self._texts[key] = n
            while len(self._texts) > 256:
                self._texts.popitem(last=False)
        return n

    def count_record(self, record: MessageRecord, encoding: str) -> int:
        """One raw message as the provider will see it, with its overhead."""
        enc, factor = self._split(encoding)
        encode = enc.encode_ordinary
        n = PER_MESSAGE + len(encode(record["role"]))
        n += _content_tokens(record.get("content"), encode)
        if record.get("name"):
            n += len(encode(record["name"] or "")) + PER_NAME
        if record.get("tool_call_id"):
            n += len(encode(record["tool_call_id"] or ""))
        for call in record.get("tool_calls") or []:
            n += PER_TOOL_CALL + len(encode(call.get("id", ""))) + len(encode(call.get("name", "")))
            n += len(encode(call.get("arguments") or ""))
        if record.get("reasoning"):
            n += len(encode(record["reasoning"] or ""))
        state = record.get("provider_state")
        if state:
            # Counted whatever the request's provider: biased high, never low. Except the
            # output-only fields no request carries (ADR 0017): an audio reply's base64
            # is sent as its transcript.
            data = state.get("data") or {}
            if not OUTPUT_ONLY_FIELDS.isdisjoint(data):
                audio = data.get("audio")
                transcript = audio.get("transcript") if isinstance(audio, dict) else None
                if isinstance(transcript, str):
                    n += len(encode(transcript))
                data = {k: v for k, v in data.items() if k not in OUTPUT_ONLY_FIELDS}
            n += len(encode(json.dumps(data, ensure_ascii=False)))
            if state.get("tool_call_fields"):
                n += len(encode(json.dumps(state["tool_call_fields"], ensure_ascii=False)))
        return math.ceil(n * factor) if factor != 1.0 else n

    def count_message(self, message: dict[str, Any], encoding: str) -> int:
        """A provider-format message (system prompt, summary block)."""
        content = message.get("content")
        if isinstance(content, str) and message.keys() <= {"role", "content"}:
            _, factor = self._split(encoding)
            base = PER_MESSAGE + self._raw(message.get("role", ""), encoding) + self._raw(content, encoding)
            return math.ceil(base * factor) if factor != 1.0 else base
        enc, factor = self._split(encoding)
        encode = enc.encode_ordinary
        n = PER_MESSAGE + len(encode(message.get("role", "")))
        n += _content_tokens(message.get("content"), encode)
        for call in message.get("tool_calls") or []:
            fn = call.get("function") or {}
            n += PER_TOOL_CALL + len(encode(fn.get("name", ""))) + len(encode(fn.get("arguments") or ""))
        for key in ("name", "tool_call_id", "reasoning_content"):
            if message.get(key):
                n += len(encode(str(message[key])))
        if message.get("provider_specific_fields"):  # sent too: a native checkpoint (ADR 0039)
            n += len(encode(json.dumps(message["provider_specific_fields"], ensure_ascii=False, sort_keys=True)))
        return math.ceil(n * factor) if factor != 1.0 else n

    def _raw(self, text: str, encoding: str) -> int:
        """Unscaled token count of ``text`` (cached like ``count_text``)."""
        name = encoding.partition("*")[0]
        return self.count_text(text, name) if text else 0

    def count_tools(self, tools: Sequence[dict[str, Any]], encoding: str) -> int:
        if not tools:
            return 0
        text = json.dumps(list(tools), ensure_ascii=False, sort_keys=True)
        return self.count_text(text, encoding) + TOOLS_OVERHEAD

    @property
    def request_overhead(self) -> int:
        return REQUEST_PRIMER


def _content_tokens(content: Any, encode: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return len(encode(content))
    total = 0
    for part in content:
        kind = part.get("type")
        if kind == "text":
            total += len(encode(part.get("text") or ""))
        elif kind == "image_url":
            image = part.get("image_url") or {}
            total += image_tokens(image.get("url", ""), image.get("detail"))
        else:
            payload = part.get(kind) or {}
            total += len(json.dumps(payload)) // 3 + 10
    return total


# ------------------------------------------------------------------ images
UNKNOWN_IMAGE_TOKENS = 85 + 170 * 8  # the high-detail upper bound (2048x768 → 8 tiles)


def image_tokens(url: str, detail: str | None) -> int:
    """OpenAI's tile formula; dimensions read from inline data, never fetched."""
    if detail == "low":
        return 85
    dims = _inline_dimensions(url) if url.startswith("data:") else None
    if dims is None:
        return UNKNOWN_IMAGE_TOKENS
    w, h = dims
    if max(w, h) > 2048:
        scale = 2048 / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > 768:
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return 85 + 170 * tiles


def _inline_dimensions(url: str) -> tuple[int, int] | None:
    try:
        header_b64 = url.split(",", 1)[1][:4096]
        header_b64 = header_b64[: len(header_b64) // 4 * 4]
        data = base64.b64decode(header_b64)
    except (IndexError, ValueError):
        return None
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        w, h = struct.unpack(">II", data[16:24])
        return int(w), int(h)
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        w, h = struct.unpack("<HH", data[6:10])
        return int(w), int(h)
    if data[:3] == b"\xff\xd8\xff":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                i += 1
                continue
            marker = data[i + 1]
            length = struct.unpack(">H", data[i + 2 : i + 4])[0]
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                h, w = struct.unpack(">HH", data[i + 5 : i + 9])
                return int(w), int(h)
            i += 2 + length
    return None
