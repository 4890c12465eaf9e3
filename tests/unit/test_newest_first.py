"""``NewestFirst``, the pool's idle connections newest first (ADR 0067), without a server.

What psycopg_pool does to the deque: ``popleft`` to take (a checkout, a shrink) and
``append`` to give back; connections carry ``_expire_at`` (the pool's monotonic clock).
"""

from __future__ import annotations

from time import monotonic

from context_compaction.infrastructure.eventstore.internals import NewestFirst


class Conn:
    def __init__(self, name: str, age_left: float = 3600.0) -> None:
        self.name = name
        self._expire_at = monotonic() + age_left

    def __repr__(self) -> str:
        return self.name


def _idle(*conns: Conn) -> NewestFirst:
    idle = NewestFirst()
    for conn in conns:  # (returned in this order: the last one is the newest)
        idle.append(conn)
    return idle


def test_the_connection_returned_last_is_taken_first() -> None:
    a, b, c = Conn("a"), Conn("b"), Conn("c")
    idle = _idle(a, b, c)
    assert idle.popleft() is c
    idle.append(c)
    assert idle.popleft() is c
    assert list(idle) == [b, a]


def test_an_expired_spare_is_taken_first_wherever_it_sits() -> None:
    """Second review: a burst can return a young connection after an expired one, and
    the young one then sat where the check looked (the oldest end only)."""
    warm, expired, young = Conn("warm"), Conn("expired", -1), Conn("young")
    idle = _idle(young, expired, warm)  # (oldest end: young)
    assert idle.popleft() is expired
    assert [idle.popleft() for _ in range(2)] == [warm, young]


def test_expired_spares_go_oldest_first_and_the_warm_one_last() -> None:
    old, older, warm = Conn("old", -1), Conn("older", -2), Conn("warm", -3)
    idle = _idle(older, old, warm)
    assert [idle.popleft() for _ in range(3)] == [older, old, warm]


def test_a_lone_connection_is_handed_out_even_if_expired() -> None:
    only = Conn("only", -1)
    assert _idle(only).popleft() is only  # (its return path replaces it)


def test_connections_without_an_expiry_keep_the_order() -> None:
    a, b = object(), object()
    idle = NewestFirst()
    idle.append(a)
    idle.append(b)
    assert idle.popleft() is b and idle.popleft() is a


def test_the_pools_check_keeps_the_order() -> None:
    """psycopg_pool's ``check()``: list the deque, clear it, pop from the list's end and
    append each that works."""
    a, b, c = Conn("a"), Conn("b"), Conn("c")
    idle = _idle(a, b, c)
    conns = list(idle)
    idle.clear()
    while conns:
        idle.append(conns.pop())
    assert idle.popleft() is c
