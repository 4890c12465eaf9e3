"""Builders and a harness shared by the tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from context_compaction import Settings, bootstrap
from context_compaction.application.bus import MessageBus


def user(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": text, **extra}


def assistant(text: str | None = None, calls: list[tuple[str, str, str]] | None = None, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, **extra}
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in calls
        ]
    return message


def tool(call_id: str, text: str, name: str | None = None) -> dict[str, Any]:
    message = {"role": "tool", "tool_call_id": call_id, "content": text}
    if name:
        message["name"] = name
    return message


def ok(envelope: dict[str, Any]) -> dict[str, Any]:
    assert envelope["ok"], envelope
    return envelope["result"]


def err(envelope: dict[str, Any], code: str) -> dict[str, Any]:
    assert not envelope["ok"], envelope
    assert envelope["error"]["code"] == code, envelope
    return envelope["error"]


class Harness:
    """A bus on a fresh SQLite file plus helpers; ``reopen()`` simulates a restart."""

    def __init__(self, path: Path, **settings: Any) -> None:
        self.path = path
        self.settings = settings
        self.buses: list[MessageBus] = []
        self.bus = self.new_bus()

    def new_bus(self, **overrides: Any) -> MessageBus:
        settings = Settings(database_url=f"sqlite:///{self.path}", **{**self.settings, **overrides})
        bus = bootstrap(settings)
        self.buses.append(bus)
        return bus

    def reopen(self) -> MessageBus:
        self.bus.close()
        self.bus = self.new_bus()
        return self.bus

    def do(self, command: dict[str, Any]) -> dict[str, Any]:
        return self.bus.dispatch_json(command)

    def close(self) -> None:
        for bus in self.buses:
            bus.close()


def event_count(path: Path) -> int:
    import sqlite3

    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM stored_events").fetchone()[0])


def fingerprint(bus: MessageBus) -> tuple[Any, ...]:
    """Everything a command could change: the event log and every projected table."""
    from context_compaction.infrastructure.readmodel import PROJECTED_TABLES

    read_model = bus.services.read_model
    app = bus.services.extra["app"]
    newest = app.recorder.max_notification_id()
    tables = tuple(tuple(read_model.table_rows(t)) for t in PROJECTED_TABLES)
    return (newest, tables)
