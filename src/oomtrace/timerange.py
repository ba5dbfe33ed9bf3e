"""--since / --until: absolute times through dateutil, plus the relative words people type."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo

from dateutil.parser import ParserError
from dateutil.parser import parse as parse_date

from oomtrace.errors import UsageError

HELP = (
    "TIME is anything dateutil reads ('2026-11-14 13:00', 'Nov 14 13:00', '14.11.2026 13:00'), "
    "or now, today, yesterday, '-2h', '30 min ago', '3 days ago' (units s, m/min, h, d, w). "
    "Times without a zone are in --tz. dateutil does not read other relative phrases "
    "('last monday'); give a date instead."
)
_UNITS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
    "w": 604800,
    "week": 604800,
}
_RELATIVE = re.compile(r"^(?:-\s*(\d+(?:\.\d+)?)\s*([a-z]+)|(\d+(?:\.\d+)?)\s*([a-z]+?)s?\s+ago)$")


def parse_when(value: str, zone: tzinfo, now: datetime | None = None) -> datetime:
    """A moment from --since/--until text; raises UsageError with the forms understood."""
    now = now or datetime.now(zone)
    word = value.strip().lower()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if word == "now":
        return now
    if word == "today":
        return midnight
    if word == "yesterday":
        return midnight - timedelta(days=1)
    if word == "tomorrow":
        return midnight + timedelta(days=1)
    relative = _RELATIVE.match(word)
    if relative:
        amount = float(relative.group(1) or relative.group(3))
        unit = (relative.group(2) or relative.group(4)).rstrip("s") or "s"
        if unit in _UNITS:
            return now - timedelta(seconds=amount * _UNITS[unit])
    try:
        moment = parse_date(value, default=midnight.replace(tzinfo=None))
    except (ParserError, ValueError, OverflowError):
        raise UsageError(f"cannot read the time {value!r}", hint=HELP) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=zone)
