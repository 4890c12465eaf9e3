"""A fake summarizer that fills the output it is asked for and records each request's
``max_output_tokens``: the small-window tests read what was asked of it (ADRs 0111, 0115)."""

from __future__ import annotations

from context_compaction.application.contracts.ports import SummaryResult


class Filler:
    """Fills the output it is asked for (0.45 words per token), and records each request."""

    def __init__(self) -> None:
        self.asked: list[int] = []

    def summarize(self, request):  # type: ignore[no-untyped-def]
        self.asked.append(request.max_output_tokens)
        words = " ".join(f"w{i}" for i in range(int(request.max_output_tokens * 0.45)))
        return SummaryResult(text="## Objective\n- " + words, provider_kind="fake", model="fake")
