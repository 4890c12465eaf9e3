"""The break-it review of ADR 0116 (issue 44): a one-line object is read wherever it
stands in a person's sentence, by a parser that cannot backtrack; a sentence's values are
found in time linear in the sentence; a user's value-less rule is not stated by a line of
the opposite polarity. Every sentence here is this module's own."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager

from context_compaction.domain import coverage
from context_compaction.domain.codelines import stated_pin
from context_compaction.domain.valuetokens import values


@contextmanager
def _within(seconds: int) -> Iterator[None]:
    """Fails the test, rather than hanging the suite, if the body runs past ``seconds``
    (super-linear work on a hostile line: minutes, not milliseconds; no timing asserted)."""
    def stop(*_: object) -> None:
        raise AssertionError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_one_line_object_is_read_with_words_after_it() -> None:
    for said in ('Use {"max_rows": 25000, "timeout_s": 40} for the export job config.',
                 'Set {"max_rows": 25000} please.', "Keep {'max_rows': 25000}.",
                 'Use {"db": {"pool": 8}} for the worker.'):
        assert stated_pin(said), said
        leaving = coverage.said_in([(45, "user", said)])
        assert leaving and "25000" in leaving[0].keys or "8" in leaving[0].keys, said
        assert coverage.losses(leaving, coverage.Context(["## Objective\n- ship the export"]), coverage.Context([]))


def test_code_with_an_object_is_still_code() -> None:
    assert not stated_pin('def limits(): return {"max_rows": 25000}')
    assert not stated_pin('payload = json.dumps({"go": 1})')


def test_a_failing_line_of_many_pairs_takes_no_exponential_time() -> None:
    pairs = ", ".join(f'"k{i}": "a b c {i}"' for i in range(60))
    with _within(5):
        assert stated_pin("{" + pairs + "} for the job config.")
        assert not stated_pin("{" + pairs + ", } if ready()")


def test_the_values_of_a_line_of_thousands_of_pins_are_found_in_linear_time() -> None:
    line = " ".join(f"pkg{i}==1.{i}" for i in range(20_000))
    with _within(10):
        found = values(line)
    assert found[:2] == ["pkg0", "1.0"] and len(found) == 40_000


def test_a_value_inside_another_is_part_of_it() -> None:
    # (the check the linear marks replaced: a number inside a path or a date is not a value of its own)
    assert values("Logs go to /var/log/app-2024/run.log from now on.") == ["/var/log/app-2024/run.log"]
    assert values("The freeze starts 2025-03-14 and lasts 3 days.") == ["2025-03-14", "3"]


def test_a_rule_is_not_stated_by_a_line_that_says_the_opposite() -> None:
    rule = coverage.said_in([(5, "user", "never force-push to the release branch.")])
    assert rule and not rule[0].keys
    opposite = coverage.Context(["## Progress\n- I force-pushed the release branch after the rebase. (seq 90)"])
    assert coverage.losses(rule, opposite, coverage.Context([]))
    kept = coverage.Context(["## Constraints\n- rule: Never force-push to the release branch. (seq 5)"])
    assert not coverage.losses(rule, kept, coverage.Context([]))


def test_a_lone_letter_before_a_plain_capital_ends_its_sentence() -> None:
    from context_compaction.domain.joining import sentences

    assert len(sentences("Fix the bug in module a. Then deploy.")) == 2
    assert len(sentences("I met the team at 5 p.m. Then we left.")) == 2
    assert len(sentences("Встреча в 10 ч. Потом деплой.")) == 2
    assert len(sentences("Kontakt: v. Ääkkönen.")) == 1  # (a particle before a name with a diacritic)


def test_a_chat_verb_opening_a_sentence_is_no_name() -> None:
    assert values("Sounds good, thanks for checking that so quickly.") == []
    assert values("Works for me.") == []
