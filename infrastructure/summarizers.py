"""Summarizer adapters (spec §10, DESIGN §9).

* ``LiteLLMSummarizer``: exactly one ``litellm.completion`` per compaction (or one
  ``litellm.acompletion`` for ``adispatch``, ADR 0042), on the session's model, no tools, low temperature, ``max_tokens`` = the output reserve.
* ``ExtractiveSummarizer``: deterministic and offline; fills the same nine headings by
  extraction. For air-gapped hosts, demos and tests — never a silent fallback for a
  failed LLM call (a failed call is ``summary_failed``).

``SUMMARIZERS`` names them (``settings.summarizer``); ``make_summarizer`` builds one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any

from context_compaction.application.contracts.ports import Summarizer, SummaryRequest, SummaryResult
from context_compaction.application.contracts.settings import Settings
from context_compaction.domain.costs import Usage
from context_compaction.domain.errors import InvalidCommand, SummaryFailed
from context_compaction.domain.checklist import CHECKLIST_KINDS
from context_compaction.domain.cues import CATCH_ALL
from context_compaction.application.compacting.ledgers import remark_budget
from context_compaction.domain.checklist import HEADING as CHECKLIST_HEADING
from context_compaction.domain.ledger import LedgerItem
from context_compaction.domain.summary import HEADINGS, TOOL_STATUS_UNKNOWN, SourceEntry, parse_sections

from .native_compaction import NativeCompactionSummarizer

log = logging.getLogger("context_compaction.summarizer")

_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Proxy", "LiteLLM Router", "litellm")


def import_litellm() -> Any:
    """Import litellm offline (bundled model map), quietly (it must not log payloads)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # Its Anthropic beta-header table is fetched from GitHub on first use otherwise.
    os.environ.setdefault("LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS", "True")
    import litellm

    litellm.suppress_debug_info = True
    for name in _LITELLM_LOGGERS:
        logger = logging.getLogger(name)
        if logger.getEffectiveLevel() < logging.WARNING:
            logger.setLevel(logging.WARNING)
    return litellm


async def import_litellm_off_loop() -> Any:
    """``import_litellm`` for a coroutine: the first import (~2 s of module code) runs
    in a thread, never on the event loop."""
    if "litellm" in sys.modules:
        return import_litellm()
    return await asyncio.to_thread(import_litellm)


class LiteLLMSummarizer:
    """One ``litellm.completion`` per compaction (``summarize``), or one
    ``litellm.acompletion`` when the command runs for ``adispatch`` (``asummarize``)."""

    def __init__(self, settings: Settings, *, timeout: float = 120.0) -> None:
        self.settings = settings
        self.timeout = timeout

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        litellm = import_litellm()
        try:
            response = litellm.completion(**self._kwargs(request))
        except Exception as exc:  # noqa: BLE001 - every provider failure is a summary failure
            raise self._failed(request, exc) from None
        return self._result(request, response)

    async def asummarize(self, request: SummaryRequest) -> SummaryResult:
        litellm = await import_litellm_off_loop()
        try:
            response = await litellm.acompletion(**self._kwargs(request))
        except Exception as exc:  # noqa: BLE001 - every provider failure is a summary failure
            raise self._failed(request, exc) from None
        return self._result(request, response)

    def _kwargs(self, request: SummaryRequest) -> dict[str, Any]:
        config = self.settings.model_config_for(request.model)
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": request.prompt,
            "temperature": 0.1,
            # (in the provider's tokens: the limit is in the session's, biased high, issue 44)
            "max_tokens": request.provider_max_tokens,
            "timeout": self.timeout,
            "num_retries": 0,
        }
        if config.api_base:
            kwargs["api_base"] = config.api_base
        if config.api_key is not None:
            kwargs["api_key"] = config.api_key.get_secret_value()
        return kwargs

    def _failed(self, request: SummaryRequest, exc: Exception) -> SummaryFailed:
        from .failure_causes import provider_failure

        log.warning(
            "summary call failed",
            extra={"session_id": request.session_id, "error_class": type(exc).__name__},
        )
        return provider_failure(exc, self.settings, request.model, "summary call", import_litellm())

    @staticmethod
    def _result(request: SummaryRequest, response: Any) -> SummaryResult:
        try:
            choice = response.choices[0]
            message = choice.message
            text = message.content or ""
            finish = getattr(choice, "finish_reason", None)
            tool_calls = getattr(message, "tool_calls", None)
        except (AttributeError, IndexError, TypeError):
            raise SummaryFailed("the summary response was malformed") from None
        if tool_calls:
            raise SummaryFailed("the summary response called a tool instead of answering")
        if finish == "length":
            raise SummaryFailed("the summary was cut off at its output limit")
        if not isinstance(text, str) or not text.strip():
            raise SummaryFailed("the summarizer returned an empty summary")
        provider = request.model.split("/", 1)[0] if "/" in request.model else "litellm"
        usage = Usage.from_provider(getattr(response, "usage", None))  # priced with the attempt (issue 43)
        return SummaryResult(text=text.strip(), provider_kind=f"llm:{provider}", model=request.model,
                             usage=usage.to_record() if usage else None)


