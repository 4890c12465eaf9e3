"""The phrasing sets of ``ctxc eval`` (issue 44): every template of every set is readable
by the scorer; ``blind`` (ADR 0097), ``blind2`` (ADR 0102), ``blind3`` (ADR 0105), ``blind4``
(ADR 0108) and ``blind5`` (ADR 0113), written without reading the extractor, plant every kind
in wording of their own and are run by ``ctxc eval --sets`` and by the bench."""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from context_compaction.infrastructure.cli_setup import UsageError
from context_compaction.infrastructure.evaluation import report
from context_compaction.infrastructure.evaluation.blind import BLIND
from context_compaction.infrastructure.evaluation.blind2 import BLIND2
from context_compaction.infrastructure.evaluation.blind3 import BLIND3
from context_compaction.infrastructure.evaluation.blind4 import BLIND4
from context_compaction.infrastructure.evaluation.blind5 import BLIND5
from context_compaction.infrastructure.evaluation.canaries import KINDS, Phrasings, Planter, kept
from context_compaction.infrastructure.evaluation.fresh import FRESH
from context_compaction.infrastructure.evaluation.sessions import generate

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _unreadable(p: Phrasings, draws: int = 8) -> list[str]:
    """Canaries the scorer cannot find in their own sentence, over every template and
    every subject of its kind (a "loss" there would be the scorer's, not the summarizer's)."""
    bad = []
    for kind in KINDS:
        for t in p.templates[kind]:
            planter = Planter(replace(p, templates={**p.templates, kind: (t,)}), seed=0)
            bad += [c.text for c in (planter.plant(kind) for _ in range(draws))
                    if not c.negated and not kept(c, c.text)]
    for t in p.negated:
        planter = Planter(replace(p, negated=(t,)), seed=0)
        bad += [c.text for c in (planter.plant("preference") for _ in range(draws))
                if c.negated and not kept(c, c.text)]
    for kind, updates in p.updates.items():
        for t in updates:
            planter = Planter(replace(p, updates={kind: (t,)}), seed=0)
            for _ in range(draws - 2):
                new = planter.update(planter.plant(kind), 1)
                assert new is not None, (kind, t)
                bad += [] if kept(new, new.text) else [new.text]
    return bad


#: The update words of ``fresh`` and ``blind`` to ``blind3`` and the usual ones: a later
#: never-tuned set's updates use none of them (ADR 0108, ADR 0113).
_USUAL_UPDATES = (
    r"update[ds]?|now|changed?|actually|scratch|bumped|swapped|reset|slipped|walked back|per the new|"
    r"correct(ed|ing|ion)?|ignore|disregard|never mind|take back|strike|aiming for|instead|pushed|contrary|"
    r"forget|reassigned|moved|wrong|new|revised|replace[sd]?|switched|going forward|from here on|rescheduled|"
    r"effective|ditched|re-?measured|re-?ran|re-?run|re-?pinned|typo|flip|brought forward|take[sn]? over|"
    r"took over|reshuffled?|earlier|old|goes to|becomes?|set to|as of|heads[- ]up|from (this|monday)"
)


@pytest.mark.parametrize("name", sorted(report.SETS))
def test_every_template_of_every_phrasing_set_is_readable_by_the_scorer(name: str) -> None:
    assert _unreadable(report.SETS[name]) == []


def test_the_scorer_self_check_fails_on_a_template_that_hides_the_value() -> None:
    hidden = replace(BLIND, templates={**BLIND.templates, "rule": ("the {s} is whatever ops said",)})
    assert _unreadable(hidden)


def _phrases(p: Phrasings) -> list[str]:
    return [t for ts in p.templates.values() for t in ts] + list(p.negated) + [t for ts in p.updates.values() for t in ts]


BLINDS = ("blind", "blind2", "blind3", "blind4", "blind5")  # (the sets written without reading the extractor)


