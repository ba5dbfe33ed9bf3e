"""What reading a source's lines so far leaves that changes how the next ones read.

The families (dmesg.py, syslog.py, ...) read and update it through the few methods here; the
splitter (splitter.py) is this state plus what it learns to read lines quicker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo

from oomtrace import jsonshapes
from oomtrace.prefixes.undecorate import MAX_DECORATION
from oomtrace.records import NO_STAMP, Stamp
from oomtrace.zones import local_zone

# A jump back in uptime by more than this starts a new boot segment (small jitter from
# interleaved CPUs is normal).
BOOT_JUMP_S = 1.0
# A clock that goes back by more than this is the next day's (a paste that runs past midnight).
_NEXT_DAY_S = 12 * 3600.0


@dataclass
class ReadState:
    """The state one source's lines need: the previous stamp (journalctl and rsyslog print
    continuation lines with no prefix), the boot segment (uptime going backwards), and the year
    for stamps without one."""

    source: str
    zone: tzinfo = field(default_factory=local_zone)
    """Zone for stamps printed without an offset (syslog, dmesg -T)."""
    reference: datetime = field(default_factory=lambda: datetime.now(UTC))
    """Syslog stamps have no year: take the one that puts them at or before this moment."""
    year: int | None = None
    """An explicit year for syslog stamps (overrides `reference`)."""
    _previous: Stamp = NO_STAMP
    _boot: int = 0
    _last_uptime: float | None = None
    _boot_ids: dict[str, int] = field(default_factory=dict)
    _last_clock: float | None = None
    """The last bare time of day read (seconds since its source's first midnight)."""
    _decoration: str = ""
    """A prefix seen before a known stamp or message (a console's name, `svc_1  | `): cut off
    the lines that follow too, so the report lines behind it are read."""
    _quoted_printable: bool = False
    """The source is a mail read raw in quoted-printable (a `=3D` was seen): each line's `=XX`
    is decoded, and a soft line break's `=` at a line's end taken off (undecorate.py)."""
    _verbose: dict[str, str] | None = None
    """The fields of the journalctl -o verbose entry being read."""
    json_shape: jsonshapes.Shape | None = None
    """How to read JSON lines that are not journal entries (`--jsonl-fields`); None: by content."""
    unknown_json: int = 0
    """JSON objects of no known shape, read as text lines (their messages found where they are)."""

    def read_state(self) -> tuple[object, ...]:
        """What reading the lines so far leaves that changes how the next ones read."""
        verbose = dict(self._verbose) if self._verbose is not None else None
        return (
            self._previous,
            self._boot,
            self._last_uptime,
            dict(self._boot_ids),
            self._decoration,
            verbose,
            self._last_clock,
            self._quoted_printable,
        )

    def _stamp(self, wall: datetime | None, raw: str, uptime: re.Match[str] | None = None) -> Stamp:
        """The stamp of a wall time printed as `raw` and of the `_UPTIME` match after it if any
        (kern.log's; its boot counted), remembered for the lines after."""
        if uptime is None:
            return self._remember(Stamp(wall, None, raw, self._boot))
        seconds = float(uptime.group(1))
        raw = f"{raw} {uptime.group(0).strip()}".strip()
        return self._remember(Stamp(wall, seconds, raw, self._boot_for(seconds)))

    def _clock_stamp(self, match: re.Match[str], raw: str | None = None) -> Stamp:
        """The stamp of a time of day (groups h, m, s, f): seconds since the source's first
        midnight, a day later each time the clock goes back by more than half a day. `raw`: the
        stamp as printed where it is more than the clock (a date that could not be read)."""
        seconds = int(match["h"]) * 3600 + int(match["m"]) * 60 + int(match["s"])
        reading = seconds + (float(match["f"].replace(",", ".")) if match["f"] else 0.0)
        if self._last_clock is not None:
            days = self._last_clock // 86400
            reading += days * 86400
            if reading < self._last_clock - _NEXT_DAY_S:
                reading += 86400
        self._last_clock = reading
        printed = match.group(0).strip() if raw is None else raw
        return self._remember(Stamp(None, None, printed, self._boot, reading))

    def _remember(self, stamp: Stamp) -> Stamp:
        self._previous = stamp
        return stamp

    def _boot_for(self, uptime: float | None) -> int:
        if uptime is None:
            return self._boot
        if self._last_uptime is not None and uptime < self._last_uptime - BOOT_JUMP_S:
            self._boot += 1
        self._last_uptime = uptime
        return self._boot

    def _learn(self, prefix: str) -> None:
        """Keep a prefix that has no stamp in it as the decoration of the lines to come."""
        if 0 < len(prefix) <= MAX_DECORATION and not any(c.isdigit() for c in prefix[-12:]):
            self._decoration = prefix
