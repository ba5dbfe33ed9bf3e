"""Human-readable sizes, durations and times."""

from __future__ import annotations

from datetime import datetime

from oomtrace.model import Moment


def kib(kb: int | float | None) -> str:
    """A size given in KiB, as the kernel prints it, in the largest sensible unit."""
    if kb is None:
        return "?"
    try:
        value = float(kb)
    except OverflowError:
        return f"{kb} KiB"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            if unit == "KiB":
                return f"{int(value)} KiB"
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


def duration(seconds: float | None) -> str:
    """3m13s, 2h05m, 0.4s."""
    if seconds is None:
        return "?"
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    if seconds < 10 and seconds != int(seconds):
        return f"{sign}{seconds:.1f}s"
    whole = round(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{sign}{days}d{hours:02d}h"
    if hours:
        return f"{sign}{hours}h{minutes:02d}m"
    if minutes:
        return f"{sign}{minutes}m{secs:02d}s"
    return f"{sign}{secs}s"


def relative(seconds: float | None) -> str:
    """T−3m13s / T+2s / T±0s relative to the kill."""
    if seconds is None:
        return "T?"
    if abs(seconds) < 0.5:
        return "T±0s"
    return f"T{'-' if seconds < 0 else '+'}{duration(abs(seconds))}"


def clock_time(time: datetime) -> str:
    """A wall time as the reports print it: seconds, with its UTC offset."""
    return time.isoformat(sep=" ", timespec="seconds")


def clock(moment: Moment | None) -> str:
    """The moment as local wall time with its offset, or its uptime when no boot time is known."""
    if moment is None:
        return "?"
    if moment.time is not None:
        return clock_time(moment.time)
    if moment.uptime_s is not None:
        return f"uptime {moment.uptime_s:.3f}s"
    if moment.clock_s is not None:
        return f"{time_of_day(moment.clock_s)} (date unknown)"
    return "time unknown"


def time_of_day(clock_s: float) -> str:
    """`HH:MM:SS` of a clock reading with no date (model.Moment.clock_s)."""
    seconds = int(clock_s) % 86400
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def timeline_clock(moment: Moment) -> str:
    """13:08:59 for a timeline row: the wall time's, a dateless stamp's, else the whole clock()."""
    if moment.time is not None:
        return moment.time.strftime("%H:%M:%S")
    if moment.clock_s is not None:
        return time_of_day(moment.clock_s)
    return clock(moment)


def iso_time(time: datetime | None) -> str | None:
    """ISO 8601 with offset, for JSON."""
    if time is None:
        return None
    return time.isoformat(timespec="seconds" if not time.microsecond else "microseconds")
