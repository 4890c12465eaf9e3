"""The read model's tables, their schema version and the SQL that reads the events table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from eventsourcing.utils import get_topic

from context_compaction.domain.session import Session

from ..database import qualified_name
from .search import PG_TSVECTOR

POSITION = "read_model"
#: Bump when a table or column of SCHEMA changes; recorded in rm_position once created.
#: A database with an older mark has its projected tables dropped and rebuilt from the
#: events (``SqlReadModel.create_tables``), never altered in place (issue 37). 15:
#: rm_reverts keyed by (session_id, checkpoint_id) (ADR 0093).
SCHEMA_VERSION = 15
#: Per session, the highest seq whose rm_search row exists (ADR 0049). Not projected
#: from the events (it is how far searches have indexed), so ``verify`` compares
#: rm_search up to it instead of comparing it.
SEARCH_MARKS = "rm_search_marks"
SCHEMA_MARK = "schema"

@dataclass(frozen=True)
class Table:
    """One read-model table, declared once: its SQL DDL (``ddl``), the SQL the
    projection's table operations render (``readmodel/ops.py``) and the memory
    backend's dict table (``memory/tables.py``) all come from it (ADR 0050)."""

    name: str
    #: (column, SQL type and constraints other than key and uniqueness), in row order:
    #: a row (insert, ``table_rows``, the memory tables) is a tuple in this order.
    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...]
    #: Column sets unique besides the key (one column: inline ``UNIQUE``).
    unique: tuple[tuple[str, ...], ...] = ()
    #: SQLite ``WITHOUT ROWID`` (``{WR}``); rowid tables are those FTS5 or the
    #: planner wants a rowid for.
    without_rowid: bool = True

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)

    def ddl(self) -> str:
        parts = [
            f"{name} {kind}"
            + (" PRIMARY KEY" if self.key == (name,) else "")
            + (" UNIQUE" if (name,) in self.unique else "")
            for name, kind in self.columns
        ]
        if len(self.key) > 1:
            parts.append(f"PRIMARY KEY ({', '.join(self.key)})")
        parts += [f"UNIQUE ({', '.join(cols)})" for cols in self.unique if len(cols) > 1]
        wr = "{WR}" if self.without_rowid else ""
        return f"CREATE TABLE IF NOT EXISTS {{t}}{self.name} ( {', '.join(parts)}){wr}"


_SID = ("session_id", "TEXT NOT NULL")
_SEQ = ("seq", "{INT} NOT NULL")
_VERSION = ("version", "{INT} NOT NULL")
_CREATED = ("created_at", "TEXT NOT NULL")

