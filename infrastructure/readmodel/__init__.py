"""The read model: query tables projected from the Session events (DESIGN §5)."""

from .projector import ReadModelProjector
from .queries import SqlReadModel
from .handlers import ProjectionOutOfOrder
from .schema import (
    DAMAGE_TABLE,
    POSITION,
    PROJECTED_TABLES,
    SCHEMA,
    SCHEMA_VERSION,
    EventsTable,
)
from .tokencache import SqlTokenCountCache

__all__ = [
    "DAMAGE_TABLE",
    "POSITION",
    "PROJECTED_TABLES",
    "SCHEMA",
    "SCHEMA_VERSION",
    "EventsTable",
    "ProjectionOutOfOrder",
    "ReadModelProjector",
    "SqlReadModel",
    "SqlTokenCountCache",
]
