"""ISO stamps (`journalctl -o short-iso`, `short-full`, rsyslog's RFC 3339) and Unix seconds.

From fixtures/seed004_tensorfold_cotenant_gb10/kernel.log:

    2026-10-30T18:59:48+00:00 spark-02 kernel: docker0: port 1(veth3c1a9e2) entered forwarding state

is the kernel's message of host spark-02 at that instant; `short-full` prints a weekday before
the date and a zone name after the time (`Sat 2026-11-14 13:12:12 UTC host kernel: msg`).
"""

from __future__ import annotations

from datetime import datetime, tzinfo

from oomtrace.lazyregex import lazy_compile
from oomtrace.prefixes.stamps import parse_iso

# journalctl -o short-full: `Sat 2026-11-14 13:12:12 UTC host kernel: msg`.
WEEKDAY_ISO = lazy_compile(r"\S{2,4} (?=\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})")
ZONE_WORD = lazy_compile(r"(?P<zone>[A-Z]{2,5}) ")
ISO = lazy_compile(r"(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\s")
UNIX = lazy_compile(r"(\d{9,11}\.\d{3,9})\s")


def iso_wall(text: str, zone: tzinfo) -> datetime | None:
    """The wall time of an ISO stamp, in `zone` when it prints none."""
    wall = parse_iso(text)
    if wall is not None and wall.tzinfo is None:
        wall = wall.replace(tzinfo=zone)
    return wall
