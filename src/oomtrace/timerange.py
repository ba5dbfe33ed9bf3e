"""--since / --until: absolute times through dateutil, plus the relative words people type."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo

from oomtrace.errors import UsageError
from oomtrace.lazyregex import lazy_compile
from oomtrace.zones import parse_date

HELP = (
    "TIME is an absolute stamp ('2026-11-14 13:00', 'Nov 14 13:00', '14.11.2026 13:00', '13:00'), "
    "@EPOCH seconds, now, today, yesterday, tomorrow, or a time relative to now as journalctl takes "
    "it: '-2h' or '2h' (ago), '+1h' (from now), '1h30m', '2 hours', '30 min ago', '3 days ago' "
    "(units s, m/min, h, d, w). Times without a zone are in --tz. Bare numbers ('3', '10') are "
    "refused: give a unit or a clock time."
)
_UNITS = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hr": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
    "w": 604800,
    "week": 604800,
}
# `-2h`, `+1h`, `2h`, `1h30m`, `2 hours`, `30 min ago`: a sign or `ago` and amounts with units.
_AMOUNT = lazy_compile(r"(\d+(?:\.\d+)?)\s*([a-z]+)")
_RELATIVE = lazy_compile(r"^(?P<sign>[-+])?\s*(?P<amounts>(?:\d+(?:\.\d+)?\s*[a-z]+\s*)+?)(?P<ago>\s*ago)?$")
_EPOCH = lazy_compile(r"^@(\d{1,12}(?:\.\d+)?)$")
# What makes a stamp absolute rather than a number dateutil would guess at: a clock time, a
# date with separators, or a month name.
_ABSOLUTE = lazy_compile(r"\d{1,2}:\d{2}|\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[./-]\d{1,2}[./-]\d{2,4}|[^\W\d]{3,}")


# The times a log can hold, with room for the day of margin ranges are read with: 0001-01-01
# would overflow datetime's arithmetic, and no kernel stamps a time before the epoch.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 12, 30, tzinfo=UTC)


def parse_when(value: str, zone: tzinfo, now: datetime | None = None) -> datetime:
    """A moment from --since/--until text; raises UsageError with the forms understood."""
    moment = _parse(value, zone, now)
    if not EARLIEST <= moment <= LATEST:
        raise UsageError(
            f"the time {value!r} is not one a log can hold",
            hint=f"use a time from {EARLIEST:%Y-%m-%d} to {LATEST:%Y-%m-%d}",
        )
    return moment


def _parse(value: str, zone: tzinfo, now: datetime | None) -> datetime:
    now = now or datetime.now(zone)
    word = value.strip().lower()
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    named = {"now": now, "today": midnight, "yesterday": midnight - timedelta(days=1)}
    named["tomorrow"] = midnight + timedelta(days=1)
    if word in named:
        return named[word]
    epoch = _EPOCH.match(word)
    if epoch:
        try:
            return datetime.fromtimestamp(float(epoch.group(1)), zone)
        except (OverflowError, OSError, ValueError):
            raise UsageError(f"cannot read the time {value!r}: out of range", hint=HELP) from None
    try:
        relative = _relative(word)
        if relative is not None:
            return now + relative
    except OverflowError:
        raise UsageError(f"cannot read the time {value!r}: out of range", hint=HELP) from None
    if not _ABSOLUTE.search(word):
        raise UsageError(f"the time {value!r} is ambiguous", hint=HELP)
    from dateutil.parser import ParserError  # here: only --since/--until need it

    try:
        moment = parse_date(value, default=midnight.replace(tzinfo=None))
        # dateutil builds an offset of 2 days from `+00:2-31T…` and fails only when it is used.
        moment.utcoffset()
    except (ParserError, ValueError, ArithmeticError):  # dateutil: OverflowError, decimal errors
        raise UsageError(f"cannot read the time {value!r}", hint=HELP) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=zone)


def _relative(word: str) -> timedelta | None:
    """The offset from now a relative time names (negative: in the past), or None."""
    match = _RELATIVE.match(word)
    if not match:
        return None
    seconds = 0.0
    for amount, unit in _AMOUNT.findall(match["amounts"]):
        unit = unit if unit in _UNITS else unit.rstrip("s")
        if unit not in _UNITS:
            return None
        seconds += float(amount) * _UNITS[unit]
    if match["sign"] == "+" and not match["ago"]:
        return timedelta(seconds=seconds)
    return -timedelta(seconds=seconds)
