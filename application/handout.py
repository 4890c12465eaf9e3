"""What a typed caller gets as ``messages`` (issue 13, ADR 0030 R8, ADR 0058).

The messages of ``prepare_turn`` / ``get_projection`` come from the process's cached
projection: a host (or litellm) that edits them in place must not change the next
request. An eager copy of every message made each turn O(N) in the history (ADR 0058:
~60 % of a 10k-message ``prepare_turn``), although a caller reads most requests without
editing them, and the one that walks them (litellm walks the list three times, at
~67 µs a message of its own) pays far more than the copy. So a message is copied
when a caller first takes it out of the list, by index or slice (a walk copies them
all when it starts): what it can hold and edit is always its own, and what it never
takes out is never copied.

C-level readers that do not go through the list's methods (orjson, pydantic's
``model_dump``, ``==``, ``in``, ``repr``) read the slots without taking anything out;
they see the cache's messages or the caller's copies, never handing either to code
that could edit them. (``json.dumps``, ``tuple()`` and ``list.extend`` of a list
subclass walk it: they copy.) Every method that reorders, removes or inserts copies what is
still shared first, after which the list is a plain list in all but its type.
"""

from __future__ import annotations

import gc
import operator
import platform
import threading
from collections.abc import Iterable, Iterator
from typing import Any, SupportsIndex

#: CPython keeps a dict untracked by the collector while it holds no list, dict or
#: other container that could be tracked (inserting one tracks it for good), so an
#: untracked dict's flat ``copy()`` shares nothing mutable with it. Elsewhere, or if
#: in doubt, every dict is walked.
_IS_TRACKED = gc.is_tracked if platform.python_implementation() == "CPython" else (lambda _: True)


def owned(value: Any) -> Any:
    """A copy of one JSON-shaped value that shares no dict or list with it."""
    kind = type(value)
    if kind is dict:
        copy = value.copy()
        if _IS_TRACKED(value):
            for key, item in value.items():
                if type(item) is dict or type(item) is list:
                    copy[key] = owned(item)
        return copy
    if kind is list:
        return [owned(item) if type(item) is dict or type(item) is list else item for item in value]
    return value


def handed_out(messages: list[Any]) -> list[Any]:
    """An eager copy of ``messages`` that shares no dict or list with them."""
    return [owned(m) for m in messages]


class HandedOutMessages(list):  # type: ignore[type-arg]
    """A list of the cache's messages that copies each one the first time it is taken out.

    ``_shared[i]`` is 1 while slot ``i`` still holds the cache's object; slots past
    its end (appended by the caller) are the caller's own.
    """

    __slots__ = ("_left", "_lock", "_shared")

    def __init__(self, messages: Iterable[Any] = ()) -> None:
        super().__init__(messages)
        self._shared = bytearray(b"\x01") * len(self)
        self._left = len(self)
        self._lock = threading.Lock()

    # ------------------------------------------------------------ taking out
    def _own(self, index: int) -> Any:
        shared = self._shared  # (another thread may swap it for an empty one)
        if self._left and index < len(shared) and shared[index]:
            with self._lock:  # two threads taking one message out get the same copy
                if index < len(self._shared) and self._shared[index]:
                    list.__setitem__(self, index, owned(list.__getitem__(self, index)))
                    self._shared[index] = 0
                    self._left -= 1
        return list.__getitem__(self, index)

    def _own_all(self) -> None:
        """Copy what is still shared: the slots stop mattering (before any reordering)."""
        if self._left:
            with self._lock:
                shared = len(self._shared)
                if self._left == shared:  # nothing taken out or put in yet: one C-level pass
                    list.__setitem__(self, slice(0, shared), handed_out(list.__getitem__(self, slice(0, shared))))
                else:
                    for index, flag in enumerate(self._shared):
                        if flag:
                            list.__setitem__(self, index, owned(list.__getitem__(self, index)))
                self._shared = bytearray()
                self._left = 0

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._own(i) for i in range(*index.indices(len(self)))]
        try:
            i = operator.index(index)
        except TypeError:
            return list.__getitem__(self, index)  # the list's own TypeError
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            return list.__getitem__(self, index)  # the list's own IndexError
        return self._own(i)

    def __iter__(self) -> Iterator[Any]:
        # A walk takes every message out (litellm walks the list three times): copying
        # them all at once costs what the eager copy did; one by one, twice that.
        self._own_all()
        return list.__iter__(self)

    def __reversed__(self) -> Iterator[Any]:
        index = len(self) - 1
        while index >= 0:
            if index < len(self):
                yield self._own(index)
            index -= 1

    def pop(self, index: SupportsIndex = -1) -> Any:
        self._own_all()
        return list.pop(self, index)

    def copy(self) -> list[Any]:
        return list(self)

    __copy__ = copy

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        # pickle and deepcopy get a plain list of copies (the lock does not pickle).
        return (list, (list(self),))

    def __add__(self, other: Any) -> Any:
        if not isinstance(other, list):
            return NotImplemented
        return [*self, *other]

    def __radd__(self, other: Any) -> Any:
        # ``plain_list + this``: Python asks the subclass first, so the plain list's
        # concatenation never copies the shared slots out.
        if not isinstance(other, list):
            return NotImplemented
        return [*other, *self]

    def __mul__(self, count: SupportsIndex) -> Any:
        return list(self) * operator.index(count)

    __rmul__ = __mul__

    # ---------------------------------------------------------- putting in
    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            self._own_all()
        else:
            i = operator.index(index)
            if i < 0:
                i += len(self)
            with self._lock:
                if 0 <= i < len(self._shared) and self._shared[i]:
                    self._shared[i] = 0
                    self._left -= 1
        list.__setitem__(self, index, value)

    def __delitem__(self, index: Any) -> None:
        self._own_all()
        list.__delitem__(self, index)

    def insert(self, index: SupportsIndex, value: Any) -> None:
        self._own_all()
        list.insert(self, index, value)

    def remove(self, value: Any) -> None:
        self._own_all()
        list.remove(self, value)

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self._own_all()
        list.sort(self, *args, **kwargs)

    def reverse(self) -> None:
        self._own_all()
        list.reverse(self)

    def clear(self) -> None:
        self._own_all()
        list.clear(self)

    def __imul__(self, count: SupportsIndex) -> Any:
        self._own_all()
        return list.__imul__(self, count)
