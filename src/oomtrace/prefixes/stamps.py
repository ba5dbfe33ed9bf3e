"""Date-times as prefixes print them: month names, zone names, ISO and free-form stamps.

What a prefix family calls once it has found its stamp's text; it keeps no state (the year of a
stamp printed without one is years.py's, the boot and the previous stamp are the splitter's).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache

from oomtrace.lazyregex import lazy_compile
from oomtrace.zones import parse_date

# dateutil's parser is imported where a stamp of no known shape needs it, not here: the shapes
# this package knows are read without it, and it costs a small run a sixth of its start-up.

# Month abbreviations as `%b` prints them in the locales people paste from (journald and
# `dmesg -T` use the host locale). Keys are lower-case with any trailing dot removed.
_MONTHS: dict[str, int] = {}
for _number, _names in enumerate(
    [
        "jan janv ene gen sty led tammi oca янв 1月 1월",
        "feb févr fev lut úno helmi şub фев 2月 2월",
        "mar mär mars mrt bře maalis мар 3月 3월",
        "apr avr abr kwi dub huhti nis апр 4月 4월",
        "may mai mag mei maj kvě touko мая май 5月 5월",
        "jun juin giu cze čvn kesä haz июн 6月 6월",
        "jul juil lug lip čvc heinä tem июл 7月 7월",
        "aug août ago sie srp elo ağu авг 8月 8월",
        "sep sept set wrz zář syys eyl сен 9月 9월",
        "oct okt ott out paź říj loka eki окт 10月 10월",
        "nov lis marras kas ноя 11月 11월",
        "dec dez déc dic gru pro joulu ara дек 12月 12월",
    ],
    start=1,
):
    for _name in _names.split():
        _MONTHS[_name] = _number


def month_number(name: str) -> int | None:
    """The month a localized `%b` abbreviation names, or None."""
    key = name.lower().rstrip(".")
    return _MONTHS.get(key) or _MONTHS.get(key[:3])


CLOCK = lazy_compile(r"\d{1,2}:\d{2}:\d{2}")
# What may follow a clock and still be its stamp: a fraction, a zone, a year (`13:12:12.5 CET 2026`).
_CLOCK_TAIL = lazy_compile(r"(?:[.,]\d{1,9})?(?:\s?(?:Z|[+-]\d{2}:?\d{2}|[A-Z]{2,5}))?(?:\s\d{4})?(?![\w:])")
# A word that may be part of the date before a clock: digits and separators, or a month or
# weekday name (`Sat`, `Nov`, `14,`, `2026-11-14`, `14.11.2026`). A host `gpu07` is none.
_DATE_WORD = lazy_compile(r"[\d/.,-]{1,10}|[^\W\d_]{2,9}[.,]?")
# An ISO date glued to the clock after it (`2025-09-13T`), at the end of what precedes the clock.
_ISO_DATE_T = lazy_compile(r"(?<!\d)\d{4}-\d{1,2}-\d{1,2}T$")
# Zone names dateutil does not know on its own (it knows UTC, GMT and the local zone's).
ZONE_NAMES = {
    name: timezone(timedelta(hours=hours), name)
    for name, hours in (
        ("CET", 1),
        ("CEST", 2),
        ("EET", 2),
        ("EEST", 3),
        ("WET", 0),
        ("WEST", 1),
        ("BST", 1),
        ("MSK", 3),
        ("IST", 5.5),
        ("CST", -6),
        ("CDT", -5),
        ("EST", -5),
        ("EDT", -4),
        ("MST", -7),
        ("MDT", -6),
        ("PST", -8),
        ("PDT", -7),
        ("JST", 9),
        ("KST", 9),
        ("AEST", 10),
        ("AEDT", 11),
    )
}


def named_zone(name: str) -> tzinfo | None:
    if name in ("UTC", "GMT", "Z"):
        return UTC
    if name in ZONE_NAMES:
        return ZONE_NAMES[name]
    from dateutil import tz

    return tz.gettz(name)


def in_zone(wall: datetime, zone: tzinfo) -> datetime:
    """A wall time read without a zone, placed in the zone printed after it."""
    naive = wall.replace(tzinfo=None)
    offset = naive.replace(tzinfo=zone).utcoffset() or timedelta(0)
    return naive.replace(tzinfo=timezone(offset))


def stamp_words(head: str) -> str:
    """The date-time in a prefix and nothing around it, for dateutil, which reads any word it
    can: a host `gpu07` as the year 2007, `gpu-07` as a zone seven hours off. The clock, what
    may follow it (fraction, zone, year), and the date words just before it."""
    clock = CLOCK.search(head)
    if clock is None:
        return head
    tail = _CLOCK_TAIL.match(head, clock.end())
    end = tail.end() if tail else clock.end()
    glued = _ISO_DATE_T.search(head, 0, clock.start())
    if glued is not None:
        # `[2025-09-13T20:46:45.25Z]`: the date is glued to the clock by a T, not a word before
        # it; without it dateutil would give the clock today's date.
        return head[glued.start() : end]
    words = head[: clock.start()].split()
    date: list[str] = []
    for word in reversed(words[-4:]):
        if not _DATE_WORD.fullmatch(word):
            break
        date.insert(0, word)
    return " ".join([*date, head[clock.start() : end]])


def fuzzy_time(text: str, zone: tzinfo) -> datetime | None:
    """A date-time in a prefix of no known shape, as dateutil reads it (None when it cannot or
    the year is implausible)."""
    from dateutil.parser import ParserError

    try:
        wall = parse_date(text, fuzzy=True, tzinfos=ZONE_NAMES)
    except (ParserError, ValueError, ArithmeticError):  # dateutil: OverflowError, decimal errors
        return None  # UnknownZoneName too: `13:12:12 BB` is a clock in an offset nobody knows
    if not 1990 <= wall.year <= 2100:
        return None
    if wall.tzinfo is None:
        wall = wall.replace(tzinfo=zone)
    try:
        offset = wall.utcoffset() or timedelta(0)
    except ValueError:  # dateutil read "+9999" as an offset of days: no zone a clock has
        return None
    return wall.replace(tzinfo=timezone(offset))


@lru_cache(maxsize=4096)
def parse_iso(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        pass
    from dateutil.parser import isoparse  # forms fromisoformat refuses: "2026-11-14T08:00:03,1"

    try:
        return isoparse(text.replace(" ", "T", 1))
    except ValueError:
        return None


def local(
    year: int, month: int, day: int, hour: int, minute: int, second: int, micros: int, zone: tzinfo
) -> datetime | None:
    try:
        naive = datetime(year, month, day, hour, minute, second, micros)
    except ValueError:
        return None
    aware = naive.replace(tzinfo=zone)
    # Resolve the zone's offset now so the stamp keeps it whatever the zone object is.
    offset = aware.utcoffset() or timedelta(0)
    return naive.replace(tzinfo=timezone(offset))