@pytest.mark.parametrize("name", BLINDS)
def test_a_blind_set_has_at_least_as_many_templates_per_kind_as_fresh(name: str) -> None:
    p = report.SETS[name]
    assert set(p.templates) == set(KINDS) and set(p.updates) == set(FRESH.updates)
    assert all(len(p.templates[k]) >= len(FRESH.templates[k]) for k in KINDS)
    assert len(p.negated) >= len(FRESH.negated)
    assert all(len(p.updates[k]) >= len(FRESH.updates[k]) for k in FRESH.updates)


def test_blind2_has_at_least_as_many_templates_per_kind_as_blind() -> None:
    assert all(len(BLIND2.templates[k]) >= len(BLIND.templates[k]) for k in KINDS)
    assert len(BLIND2.negated) >= len(BLIND.negated)
    assert all(len(BLIND2.updates[k]) >= len(BLIND.updates[k]) for k in BLIND.updates)


def test_blind3_has_at_least_as_many_templates_per_kind_as_blind2() -> None:
    assert all(len(BLIND3.templates[k]) >= len(BLIND2.templates[k]) for k in KINDS)
    assert len(BLIND3.negated) >= len(BLIND2.negated)
    assert all(len(BLIND3.updates[k]) >= len(BLIND2.updates[k]) for k in BLIND2.updates)


def test_blind4_has_at_least_as_many_templates_per_kind_as_blind3() -> None:
    assert all(len(BLIND4.templates[k]) >= len(BLIND3.templates[k]) for k in KINDS)
    assert len(BLIND4.negated) >= len(BLIND3.negated)
    assert all(len(BLIND4.updates[k]) >= len(BLIND3.updates[k]) for k in BLIND3.updates)


def test_blind5_has_at_least_as_many_templates_per_kind_as_blind4() -> None:
    assert all(len(BLIND5.templates[k]) >= len(BLIND4.templates[k]) for k in KINDS)
    assert len(BLIND5.negated) >= len(BLIND4.negated)
    assert all(len(BLIND5.updates[k]) >= len(BLIND4.updates[k]) for k in BLIND4.updates)


@pytest.mark.parametrize("p", [BLIND3, BLIND4, BLIND5], ids=lambda p: p.name)
def test_a_late_blind_set_is_readable_by_the_scorer_on_every_value_of_its_pools(p: Phrasings) -> None:
    """Every value of the pools, not the few that 8 draws meet: 200 seeded draws per template
    (a Korean particle written straight after a value, or a line break between a subject and
    its value in a table or an e-mail, would hide it from the scorer)."""
    assert _unreadable(p, draws=200) == []


@pytest.mark.parametrize("name", BLINDS)
def test_a_blind_sets_wording_is_its_own(name: str) -> None:
    """No template repeated within the set, nor shared with another set (compared without
    case, punctuation or spacing)."""

    def norm(t: str) -> str:
        return re.sub(r"[\W_]+", " ", t.casefold()).strip()

    ours = [norm(t) for t in _phrases(report.SETS[name])]
    assert len(ours) == len(set(ours))
    others = {norm(t) for other, p in report.SETS.items() if other != name for t in _phrases(p)}
    assert set(ours) & others == set()


@pytest.mark.parametrize("name", BLINDS)
def test_a_blind_set_plants_every_kind_and_supersedes_every_updatable_kind(name: str) -> None:
    p = report.SETS[name]
    planted, negations, updated = set(), set(), set()
    for seed in (1, 2, 3, 44):
        session = generate(p, seed, rounds=4, turns_per_round=30, per_kind=1, tool_chars=100)
        planted |= {c.kind for c in session.canaries}
        negations |= {c.negated for c in session.canaries if c.kind == "preference"}
        updated |= {c.kind for c in session.canaries if c.superseded_by is not None}
    assert planted == set(KINDS) and negations == {True, False}
    assert updated == set(p.updates)


def test_blind2_updates_avoid_the_usual_update_words() -> None:
    """ADR 0102: its updates are worded the way people announce a change without saying so."""
    said = [t for ts in BLIND2.updates.values() for t in ts
            if re.search(r"\b(update[ds]?|now|changed|actually)\b", t, re.I)]
    assert said == []