#: The projected tables: a pure function of the events (compared by ``verify``, and
#: row for row between the memory backend and SQLite by the contract test). A new
#: event's table is one entry here (and ``SCHEMA_VERSION`` + 1).
PROJECTED: tuple[Table, ...] = (
    Table("rm_sessions", (
        ("session_id", "TEXT"), ("aggregate_id", "TEXT NOT NULL"), ("model", "TEXT NOT NULL"),
        ("agent_token_limit", "{INT}"), _VERSION, ("next_seq", "{INT} NOT NULL"),
        ("context_generation", "{INT} NOT NULL"), ("active_checkpoint_id", "TEXT"),
        ("message_count", "{INT} NOT NULL"), ("invalidated_count", "{INT} NOT NULL"),
        ("checkpoint_count", "{INT} NOT NULL"), ("deleted", "{INT} NOT NULL"), _CREATED,
        ("updated_at", "TEXT NOT NULL"), ("learned_windows", "TEXT NOT NULL DEFAULT '{{}}'"),
        ("cleared_count", "{INT} NOT NULL DEFAULT 0"), ("parent_session_id", "TEXT"),
    ), ("session_id",), unique=(("aggregate_id",),)),
    # Only what queries select on and the event that holds the body (ADR 0016): short
    # rows keep the B-tree pages an append rewrites (and fsyncs) few.
    Table("rm_messages", (_SID, _SEQ, ("visible", "{INT} NOT NULL"), ("notification_id", "{INT} NOT NULL")),
          ("session_id", "seq")),
    # Host command ids, unique across all sessions (ADR 0019); generated ones are
    # remembered by the aggregate only.
    Table("rm_commands", (
        ("command_id", "TEXT"), _SID, ("kind", "TEXT NOT NULL"), ("first_seq", "{INT} NOT NULL"),
        ("last_seq", "{INT} NOT NULL"),
    ), ("command_id",)),
    Table("rm_checkpoints", (
        ("checkpoint_id", "TEXT"), _SID, ("generation", "{INT} NOT NULL"), ("parent_checkpoint_id", "TEXT"),
        ("summary", "TEXT NOT NULL"), ("first_retained_seq", "{INT} NOT NULL"),
        ("source_max_seq", "{INT} NOT NULL"), ("trigger_reason", "TEXT NOT NULL"),
        ("provider_kind", "TEXT NOT NULL"), ("model", "TEXT NOT NULL"), ("tokens_before", "{INT} NOT NULL"),
        ("tokens_after", "{INT} NOT NULL"), ("degraded", "{INT} NOT NULL"), ("summary_source", "TEXT NOT NULL"),
        _CREATED, _VERSION, ("ledger", "TEXT"), ("provider_state", "TEXT"),
    ), ("checkpoint_id",), unique=(("session_id", "generation"),), without_rowid=False),
    Table("rm_invalidations", (
        _SID, _VERSION, ("kind", "TEXT NOT NULL"), ("ranges", "TEXT NOT NULL"), ("excluded", "{INT} NOT NULL"),
        ("reason", "TEXT NOT NULL"), ("generation", "{INT} NOT NULL"), _CREATED,
    ), ("session_id", "version"), without_rowid=False),
    Table("rm_imports", (
        _SID, _VERSION, ("source", "TEXT NOT NULL"), ("imported_messages", "{INT} NOT NULL"),
        ("skipped_messages", "{INT} NOT NULL"), ("legacy_seq_upto", "{INT} NOT NULL"),
        ("last_compressed_message_at", "{INT}"), _CREATED,
    ), ("session_id", "version"), without_rowid=False),
    # Tool results whose content every projection replaces by the stored placeholder
    # (``ToolResultsCleared``, issue 17); the first clearing of a seq wins.
    Table("rm_cleared", (_SID, _SEQ, ("placeholder", "TEXT NOT NULL"), _VERSION), ("session_id", "seq")),
    # The searchable text of every message (search_history, ADR 0033); its full-text
    # index is per engine (SEARCH_INDEX). A rowid table: FTS5 points at its rowids.
    Table("rm_search", (_SID, _SEQ, ("role", "TEXT NOT NULL"), ("turn_id", "TEXT"), ("body", "TEXT NOT NULL")),
          ("session_id", "seq"), without_rowid=False),
    # Pinned messages (issue 16): kept verbatim after the summary block.
    Table("rm_pins", (_SID, _SEQ), ("session_id", "seq")),
    # Reverted checkpoints (issue 16): one revert per checkpoint and session at most. A
    # fork shares its parent's checkpoints up to the fork point, and each may revert
    # one of them (ADR 0093).
    Table("rm_reverts", (
        ("checkpoint_id", "TEXT"), _SID, _VERSION, ("now_active", "TEXT"), ("generation", "{INT} NOT NULL"),
        ("command_id", "TEXT"), _CREATED,
    ), ("session_id", "checkpoint_id"), without_rowid=False),
    # Sessions as a tree (issue 42, ADR 0081): a child's link to its parent, and for a
    # fork the inherited seqs (``<= fork_seq``) the child hides (JSON ranges).
    Table("rm_tree", (
        _SID, ("parent_session_id", "TEXT NOT NULL"), ("kind", "TEXT NOT NULL"),
        ("fork_version", "{INT} NOT NULL"), ("fork_seq", "{INT} NOT NULL"), ("parent_tool_call_id", "TEXT"),
        ("hidden", "TEXT NOT NULL"), _CREATED,
    ), ("session_id",)),
)
TABLES: dict[str, Table] = {table.name: table for table in PROJECTED}

#: Tables that are a pure function of the events (compared by ``verify``): name → key.
PROJECTED_TABLES: dict[str, str] = {table.name: ", ".join(table.key) for table in PROJECTED}

