"""A time of day with no date, as write-ups quote lines: `13:12:12  dashboard-servi invoked oom-killer`.

No paste of the corpus is stamped so throughout; tests/test_pastes.py's write-up

    13:12:12  dashboard-servi invoked oom-killer

is that message with a clock reading of 13:12:12 and no date (records.Stamp.clock): none is
invented, and a clock going back by more than half a day is the next day's (state.py). Also
`[13:12:12] msg`, and a bracketed date-time of some other shape (`[2023-01-02 12:34:56 CET]`).
A syslog or `dmesg -T` stamp whose month word no table names (`xyz 02 10:11:12 host kernel: `,
`[Sat xyz 19 18:03:30 2026] `) is such a clock too: its host and tag are cut, and no month is
guessed.
"""

from __future__ import annotations

import re

from oomtrace.lazyregex import lazy_compile
from oomtrace.prefixes.cut import Split
from oomtrace.prefixes.glued import syslog_after_junk
from oomtrace.prefixes.state import ReadState
from oomtrace.prefixes.syslog import syslog_rest

# A bare time of day. It has no date and no zone: a clock reading, never a wall time.
CLOCK_ONLY = lazy_compile(
    r"(?P<h>[01]?\d|2[0-3]):(?P<m>[0-5]\d):(?P<s>[0-5]\d)(?P<f>[.,]\d{1,9})?(?:\s+(?=\S)|\s*$)"
)
# A bracketed date-time in some other shape, often with a zone name: `[2023-01-02 12:34:56 CET]`.
BRACKETED = lazy_compile(r"\[([^\[\]]{0,40}\d{1,2}:\d{2}:\d{2}[^\[\]]{0,30})\]\s?")


def clock_only(state: ReadState, rest: str, match: re.Match[str]) -> Split:
    """A bare time of day: a stamp with a clock reading and no date (none is invented). A
    line of nothing but the stamp (a write-up split stamp and message) stamps the next."""
    message, ident, host, pid = syslog_rest(rest[match.end() :], tagless_is_host=False)
    return Split(state._clock_stamp(match), ident, host, pid, message, True)


# A word where syslog prints its month (`Nov`, `лис`, `déc.`).
_MONTH_WORD = lazy_compile(r"[^\W\d_]{2,12}\.?")


def undated_syslog(state: ReadState, rest: str, match: re.Match[str]) -> Split | None:
    """A syslog or journalctl stamp (a `SYSLOG` match) whose month word names no month a table
    holds: its host and tag cut as a dated stamp's are, and its stamp the time of day with no
    date (`raw` the stamp as printed). Before uk_UA's months were known, `лис 02 10:11:12 host
    kernel: ` (November) was dated 2 December by dateutil, which skips a word it does not know
    and takes the current month. None when no host or tag follows (a line of another shape)."""
    if not _MONTH_WORD.fullmatch(match.group(1)) or syslog_after_junk(rest) is not None:
        return None  # `xyzMay 15 ...`: bytes glued before a dated stamp (glued.py)
    after = rest[match.end() :]
    message, ident, host, pid = syslog_rest(after, tagless_is_host=False)
    clock = CLOCK_ONLY.match(rest, match.start(3))
    if len(message) == len(after) or clock is None:
        return None
    return Split(state._clock_stamp(clock, rest[: match.end()].strip()), ident, host, pid, message, True)


def undated_dmesg_t(state: ReadState, rest: str, match: re.Match[str]) -> Split | None:
    """A `dmesg -T` stamp (a `DMESG_T` match) whose month word names no month a table holds:
    the kernel's message with a time of day and no date. Read as no stamp, its kill took the
    date of the line before it."""
    clock = CLOCK_ONLY.match(rest, match.start(4))
    if not _MONTH_WORD.fullmatch(match.group(2)) or clock is None:
        return None
    raw = match.group(0).strip()[1:-1]
    return Split(state._clock_stamp(clock, raw), "kernel", None, None, rest[match.end() :], True)
