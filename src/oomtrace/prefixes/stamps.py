"""Date-times as prefixes print them: month names, zone names, ISO and free-form stamps.

What a prefix family calls once it has found its stamp's text; it keeps no state (the year of a
stamp printed without one is years.py's, the boot and the previous stamp are the splitter's).
"""

from __future__ import annotations

from contextlib import suppress
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache

from oomtrace.lazyregex import lazy_compile
from oomtrace.zones import parse_date

# dateutil's parser is imported where a stamp of no known shape needs it, not here: the shapes
# this package knows are read without it, and it costs a small run a sixth of its start-up.

# Month names as `%b` and `%B` print them in the locales people paste from (journald and
# `dmesg -T` use the host's LC_TIME), taken from glibc's localedata/locales/<locale> (bminor/glibc
# 04e750e, 2026-01): abmon, and mon, alt_mon, ab_alt_mon where they differ (`mon` is the genitive
# form `%B` prints beside a day). One row a table, twelve names in calendar order; keys are lower
# case with any trailing dot removed. A word in none of them names no month: never a guess.
_MONTH_TABLES = (
    "jan feb mar apr may jun jul aug sep oct nov dec",  # C, en_US abmon
    "january february march april may june july august september october november december",
    "jan feb mär apr mai jun jul aug sep okt nov dez",  # de_DE
    "januar februar märz april mai juni juli august september oktober november dezember",
    "janv févr mars avril mai juin juil août sept oct nov déc",  # fr_FR
    "janvier février mars avril mai juin juillet août septembre octobre novembre décembre",
    "ene feb mar abr may jun jul ago sep oct nov dic",  # es_ES
    "enero febrero marzo abril mayo junio julio agosto septiembre octubre noviembre diciembre",
    "gen feb mar apr mag giu lug ago set ott nov dic",  # it_IT
    "gennaio febbraio marzo aprile maggio giugno luglio agosto settembre ottobre novembre dicembre",
    "jan fev mar abr mai jun jul ago set out nov dez",  # pt_BR, pt_PT
    "janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro",
    "jan feb mrt apr mei jun jul aug sep okt nov dec",  # nl_NL
    "januari februari maart april mei juni juli augustus september oktober november december",
    "jan feb mar apr maj jun jul aug sep okt nov dec",  # sv_SE, da_DK
    "januari februari mars april maj juni juli augusti september oktober november december",
    "januar februar marts april maj juni juli august september oktober november december",
    "jan feb mars april mai juni juli aug sep okt nov des",  # nb_NO
    "januar februar mars april mai juni juli august september oktober november desember",
    "sty lut mar kwi maj cze lip sie wrz paź lis gru",  # pl_PL
    "stycznia lutego marca kwietnia maja czerwca lipca sierpnia września października listopada grudnia",
    "styczeń luty marzec kwiecień maj czerwiec lipiec sierpień wrzesień październik listopad grudzień",
    "led úno bře dub kvě čen čec srp zář říj lis pro",  # cs_CZ
    "ledna února března dubna května června července srpna září října listopadu prosince",
    "leden únor březen duben květen červen červenec srpen září říjen listopad prosinec",
    "tammi helmi maalis huhti touko kesä heinä elo syys loka marras joulu",  # fi_FI
    "tammikuu helmikuu maaliskuu huhtikuu toukokuu kesäkuu heinäkuu elokuu syyskuu lokakuu marraskuu "
    "joulukuu",
    "oca şub mar nis may haz tem ağu eyl eki kas ara",  # tr_TR
    "ocak şubat mart nisan mayıs haziran temmuz ağustos eylül ekim kasım aralık",
    "янв фев мар апр мая июн июл авг сен окт ноя дек",  # ru_RU
    "янв фев мар апр май июн июл авг сен окт ноя дек",
    "января февраля марта апреля мая июня июля августа сентября октября ноября декабря",
    "январь февраль март апрель май июнь июль август сентябрь октябрь ноябрь декабрь",
    "січ лют бер кві тра чер лип сер вер жов лис гру",  # uk_UA
    "січня лютого березня квітня травня червня липня серпня вересня жовтня листопада грудня",
    "січень лютий березень квітень травень червень липень серпень вересень жовтень листопад грудень",
    "сту лют сак кра мая чэр ліп жні вер кас ліс сне",  # be_BY
    "сту лют сак кра май чэр ліп жні вер кас ліс сне",
    "студзеня лютага сакавіка красавіка мая чэрвеня ліпеня жніўня верасня кастрычніка лістапада снежня",
    "студзень люты сакавік красавік май чэрвень ліпень жнівень верасень кастрычнік лістапад снежань",
    "1月 2月 3月 4月 5月 6月 7月 8月 9月 10月 11月 12月",  # zh_CN, ja_JP (` 1月`: the space is cut)
    "一月 二月 三月 四月 五月 六月 七月 八月 九月 十月 十一月 十二月",
    "1월 2월 3월 4월 5월 6월 7월 8월 9월 10월 11월 12월",  # ko_KR
    # Older glibc: fr_FR's `avr.` (before `avril`), cs_CZ's `čvn`, `čvc` (before `čen`, `čec`).
    "- - - avr - čvn čvc - - - - -",
)
_MONTHS: dict[str, int] = {
    name: number
    for table in _MONTH_TABLES
    for number, name in enumerate(table.split(), start=1)
    if name != "-"
}
# Weekday names as `%a` and `%A` print them (glibc abday and day of the same locales): a word
# that is both (`mar`: French, Spanish, Italian Tuesday and March) is a weekday where a stamp
# also names a month.
_WEEKDAY_TABLES = (
    "sun mon tue wed thu fri sat sunday monday tuesday wednesday thursday friday saturday",
    "so mo di mi do fr sa sonntag montag dienstag mittwoch donnerstag freitag samstag",  # de_DE
    "dim lun mar mer jeu ven sam dimanche lundi mardi mercredi jeudi vendredi samedi",  # fr_FR
    "dom lun mar mié jue vie sáb domingo lunes martes miércoles jueves viernes sábado",  # es_ES
    "dom lun mar mer gio ven sab domenica lunedì martedì mercoledì giovedì venerdì sabato",  # it_IT
    "dom seg ter qua qui sex sáb domingo segunda terça quarta quinta sexta sábado",  # pt_BR, pt_PT
    "zo ma di wo do vr za zondag maandag dinsdag woensdag donderdag vrijdag zaterdag",  # nl_NL
    "sön mån tis ons tor fre lör söndag måndag tisdag onsdag torsdag fredag lördag",  # sv_SE
    "søn man tir ons tor fre lør søndag mandag tirsdag onsdag torsdag fredag lørdag",  # da_DK
    "sø ma ti on to fr lø",  # nb_NO
    "nie pon wto śro czw pią sob niedziela poniedziałek wtorek środa czwartek piątek sobota",  # pl_PL
    "ne po út st čt pá so neděle pondělí úterý středa čtvrtek pátek sobota",  # cs_CZ
    "su ma ti ke to pe la sunnuntai maanantai tiistai keskiviikko torstai perjantai lauantai",  # fi_FI
    "paz pzt sal çrş prş cum cts pazar pazartesi salı çarşamba perşembe cuma cumartesi",  # tr_TR
    "вс пн вт ср чт пт сб воскресенье понедельник вторник среда четверг пятница суббота",  # ru_RU
    "нд пн вт ср чт пт сб неділя понеділок вівторок середа четвер п'ятниця субота",  # uk_UA
    "няд пан аўт срд чцв пят суб нядзеля панядзелак аўторак серада чацвер пятніца субота",  # be_BY
    "日 一 二 三 四 五 六 日 月 火 水 木 金 土 일 월 화 수 목 금 토",  # zh_CN, ja_JP, ko_KR abday
)
_WEEKDAYS = frozenset(name for table in _WEEKDAY_TABLES for name in table.split())


