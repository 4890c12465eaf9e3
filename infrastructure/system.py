"""Clock and id adapters."""

from __future__ import annotations

import os
from datetime import UTC, datetime


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class RandomIds:
    """Ids like ``cp_3f9a…``: a prefix that says what it is plus 96 random bits."""

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{os.urandom(12).hex()}"
