"""``resummarize``: summarize a past checkpoint's source again, committing nothing (issue 16).

The source is rebuilt from the stored state exactly as the compaction that made the
checkpoint read it: its parent's summary and the messages it covered (from the parent's
boundary, or the first message, up to its own ``first_retained_seq``), visible as of
the session version that committed it — an invalidation made later does not change
what that summary was made from. Then the same steps as a compaction: one summary
call, citations cleaned, the ledger (the parent's, extended) verified. Prompt and
model changes can be judged on real sessions offline; nothing is written.
"""

from __future__ import annotations

from typing import Any

from context_compaction.domain.errors import InvalidCommand, SessionDeleted, SessionNotFound, SummaryFailed
from context_compaction.domain.summary import storable_text

from ..runtime import asyncbus
from ..contracts import commands as c
from ..contracts import results as r
from .compaction import output_factor, summary_wait
from .prepare import summarizer_name, summary_budget_for
from .ledgers import summary_input, verify_summary
from ..contracts.ports import SummaryRequest
from ..runtime.services import Services
from ..runtime.turncontext import budget_for


def _covered_by(cmd: c.Resummarize, svc: Services) -> tuple[Any, Any, Any, list[dict[str, Any]], list[dict[str, Any]]]:
    """The session, the checkpoint, its parent, the messages it covered and the tail it
    kept, as committed."""
    session = svc.read_model.session(cmd.session_id)
    if session is None:
        raise SessionNotFound(f"session {cmd.session_id!r} does not exist")
    if session.deleted:  # (it reads the covered messages: content, ADR 0072)
        raise SessionDeleted(f"session {cmd.session_id!r} is deleted")
    cp = svc.read_model.checkpoint(cmd.checkpoint_id)
    if cp is None or cp.session_id != cmd.session_id:
        raise InvalidCommand(
            f"checkpoint {cmd.checkpoint_id!r} is not a checkpoint of session {cmd.session_id!r}"
        )
    if cp.degraded:
        raise InvalidCommand(f"checkpoint {cmd.checkpoint_id!r} is degraded: it has no summary source")
    parent = svc.read_model.checkpoint(cp.parent_checkpoint_id) if cp.parent_checkpoint_id else None
    start = parent.first_retained_seq if parent else 1
    as_committed = svc.events.load(cmd.session_id, version=cp.version)
    covered = [
        m
        for m in svc.read_model.messages(
            cmd.session_id, from_seq=start, upto_seq=cp.first_retained_seq - 1, include_invalidated=True
        )
        if as_committed.is_visible(m["seq"])
    ]
    if not covered:
        raise InvalidCommand(f"checkpoint {cmd.checkpoint_id!r} covers no stored message")
    kept = [
        m
        for m in svc.read_model.messages(
            cmd.session_id, from_seq=cp.first_retained_seq, upto_seq=as_committed.next_seq - 1,
            include_invalidated=True,
        )
        if as_committed.is_visible(m["seq"])
    ]
    return session, cp, parent, covered, kept


def resummarize(cmd: c.Resummarize, svc: Services) -> r.ResummarizeResult:
    session, cp, parent, covered, kept = _covered_by(cmd, svc)
    summarizer = svc.summarizer
    if cmd.summarizer is not None:
        if svc.summarizer_named is None:
            raise InvalidCommand("this service cannot choose a summarizer by name")
        summarizer = svc.summarizer_named(cmd.summarizer)
    model = cmd.model or svc.settings.summary_model_for(session.model)
    encoding = svc.tokens.encoding_for(model)

    def count(text: str) -> int:
        return svc.tokens.count_text(text, encoding)

    budget = budget_for(svc, session, model)
    limits = summary_budget_for(budget.window, count)
    room = budget.threshold - budget.keep - limits.output_reserve
    built = summary_input(parent.summary if parent else None, parent.ledger if parent else None, covered,
                          source_budget=limits.source_budget, output_reserve=limits.output_reserve, room=room,
                          count=count, reads_prompt=getattr(summarizer, "reads_prompt", True))
    source = built.source
    result = asyncbus.summarize(
        summarizer,
        SummaryRequest(
            session_id=cmd.session_id,
            model=model,
            prompt=built.prompt,
            source=source,
            max_output_tokens=limits.output_reserve,
            checklist=built.checklist,
            count_tokens=count, output_factor=output_factor(svc, encoding),
        ),
        timeout=summary_wait(svc),
    )
    text = storable_text(result.text).strip()
    if not text:
        raise SummaryFailed("the summarizer returned an empty summary")
    verified = verify_summary(
        text,
        previous=parent.ledger if parent else None,
        covered=covered,
        last_seq=covered[-1]["seq"],
        budget_tokens=built.ledger_tokens,
        count=count,
        previous_summary=parent.summary if parent else None,
        retained=kept,  # (as the commit read it: what the tail states is no loss, ADR 0109)
    )
    named = getattr(summarizer, "provider_kind", None) or cmd.summarizer or summarizer_name(svc)
    return r.ResummarizeResult(
        session_id=cmd.session_id,
        checkpoint_id=cp.checkpoint_id,
        summary=verified.text,
        ledger=verified.report.to_record(),
        tokens=count(verified.text),
        summarizer=str(named),
        model=result.model,
        committed_summary=cp.summary,
    )
