"""Weekday-first stamps: `dmesg -T`'s bracketed one, and OpenWrt logread's bare one.

From tests/realworld/cases/gpu-autovod-dmesg-T-commas and forum-lede-k2t-logread-cut-invoked:

    [Sun Mar 30 08:24:00 2025] Out of memory: Killed process 7899 (python) total-vm:26,184,840kB, ...
    Sat Jan 25 09:40:15 2020 kern.info kernel: [22042.979908] [ 1039]     0  1039      420 ...

the first the kernel's message at 30 March 2025 08:24:00 in the reader's zone, the second a
tasks row at 25 January 2020 09:40:15 and, after logread's `kern.info kernel: `, uptime 22042.979908.
"""

from __future__ import annotations

import re
from datetime import datetime, tzinfo

from oomtrace.lazyregex import lazy_compile
from oomtrace.prefixes.stamps import local, month_number

DMESG_T = lazy_compile(r"\[(\S+)\s+(\S+)\s+(\d{1,2})\s+(\d{1,2}):(\d{2}):(\d{2})\s+(\d{4})\]\s?")
# OpenWrt logread: `Mon Jan  1 12:00:00 2024 kern.warn kernel: [  123.456] msg`.
WEEKDAY_FIRST = lazy_compile(r"(\S{2,4})\s+(\S+)\s+(\d{1,2})\s+(\d{1,2}):(\d{2}):(\d{2})\s+(\d{4})\s")


def weekday_first(match: re.Match[str], zone: tzinfo) -> datetime | None:
    """`Sat Nov 14 13:12:12 2026`, bracketed (dmesg -T) or not (OpenWrt logread): groups
    weekday, month, day, hour, minute, second, year."""
    month = month_number(match.group(2))
    if month is None:
        return None
    day, hour, minute, second, year = (int(match.group(i)) for i in range(3, 8))
    return local(year, month, day, hour, minute, second, 0, zone)
