"""Per-message token counts kept beside the read model (the TokenCountCache port).

A cache, not a projection: counts are a pure function of (message, encoding), so the
table is neither rebuilt nor compared by ``verify``, and its writes skip the fsync.
"""

from __future__ import annotations

from ..database import Database


class SqlTokenCountCache:
    def __init__(self, db: Database) -> None:
        self.db = db
        #: A store opened read-only (issue 36): counts are computed, never kept.
        self.read_only = False

    def token_counts(self, session_id: str, key: str, from_seq: int) -> dict[int, int]:
        with self.db.read() as cur:
            rows = cur.execute(
                "SELECT seq, tokens FROM {t}rm_token_counts"
                " WHERE session_id = ? AND encoding = ? AND seq >= ?",
                (session_id, key, from_seq),
            ).fetchall()
        return {int(seq): int(n) for seq, n in rows}

    def store_token_counts(self, session_id: str, key: str, counts: dict[int, int]) -> None:
        if self.read_only:
            return
        with self.db.write(durable=False) as cur:
            cur.executemany(
                "INSERT INTO {t}rm_token_counts (session_id, encoding, seq, tokens)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (session_id, encoding, seq) DO NOTHING",
                [(session_id, key, seq, n) for seq, n in counts.items()],
            )
