"""A host's mistakes, each of which ``mypy --strict`` must report (test_typing.py): every
line marked with an expected-error comment gets an error containing its text, and no other line any."""

from __future__ import annotations

from context_compaction import CompactionConfig, Settings, bootstrap, commands

bus = bootstrap(Settings(databse_url="sqlite:///agent.db"))  # E: Unexpected keyword argument "databse_url"
Settings(snapshot_interval="often")  # E: Argument "snapshot_interval" to "Settings" has incompatible type "str"
CompactionConfig(summary_modle="gpt-4o-mini")  # E: Unexpected keyword argument "summary_modle"

request = bus.dispatch(commands.PrepareTurn(session_id="s1"))
print(request.request_idd)  # E: "TurnRequest" has no attribute "request_idd"
print(request.usage.used_tokenz)  # E: "ContextUsage" has no attribute "used_tokenz"

history = bus.dispatch(commands.GetHistory(session_id="s1"))
print(history.messages[0]["seq"])  # E: Value of type "HistoryMessage" is not indexable
print(history.messages[0].sequence)  # E: "HistoryMessage" has no attribute "sequence"

after: str = bus.dispatch(commands.ReadEvents()).events[-1].position  # E: Incompatible types in assignment
count: int = bus.dispatch(commands.Compact(session_id="s1"))  # E: Incompatible types in assignment

commands.AppendMessages(session_id="s1", messages=[42])  # E: List item 0 has incompatible type "int"
commands.AppendMessages(session_id="s1", messages=[{"role": "user"}], comand_id="c")  # E: Unexpected keyword argument "comand_id"
commands.StartSession(session_id=7, model="gpt-4o")  # E: Argument "session_id" to "StartSession" has incompatible type "int"
bus.dispatch({"type": "compact", "session_id": "s1"})  # E: Argument 1 to "dispatch" of "MessageBus" has incompatible type
