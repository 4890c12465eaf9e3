"""What the inspector asks the bus for a session that was deleted."""

from __future__ import annotations

from typing import Any

#: The inspector is an auditor's view: a deleted session stays readable here, by the
#: explicit audit read the bus offers (``include_deleted``, ADR 0072); the page says so.
AUDIT_READS = frozenset({
    "get_history", "replay_session", "replay_state", "list_checkpoints", "list_compaction_attempts",
})


def audit(command: dict[str, Any]) -> dict[str, Any]:
    if command["type"] in AUDIT_READS:
        return {**command, "include_deleted": True}
    return command