def test_blind3_updates_are_corrections_retractions_and_moved_plans_not_the_last_sets_words() -> None:
    """ADR 0105: a colleague corrected, a statement taken back, a plan that moved; none of the
    update words ``blind2`` leaned on, nor the usual ones."""
    updates = [t for ts in BLIND3.updates.values() for t in ts]
    assert [t for t in updates if re.search(r"\b(Marco|Sam|Jo)'s\b", t)]  # a colleague corrected
    assert [t for t in updates if re.search(r"\b(ignore what|disregard|never mind|take back|strike)\b", t, re.I)]
    assert [t for t in updates if re.search(r"\b(aiming for .* instead|pushed)\b", t)]
    assert [t for t in updates if re.match(r"That \w+", t)]  # another noun first, the subject after
    said = [t for t in updates if re.search(r"\b(update[ds]?|now|changed|actually|scratch|bumped|swapped|reset|"
                                            r"slipped|walked back|per the new)\b", t, re.I)]
    assert said == []


def test_blind4_updates_are_errata_edits_and_u_turns_not_any_earlier_sets_words() -> None:
    """ADR 0108: an erratum or an amendment, an edited chat message, a struck-through value, a
    diff, a U-turn or second thoughts, a date that slides; none of the update words ``blind``,
    ``blind2``, ``blind3`` or ``fresh`` used, nor the usual ones."""
    updates = [t for ts in BLIND4.updates.values() for t in ts]
    assert [t for t in updates if re.search(r"\b(erratum|amended|amendment)\b", t, re.I)]
    assert [t for t in updates if "(edited)" in t]
    assert [t for t in updates if "~~" in t]  # a value struck through
    assert [t for t in updates if re.search(r"^\+", t, re.M)]  # a diff line
    assert [t for t in updates if re.search(r"\b(u-turn|second thoughts|plot twist|overruled)\b", t, re.I)]
    assert [t for t in updates if re.search(r"\b(slides|pulled .* forward|inherits|passes to)\b", t)]
    said = [t for t in updates if re.search(rf"\b({_USUAL_UPDATES})\b", t, re.I)]
    assert said == []


def test_blind5_updates_are_self_repairs_forwards_and_second_editions_not_any_earlier_sets_words() -> None:
    """ADR 0113: a speaker who corrects themself mid-sentence, a forwarded sign-off, the second
    edition of a slide, "belay my last", a poll held again, a vendor who asks for more time, a
    pager handed on at an hour; none of the update words of ``fresh`` or ``blind`` to
    ``blind4``, nor the usual ones."""
    updates = [t for ts in BLIND5.updates.values() for t in ts]
    assert [t for t in updates if re.search(r"\b(misspoke|no wait|scrap what I said|make that|misjudged)\b", t)]
    assert [t for t in updates if re.search(r"Forwarded message|^> On \w+, .+ wrote:", t, re.M)]
    assert [t for t in updates if re.match(r"Slide \d+ \(", t)]  # the deck's second edition
    assert [t for t in updates if re.search(r"\bbelay\b", t)]
    assert [t for t in updates if re.search(r"\b(Second poll|Poll closed)\b", t)]
    assert [t for t in updates if re.search(r"\bmore time\b|\bwent to .* at \d\d:\d\d", t)]
    said = [t for t in updates if re.search(
        rf"\b({_USUAL_UPDATES}|"
        # (and blind4's own: errata, edits, struck values, U-turns, dates that slide, batons; a deck's
        # "Slide 6" is not its verb)
        r"errat(um|a)|amend(ed|ment)?|edited|plot twist|overruled|u-turn|second thoughts|after all|in favou?r of|"
        r"first pick|baton|pass(es|ed)|inherits?|slides to|pulled|re-?sent|round two|re-?tested|rolled|in place of|"
        r"turns out|second pass|fixing|again)\b",
        t, re.I) or "~~" in t]
    assert said == []


