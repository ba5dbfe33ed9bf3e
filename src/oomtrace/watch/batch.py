"""What a live follower hands the watcher (a Batch), and the seam every follower implements."""

from __future__ import annotations

from abc import ABC, abstractmethod

from oomtrace.frozen import Frozen
from oomtrace.records import Record

BOOT_ID = "/proc/sys/kernel/random/boot_id"


class Batch(Frozen):
    """What one read gave: the records that matter in order, where to resume after everything
    read (noise included), and what was lost."""

    records: tuple[Record, ...]
    cursor: str | None
    lost: int = 0
    """Records the source says were lost before these (kmsg overwritten, a vacuumed cursor)."""
    lost_why: str = ""
    cursors_before: tuple[str | None, ...] = ()
    """Where to resume to read each record again: the position just before it (one per record;
    empty: the batch before's `cursor`). The watcher saves no position past a record until
    every story that needs it is told."""


class Follower(ABC):
    kind: str
    """"journal" or "kmsg": what the cursor file says its cursor is for."""
    name: str
    """The source name the records carry, as reports print it."""
    description: str
    """What is followed and how, for the start-up line."""

    @abstractmethod
    def fileno(self) -> int:
        """A descriptor that becomes readable when there is something to read."""

    @abstractmethod
    def read(self) -> Batch:
        """Whatever has arrived, without blocking."""

    def close(self) -> None:
        return None

    def boot_id(self) -> str | None:
        return None


def current_boot_id() -> str | None:
    try:
        with open(BOOT_ID, encoding="ascii") as boot:
            return boot.read().strip().replace("-", "")
    except OSError:
        return None
