"""Keep the first and the last of an unbounded stream: what bounds memory per kill.

A crash loop can log 200,000 kills. The first kills say how it began and the last say where it
stands; the ones between repeat them. Items pushed out of the middle go to a callback that
counts them, so an output can say what was not kept and how to see it (a narrower range).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

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

    def head(self) -> list[T]:
        return list(self._first)

    def tail(self) -> list[T]:
        return list(self._last)

    def __iter__(self) -> Iterator[T]:
        yield from self._first
        yield from self._last

    def __len__(self) -> int:
        return len(self._first) + len(self._last)
