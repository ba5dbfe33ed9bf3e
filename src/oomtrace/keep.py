"""Keep the first and the last of an unbounded stream: what bounds memory per kill.

A crash loop can log 200,000 kills. The first kills say how it began and the last say where it
stands; the ones between repeat them. Items pushed out of the middle go to a callback that
counts them, so an output can say what was not kept and how to see it (a narrower range).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar, overload

T = TypeVar("T")


class FirstAndLast(Generic[T]):
    def __init__(self, first: int, last: int, dropped: Callable[[T], None] | None = None) -> None:
        self._first: list[T] = []
        self._last: deque[T] = deque()
        self._first_size = first
        self._last_size = last
        self._dropped = dropped
        self.dropped = 0

    def append(self, item: T) -> None:
        if len(self._first) < self._first_size:
            self._first.append(item)
            return
        self._last.append(item)
        if len(self._last) > self._last_size:
            gone = self._last.popleft()
            self.dropped += 1
            if self._dropped is not None:
                self._dropped(gone)

    def filling_first(self) -> bool:
        """Is the next item one of the first (kept whatever follows)?"""
        return len(self._first) < self._first_size

    def head(self) -> list[T]:
        return list(self._first)

    def tail(self) -> list[T]:
        return list(self._last)

    def __iter__(self) -> Iterator[T]:
        yield from self._first
        yield from self._last

    def __len__(self) -> int:
        return len(self._first) + len(self._last)


class Lazily(Sequence[T]):
    """A sequence whose items are made when read, one at a time: `why --all` of 20,000 kills
    tells (and a format words) one story, writes it and lets it go."""

    def __init__(self, count: int, make: Callable[[int], T]) -> None:
        self._count = count
        self._make = make

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...
    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        if isinstance(index, slice):
            return [self._make(i) for i in range(*index.indices(self._count))]
        if not -self._count <= index < self._count:
            raise IndexError(index)
        return self._make(index % self._count)

    def __iter__(self) -> Iterator[T]:
        return (self._make(i) for i in range(self._count))
