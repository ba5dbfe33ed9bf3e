"""The year of a stamp printed without one (syslog, logcat, `dmesg -H`)."""

from __future__ import annotations

from datetime import datetime


def year_for(year: int | None, reference: datetime, month: int, day: int) -> int:
    """`year` when the reader was given one, else the year that puts the stamp at or before
    `reference`: a stamp later in the calendar than the reference belongs to the year before
    (a kern.log written across New Year has December lines from last year)."""
    if year is not None:
        return year
    if (month, day) > (reference.month, reference.day + 1):
        return reference.year - 1
    return reference.year
