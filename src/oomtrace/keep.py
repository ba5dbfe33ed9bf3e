"""Keep the first and the last of an unbounded stream: what bounds memory per kill.

A crash loop can log 200,000 kills. The first kills say how it began and the last say where it
stands; the ones between repeat them. Items pushed out of the middle go to a callback that
counts them, so an output can say what was not kept and how to see it (a narrower range).
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta, timezone
from typing import Generic, TypeVar, overload

from oomtrace.model import Moment

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


class KillIndex:
    """Where each kill not kept was (its pid, stamp and line) in flat arrays, about 50 bytes a
    kill instead of an episode's kilobytes: `why PID` can still say when that kill was."""

    def __init__(self) -> None:
        self._pids = array("q")
        self._epoch = array("d")
        """Wall time as seconds since the epoch; NaN where the line had none."""
        self._offset = array("l")
        """The wall time's UTC offset in seconds."""
        self._uptime = array("d")
        self._line = array("q")
        self._boot = array("l")
        self._seq = array("q")
        self._source = array("l")
        self._sources: dict[str, int] = {}

    def add(self, pid: int | None, moment: Moment) -> None:
        self._pids.append(pid if pid is not None and 0 <= pid < 1 << 62 else -1)
        time = moment.time
        offset = time.utcoffset() if time is not None else None
        self._epoch.append(time.timestamp() if time is not None else math.nan)
        self._offset.append(int(offset.total_seconds()) if offset is not None else 0)
        self._uptime.append(moment.uptime_s if moment.uptime_s is not None else math.nan)
        self._line.append(moment.line)
        self._boot.append(moment.boot)
        self._seq.append(moment.seq)
        self._source.append(self._sources.setdefault(moment.source, len(self._sources)))

    def __len__(self) -> int:
        return len(self._pids)

    def resolve(self, resolve: Callable[[Moment], Moment]) -> None:
        """Give the kills read before their boot's time was known a wall time (uptime + boot)."""
        for i in range(len(self._pids)):
            if math.isnan(self._epoch[i]) and not math.isnan(self._uptime[i]):
                time = resolve(self._moment(i)).time
                if time is not None:
                    offset = time.utcoffset()
                    self._epoch[i] = time.timestamp()
                    self._offset[i] = int(offset.total_seconds()) if offset is not None else 0

    def find(self, pid: int) -> list[Moment]:
        """When the kills of this pid were, oldest first (their stamps as printed are not kept)."""
        return [self._moment(i) for i, value in enumerate(self._pids) if value == pid]

    def _moment(self, i: int) -> Moment:
        epoch, uptime = self._epoch[i], self._uptime[i]
        time = (
            None
            if math.isnan(epoch)
            else datetime.fromtimestamp(epoch, timezone(timedelta(seconds=self._offset[i])))
        )
        source = next(name for name, number in self._sources.items() if number == self._source[i])
        uptime_s = None if math.isnan(uptime) else uptime
        return Moment(time, uptime_s, "", source, self._line[i], self._boot[i], self._seq[i])