# ------------------------------------------------------------------ extractive
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CONSTRAINT = re.compile(
    r"\b(must|must not|do not|don't|never|only|always|keep|no new|without|should not|avoid|"
    r"make sure|required?)\b",
    re.I,
)
_CORRECTION = re.compile(
    r"^\s*(actually|correction|no[,.!]|wait|stop|instead)\b|\b(not \S+,? but|instead of|rather than|"
    r"is \S+, not|not \d+)\b",
    re.I,
)
_DECISION = re.compile(
    r"\b(i will|i'll|decided|going to|plan to|chose|switch(ed)? to|the fix is|root cause)\b", re.I
)
_OPEN = re.compile(r"\b(todo|still failing|remaining|next step|not yet|pending|follow[- ]up)\b", re.I)
_FAILURE = re.compile(
    r"\b(error|errors|failed|failure|traceback|exception|exit (status|code) [1-9]|not found|"
    r"denied|timed out|fatal)\b",
    re.I,
)
_PATH = re.compile(r"(?<![\w/.-])(?:/?[\w.-]+/)+[\w.-]+\.[A-Za-z0-9]{1,8}\b")
_FACTS = (
    ("port", re.compile(r"\bport\s+(\d{2,5})\b|(?<=:)(\d{4,5})\b", re.I)),
    ("version", re.compile(r"\bv?\d+\.\d+\.\d+(?:[-.][\w]+)?\b")),
    ("id", re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d+\b")),
    ("setting", re.compile(r"\b[A-Z][A-Z0-9_]{3,}=[^\s,;]+")),
    ("url", re.compile(r"https?://[^\s)\"'<>]+")),
)
_SECTION_CAP = 12
#: Share of the summary's output the checklist may take first (issue 44, ADR 0077): the
#: guaranteed room of the must-keep items; the other sections share the rest.
CHECKLIST_SHARE = 0.7


def _without_repeats(sections: dict[str, list[str]], checklist: str) -> dict[str, list[str]]:
    """The sections without the lines the checklist already states (its sentences, its
    facts): a small context compacted must still shrink."""
    stated = " ".join(checklist.split()).casefold()

    def repeats(line: str) -> bool:
        body = _CITED.sub("", line).strip().lstrip("- ").strip()
        if ": " in body and body.split(": ", 1)[0] in ("path", "port", "version", "id", "setting", "url"):
            body = body.split(": ", 1)[1]
        return bool(body) and " ".join(body.split()).casefold() in stated

    return {h: (items if h == "Objective" else [x for x in items if not repeats(x)]) for h, items in sections.items()}


def _checklist_section(items: Iterable[LedgerItem], budget: int, count: Callable[[str], int],
                       remarks: int | None = None) -> str:
    """``## Fact Checklist``: the cumulative must-keep statements (rules, constraints,
    corrections, decisions, people, dates, amounts, versions, settings, preferences, task
    state, questions) in priority order, as many as ``budget`` tokens hold (what is left
    out the ledger check writes back or reports); remarks within ``remarks`` tokens."""
    lines = [f"## {CHECKLIST_HEADING}"]
    spent, said = count(lines[0]), 0
    for item in items:
        if item.kind not in CHECKLIST_KINDS and item.kind not in ("constraint", "correction"):
            continue  # (exact facts have their own section and the ledger's write-back)
        line = item.line()
        cost = count(line) + 1
        remark = item.kind in CATCH_ALL
        if spent + cost > budget or (remark and remarks is not None and said + cost > remarks):
            continue
        lines.append(line)
        spent += cost
        said += cost if remark else 0
    return "\n".join(lines) if len(lines) > 1 else ""


def _sentences(text: str) -> list[str]:
    return [s.strip(" -*\t") for s in _SENTENCE.split(text) if len(s.strip()) > 3]


def _clip(text: str, n: int = 220) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


_CITED = re.compile(r"\s?\(seqs? [^()]*\)")


def _dedupe(items: Iterable[str]) -> list[str]:
    """The items once each, the first citation kept (a repeat differs only by its seq)."""
    seen: set[str] = set()
    out = []
    for item in items:
        key = _CITED.sub("", item).lower()
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _tool_result_line(e: SourceEntry) -> str | None:
    """A tool result's first failure line, else its first line (status unknown)."""
    first = next((ln for ln in e.text.splitlines() if ln.strip()), "")
    failure = next((ln for ln in e.text.splitlines() if _FAILURE.search(ln)), None)
    if failure:
        return f"- {e.tool_name or 'tool'} (call {e.tool_call_id}): {_clip(failure, 160)} (seq {e.seq})"
    if first:
        return f"- {e.tool_name or 'tool'}: {_clip(first, 120)} [status {TOOL_STATUS_UNKNOWN}] (seq {e.seq})"
    return None


class ExtractiveSummarizer:
    provider_kind = "extractive"
    #: It reads the source and the checklist, never the prompt: the must-keep lines take
    #: no room from its source (ADR 0099).
    reads_prompt = False

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        previous = parse_sections(request.source.previous_summary or "")
        fresh = self.extract(request.source.entries)
        if request.source.omitted_messages:
            src = request.source
            last_omitted = src.entries[0].seq - 1 if src.entries else src.last_seq
            fresh["Outstanding Work"].append(
                f"- {src.omitted_messages} older messages unread, over the input budget "
                f"(seq {src.first_seq}–{last_omitted})."
            )
        merged: dict[str, list[str]] = {}
        for heading in HEADINGS:
            old = [x if x.startswith("- ") else f"- {x}" for x in previous.get(heading, []) if x != "None."]
            if heading == "Objective":
                if any("Latest request:" in x for x in fresh[heading]):
                    old = [x for x in old if "Latest request:" not in x]
                items = _dedupe(old[:3] + fresh[heading])
            else:
                items = _dedupe(old + fresh[heading])[-_SECTION_CAP:]
            merged[heading] = items
        # Measured with the session's own counter (issue 44: 2.5 characters a token
        # overshot on dense text counted with the x1.25 factor); else conservatively.
        count = request.count_tokens or (lambda text: len(text) // 2 + 1)
        limit = request.max_output_tokens
        # (remarks, ADR 0099, within a quarter of the messages covered, as the write-back
        # counts it: not of the previous summary too, or each summary would grow the next's share)
        checklist = _checklist_section(request.checklist, int(limit * CHECKLIST_SHARE), count,
                                       remarks=remark_budget(request.source.entries))
        if checklist:
            merged = _without_repeats(merged, checklist)
        text = self.render(merged, max_tokens=limit - count(checklist) - 4, count=count)
        if checklist:  # (after the Objective: the must-keep items come first)
            head, sep, rest = text.partition("\n\n## ")
            text = f"{head}\n\n{checklist}{sep}{rest}"
        return SummaryResult(text=text, provider_kind=self.provider_kind, model="extractive")

    @staticmethod
    def render(sections: dict[str, list[str]], max_tokens: int, count: Callable[[str], int] = len) -> str:
        def build(limit: int) -> str:
            parts = []
            for heading in HEADINGS:
                items = sections.get(heading) or []
                items = items[-limit:] if heading != "Objective" else items[:limit]
                body = "\n".join(items) if items else "None."
                parts.append(f"## {heading}\n{body}")
            return "\n\n".join(parts)

        limit = _SECTION_CAP
        text = build(limit)
        while count(text) > max_tokens and limit > 1:
            limit -= 1
            text = build(limit)
        lines = text.splitlines()
        while lines and count("\n".join(lines)) > max_tokens:  # (whole lines go, never half a value)
            lines.pop()
        return "\n".join(lines)

    def extract(self, entries: list[SourceEntry]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {h: [] for h in HEADINGS}
        requests = [e for e in entries if e.role == "user" and not e.steering and e.text]
        if requests:
            out["Objective"].append(f"- {_clip(requests[0].text)} (seq {requests[0].seq})")
            if requests[-1] is not requests[0]:
                out["Objective"].append(f"- Latest request: {_clip(requests[-1].text)} (seq {requests[-1].seq})")
        answered_after: int | None = None
        facts: list[str] = []
        files: dict[str, list[str]] = {}
        seen_at: dict[str, list[int]] = {}
        for e in entries:
            if e.role == "user":
                if e.steering:
                    out["Constraints"].append(f"- steering: {_clip(e.text)} (seq {e.seq})")
                else:
                    for s in _sentences(e.text):
                        if _CONSTRAINT.search(s):
                            out["Constraints"].append(f"- {_clip(s)} (seq {e.seq})")
                if _CORRECTION.search(e.text):
                    out["Recent User Corrections"].append(f"- {_clip(e.text)} (seq {e.seq})")
            elif e.role == "assistant":
                if e.text and not e.tool_calls:
                    out["Progress"].append(f"- {_clip(_sentences(e.text)[0] if _sentences(e.text) else e.text)} (seq {e.seq})")
                    answered_after = e.seq
                for s in _sentences(e.text):
                    if _DECISION.search(s):
                        out["Decisions"].append(f"- {_clip(s)} (seq {e.seq})")
                    if _OPEN.search(s):
                        out["Outstanding Work"].append(f"- {_clip(s)} (seq {e.seq})")
                for _, name, arguments in e.tool_calls:
                    for path in _PATH.findall(arguments) or [""]:
                        files.setdefault(path, []).append(name)
                        seen_at.setdefault(path, []).append(e.seq)
            elif e.role == "tool":
                line = _tool_result_line(e)
                if line:
                    out["Tool Results and Failures"].append(line)
            if e.role in ("user", "assistant"):
                for path in _PATH.findall(e.text):
                    files.setdefault(path, [])
                    seen_at.setdefault(path, []).append(e.seq)
                for kind, pattern in _FACTS:
                    for m in pattern.finditer(e.text):
                        value = next((g for g in m.groups() if g), m.group(0)) if m.groups() else m.group(0)
                        facts.append(f"- {kind}: {value} (seq {e.seq})")
        for path, tools in files.items():
            ops = ", ".join(f"{n} x{tools.count(n)}" for n in dict.fromkeys(tools)) if tools else "mentioned"
            label = path or "other tool calls"
            lo, hi = min(seen_at[path]), max(seen_at[path])
            out["Files and Operations"].append(f"- {label}: {ops} (seq {lo}{f'–{hi}' if hi != lo else ''})")
        out["Exact Facts"] = _dedupe(facts)
        if requests and (answered_after is None or answered_after < requests[-1].seq):
            out["Outstanding Work"].append(f"- Not yet answered: {_clip(requests[-1].text)} (seq {requests[-1].seq})")
        for heading in HEADINGS:
            out[heading] = _dedupe(out[heading])
        return out


#: The summarizers ``settings.summarizer`` names: name → factory. A new summarizer is
#: its module and one entry here.
SUMMARIZERS: dict[str, Callable[[Settings], Summarizer]] = {
    "llm": lambda settings: LiteLLMSummarizer(settings, timeout=settings.summary_timeout_seconds),
    "extractive": lambda settings: ExtractiveSummarizer(),
    "native": lambda settings: NativeCompactionSummarizer(  # ADR 0039
        settings,
        readable=_readable_summarizer(settings),
        litellm=import_litellm,
        timeout=settings.summary_timeout_seconds,
    ),
}


def _readable_summarizer(settings: Settings) -> Summarizer:
    name = settings.native_compaction.readable
    if name == "native":
        # The shadow summary is what every other provider reads: it must be plain text.
        raise InvalidCommand("native_compaction.readable cannot be 'native'")
    return make_summarizer(settings.model_copy(update={"summarizer": name}))


def make_summarizer(settings: Settings) -> Summarizer:
    """The summarizer ``settings.summarizer`` names."""
    factory = SUMMARIZERS.get(settings.summarizer)
    if factory is None:
        raise InvalidCommand(
            f"unknown summarizer {settings.summarizer!r}; known: {', '.join(sorted(SUMMARIZERS))}"
        )
    return factory(settings)
