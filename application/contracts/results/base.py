"""The base of every result model: its JSON is what ``dispatch_json`` answers."""

from __future__ import annotations

from typing import Self

from context_compaction.domain.projection import KnownFlat
from pydantic import BaseModel, ConfigDict, PrivateAttr


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class CachedMessages(Result):
    """A result whose ``messages`` are the process's cached projection: the typed caller
    gets a copy of them (``runtime/handout.py``, ADR 0058)."""

    _known_flat: KnownFlat | None = PrivateAttr(default=None)
    # What the projection's builder found of these messages (issue 38, ADR 0098): the
    # copy reads it instead of looking at each message. Never part of the JSON.

    def knowing_flat(self, known: KnownFlat | None) -> Self:
        """This result with ``known`` (about its ``messages`` list) for the hand-out copy."""
        self._known_flat = known
        return self

    def known_flat(self) -> KnownFlat | None:
        """What is known of ``messages`` as they are now; ``None`` once they were replaced."""
        known = self._known_flat
        return known if known is not None and known.messages is self.messages else None  # type: ignore[attr-defined]
