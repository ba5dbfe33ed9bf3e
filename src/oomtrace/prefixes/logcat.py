"""Android logcat: threadtime (`MM-DD HH:MM:SS.mmm  pid  tid L tag: msg`) and brief (`L/tag( pid): msg`).

From tests/realworld/cases/dev-lmkd-unit-test-wrapped:

    07-31 02:28:31.588   152   152 I lowmemorykiller: Kill './lmkd_unit_test' (6870), uid 0, ...

is lmkd's message `Kill './lmkd_unit_test' (6870), ...` (tag lowmemorykiller, pid 152) at
31 July 02:28:31.588 (the year from years.py).
"""

from __future__ import annotations

import re
from datetime import datetime

from oomtrace.lazyregex import lazy_compile
from oomtrace.prefixes.stamps import local
from oomtrace.prefixes.state import ReadState
from oomtrace.prefixes.syslog import syslog_rest
from oomtrace.prefixes.years import year_for

# Android logcat, threadtime (`11-23 10:20:30.123  1234  1234 I tag: msg`, also with a year) and
# brief (`I/tag( 1234): msg`).
LOGCAT = lazy_compile(r"(\d{2})-(\d{2})\s+(\d{1,2}):(\d{2}):(\d{2})\.(\d{3,6})\s+")
_LOGCAT_REST = lazy_compile(
    r"\s*(?P<pid>\d{1,9})\s+\d{1,9}\s+[VDIWEFA]\s+(?P<tag>[^:]*?)\s*: ?(?P<msg>.*)", re.DOTALL
)
LOGCAT_BRIEF = lazy_compile(r"[VDIWEFA]/(?P<tag>[^(:]+?)\(\s*(?P<pid>\d{1,9})\): ?(?P<msg>.*)", re.DOTALL)


def logcat_wall(state: ReadState, match: re.Match[str]) -> datetime | None:
    month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 6))
    micros = int(match.group(6).ljust(6, "0"))
    year = year_for(state.year, state.reference, month, day)
    return local(year, month, day, hour, minute, second, micros, state.zone)


def after_date(rest: str, *, tagless_is_host: bool) -> tuple[str, str | None, str | None, int | None]:
    """What follows a numeric date: syslog's host and tag, or logcat's pid, tid, level and tag."""
    logcat = _LOGCAT_REST.match(rest)
    if logcat:
        return logcat["msg"], logcat["tag"] or None, None, int(logcat["pid"])
    return syslog_rest(rest, tagless_is_host=tagless_is_host)
