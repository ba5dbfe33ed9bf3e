"""Time zones: the machine's own and those named by --tz, from the standard library's zoneinfo.

dateutil's zone module costs more to import than the rest of a small run's start-up (it pulls
in importlib.resources, pathlib and tempfile); it is imported only where zoneinfo cannot serve:
a TZ of the POSIX rule form (`CET-1CEST,M3.5.0,M10.5.0/3`) or a machine with no zone files.
"""

from __future__ import annotations

import os
import warnings
from datetime import datetime, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from oomtrace.errors import UsageError
from oomtrace.sanitize import inert

LOCALTIME = "/etc/localtime"


def local_zone() -> tzinfo:
    """The zone the C library gives local times in: TZ's zone, else /etc/localtime's."""
    key = os.environ.get("TZ")
    try:
        if key is None:
            with open(LOCALTIME, "rb") as file:
                return ZoneInfo.from_file(file, key="localtime")
        key = key.removeprefix(":")
        if key and not key.startswith("/"):
            return ZoneInfo(key)
    except (OSError, ValueError, ZoneInfoNotFoundError):
        pass
    from dateutil import tz  # the C library's own rules (time.timezone, time.altzone)

    return tz.tzlocal()


def named_zone(name: str) -> tzinfo:
    """A --tz name, refused unless it names a zone (not a path, not a 5,000-character string)."""
    unknown = UsageError(
        f"unknown time zone {inert(name[:60])!r}", hint="use a name like UTC or Europe/Berlin"
    )
    if len(name) > 64 or ".." in name or name.startswith(("/", ".")):
        raise unknown
    from dateutil import tz  # it knows what zoneinfo does and the POSIX rule strings besides

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # dateutil warns, then reads, a key outside TZPATH
            zone = tz.gettz(name)
    except (Warning, OSError, ValueError, OverflowError):  # `0:995666666666664593`: fuzzer
        raise unknown from None
    if zone is None:
        raise unknown
    try:
        # A POSIX rule such as X99 reads, then fails on every stamp: offsets are under a day.
        for month in (1, 7):
            datetime(2026, month, 1, tzinfo=zone).utcoffset()
    except (ValueError, OverflowError):
        raise unknown from None
    return zone


class UnknownZoneName(ValueError):
    """A date-time names a zone (`13:12:12 BB`) that neither dateutil nor oomtrace knows: its
    clock is in an unknown offset, so no instant can be read from it."""


def parse_date(text: str, **options: Any) -> datetime:
    """dateutil's parse, where a zone name it does not know is an error (UnknownZoneName), not a
    warning on stderr (an internal error under PYTHONWARNINGS=error) and a time silently read in
    some other zone."""
    from dateutil.parser import UnknownTimezoneWarning
    from dateutil.parser import parse as dateutil_parse

    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownTimezoneWarning)
        try:
            moment: datetime = dateutil_parse(text, **options)
            return moment
        except UnknownTimezoneWarning as unknown:
            raise UnknownZoneName(str(unknown)) from None