@pytest.mark.parametrize("p", [BLIND3, BLIND4, BLIND5], ids=lambda p: p.name)
def test_a_late_blind_set_states_its_negated_preferences_in_english(p: Phrasings) -> None:
    """The scorer reads English negation words only (ADR 0105, ADR 0108, ADR 0113)."""
    assert all(t.isascii() for t in p.negated)


def test_blind_carries_whole_sentences_in_other_languages() -> None:
    phrases = _phrases(BLIND)
    assert [t for t in phrases if re.search(r"[\u4e00-\u9fff]", t)]  # Chinese
    assert [t for t in phrases if re.search(r"\b(porque|por favor|prefiero)\b", t)]  # Spanish
    assert [t for t in phrases if re.search(r"\b(bitte|zuständig|höchstens)\b", t)]  # German


def test_blind2_carries_whole_sentences_in_french_portuguese_and_japanese() -> None:
    phrases = _phrases(BLIND2)
    assert [t for t in phrases if re.search(r"[\u3040-\u30ff]", t)]  # Japanese kana
    assert [t for t in phrases if re.search(r"\b(doit|c'est|personne)\b", t)]  # French
    assert [t for t in phrases if re.search(r"\b(ficou|passou|prefiro|escolhemos)\b", t, re.I)]  # Portuguese


def test_blind3_carries_whole_sentences_in_italian_dutch_and_korean() -> None:
    phrases = _phrases(BLIND3)
    assert [t for t in phrases if re.search(r"[\uac00-\ud7a3]", t)]  # Korean hangul
    assert [t for t in phrases if re.search(r"\b(perché|preferisco|sappiamo|produzione)\b", t)]  # Italian
    assert [t for t in phrases if re.search(r"\b(omdat|gekozen|liever|gepland)\b", t)]  # Dutch


def test_blind4_carries_whole_sentences_in_polish_swedish_and_russian() -> None:
    phrases = _phrases(BLIND4)
    assert [t for t in phrases if re.search(r"[\u0400-\u04ff]", t)]  # Russian (Cyrillic)
    assert [t for t in phrases if re.search(r"\b(wynosi|wolę|proszę|przesunięty)\b", t)]  # Polish
    assert [t for t in phrases if re.search(r"\b(eftersom|mätningar|produktion ska|fråga)\b", t)]  # Swedish


def test_blind5_carries_whole_sentences_in_turkish_hindi_greek_and_indonesian() -> None:
    phrases = _phrases(BLIND5)
    assert [t for t in phrases if re.search(r"[\u0900-\u097f]", t)]  # Hindi (Devanagari)
    assert [t for t in phrases if re.search(r"[\u0370-\u03ff]", t)]  # Greek
    assert [t for t in phrases if re.search(r"\b(çünkü|istisna|tercih|değeri|sabitledim)\b", t)]  # Turkish
    assert [t for t in phrases if re.search(r"\b(karena|saya|sekitar|apakah|harus)\b", t)]  # Indonesian


def test_blind5_writes_in_registers_no_earlier_blind_set_did() -> None:
    """ADR 0113: voice transcripts with disfluencies, forwarded and quoted mail, slide bullets,
    footnotes, IRC-style logs, Python lines, JSON payloads, CSV rows under a header, polls,
    handover notes, monitoring alerts, SMS abbreviations."""
    phrases = _phrases(BLIND5)
    earlier = [t for p in (BLIND, BLIND2, BLIND3, BLIND4) for t in _phrases(p)]
    for register in (r"\b(um|uh)\b", r"^Speaker \d", r"Forwarded message", r"^> On \w+, .+ wrote:$",
                     r"^Slide \d+", "\u2022", r"\[\^\d+\]", r"^\[\d\d:\d\d\] <[\w-]+>", r"\{\{\"",
                     r"^[a-z]+,[a-z]+,[a-z]+$", r"\bPoll\b", r"\bHandover\b", r"\[FIRING",
                     r"\b(b4|2day|srsly|dunno)\b", r"`(assert |[A-Z]+(\[.+\])? = )"):
        assert [t for t in phrases if re.search(register, t, re.M)], register
        assert not [t for t in earlier if re.search(register, t, re.M)], register


