"""The read model: query tables projected from the Session events (DESIGN §5).

``schema`` (tables, schema version, the SQL over the events table), ``handlers`` (one
method per event), ``projector`` (inline projection, replay, catch-up), ``rows`` (rows
as the application's views), ``queries`` (the ReadModel port), ``tokencache`` (the
TokenCountCache port). The names below are the package's public surface.
"""

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