#: Sessions whose events the read model could not project (a damaged row met while
#: catching up): their queries answer corrupt_event instead of a partial state. Rebuilt
#: with the projected tables, not compared by ``verify`` (which lists damaged rows itself).
DAMAGE_TABLE = "rm_damaged"

SCHEMA: tuple[str, ...] = (
    Table("rm_position", (("name", "TEXT"), ("notification_id", "{INT} NOT NULL")), ("name",)).ddl(),
    # Every projected table from its one declaration: a new event's table is a
    # ``Table`` in ``PROJECTED`` and nothing here (ADR 0050).
    *(table.ddl() for table in PROJECTED),
    # A cache, not a projection: counts are a pure function of (message, encoding).
    Table("rm_token_counts", (_SID, ("encoding", "TEXT NOT NULL"), _SEQ, ("tokens", "{INT} NOT NULL")),
          ("session_id", "encoding", "seq")).ddl(),
    # Written by the Timeline follower after commits (best effort), spec §13.
    Table("rm_timeline", (
        ("key", "TEXT"), _SID, ("checkpoint_id", "TEXT NOT NULL"), ("content", "TEXT NOT NULL"), _CREATED,
    ), ("key",), without_rowid=False).ddl(),
    "CREATE INDEX IF NOT EXISTS rm_timeline_session ON {t}rm_timeline (session_id, created_at)",
    # (a command_id is unique across all sessions and commands: appends look here too)
    "CREATE INDEX IF NOT EXISTS rm_reverts_command ON {t}rm_reverts (command_id)",
    # A session's children (issue 42): list_sessions' tree, purge's refusal, usage roll-up.
    "CREATE INDEX IF NOT EXISTS rm_tree_parent ON {t}rm_tree (parent_session_id)",
    Table(DAMAGE_TABLE, (
        ("aggregate_id", "TEXT"), ("notification_id", "{INT} NOT NULL"), _VERSION, ("problem", "TEXT NOT NULL"),
    ), ("aggregate_id",)).ddl(),
    # How far rm_search is filled, per session (SEARCH_MARKS, ADR 0049).
    Table(SEARCH_MARKS, (("session_id", "TEXT"), _SEQ), ("session_id",)).ddl(),
)

#: The full-text index over rm_search, per engine (not compared by ``verify``: it is
#: derived from rm_search by the engine itself). SQLite: an external-content FTS5
#: table kept in step by triggers; PostgreSQL: a GIN index on the tsvector.
SEARCH_INDEX: dict[str, tuple[str, ...]] = {
    "sqlite": (
        "CREATE VIRTUAL TABLE IF NOT EXISTS rm_search_fts USING fts5("
        "body, content='rm_search', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2')",
        "CREATE TRIGGER IF NOT EXISTS rm_search_ins AFTER INSERT ON rm_search BEGIN"
        " INSERT INTO rm_search_fts (rowid, body) VALUES (new.rowid, new.body); END",
        "CREATE TRIGGER IF NOT EXISTS rm_search_del AFTER DELETE ON rm_search BEGIN"
        " INSERT INTO rm_search_fts (rm_search_fts, rowid, body)"
        " VALUES ('delete', old.rowid, old.body); END",
    ),
    "postgres": (
        # The tsvector stored once, when the row is written (ADR 0054); a generated
        # column, added after the table (its expression is per engine).
        f"ALTER TABLE {{t}}rm_search ADD COLUMN IF NOT EXISTS words tsvector"
        f" GENERATED ALWAYS AS ({PG_TSVECTOR}) STORED",
        "CREATE INDEX IF NOT EXISTS rm_search_tsv ON {t}rm_search USING GIN (words)",
    ),
}
#: Dropped with the projected tables when the schema is upgraded.
SEARCH_DERIVED = ("rm_search_fts",)

