"""The seam every input implements."""

from __future__ import annotations

import lzma
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from oomtrace.records import Record

if TYPE_CHECKING:
    from oomtrace.model import ProbeSample

# What a cut or damaged compressed file raises part-way through (gzip, xz, bz2).
DAMAGED = (EOFError, OSError, lzma.LZMAError, zlib.error)


class Source(ABC):
    """Something that yields log records in the order they were written."""

    name: str
    kind: str
    progress: Callable[[int], None] | None = None
    """Called now and then with how far reading has come (bytes, or entries for a journal)."""
    problem: str | None = None
    """Why reading stopped before the end (a cut or damaged compressed file), if it did, and
    what was cut on the way (overlong lines)."""

    host_spans: Mapping[str, tuple[datetime, datetime]] | None = None
    """Each host's first and last entry time, set by a source that reads only some of its
    records (a journal reader) once `records()` is done; others leave it to the records."""

    host_damage: Mapping[str, tuple[str, datetime | None]] | None = None
    """Hosts whose journal file a damaged entry cut short: the file's name and the time read up
    to (None: none of it), set by a journal reader once `records()` is done."""

    samples: tuple[ProbeSample, ...] = ()
    """The watcher's samples (MemAvailable, PSI) a `watch --record` file held near its kills,
    once `records()` is done: no log has them."""

    def add_problem(self, problem: str | None) -> None:
        if problem is not None:
            self.problem = f"{self.problem}; {problem}" if self.problem else problem

    def size(self) -> int | None:
        """How far `progress` will go (bytes), when known."""
        return None

    def _report(self, done: int) -> None:
        if self.progress is not None:
            self.progress(done)

    def boot_time(self) -> datetime | None:
        """When the machine booted, if the source knows: turns uptime stamps into wall time."""
        return None

    @abstractmethod
    def records(self) -> Iterator[Record]:
        """Yield records; raise InputError when the input cannot be read at all."""
