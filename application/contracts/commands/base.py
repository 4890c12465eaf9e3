"""What every command shares: the ``Command`` base, the field types and the registry
(``ROUTES``, filled by ``handled_by`` where each command is declared)."""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Generic,
    TypeVar,
    get_args,
)

from context_compaction.domain.messages import MAX_INT, Message
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StringConstraints,
)

from .. import results as r


def _no_nul(value: str) -> str:
    # These land in TEXT columns, which PostgreSQL refuses NUL in: refused on both
    # backends alike, before anything is written (message content may hold NUL).
    if "\x00" in value:
        raise ValueError("must not contain NUL (\\u0000)")
    return value


NoNul = AfterValidator(_no_nul)
SessionId = Annotated[str, StringConstraints(min_length=1, max_length=256), NoNul]
CommandId = Annotated[str, StringConstraints(min_length=1, max_length=256), NoNul]
ModelName = Annotated[str, StringConstraints(min_length=1, max_length=256), NoNul]
RequestId = Annotated[str, StringConstraints(min_length=1, max_length=128), NoNul]
PositiveInt = Annotated[StrictInt, Field(gt=0, le=MAX_INT)]
NonNegativeInt = Annotated[StrictInt, Field(ge=0, le=MAX_INT)]
Seq = Annotated[StrictInt, Field(ge=1, le=MAX_INT)]


R = TypeVar("R", bound=r.Result, covariant=True)

#: What a message of ``AppendMessages`` may be given as: our ``Message``, a JSON-shaped
#: mapping (CONTRACT.md "Message (input)") or a provider's message model (litellm's
#: ``Message``, ``choices[0].message``), validated into a ``Message``.
MessageInput = Message | Mapping[str, Any] | BaseModel


class Command(BaseModel, Generic[R]):
    """A command or query whose answer is an ``R``: ``bus.dispatch(cmd)`` is typed ``R``
    for a type checker (``class PrepareTurn(Command[r.TurnRequest])``, ADR 0040)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    if not TYPE_CHECKING:
        # ``Command[X]`` is a plain alias (``types.GenericAlias``), not one of pydantic's
        # parametrized models: a type checker reads the result type from it, the class
        # made from it has ``Command`` itself as its base (no model class per result
        # type, ~10 ms each at import), and ``result_type()`` reads it back.
        def __class_getitem__(cls, params: Any) -> Any:
            return types.GenericAlias(cls, params)

    @classmethod
    def result_type(cls) -> type[r.Result]:
        """The result model this command answers with (its ``Command[...]`` argument)."""
        for klass in cls.__mro__:
            for base in klass.__dict__.get("__orig_bases__", ()):
                args = get_args(base)
                if args and isinstance(args[0], type) and issubclass(args[0], r.Result):
                    return args[0]
        raise TypeError(f"{cls.__name__} names no result type")


# ------------------------------------------------------------ the registry
@dataclass(frozen=True)
class Route:
    """Where a command's handler lives: ``context_compaction.application.<module>``,
    function ``function`` (imported on first use, ADR 0016), and whether the command
    only reads (a read-only store serves it, ADR 0071)."""

    module: str
    function: str
    reads: bool = False


#: Every command, in declaration order, and its handler: the one list (issue 38). The
#: discriminated union ``AnyCommand``, the bus's handler table (``handlers.py``) and
#: the OpenAPI result table are derived from it.
ROUTES: dict[type[Command[Any]], Route] = {}

C = TypeVar("C", bound=type[Command[Any]])


def handled_by(module: str, function: str, *, reads: bool = False) -> Callable[[C], C]:
    """Declare a command's handler where the command is declared: ``module`` is the
    handler's module under ``context_compaction.application`` (a literal, so readers
    and the import checks see it), ``function`` its name there."""

    def register(cls: C) -> C:
        ROUTES[cls] = Route(module, function, reads)
        return cls

    return register
