"""Commands and queries: pydantic models, discriminated on ``type`` (CONTRACT.md).

Names and fields here are a promise to other services: add, never rename. One module
a topic; every name is here too, so ``commands.X`` and ``from ...contracts.commands
import X`` stay as they were.
"""

# ruff: noqa: I001 - the topics' import order is ROUTES' order (below)
from __future__ import annotations

import functools
import types
from collections.abc import Mapping
from typing import Annotated, Any, Union, get_args

from pydantic import ConfigDict, Field, TypeAdapter

# ``commands.r`` / ``commands.rc`` as the single module had them.
from .. import results as r  # noqa: F401
from .. import results_costs as rc  # noqa: F401
from .base import (ROUTES, C, Command, CommandId, MessageInput, ModelName, NonNegativeInt, NoNul,
                   PositiveInt, R, RequestId, Route, Seq, SessionId, handled_by)

# ``ROUTES`` keeps declaration order, the order of ``AnyCommand`` and of the OpenAPI
# document: ``TOPICS``' order, then each topic's own. So these imports stay in this
# order, not sorted (tests/unit/test_command_routes.py checks it).
TOPICS = ("sessions", "turns", "history", "observation")

from .sessions import (
    AppendMessages,
    ConfigureSession,
    DeleteSession,
    InvalidateHistory,
    PinMessages,
    PurgeSession,
    RevertCheckpoint,
    StartSession,
    UnpinMessages,
)
from .turns import (
    CommitCandidate,
    Compact,
    GetContextUsage,
    PrepareTurn,
    RecallTimeline,
    RecordUsage,
    RecoverOverflow,
    ToolSchema,
    TurnInputsMixin,
)
from .history import (
    CompleteSubagent,
    ForkSession,
    GetHistory,
    GetProjection,
    ListCheckpoints,
    ListSessions,
    ReplaySession,
    ReplayState,
    SearchHistory,
)
from .observation import (
    GetSessionCost,
    ListCompactionAttempts,
    ReadEvents,
    ReadSessionEvents,
    Resummarize,
)

#: Every declared command, discriminated on ``type`` (derived from ``ROUTES``).
AnyCommand: Any = Annotated[Union[tuple(ROUTES)], Field(discriminator="type")]  # noqa: UP007

COMMAND_ADAPTER: TypeAdapter[Any] = TypeAdapter(AnyCommand, config=ConfigDict(defer_build=True))


@functools.cache
def command_types() -> Mapping[str, type[Command[Any]]]:
    """``type`` value → command class, for everything ``AnyCommand`` accepts.

    Built once (the JSON edge asks on every command: rebuilding it was ~4 % of a JSON
    append's CPU) and read-only, since every caller shares it."""
    union = get_args(AnyCommand)[0]
    return types.MappingProxyType({cls.model_fields["type"].default: cls for cls in get_args(union)})


__all__ = [
    "COMMAND_ADAPTER",
    "ROUTES",
    "TOPICS",
    "AnyCommand",
    "AppendMessages",
    "C",
    "Command",
    "CommandId",
    "CommitCandidate",
    "Compact",
    "CompleteSubagent",
    "ConfigureSession",
    "DeleteSession",
    "ForkSession",
    "GetContextUsage",
    "GetHistory",
    "GetProjection",
    "GetSessionCost",
    "InvalidateHistory",
    "ListCheckpoints",
    "ListCompactionAttempts",
    "ListSessions",
    "MessageInput",
    "ModelName",
    "NoNul",
    "NonNegativeInt",
    "PinMessages",
    "PositiveInt",
    "PrepareTurn",
    "PurgeSession",
    "R",
    "ReadEvents",
    "ReadSessionEvents",
    "RecallTimeline",
    "RecordUsage",
    "RecoverOverflow",
    "ReplaySession",
    "ReplayState",
    "RequestId",
    "Resummarize",
    "RevertCheckpoint",
    "Route",
    "SearchHistory",
    "Seq",
    "SessionId",
    "StartSession",
    "ToolSchema",
    "TurnInputsMixin",
    "UnpinMessages",
    "command_types",
    "handled_by",
]
