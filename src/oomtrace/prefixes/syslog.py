"""syslog and `journalctl` (short, the default): a month-first stamp, a host, a tag.

From tests/realworld/cases/old-centos7-allocating-task:

    Apr 20 09:12:57 vps001 kernel: mysqld invoked oom-killer: gfp_mask=0x201da, order=0, oom_score_adj=0

is the kernel's message `mysqld invoked oom-killer: ...` of host vps001 at 20 April 09:12:57 (the
year from years.py). The host-and-tag rest is read here for the other families' stamps too.
"""

from __future__ import annotations

import re
from datetime import datetime

from oomtrace.lazyregex import lazy_compile
from oomtrace.prefixes.stamps import local, month_number
from oomtrace.prefixes.state import ReadState
from oomtrace.prefixes.years import year_for

SYSLOG = lazy_compile(r"(\S+)\s+(\d{1,2})\s+(\d{1,2}):(\d{2}):(\d{2})(\.\d+)?\s")
# What follows a syslog or journalctl stamp: "host kernel: msg", "host <kern.warning> kernel:msg",
# "kernel: msg", "host tag[pid]: msg", "tag[pid]: msg" or (tag-less) "host: msg"; syslog
# templates and OpenWrt add a severity or facility word: "host INFO kernel:", "kern.warn kernel:".
SYSLOG_REST = lazy_compile(
    r"(?:(?P<host>[^\s:\[\]<]+) )??(?:<(?P<fac>[\w.]+)> )?"
    r"(?:(?P<sev>(?i:emerg|alert|crit|err|error|warn|warning|notice|info|debug)"
    r"|(?:kern|user|daemon|syslog|auth|authpriv|local\d)\.\w+) )?"
    r"(?P<tag>[^\s:\[]+)(?:\[(?P<pid>\d+)\])?:(?: |(?=\S)|$)(?P<msg>.*)",
    re.DOTALL,
)
KERNEL_ONLY = lazy_compile(r"kernel:\s?")


def syslog_wall(state: ReadState, match: re.Match[str]) -> datetime | None:
    """The wall time of a `SYSLOG` match (groups month, day, hour, minute, second, fraction)."""
    month = month_number(match.group(1))
    if month is None:
        return None
    day, hour, minute, second = (int(match.group(i)) for i in range(2, 6))
    fraction = match.group(6)
    micros = round(float(fraction) * 1_000_000) if fraction else 0
    year = year_for(state.year, state.reference, month, day)
    return local(year, month, day, hour, minute, second, micros, state.zone)


def syslog_rest(rest: str, *, tagless_is_host: bool) -> tuple[str, str | None, str | None, int | None]:
    """Cut "host tag[pid]: " off what follows a stamp; returns (message, ident, host, pid)."""
    match = SYSLOG_REST.match(rest)
    if not match:
        return rest, "kernel", None, None
    host, tag = match.group("host"), match.group("tag")
    pid = int(match.group("pid")) if match.group("pid") else None
    if tag == "kernel":
        return match.group("msg"), "kernel", host, None
    if host is None and pid is None and match.group("sev") is None:
        if tagless_is_host:
            # "Apr 01 14:13:32 mysrv: sed invoked oom-killer": a host with no tag.
            return match.group("msg"), "kernel", tag, None
        return rest, "kernel", None, None
    if host is None and pid is None and not tagless_is_host:
        return rest, "kernel", None, None
    return match.group("msg"), tag, host, pid
