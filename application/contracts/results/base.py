"""The base of every result model: its JSON is what ``dispatch_json`` answers."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
