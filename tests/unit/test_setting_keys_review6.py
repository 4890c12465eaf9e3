"""ADR 0114 amended again (2026-12-05, second review): where a setting's key says its file
or environment. Every sentence here is this module's own (not any ``ctxc eval`` phrasing set)."""

from __future__ import annotations

from context_compaction.domain.ledger import Ledger, extract
from context_compaction.domain.summary import SourceEntry


def merged(*said: str) -> Ledger:
    entries = [SourceEntry(seq=2 * n + 1, role="user", text=t) for n, t in enumerate(said)]
    ledger, _ = Ledger().merge(extract(entries))
    return ledger


def current(ledger: Ledger, value: str) -> bool:
    return any(i.value == value for i in ledger.items)


def replaced(ledger: Ledger, value: str) -> bool:
    return any(i.value == value for i in ledger.superseded)


def test_a_file_the_value_comes_from_is_its_file() -> None:
    ledger = merged("Turn RETRY_MAX=3 on in gateway.toml.", "RETRY_MAX=8 from billing.toml is right too.")
    assert current(ledger, "RETRY_MAX=3") and current(ledger, "RETRY_MAX=8")
    assert not replaced(ledger, "RETRY_MAX=3")


def test_a_file_label_before_the_setting_is_its_file() -> None:
    ledger = merged("gateway.toml: RETRY_MAX=3", "billing.toml: RETRY_MAX=8")
    assert not replaced(ledger, "RETRY_MAX=3")


def test_a_windows_path_names_a_file() -> None:
    ledger = merged("RETRY_MAX=3 in svc\\gateway.toml.", "RETRY_MAX=8 in svc\\billing.toml.")
    assert current(ledger, "RETRY_MAX=3") and not replaced(ledger, "RETRY_MAX=3")
    # (the same Windows file twice is one setting: the old value goes)
    assert replaced(merged("RETRY_MAX=3 in svc\\gateway.toml.", "RETRY_MAX=8 in svc/gateway.toml."), "RETRY_MAX=3")


def test_two_environments_settings_are_two_settings() -> None:
    ledger = merged("CACHE_TTL=60 in qa.", "CACHE_TTL=600 in production.")
    assert current(ledger, "CACHE_TTL=60") and current(ledger, "CACHE_TTL=600")
    assert not any("CACHE_TTL=60 in qa" in i.value for i in ledger.superseded)  # (its sentence stays too)


def test_one_environment_said_two_ways_is_one_setting() -> None:
    assert replaced(merged("CACHE_TTL=60 for production.", "CACHE_TTL=600 in prod."), "CACHE_TTL=60")
    assert replaced(merged("CACHE_TTL=60 in staging.", "CACHE_TTL=600 for stage."), "CACHE_TTL=60")


def test_a_file_of_a_later_clause_after_a_comma_and_is_another_topic() -> None:
    ledger = merged("RETRY_MAX=3 in svc/gateway.toml.", "RETRY_MAX=8, and I wrote it up in notes/retry.md.")
    assert replaced(ledger, "RETRY_MAX=3")
    ledger = merged("RETRY_MAX=3 in svc/gateway.toml.", "RETRY_MAX=8, but the log is in var/log/app.log.")
    assert replaced(ledger, "RETRY_MAX=3")


def test_a_value_replaced_in_one_environment_is_marked_on_a_line_that_names_a_file() -> None:
    from context_compaction.domain.marks import mark_superseded
    ledger = merged("CACHE_TTL=60 in staging.", "CACHE_TTL=90 for stage.")
    text, n = mark_superseded("- CACHE_TTL=60 in staging (deploy/cache.toml)\n", ledger)
    assert n == 1 and "CACHE_TTL=60 (superseded by CACHE_TTL=90" in text
