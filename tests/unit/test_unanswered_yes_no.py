"""Review of issue 44 (F8): a yes/no question's state said after it ("Nobody's answered.",
"Still undecided.") is part of it, as "No one knows." was: alone it is about nothing.

Every sentence here is this module's own (not any ``ctxc eval`` phrasing set)."""

from __future__ import annotations

import pytest

from context_compaction.domain.ledger import extract
from context_compaction.domain.summary import SourceEntry

QUESTION = "Should the importer skip rows with a blank email?"


@pytest.mark.parametrize("state", ["Nobody's answered.", "Nobody has replied yet.", "Still undecided.",
                                   "Still unanswered.", "No one knows."])
def test_a_yes_no_questions_state_stays_with_it(state: str) -> None:
    values = [i.value for i in extract([SourceEntry(seq=1, role="user", text=f"{QUESTION} {state}")])]
    assert f"{QUESTION} {state}" in values
    assert state not in values


def test_a_sentence_of_its_own_after_a_yes_no_question_stays_apart() -> None:
    text = f"{QUESTION} The importer runs nightly at 02:00."
    values = [i.value for i in extract([SourceEntry(seq=1, role="user", text=text)])]
    assert not any(QUESTION in v and "nightly" in v for v in values)
