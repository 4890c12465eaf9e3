"""Results of commands and queries (pydantic models; ``dispatch_json`` dumps them).

Every entry of a result list is a model too (``GetHistory(...).messages[0].seq``, ADR
0040); its JSON is what it was as a dict. Two kinds of value stay JSON-shaped dicts on
purpose: provider requests (``TurnRequest.messages``/``tools``,
``ProjectionResult.messages``), which go to ``litellm.completion`` as they are, and
open JSON objects whose keys are the provider's or an event's (``content`` parts,
``provider_state``, an event's ``payload``, ``summary_source``, ``ledger``).

One module a topic; every name is here too, so ``results.X`` and
``from ...contracts.results import X`` stay as they were (names and fields are a
promise: add, never rename).
"""

from __future__ import annotations

from .base import CachedMessages, Result
from .compaction import (
    AttemptInfo,
    CompactionAttemptsResult,
    CompactionNet,
    CompactOutcome,
    ResummarizeResult,
    TimelineEntryResult,
    TimelineResult,
    ToolResultsCleared,
)
from .events import (
    EventsResult,
    FeedEvent,
    SessionEvent,
    SessionEventsResult,
)
from .history import (
    CheckpointInfo,
    CheckpointsResult,
    HistoryMessage,
    HistoryResult,
    ProjectionResult,
    ReplayResult,
    ReplayStateResult,
    ResultToolCall,
    SearchHitResult,
    SearchResult,
    ToolCallFunction,
)
from .sessions import (
    AppendMessagesResult,
    ConfigureSessionResult,
    DeleteSessionResult,
    InvalidateHistoryResult,
    PinsResult,
    PurgeSessionResult,
    RevertResult,
    StartSessionResult,
)
from .tree import (
    ChildUsage,
    CompleteSubagentResult,
    ForkSessionResult,
    SessionInfo,
    SessionsResult,
    SessionTreeNode,
)
from .turns import (
    CompactionBreaker,
    ContextForecast,
    ContextUsage,
    PromptCacheUsage,
    RecordUsageResult,
    TurnRequest,
)

__all__ = [
    "AppendMessagesResult",
    "AttemptInfo",
    "CachedMessages",
    "CheckpointInfo",
    "CheckpointsResult",
    "ChildUsage",
    "CompactOutcome",
    "CompactionAttemptsResult",
    "CompactionBreaker",
    "CompactionNet",
    "CompleteSubagentResult",
    "ConfigureSessionResult",
    "ContextForecast",
    "ContextUsage",
    "DeleteSessionResult",
    "EventsResult",
    "FeedEvent",
    "ForkSessionResult",
    "HistoryMessage",
    "HistoryResult",
    "InvalidateHistoryResult",
    "PinsResult",
    "ProjectionResult",
    "PromptCacheUsage",
    "PurgeSessionResult",
    "RecordUsageResult",
    "ReplayResult",
    "ReplayStateResult",
    "Result",
    "ResultToolCall",
    "ResummarizeResult",
    "RevertResult",
    "SearchHitResult",
    "SearchResult",
    "SessionEvent",
    "SessionEventsResult",
    "SessionInfo",
    "SessionTreeNode",
    "SessionsResult",
    "StartSessionResult",
    "TimelineEntryResult",
    "TimelineResult",
    "ToolCallFunction",
    "ToolResultsCleared",
    "TurnRequest",
]
