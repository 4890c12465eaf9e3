"""Making, checking and recording checkpoints: compaction, its stages, ledger, breaker, attempt log."""
