"""What a source yields: one kernel or service log message with where it came from."""

from __future__ import annotations

from datetime import datetime

from oomtrace.frozen import Frozen


# gc=False (Stamp, Record, and events.Event): the cyclic collector does not track them. A big log
# makes one Record and one event a line, hundreds of thousands of them, and each allocation of a
# tracked object counts towards the next collection: the collector's passes were a sixth of
# `list` on a crash loop of 5,000 reports (0.95 of 6.8 CPU-s). They hold only strings, numbers,
# datetimes and containers of those (and a Record, a Stamp), so no reference cycle can run
# through them, which is what msgspec asks of an untracked type.
class Stamp(Frozen, gc=False):
    """When a line was logged, as far as its prefix tells."""

    wall: datetime | None
    """Wall-clock time with its UTC offset; None when the prefix had none."""
    uptime: float | None
    """Seconds since boot from a `[ 1234.567890]` prefix, if any."""
    raw: str
    """The stamp exactly as printed ("" when the line had none)."""
    boot: int = 0
    """Boot segment within its source: uptime going backwards starts a new one."""
    clock: float | None = None
    """Seconds since the first midnight of its source, from a bare `13:12:12` stamp (a time with
    no date, as write-ups quote lines) or a syslog stamp whose month word names no month:
    comparable within its source only, and never a date."""


NO_STAMP = Stamp(None, None, "")


# Record.sender of a record the journal proves its claimed sender wrote.
PROVEN = "proven"


class Record(Frozen, gc=False):
    """One log message (a line, or one part of an rsyslog `#012`-joined line)."""

    source: str
    line_no: int
    raw: str
    """The input line as read, for quoting evidence."""
    message: str
    """The text after every prefix: what the kernel (or service) printed."""
    stamp: Stamp
    ident: str | None = "kernel"
    """Syslog identifier: "kernel" for kernel lines, None when the prefix names none."""
    host: str | None = None
    repeats: int = 0
    """Lines just before this one that say the same warning and were counted, not read: a big
    file's NVRM Xid chatter (sources/chunks.py). 0 for every other record."""
    pid: int | None = None
    """The pid in a `tag[pid]:` prefix: the daemon that logged it."""
    prefixed: bool = True
    """False for a line with no prefix of its own (its stamp is the line before's): a
    continuation, or the rest of a line a terminal wrapped."""
    separate: bool = False
    """An entry of its own with its host in a field (a journal entry, a JSON export's record):
    where hosts' lines interleave, each host's report is read apart (episodes: streams)."""
    sender: str | None = None
    """Who the journal says wrote a userspace killer's or systemd's record (prefixes.journal):
    PROVEN (its own process), or the process that did ("uid 1000, logger"); None where the
    sender cannot be proven (a text log, a journal entry without its trusted fields)."""

    @property
    def is_kernel(self) -> bool:
        return self.ident in ("kernel", None)
