"""What a session's requests and compactions cost (issue 43, ADR 0076).

Pure arithmetic over per-token prices: the prices come from litellm's offline cost map
or a model's settings (application/history/costs.py); nothing here reads a file.

A usage is split into its disjoint parts: ``cached`` and ``created`` are parts of
``prompt`` (as ``record_usage`` refuses otherwise), the rest of the prompt is plain
input. A part without its own price is billed at the input price (a provider without a
prompt cache bills every prompt token alike).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Prices:
    """USD per token; None when the model has no price known to us."""

    input: float | None
    output: float | None
    cache_read: float | None = None
    cache_creation: float | None = None
    source: str = "litellm"
    tiers: tuple[tuple[int, float | None, float | None, float | None, float | None], ...] = ()
    """Long-prompt prices (litellm's ``*_above_<N>k_tokens``): (N tokens, input, output,
    cache read, cache creation); a request whose prompt is over N is billed at them
    throughout, a missing one staying at the base price (as ``litellm.cost_per_token``)."""

    def for_prompt(self, prompt_tokens: int) -> Prices:
        """The prices a request of ``prompt_tokens`` is billed at."""
        found = self
        for threshold, inp, out, read, write in sorted(self.tiers):
            if prompt_tokens > threshold:
                found = replace(found, input=_or(inp, found.input), output=_or(out, found.output),
                                cache_read=_or(read, found.cache_read),
                                cache_creation=_or(write, found.cache_creation))
        return found

    @property
    def known(self) -> bool:
        return self.input is not None

    @property
    def read(self) -> float:
        """What a prompt token served from the prompt cache costs."""
        return self.cache_read if self.cache_read is not None else (self.input or 0.0)

    @property
    def write(self) -> float:
        """What a prompt token written into the prompt cache costs."""
        return self.cache_creation if self.cache_creation is not None else (self.input or 0.0)

    @classmethod
    def from_entry(cls, entry: Mapping[str, Any] | None, source: str = "litellm") -> Prices:
        """From a cost-map entry (litellm's field names)."""
        entry = entry or {}

        def number(key: str) -> float | None:
            value = entry.get(key)
            return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

        tiers = []
        for key in entry:
            found = _TIER.match(key)
            if found:
                n = f"{found.group(1)}{found.group(2)}"
                tiers.append((int(found.group(1)) * (1000 if found.group(2) else 1),
                              number(f"input_cost_per_token_above_{n}_tokens"),
                              number(f"output_cost_per_token_above_{n}_tokens"),
                              number(f"cache_read_input_token_cost_above_{n}_tokens"),
                              number(f"cache_creation_input_token_cost_above_{n}_tokens")))
        return cls(
            input=number("input_cost_per_token"),
            output=number("output_cost_per_token"),
            cache_read=number("cache_read_input_token_cost"),
            cache_creation=number("cache_creation_input_token_cost"),
            source=source if entry else "unknown",
            tiers=tuple(sorted(tiers)),
        )


_TIER = re.compile(r"^input_cost_per_token_above_(\d+)(k?)_tokens$")


def _or(value: float | None, default: float | None) -> float | None:
    return default if value is None else value


UNKNOWN = Prices(None, None, source="unknown")


@dataclass(frozen=True)
class Usage:
    """One provider call's measured tokens (``cached``/``created`` are parts of ``prompt``)."""

    prompt: int = 0
    cached: int = 0
    created: int = 0
    completion: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt + other.prompt, self.cached + other.cached,
                     self.created + other.created, self.completion + other.completion)

    @classmethod
    def from_record(cls, record: Mapping[str, Any] | None) -> Usage:
        record = record or {}
        return cls(*(int(record.get(k) or 0) for k in
                     ("prompt_tokens", "cached_tokens", "cache_creation_tokens", "completion_tokens")))

    @classmethod
    def from_provider(cls, usage: Any) -> Usage | None:
        """From a provider response's ``usage`` (OpenAI shape, as litellm returns it;
        Anthropic's cache fields as litellm maps them); None when it has none."""
        if usage is None:
            return None

        def read(obj: Any, key: str) -> int:
            value = obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)
            return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

        details = usage.get("prompt_tokens_details") if isinstance(usage, Mapping) else getattr(
            usage, "prompt_tokens_details", None)
        prompt = read(usage, "prompt_tokens")
        cached = min(prompt, read(details, "cached_tokens") if details is not None else 0)
        created = min(prompt - cached, read(usage, "cache_creation_input_tokens"))
        return cls(prompt, cached, created, read(usage, "completion_tokens"))

    def to_record(self) -> dict[str, int]:
        return {"prompt_tokens": self.prompt, "cached_tokens": self.cached,
                "cache_creation_tokens": self.created, "completion_tokens": self.completion}


@dataclass(frozen=True)
class Cost:
    """USD per part of a usage; ``priced`` False when a model's prices were unknown (its
    tokens then count as 0 USD, and the total says so)."""

    input: float = 0.0
    cached: float = 0.0
    created: float = 0.0
    completion: float = 0.0
    priced: bool = True

    @property
    def total(self) -> float:
        return self.input + self.cached + self.created + self.completion

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.input + other.input, self.cached + other.cached, self.created + other.created,
                    self.completion + other.completion, self.priced and other.priced)


def price(usage: Usage, prices: Prices) -> Cost:
    if not prices.known:
        return Cost(priced=False)
    prices = prices.for_prompt(usage.prompt)
    plain = max(0, usage.prompt - usage.cached - usage.created)
    return Cost(
        input=plain * (prices.input or 0.0),
        cached=usage.cached * prices.read,
        created=usage.created * prices.write,
        completion=usage.completion * (prices.output or 0.0),
    )


@dataclass(frozen=True)
class NetFigure:
    """One compaction's balance: what it saves against what it costs (USD).

    ``saved``: the tokens it shed, not sent again on each of the ``requests`` that
    followed until the next compaction, at the price those tokens would have been read
    at (the cached price where the model has one: they sat in the cached prefix).
    ``spent``: the summary call, plus the prompt cache it invalidated: the compacted
    context (``tokens_after``) is written to the cache afresh once, where it would
    have been read (write price minus read price).
    """

    tokens_shed: int
    requests: int
    measured: bool
    """True: ``requests`` counted after the fact; False: forecast."""
    saved: float
    summary: float
    invalidated: float

    @property
    def spent(self) -> float:
        return self.summary + self.invalidated

    @property
    def net(self) -> float:
        return self.saved - self.spent


def net_figure(
    *, tokens_before: int, tokens_after: int, requests: int, measured: bool,
    prices: Prices, summary: Cost,
) -> NetFigure:
    shed = max(0, tokens_before - tokens_after)
    per_token = prices.read if prices.known else 0.0
    rewrite = max(0.0, prices.write - prices.read) if prices.known else 0.0
    return NetFigure(
        tokens_shed=shed,
        requests=requests,
        measured=measured,
        saved=shed * requests * per_token,
        summary=summary.total,
        invalidated=tokens_after * rewrite,
    )