def month_number(name: str) -> int | None:
    """The month a localized `%b` or `%B` name names, or None: a word no table holds names no
    month (an unknown word once fell back to its first three letters, and a stamp read by
    guess took the current month)."""
    return _MONTHS.get(name.lower().rstrip("."))


def is_weekday(name: str) -> bool:
    """Is a word a localized `%a` or `%A` weekday name?"""
    return name.lower().rstrip(".,") in _WEEKDAYS


CLOCK = lazy_compile(r"\d{1,2}:\d{2}:\d{2}")
# What may follow a clock and still be its stamp: a fraction, a zone, a year (`13:12:12.5 CET 2026`).
_CLOCK_TAIL = lazy_compile(r"(?:[.,]\d{1,9})?(?:\s?(?:Z|[+-]\d{2}:?\d{2}|[A-Z]{2,5}))?(?:\s\d{4})?(?![\w:])")
# A word that may be part of the date before a clock: digits and separators, or a month or
# weekday name (`Sat`, `Nov`, `14,`, `2026-11-14`, `14.11.2026`). A host `gpu07` is none.
_DATE_WORD = lazy_compile(r"[\d/.,-]{1,10}|[^\W\d_]{2,12}[.,]?")
# A date with CJK year, month and day marks, as zh_CN and ja_JP print it (`2025年12月02日`;
# ko_KR `2025년 12월 02일`): read as the ISO date it is.
_CJK_DATE = lazy_compile(r"(\d{4})\s?[年년]\s?(\d{1,2})\s?[月월]\s?(\d{1,2})\s?[日일]")
# A numeric date among a stamp's words (`2025-09-13`, `13.09.2025`, `09/13`): a month.
_NUMERIC_DATE = lazy_compile(r"\d{1,4}[-/.]\d{1,2}")
_ENGLISH = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
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