#: rm_sessions' columns but its aggregate id: what ``session_row`` reads, in its order.
_SESSION_COLUMNS = tuple(c for c in TABLES["rm_sessions"].column_names if c != "aggregate_id")
SESSION_COLS = ", ".join(_SESSION_COLUMNS)
CHECKPOINT_COLS = ", ".join(TABLES["rm_checkpoints"].column_names)
N_SESSION_COLS = len(_SESSION_COLUMNS)
# Newest notification, read-model position, the session row and its active checkpoint:
# the whole head of a session view in one round trip (always exactly one row). In place
# of the checkpoint's ledger, its one large value, only whether it has one: ``LazyLedger``
# fetches it by the checkpoint's id when used (ADR 0059).
_SESSION_VIEW_SQL = (
    "SELECT {lag_columns}, "
    + ", ".join("s." + c for c in _SESSION_COLUMNS)
    + ", "
    + ", ".join("{ledger_flag}" if c == "ledger" else "c." + c for c in TABLES["rm_checkpoints"].column_names)
    + ", d.version, d.problem"
    " FROM (SELECT 1 AS one) o LEFT JOIN {{t}}rm_sessions s ON s.session_id = ?"
    " LEFT JOIN {{t}}rm_checkpoints c ON c.checkpoint_id = s.active_checkpoint_id"
    " LEFT JOIN {{t}}rm_damaged d ON d.aggregate_id = ?"
)

_MESSAGE_TOPIC = get_topic(Session.MessageAppended)

def lag_of(row: Sequence[Any] | None) -> tuple[int, int]:
    """(read-model position, newest notification id) from a row that starts with the
    lag columns (``EventsTable.lag_sql``, ``session_view_sql``)."""
    assert row is not None
    return int(row[1] or 0), int(row[0] or 0)


class EventsTable:
    """Where the notification log lives, per engine."""

    def __init__(self, dialect_name: str, table: str, schema: str | None = None) -> None:
        if dialect_name == "postgres":
            qualified = qualified_name(schema, table)
            self.id_column = "notification_id"
            self.lock_sql = f"LOCK TABLE {qualified} IN EXCLUSIVE MODE"
        else:
            qualified = table
            self.id_column = "rowid"
            self.lock_sql = None
        self.qualified = qualified
        # Newest notification and read-model position in one round trip (every read
        # checks it); a session view puts them before its own columns.
        position = f"(SELECT notification_id FROM {{t}}rm_position WHERE name = '{POSITION}')"
        lag_columns = f"(SELECT MAX({self.id_column}) FROM {qualified}), {position}"
        self.lag_sql = "SELECT " + lag_columns
        # SQLite's typeof() reads the column's type from the record header, never its
        # overflow pages (``IS NOT NULL`` reads them); PostgreSQL's IS NOT NULL does not
        # detoast the value.
        ledger_flag = "c.ledger IS NOT NULL" if dialect_name == "postgres" else "typeof(c.ledger) <> 'null'"
        self.session_view_sql = _SESSION_VIEW_SQL.format(lag_columns=lag_columns, ledger_flag=ledger_flag)
        self.ledger_sql = "SELECT ledger FROM {t}rm_checkpoints WHERE checkpoint_id = ?"
        # Message bodies live once, in the events; the read model points at them.
        body = f" JOIN {qualified} e ON e.{self.id_column} = m.notification_id"
        message = f"SELECT m.seq, e.state, m.visible, e.topic = '{_MESSAGE_TOPIC}'"
        self.messages_sql = message + " FROM {t}rm_messages m" + body + " WHERE m.session_id = ? AND m.seq >= ?"
        # Pinned visible messages below a boundary (the checkpoint's first retained seq).
        self.pinned_sql = (
            message + " FROM {t}rm_pins p JOIN {t}rm_messages m ON m.session_id = p.session_id AND m.seq = p.seq"
            + body + " WHERE p.session_id = ? AND p.seq < ? AND m.visible = 1 ORDER BY p.seq"
        )
        self.message_version_sql = (
            "SELECT e.originator_version FROM {t}rm_messages m" + body + " WHERE m.session_id = ? AND m.seq = ?"
        )
        self.select_sql = (
            f"SELECT {self.id_column}, originator_id, originator_version, topic, state"
            f" FROM {qualified} WHERE {self.id_column} > ? AND {self.id_column} < ?"
            f" ORDER BY {self.id_column} LIMIT ?"
        )