def test_blind4_writes_in_registers_the_earlier_blind_sets_did_not() -> None:
    """ADR 0108: chat-ops shortcodes, checklists, tables with a header row, e-mails with a
    sign-off, standup notes, policy prose, Gherkin, config and shell lines inside prose."""
    phrases = _phrases(BLIND4)
    earlier = [t for p in (BLIND, BLIND2, BLIND3) for t in _phrases(p)]
    for register in (r":[a-z_]+:", r"^- \[[ x]\] ", r"^\|---\|", r"\n\n(Best|Thanks|Regards|Kind regards)",
                     r"\b(Yesterday|Today|Blockers):", r"\bshall\b", r"^(Given|Scenario:) ", r"kubectl|ENV |pip install"):
        assert [t for t in phrases if re.search(register, t, re.M)], register
        assert not [t for t in earlier if re.search(register, t, re.M)], register


def _args(sets: str) -> argparse.Namespace:
    return argparse.Namespace(seeds="1,2", seed=44, shares="0.3", windows="", sets=sets)


def test_ctxc_eval_takes_the_blind_sets() -> None:
    from context_compaction.infrastructure.cli_eval import _options

    assert report.SETS["blind"] is BLIND and report.SETS["blind2"] is BLIND2 and report.SETS["blind3"] is BLIND3
    assert report.SETS["blind4"] is BLIND4 and report.SETS["blind5"] is BLIND5
    assert _options(_args("blind,fresh,blind2,blind3,blind4,blind5"), report.SETS)[3] == [
        "blind", "fresh", "blind2", "blind3", "blind4", "blind5"]
    with pytest.raises(UsageError, match="blinder"):
        _options(_args("blinder"), report.SETS)


def test_the_bench_eval_section_runs_the_blind_sets_beside_fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    if not (BENCHMARKS / "sections.py").exists():
        pytest.skip("the sdist ships no benchmarks/ (make bench runs from the repository)")
    sys.path.append(str(BENCHMARKS))  # (after ours: no shadowing)
    import sections  # type: ignore[import-not-found]
    from render import cause  # type: ignore[import-not-found]

    asked: list[Any] = []

    def evaluate(_bootstrap: Any, **kwargs: Any) -> dict[str, Any]:
        asked.append(kwargs["sets"])
        return {"summarizer": kwargs["summarizer"], "seed": 44, "rounds": [], "conversations": []}

    monkeypatch.setattr(report, "evaluate", evaluate)
    sections._eval(argparse.Namespace(), {}, [])
    assert asked and {"fresh", "blind", "blind2", "blind3", "blind4", "blind5"} <= set(asked[0])
    assert list(asked[0]).index("blind4") == list(asked[0]).index("blind3") + 1
    assert list(asked[0]).index("blind5") == list(asked[0]).index("blind4") + 1
    missed = {"target": "blind rounds 30%: worst kind after 5 rounds >= 95%", "ok": False, "value": "80% (date)",
              "limit": "issue 44"}
    assert "ADR 0097" in cause(missed)
    missed2 = {**missed, "target": "blind2 conversation 8,000: facts kept >= 75%"}
    assert "ADR 0102" in cause(missed2) and "ADR 0097" not in cause(missed2)
    missed3 = {**missed, "target": "blind3 rounds 20%: worst kind after 5 rounds >= 85%"}
    assert "ADR 0105" in cause(missed3) and "ADR 0102" not in cause(missed3)
    missed4 = {**missed, "target": "blind4 conversation 32,000: facts kept >= 90%"}
    assert "ADR 0108" in cause(missed4) and "ADR 0105" not in cause(missed4)
    missed5 = {**missed, "target": "blind5 rounds 10%: never summary_failed"}
    assert "ADR 0113" in cause(missed5) and "ADR 0108" not in cause(missed5)
