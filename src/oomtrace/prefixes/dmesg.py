"""dmesg: `[ uptime] msg`, with `<level>` (`dmesg -r`, /proc/kmsg), `-x`, `-H` and `-d` shapes.

From tests/realworld/cases/k8s-reportportal-uwsgi-plain-dmesg:

    [ 7093.543707] uwsgi invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=986

is the kernel's message `uwsgi invoked oom-killer: ...` at 7093.543707 s of uptime, with no wall
time; an uptime lower than the last by more than a second starts the next boot (state.py).
`journalctl -o short-monotonic` puts a host and a tag after the uptime: read too.
"""

from __future__ import annotations

import re
from datetime import timedelta

from oomtrace.lazyregex import lazy_compile
from oomtrace.prefixes.cut import Split
from oomtrace.prefixes.stamps import local, month_number
from oomtrace.prefixes.state import ReadState
from oomtrace.prefixes.syslog import SYSLOG_REST, syslog_rest
from oomtrace.prefixes.years import year_for
from oomtrace.records import NO_STAMP, Stamp

PRIORITY = lazy_compile(r"<\d{1,3}>")
UPTIME = lazy_compile(r"\[\s*(\d+\.\d+)\]\s?")
# UPTIME where the prefix it matches is learnable (learnt.py: ends in a space, ASCII): ASCII
# digits and spaces, a space after the bracket.
LEARNABLE_UPTIME = lazy_compile(r"\[\s*(\d+\.\d+)\] ", re.ASCII)
# dmesg -x: `kern  :err   : [  123.456] msg` (facility and level decoded before the stamp).
DMESG_X = lazy_compile(r"(?:kern|user|mail|daemon|auth|syslog|lpr|news|local\d)\s*:\s*[a-z]{3,6}\s*:\s")
# dmesg -H (and -e): `[Nov14 13:12] msg` for a new minute, then `[  +0.000031] msg` after it.
_DMESG_HUMAN = lazy_compile(r"\[(?P<mon>[^\W\d]{3,5})(?P<day>\d{1,2}) (?P<h>\d{2}):(?P<m>\d{2})\]\s?")
_DMESG_DELTA = lazy_compile(r"\[\s*\+\s*(?P<d>\d{1,9}\.\d{1,9})\]\s?")
# A first line that lost its `[` in the copy: `  5864.708440] msg`.
UPTIME_NO_BRACKET = lazy_compile(r"\s*(\d{1,10}\.\d{6,9})\]\s?")


def after_uptime(state: ReadState, rest: str, match: re.Match[str]) -> Split:
    rest = rest[match.end() :]
    ident: str | None = "kernel"
    host: str | None = None
    pid: int | None = None
    if tagged_after_uptime(rest):
        rest, ident, host, pid = syslog_rest(rest, tagless_is_host=False)
    return Split(state._stamp(None, "", match), ident, host, pid, rest, True)


def tagged_after_uptime(rest: str) -> bool:
    """Does what follows an uptime begin with a host and a tag `after_uptime` reads (journalctl
    -o short-monotonic: `[ 5864.708440] host kernel: msg`, `host tag[pid]: msg`)?"""
    head = rest[:120]
    if " kernel:" not in head and "]: " not in head:
        return False  # plain dmesg lines far outnumber these: the cheap test first
    tagged = SYSLOG_REST.match(rest)
    return bool(tagged and tagged.group("host") and (tagged.group("tag") == "kernel" or tagged.group("pid")))


def dmesg_human(state: ReadState, rest: str) -> Split | None:
    """dmesg -H: a minute stamp, or the time since the line before."""
    match = _DMESG_HUMAN.match(rest)
    if match and (month := month_number(match["mon"])) is not None:
        year = year_for(state.year, state.reference, month, int(match["day"]))
        wall = local(year, month, int(match["day"]), int(match["h"]), int(match["m"]), 0, 0, state.zone)
        if wall is not None:
            stamp = Stamp(wall, None, match.group(0).strip(), state._boot)
            return Split(state._remember(stamp), "kernel", None, None, rest[match.end() :], True)
    match = _DMESG_DELTA.match(rest)
    if match:
        previous = state._previous
        wall = previous.wall + timedelta(seconds=float(match["d"])) if previous.wall is not None else None
        stamp = Stamp(wall, None, match.group(0).strip(), state._boot) if wall is not None else NO_STAMP
        return Split(state._remember(stamp), "kernel", None, None, rest[match.end() :], True)
    return None
