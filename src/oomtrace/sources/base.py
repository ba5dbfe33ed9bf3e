"""The seam every input implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from datetime import datetime

from oomtrace.records import Record


class Source(ABC):
    """Something that yields log records in the order they were written."""

    name: str
    kind: str

    def boot_time(self) -> datetime | None:
        """When the machine booted, if the source knows: turns uptime stamps into wall time."""
        return None

    @abstractmethod
    def records(self) -> Iterator[Record]:
        """Yield records; raise InputError when the input cannot be read at all."""