# Abbreviations that several zones print widely, where ZONE_NAMES' one guess was wrong for the
# real pastes: China's CST (+08:00) is US Central's (-06:00) there, and every real paste with a
# CST stamp is China's. Which zone a stamp meant is read off its date (US Central and Cuba print
# CDT in summer: a summer CST is China's), else off the reader's zone, else it is not known.
# (IST is read as India's: Ireland's and Israel's IST are left to --tz.)
AMBIGUOUS_ZONES = {"CST": ("America/Chicago", "Asia/Shanghai", "America/Havana")}


def zone_at(name: str, wall: datetime, reader: tzinfo | None) -> tzinfo | None:
    """The zone a stamp's `name` stands for at its (naive) `wall` time: the reader's (--tz, the
    machine's) where it prints that name then; for a name several zones print, the one of them
    that prints it at that date, or None where more than one does (no instant can be read)."""
    naive = wall.replace(tzinfo=None)
    if reader is not None and naive.replace(tzinfo=reader).tzname() == name:
        return reader
    if name not in AMBIGUOUS_ZONES:
        return named_zone(name)
    from dateutil import tz

    fits = [
        zone
        for zone in (tz.gettz(key) for key in AMBIGUOUS_ZONES[name])
        if zone is not None and naive.replace(tzinfo=zone).tzname() == name
    ]
    return fits[0] if len(fits) == 1 else None


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
    if "年" in head or "년" in head:
        head = _CJK_DATE.sub(r"\1-\2-\3", head)
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


# Two defaults for dateutil that differ in every date field (2004 and 2008: leap years both,
# so a 29 February printed without a year reads in either).
_DEFAULTS = (datetime(2004, 1, 1), datetime(2008, 2, 2))


def named_month(words: str) -> str | None:
    """A stamp's words with their month as dateutil reads it (in English) and their weekday
    names left out, or None when they name no month (a word no table holds, dateutil would skip
    and date the stamp in the current month) or two (`mar.`, Tuesday in French, before `mars`
    is the weekday; two months left is no date)."""
    tokens = words.split()
    months = [at for at, token in enumerate(tokens) if month_number(token.rstrip(","))]
    if len(months) > 1:
        months = [at for at in months if not is_weekday(tokens[at])]
    if len(months) > 1:
        return None
    if not months:
        return words if _NUMERIC_DATE.search(words) else None
    named = [
        _ENGLISH[(month_number(token.rstrip(",")) or 1) - 1] if at == months[0] else token
        for at, token in enumerate(tokens)
        if at == months[0] or not is_weekday(token)
    ]
    return " ".join(named)


def fuzzy_time(text: str, zone: tzinfo) -> datetime | None:
    """A date-time in a prefix of no known shape, as dateutil reads it (None when it cannot,
    when the text gives no month or no day, or the year is implausible)."""
    wall = _dateutil_reading(text)
    if wall is None:
        return None
    if wall.tzinfo is not None and (name := wall.tzname()) in AMBIGUOUS_ZONES:
        meant = zone_at(name, wall, zone)
        if meant is None:
            return None
        wall = wall.replace(tzinfo=meant)
    if wall.tzinfo is None:
        wall = wall.replace(tzinfo=zone)
    try:
        offset = wall.utcoffset() or timedelta(0)
    except ValueError:  # dateutil read "+9999" as an offset of days: no zone a clock has
        return None
    return wall.replace(tzinfo=timezone(offset))


# Lines of one second share their stamp, and each reading is two dateutil parses: a log stamped
# in a shape of its own read 30,000 lines in 3.3 s, most of it in dateutil (1.0 s cached).
@lru_cache(maxsize=4096)
def _dateutil_reading(text: str) -> datetime | None:
    """`text` as dateutil reads it, in the zone it names if any; None where it cannot, or had to
    fill in a month or a day the text does not give, or the year is implausible."""
    from dateutil.parser import ParserError

    try:
        # dateutil fills a field the text does not give from its default: read with two that
        # differ in month and day, a date it had to fill in is one the text does not give.
        wall = parse_date(text, fuzzy=True, tzinfos=ZONE_NAMES, default=_DEFAULTS[0])
        other = parse_date(text, fuzzy=True, tzinfos=ZONE_NAMES, default=_DEFAULTS[1])
    except (ParserError, ValueError, ArithmeticError):  # dateutil: OverflowError, decimal errors
        return None  # UnknownZoneName too: `13:12:12 BB` is a clock in an offset nobody knows
    if (wall.month, wall.day) != (other.month, other.day):
        return None
    if wall.year != other.year:  # no year: this one, as dateutil gave (dated_time infers it)
        with suppress(ValueError):  # 29 February: kept in a leap year for dated_time
            wall = wall.replace(year=datetime.now(UTC).year)
    if not 1990 <= wall.year <= 2100:
        return None
    return wall


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
