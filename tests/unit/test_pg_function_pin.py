"""The PostgreSQL append function's body is pinned to its versioned name (ADR 0057,
0064). A database keeps the function an earlier release made under that name, and
it is never replaced: a body that changes under the same name would run the old SQL
with the new parameters. So any change to the body (the ordered insert, the events
lock, the session row's touch, ``APPEND_TOUCH``) must come with a new version in
``ORDERED_FUNCTION``, and then a new digest here."""

from __future__ import annotations

import hashlib

from psycopg.sql import SQL

from context_compaction.infrastructure.eventstore.pgsql import ORDERED_FUNCTION, ordered_function
from context_compaction.infrastructure.readmodel.projector import APPEND_TOUCH, ReadModelProjector

#: (ORDERED_FUNCTION, sha256 of the statement that makes it, for schema "S")
PINNED = ("ctxc_ordered_insert_v3", "d0cf2463c7d1ba3b60699b882223e339e03231439e5a70ba95ce9bf707e96bf5")


def _make_statement() -> str:
    touch, types = ReadModelProjector.append_touch()
    make, _ = ordered_function(
        "S", "E", "uuid", '"S".', SQL('LOCK TABLE "S"."E" IN EXCLUSIVE MODE'), (touch.replace("{t}", '"S".'), types)
    )
    return str(make.as_string())


def test_the_function_body_changes_only_with_its_version() -> None:
    digest = hashlib.sha256(_make_statement().encode()).hexdigest()
    assert (ORDERED_FUNCTION, digest) == PINNED, (
        "the append function's body changed: give ORDERED_FUNCTION a new version, then pin the new digest"
    )


def test_the_function_runs_the_touch_the_projection_renders() -> None:
    """The touch inside the function is the projection's own statement for
    ``APPEND_TOUCH`` (one definition), its key the last parameter, every parameter typed."""
    statement = _make_statement()
    assert 'UPDATE "S".rm_sessions SET version = $10, updated_at = $11, next_seq = $12,' in statement
    assert "message_count = message_count + $13 WHERE session_id = $14" in statement
    assert "IF $14 IS NOT NULL" in statement
    assert APPEND_TOUCH[3] == ("session_id",)
    assert "text, bigint, text, bigint, bigint, text)" in statement


#: (UNLOCKED_FUNCTION, its digest): the lock-free twin (ADR 0066), pinned alike.
PINNED_UNLOCKED = ("ctxc_unlocked_insert_v2", "586ecdba79b00ba184ad3d73826fe1bb89a2f3a18511c41d2ca313d725f86af4")


def test_the_lock_free_function_changes_only_with_its_version() -> None:
    from context_compaction.infrastructure.eventstore.pgsql import UNLOCKED_FUNCTION

    touch, types = ReadModelProjector.append_touch()
    make, _ = ordered_function("S", "E", "uuid", '"S".', None, (touch.replace("{t}", '"S".'), types), lock_free=True)
    statement = str(make.as_string())
    assert (UNLOCKED_FUNCTION, hashlib.sha256(statement.encode()).hexdigest()) == PINNED_UNLOCKED, (
        "the lock-free append function's body changed: give UNLOCKED_FUNCTION a new version, then pin the new digest"
    )
    # No events lock; the position is not written.
    assert "LOCK TABLE" not in statement
    assert "UPDATE \"S\".rm_position" not in statement


def test_the_lock_free_function_names_the_read_models_position_row() -> None:
    from context_compaction.infrastructure.eventstore.pgsql import POSITION_NAME
    from context_compaction.infrastructure.readmodel.schema import POSITION

    assert POSITION_NAME == POSITION
