"""Stamps → moments: a record's place in time, and the gap between two stamps or records.

Imports nothing of the package: the assembler, the freezer and the builder all read it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from oomtrace.model import Moment
from oomtrace.records import Record, Stamp


def moment_of(record: Record, seq: int) -> Moment:
    stamp = record.stamp
    return Moment(
        time=stamp.wall,
        uptime_s=stamp.uptime,
        raw=stamp.raw,
        source=record.source,
        line=record.line_no,
        boot=stamp.boot,
        seq=seq,
        clock_s=stamp.clock,
    )


def seconds(a: Stamp, b: Stamp) -> float | None:
    """b - a in seconds when both stamps can be compared, else None."""
    if a.wall is not None and b.wall is not None:
        return (b.wall - a.wall).total_seconds()
    if a.uptime is not None and b.uptime is not None and a.boot == b.boot:
        return b.uptime - a.uptime
    if a.clock is not None and b.clock is not None:
        return b.clock - a.clock
    return None


def minus_seconds(time: datetime, seconds: float) -> datetime | None:
    """`time` less `seconds`, or None past the years a datetime holds (a mangled line's uptime
    of 392915700597 s, 12,000 years, found by fuzz/fuzz_lines.py): no boot time is learnt."""
    try:
        return time - timedelta(seconds=seconds)
    except OverflowError:
        return None


def record_gap(a: Record, b: Record) -> float | None:
    """b - a in seconds as moment_gap would say for their moments, without building them; the
    gap that decides whether a repeated warning joins its run."""
    if a.stamp.wall is not None and b.stamp.wall is not None:
        return (b.stamp.wall - a.stamp.wall).total_seconds()
    if a.source != b.source:
        return None
    return seconds(a.stamp, b.stamp)
