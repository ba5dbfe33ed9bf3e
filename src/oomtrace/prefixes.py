"""The line-prefix grammar: every way a kernel line reaches a file, cut off its message."""

from __future__ import annotations

import json
import quopri
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache

from oomtrace import jsonshapes
from oomtrace.frozen import Frozen
from oomtrace.lazyregex import lazy_compile
from oomtrace.messages import message_start
from oomtrace.records import NO_STAMP, Record, Stamp
from oomtrace.zones import local_zone

# dateutil's parser is imported where a stamp of no known shape needs it, not here: the shapes
# this module knows are read without it, and it costs a small run a sixth of its start-up.

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


_PRIORITY = lazy_compile(r"<\d{1,3}>")
_UPTIME = lazy_compile(r"\[\s*(\d+\.\d+)\]\s?")
# _UPTIME where the prefix it matches is `_learnable` (ends in a space, ASCII): ASCII digits and
# spaces, a space after the bracket.
_LEARNABLE_UPTIME = lazy_compile(r"\[\s*(\d+\.\d+)\] ", re.ASCII)
# dmesg -x: `kern  :err   : [  123.456] msg` (facility and level decoded before the stamp).
_DMESG_X = lazy_compile(r"(?:kern|user|mail|daemon|auth|syslog|lpr|news|local\d)\s*:\s*[a-z]{3,6}\s*:\s")
# dmesg -H (and -e): `[Nov14 13:12] msg` for a new minute, then `[  +0.000031] msg` after it.
_DMESG_HUMAN = lazy_compile(r"\[(?P<mon>[^\W\d]{3,5})(?P<day>\d{1,2}) (?P<h>\d{2}):(?P<m>\d{2})\]\s?")
_DMESG_DELTA = lazy_compile(r"\[\s*\+\s*(?P<d>\d{1,9}\.\d{1,9})\]\s?")
# journalctl -o short-full: `Sat 2026-11-14 13:12:12 UTC host kernel: msg`.
_WEEKDAY_ISO = lazy_compile(r"\S{2,4} (?=\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})")
_ZONE_WORD = lazy_compile(r"(?P<zone>[A-Z]{2,5}) ")
# A first line that lost its `[` in the copy: `  5864.708440] msg`.
_UPTIME_NO_BRACKET = lazy_compile(r"\s*(\d{1,10}\.\d{6,9})\]\s?")
# OpenWrt logread: `Mon Jan  1 12:00:00 2024 kern.warn kernel: [  123.456] msg`.
_WEEKDAY_FIRST = lazy_compile(r"(\S{2,4})\s+(\S+)\s+(\d{1,2})\s+(\d{1,2}):(\d{2}):(\d{2})\s+(\d{4})\s")
# Android logcat, threadtime (`11-23 10:20:30.123  1234  1234 I tag: msg`, also with a year) and
# brief (`I/tag( 1234): msg`).
_LOGCAT = lazy_compile(r"(\d{2})-(\d{2})\s+(\d{1,2}):(\d{2}):(\d{2})\.(\d{3,6})\s+")
_LOGCAT_REST = lazy_compile(
    r"\s*(?P<pid>\d{1,9})\s+\d{1,9}\s+[VDIWEFA]\s+(?P<tag>[^:]*?)\s*: ?(?P<msg>.*)", re.DOTALL
)
_LOGCAT_BRIEF = lazy_compile(r"[VDIWEFA]/(?P<tag>[^(:]+?)\(\s*(?P<pid>\d{1,9})\): ?(?P<msg>.*)", re.DOTALL)
# A bracketed date-time in some other shape, often with a zone name: `[2023-01-02 12:34:56 CET]`.
_BRACKETED = lazy_compile(r"\[([^\[\]]{0,40}\d{1,2}:\d{2}:\d{2}[^\[\]]{0,30})\]\s?")
# Where a stamp the grammar reads may begin inside a line, after a prefix of its own (a VM
# console's name, a shell prompt, a test driver's column).
_STAMP_START = lazy_compile(
    r"<\d{1,3}>\[|\[\s*\d{1,10}\.\d{3,9}\]|(?<![\w.])\d{1,10}\.\d{6,9}\]"
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}"
    r"|\[\S{1,10}\s+\S{1,10}\s+\d{1,2}\s+\d{1,2}:\d{2}:\d{2}\s+\d{4}\]"
    # After a space, or the `file:` that `grep -r` over rotated logs puts first
    # (`/var/log/messages-20150510:May  9 23:40:38 host kernel: ...`).
    r"|(?<![^\s:])\S{3,5}\s+\d{1,2}\s+\d{1,2}:\d{2}:\d{2}\s"
)
# A line break lost in a paste: a run of spaces, then a stamp that starts a line of its own.
_JOINED_STAMP = (
    r"(?=\[\s*\d{1,10}\.\d{6}\]|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}"
    r"|\S{3,5}\s+\d{1,2}\s+\d{1,2}:\d{2}:\d{2}\s\S+ kernel:)"
)
_JOINED = lazy_compile(r"\s{2,}" + _JOINED_STAMP)
# Whether `_JOINED` cuts a line: the run's last two spaces before the stamp, found in a fifth of
# the time (`\s{2,}` tries each length of each run, and the run is in every padded `[  1.5] `).
_JOINED_AT = lazy_compile(r"\s\s" + _JOINED_STAMP)
# Two messages on one line with no space between: a syslog daemon (or a copy) lost a newline, and
# the second message's own prefix follows the first message's last character
# (`... kernel: Mem-Info:Nov 14 13:12:12 gpu-3 kernel: Out of memory: ...`). Split only where the
# line begins with a prefix of that shape too.
_GLUED_SYSLOG = lazy_compile(r"(?<=\S)(?=[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} [^\s:]+ kernel: )")
_GLUED_ISO = lazy_compile(r"(?<=\S)(?=\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\S* [^\s:]+ kernel: )")
# A later uptime stamp: found by its `[` (a literal the engine scans for fast), then checked to
# stand right after a character of the message (not a space: that is another shape).
_LATER_UPTIME = lazy_compile(r"\[ *\d{1,10}\.\d{6}\] ")
_PRIORITY_BEFORE = lazy_compile(r"<\d{1,3}>$")
_STARTS_UPTIME = lazy_compile(r"(?:<\d{1,3}>)?\[\s*\d{1,10}\.\d{6}\] ")
# Decorations glued to pasted lines: e-mail quoting, Markdown emphasis and code marks, and the
# backslashes Markdown escapes need.
_QUOTED = lazy_compile(r"(?:[ \t]{0,3}>)+[ \t]?")
# Not `__`: kernel symbols begin with it (`__alloc_pages_slowpath+0x...`).
_MARKS = "*`"
_MARKDOWN_EDGE = lazy_compile(r"^\s*(?:\*\*|`+)|(?:\*\*|`+)\s*$")
_MD_ESCAPE = lazy_compile(r"\\([\[\]_*#<>`()|-])")
# Escapes only Markdown writes, where the kernel writes the text (a stamp's or a pid's bracket,
# its field names): a line without one is log text, whose backslashes (`ll\ama\-srv`) are its own.
_MD_ESCAPED = lazy_compile(r"\\\[\s*\d|oom\\_|\\_(?:mask|memcg|allowed|bytes|adj)|\\-(?:rss|vm|killer)")
_CLOCK = lazy_compile(r"\d{1,2}:\d{2}:\d{2}")
# What may follow a clock and still be its stamp: a fraction, a zone, a year (`13:12:12.5 CET 2026`).
_CLOCK_TAIL = lazy_compile(r"(?:[.,]\d{1,9})?(?:\s?(?:Z|[+-]\d{2}:?\d{2}|[A-Z]{2,5}))?(?:\s\d{4})?(?![\w:])")
# A word that may be part of the date before a clock: digits and separators, or a month or
# weekday name (`Sat`, `Nov`, `14,`, `2026-11-14`, `14.11.2026`). A host `gpu07` is none.
_DATE_WORD = lazy_compile(r"[\d/.,-]{1,10}|[^\W\d_]{2,9}[.,]?")
# Characters a copy adds that nobody sees: zero-width spaces and joiners, direction marks, a
# byte-order mark; a no-break space stands for a space.
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u200e\u200f\u2060\ufeff"), None) | {0xA0: " "}
# Terminal sequences a paste kept before its lines (`dmesg --color=always`, a pager's output), and
# the colours within a line that begins with one. An escape inside a message of an uncoloured
# line is the message's own (a process name may hold one): kept, and shown escaped.
_ANSI_LEAD = lazy_compile(r"(?:\x1b\[[0-9;?]*[ -/]*[@-~])+")
_ANSI_COLOUR = lazy_compile(r"\x1b\[[0-9;]*m")
# A list bullet before each line of a paste (`* [ 123.4] Out of memory: ...`, `• ...`).
_BULLET = lazy_compile(r"\s{0,3}[*•·]\s?(?=\S)(?!\*)")
# Zone names dateutil does not know on its own (it knows UTC, GMT and the local zone's).
_ZONE_NAMES = {
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
# Largest prefix kept as a decoration to cut off the lines that follow.
_MAX_DECORATION = 80
_DMESG_T = lazy_compile(r"\[(\S+)\s+(\S+)\s+(\d{1,2})\s+(\d{1,2}):(\d{2}):(\d{2})\s+(\d{4})\]\s?")
_ISO = lazy_compile(r"(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\s")
_UNIX = lazy_compile(r"(\d{9,11}\.\d{3,9})\s")
_SYSLOG = lazy_compile(r"(\S+)\s+(\d{1,2})\s+(\d{1,2}):(\d{2}):(\d{2})(\.\d+)?\s")
# A bare time of day, as write-ups quote lines: `13:12:12  dashboard-servi invoked oom-killer`.
# It has no date and no zone: a clock reading (records.Stamp.clock), never a wall time.
_CLOCK_ONLY = lazy_compile(
    r"(?P<h>[01]?\d|2[0-3]):(?P<m>[0-5]\d):(?P<s>[0-5]\d)(?P<f>[.,]\d{1,9})?(?:\s+(?=\S)|\s*$)"
)
# A clock that goes back by more than this is the next day's (a paste that runs past midnight).
_NEXT_DAY_S = 12 * 3600.0
# What follows a syslog or journalctl stamp: "host kernel: msg", "host <kern.warning> kernel:msg",
# "kernel: msg", "host tag[pid]: msg", "tag[pid]: msg" or (tag-less) "host: msg"; syslog
# templates and OpenWrt add a severity or facility word: "host INFO kernel:", "kern.warn kernel:".
_SYSLOG_REST = lazy_compile(
    r"(?:(?P<host>[^\s:\[\]<]+) )??(?:<(?P<fac>[\w.]+)> )?"
    r"(?:(?P<sev>(?i:emerg|alert|crit|err|error|warn|warning|notice|info|debug)"
    r"|(?:kern|user|daemon|syslog|auth|authpriv|local\d)\.\w+) )?"
    r"(?P<tag>[^\s:\[]+)(?:\[(?P<pid>\d+)\])?:(?: |(?=\S)|$)(?P<msg>.*)",
    re.DOTALL,
)
# journalctl -o verbose: a stamped header per entry, then its fields indented.
_VERBOSE_HEADER = lazy_compile(
    r"(?:\S{2,4} )?(?P<when>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)"
    r"(?: (?P<zone>[\w+:-]+))? \[s=[0-9a-f]+;"
)
_VERBOSE_FIELD = lazy_compile(r"\s+(?P<name>[A-Z_][A-Z0-9_]*)=(?P<value>.*)")
_KERNEL_ONLY = lazy_compile(r"kernel:\s?")
# A prefix `split` may learn, to cut it off the lines after it with a slice: dmesg's `[ uptime] `,
# `journalctl -k`'s stamp, host and `kernel: `, or rsyslog kern.log's both. The stamp in English
# (`Nov  8 08:01:40`), the host of plain name characters: shapes the grammar reads one way.
_LEARNABLE = lazy_compile(
    r"(?:(?P<date>[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}) (?P<host>[\w.-]+) kernel: )?"
    r"(?P<uptime>\[\s*\d+\.\d+\] )?"
)
# The time of day in a learnt prefix's date (`Nov 28 08:01:40`), from its eighth character.
_SYSLOG_CLOCK = lazy_compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})")

# A jump back in uptime by more than this starts a new boot segment (small jitter from
# interleaved CPUs is normal).
_BOOT_JUMP_S = 1.0


@dataclass
class LineSplitter:
    """Cuts prefixes off the lines of one source, keeping the state that needs.

    State: the previous stamp (journalctl and rsyslog print continuation lines with no
    prefix), the boot segment (uptime going backwards), and the year for stamps without one.
    """

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
    _verbose: dict[str, str] | None = None
    """The fields of the journalctl -o verbose entry being read."""
    json_shape: jsonshapes.Shape | None = None
    """How to read JSON lines that are not journal entries (`--jsonl-fields`); None: by content."""
    unknown_json: int = 0
    """JSON objects of no known shape, read as text lines (their messages found where they are)."""
    _same: _Learnt | None = None
    """The last line's prefix and what it reads as, when the grammar read nothing else in it:
    every line of a report has the same one, and `split` cuts it with a slice."""

    def checkpoint(self) -> tuple[object, ...]:
        """The state that reading lines changes, to undo lines read ahead (see `rollback`); its
        last item is the learnt prefix, which only makes reading quicker (`read_state` is the
        rest)."""
        return (*self.read_state(), self._same)

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
        )

    def rollback(self, state: tuple[object, ...]) -> None:
        # The learnt prefix comes back too: forgotten, the next line took the full grammar (the
        # first Xid line of each stretch a big file's scan counts, after its anchor line was
        # read ahead: 2 % of `list` on a crash loop).
        *read, same = state
        self._previous, self._boot, self._last_uptime, boot_ids, self._decoration, verbose, clock = read  # type: ignore[assignment]
        self._last_clock = clock  # type: ignore[assignment]
        self._same = same  # type: ignore[assignment]
        self._boot_ids = dict(boot_ids)  # type: ignore[call-overload]
        self._verbose = dict(verbose) if verbose is not None else None  # type: ignore[call-overload]

    def split(self, line: str, line_no: int) -> list[Record]:
        """Records for one input line: usually one; several for `#012`-joined rsyslog lines."""
        line = line.rstrip("\r\n")
        learnt = self._learnt(line)
        if learnt is not None:
            message, same = learnt
            if "#012" not in message:
                return [self._learnt_record(line, line_no, message, same)]
            return self._records(line, line_no, _Split(same.stamp, "kernel", same.host, None, message, True))
        self._same = None
        if line.startswith("{"):
            from_json = self._split_json(line, line_no)
            if from_json is not None:
                return from_json
        if self._verbose is not None or line[:1].isalpha() or line[:1].isdigit():
            from_verbose = self._split_verbose(line, line_no)
            if from_verbose is not None:
                return from_verbose
        glued = _glued(line)
        if glued is not None:
            return [r for piece in glued for r in self.split(piece, line_no)]
        if _holds_joined_lines(line):
            pieces = _JOINED.split(line)
            return [r for piece in pieces if piece.strip() for r in self.split(piece, line_no)]
        split = self._split_prefixes(line)
        self._learn_same(line, split)
        return self._records(line, line_no, split)

    def split_block(self, text: str, line_no: int) -> list[Record]:
        """Records for consecutive lines (`text`: them joined by newlines, the first numbered
        `line_no`), as `split` of each would give: a report's body, whose lines share one
        learnt prefix, in one call (a call a line was a tenth of `list` on a crash loop)."""
        lines = text.split("\n")
        if "\r" in text:  # `split` cuts the carriage returns first
            return [
                record for number, line in enumerate(lines, line_no) for record in self.split(line, number)
            ]
        records: list[Record] = []
        index = 0
        while index < len(lines):
            index = self._dmesg_lines(lines, index, line_no, records)
            if index == len(lines):
                break
            line, number = lines[index], line_no + index
            learnt = self._learnt(line)
            if learnt is not None and "#012" not in learnt[0]:
                records.append(self._learnt_record(line, number, *learnt))
            else:
                records.extend(self.split(line, number))
            index += 1
        return records

    def _dmesg_lines(self, lines: list[str], start: int, line_no: int, records: list[Record]) -> int:
        """The records of `lines` from `start` on while each is a line after a learnt dmesg
        prefix (an `[ uptime] ` alone) that `_learnt_shape` would read, as it reads them, put on
        `records`; returns the index of the first line it did not read. Most lines of most
        reports are such lines, each with an uptime of its own: in one loop, the learnt prefix
        made once for the last line, they cost 3.4 us a line against 6.0 for a call a line
        (and five calls a line before that)."""
        same = self._same
        if same is None or same.date or same.tag or not same.uptime:
            return start
        source, wall, host = self.source, same.stamp.wall, same.host
        boot, last_uptime = self._boot, self._last_uptime
        learnable = _LEARNABLE_UPTIME.match
        stamp: Stamp | None = None
        prefix = ""
        for at in range(start, len(lines)):
            line = lines[at]
            match = learnable(line)
            if match is None:
                break
            cut = match.group(0)
            message = self._after_same(line, len(cut))
            if message is None or "#012" in message:  # and the rsyslog escape `split` cuts at
                break
            prefix = cut
            seconds = float(match.group(1))
            # _stamp's reading of an uptime (_boot_for and _remember).
            if last_uptime is not None and seconds < last_uptime - _BOOT_JUMP_S:
                boot += 1
            last_uptime = seconds
            stamp = Stamp(wall, seconds, cut.strip(), boot)
            record = Record(source, line_no + at, line, message, stamp, "kernel", host, 0, None, True)
            records.append(record)
        else:
            at = len(lines)
        if stamp is not None:
            self._boot, self._last_uptime, self._previous = boot, last_uptime, stamp
            self._same = _Learnt(prefix, stamp, host, "", "", True)
        return at

    def _learnt(self, line: str) -> tuple[str, _Learnt] | None:
        """(message, what its prefix reads as) when the line is the learnt prefix and a message
        the full reading would not cut further (`_after_same`); None sends it the long way."""
        same = self._same
        if same is None:
            return None
        if line.startswith(same.prefix):
            message = self._after_same(line, len(same.prefix))
            return None if message is None else (message, same)
        return self._learnt_shape(line, same)

    def _learnt_shape(self, line: str, same: _Learnt) -> tuple[str, _Learnt] | None:
        """A line of the learnt prefix's shape with a stamp of its own: a real kernel stamps each
        line of a report a few microseconds after the one before, so an `[ uptime] ` (dmesg's,
        kern.log's) is seldom the same twice, and a syslog stamp's second changes now and then.
        The full reading of such a line (`_known`, then `_after_uptime` for dmesg's) makes this
        stamp and this message, and `_learn_same` would learn its prefix: both are done here as
        they are there, the message tested as `_after_same` tests it."""
        if not line.startswith(same.tag, len(same.date)):
            return None
        date, wall = line[: len(same.date)], same.stamp.wall
        if date != same.date and (wall := self._same_day(date, same)) is None:
            return None
        end = len(same.date) + len(same.tag)
        match = None
        if same.uptime:
            match = _UPTIME.match(line, end) if line[end : end + 1] == "[" else None
            if match is None:
                return None
            end = match.end()
        if not _learnable(line[:end]):
            return None
        message = self._after_same(line, end)
        if message is None:
            return None
        stamp = self._stamp(wall, date, match)
        self._same = _Learnt(line[:end], stamp, same.host, date, same.tag, same.uptime)
        return message, self._same

    def _same_day(self, date: str, same: _Learnt) -> datetime | None:
        """The wall time of a syslog stamp of the learnt one's day and another time of day
        (`Nov 28 08:01:41` after `Nov 28 08:01:40`), as `_syslog` reads it; None otherwise."""
        clock = _SYSLOG_CLOCK.fullmatch(date, 7)
        wall = same.stamp.wall
        if clock is None or wall is None or date[:7] != same.date[:7]:
            return None
        hour, minute, second = (int(group) for group in clock.groups())
        return _local(wall.year, wall.month, wall.day, hour, minute, second, 0, self.zone)

    def _learnt_record(self, line: str, line_no: int, message: str, same: _Learnt) -> Record:
        """The one record of a line `_learnt` read, made as `_records` makes it."""
        return Record(self.source, line_no, line, message, same.stamp, "kernel", same.host, 0, None, True)

    def _records(self, line: str, line_no: int, split: _Split) -> list[Record]:
        message = split.message
        # rsyslog escapes newlines in multi-line kernel records as #012 (and tabs as #011).
        parts = message.replace("#011", "\t").split("#012") if "#012" in message else [message]
        return [
            Record(
                self.source,
                line_no,
                line,
                part,
                split.stamp,
                split.ident,
                split.host,
                0,
                split.pid,
                split.prefixed,
            )
            for part in parts
        ]

    def _learn_same(self, line: str, split: _Split) -> None:
        """Keep the line's prefix for the lines after it when the grammar read one of the
        `_LEARNABLE` shapes and nothing more (no pid, no decoration, no cut)."""
        if (
            split.ident == "kernel"
            and split.pid is None
            and split.prefixed
            and split.message
            and not self._decoration
            and self._verbose is None
            and line.endswith(split.message)
        ):
            self._same = _learnt_prefix(line[: len(line) - len(split.message)], split)

    def _after_same(self, line: str, cut: int) -> str | None:
        """The message after the learnt prefix, when the full reading would give the same
        split (the same stamp, nothing more to cut); None sends the line the long way."""
        message = line[cut:]
        if _holds_joined_lines(line):
            return None
        return message if _plain_message(message) else None

    def _split_prefixes(self, line: str) -> _Split:
        """The prefix grammars first; then a stamp or a known message further in the line, the
        text before it being a prefix of its own; else no prefix (a continuation)."""
        text = self._undecorate(line)
        split = self._known(text)
        if split is None:
            for found in _STAMP_START.finditer(text, 1, 200):
                split = self._known(text[found.start() :])
                if split is not None:
                    self._learn(text[: found.start()])
                    break
        if split is None:
            start = message_start(text)
            if start:
                self._learn(text[:start])
                stamp = self._stamp_in(text[:start])
                if stamp is NO_STAMP:
                    # Nothing datable before it: the rest of a wrapped line, or a paste of
                    # messages behind a name (`[pod/x] Out of memory: ...`). Inherit the stamp.
                    return _Split(self._previous, None, None, None, text[start:], False)
                return _Split(stamp, None, None, None, text[start:], True)
            # No prefix at all: a continuation line (journalctl indents them, rsyslog and dmesg -T
            # pastes leave them bare) or a raw report. Inherit the stamp.
            return _Split(self._previous, None, None, None, text, False)
        if split.ident in ("kernel", None) and split.message:
            start = message_start(split.message)
            if start:
                head = split.message[:start]
                stamp = split.stamp
                if stamp.uptime is None and (inner := _UPTIME.search(head)):
                    uptime = float(inner.group(1))
                    stamp = self._remember(
                        Stamp(
                            stamp.wall,
                            uptime,
                            f"{stamp.raw} {inner.group(0).strip()}".strip(),
                            self._boot_for(uptime),
                        )
                    )
                return _Split(stamp, split.ident, split.host, split.pid, split.message[start:], True)
        return split

    def _undecorate(self, line: str) -> str:
        if not line.isascii():
            line = line.translate(_INVISIBLE)
        if line[:1] == "\x1b" and (lead := _ANSI_LEAD.match(line)):
            line = _ANSI_COLOUR.sub("", line[lead.end() :])
        if self._decoration and line.startswith(self._decoration):
            line = line[len(self._decoration) :]
        if ">" in line[:4]:
            line = _QUOTED.sub("", line, count=1) if _QUOTED.match(line) else line
        if "\\" in line and _MD_ESCAPED.search(line):
            line = _MD_ESCAPE.sub(r"\1", line).rstrip("\\")
        if "=3D" in line:
            # A mail quoted-printable in transit: `gfp_mask=3D0x200da` (every `=` is `=3D` then).
            line = quopri.decodestring(line.encode("utf-8", "surrogateescape")).decode("utf-8", "replace")
        if line.lstrip()[:1] in _MARKS or line[-1:] in _MARKS:
            # `**[ 123.4] Out of memory: ...**`, a code span, a fence: Markdown, never log text.
            line = _MARKDOWN_EDGE.sub("", line)
        if line.lstrip()[:1] in "*•·":
            line = _BULLET.sub("", line, count=1) if _BULLET.match(line) else line
        return line

    def _learn(self, prefix: str) -> None:
        """Keep a prefix that has no stamp in it as the decoration of the lines to come."""
        if 0 < len(prefix) <= _MAX_DECORATION and not any(c.isdigit() for c in prefix[-12:]):
            self._decoration = prefix

    def _stamp_in(self, head: str) -> Stamp:
        """A stamp in a prefix no grammar read: an uptime, or a date-time dateutil reads."""
        uptime_match = _UPTIME.search(head) or _UPTIME_NO_BRACKET.search(head)
        words = _stamp_words(head) if _CLOCK.search(head) else ""
        if not uptime_match and (clock := _CLOCK_ONLY.fullmatch(words)) is not None:
            # `node-1 | 13:12:12 | msg`: a time of day, no date; dateutil would make it today.
            stamp = self._clock_stamp(clock)
            return self._remember(Stamp(None, None, head.strip(), stamp.boot, stamp.clock))
        wall = _fuzzy_time(words, self.zone) if words else None
        uptime = float(uptime_match.group(1)) if uptime_match else None
        if wall is None and uptime is None:
            return NO_STAMP
        return self._remember(Stamp(wall, uptime, head.strip(), self._boot_for(uptime)))

    def _split_verbose(self, line: str, line_no: int) -> list[Record] | None:
        """journalctl -o verbose: the header's stamp, then one record per MESSAGE field."""
        header = _VERBOSE_HEADER.match(line)
        if header:
            when = header["when"] + (f" {header['zone']}" if header["zone"] else "")
            wall = _fuzzy_time(when, self.zone)
            self._verbose = {}
            self._remember(Stamp(wall, None, header["when"], self._boot))
            return []
        if self._verbose is None:
            return None
        field_line = _VERBOSE_FIELD.match(line)
        if not field_line:
            self._verbose = None
            return None
        name, value = field_line["name"], field_line["value"]
        self._verbose[name] = value
        if name != "MESSAGE":
            return []
        ident = (
            "kernel"
            if self._verbose.get("_TRANSPORT") == "kernel"
            else self._verbose.get("SYSLOG_IDENTIFIER")
        )
        pid = self._verbose.get("SYSLOG_PID") or self._verbose.get("_PID")
        stamp = self._previous
        return [
            Record(
                self.source,
                line_no,
                line,
                value,
                stamp,
                ident,
                None,
                0,
                int(pid) if pid and pid.isdigit() else None,
            )
        ]

    def _known(self, line: str) -> _Split | None:
        """The prefix as one of the known grammars reads it, or None."""
        rest = line
        match = _PRIORITY.match(rest)
        priority = match is not None
        if match:
            rest = rest[match.end() :]
        elif (match := _DMESG_X.match(rest)) is not None:
            rest = rest[match.end() :]
            priority = True
        elif (match := _WEEKDAY_ISO.match(rest)) is not None:
            rest = rest[match.end() :]
        wall: datetime | None = None
        raw = ""
        ident: str | None = None
        host: str | None = None
        pid: int | None = None
        head = rest[:1]
        if head == "[":
            match = _UPTIME.match(rest)
            if match:
                return self._after_uptime(rest, match)
            match = _DMESG_T.match(rest)
            if match:
                wall = self._weekday_first(match)
                if wall is not None:
                    raw = match.group(0)[1:].rstrip()[:-1]
                    rest = rest[match.end() :]
                    ident = "kernel"
            if wall is None:
                human = self._dmesg_human(rest)
                if human is not None:
                    return human
            if wall is None:
                match = _BRACKETED.match(rest)
                if match and (clock := _CLOCK_ONLY.fullmatch(match.group(1).strip())) is not None:
                    # `[13:12:12]`: a time of day, no date.
                    stamp = self._clock_stamp(clock)
                    message, ident, host, pid = _syslog_rest(rest[match.end() :], tagless_is_host=False)
                    return _Split(stamp, ident, host, pid, message, True)
                if match:
                    wall = _fuzzy_time(_stamp_words(match.group(1)), self.zone)
                    if wall is not None:
                        raw = match.group(1)
                        rest, ident, host, pid = _syslog_rest(rest[match.end() :], tagless_is_host=False)
        elif head.isdigit() or head == " ":
            match = _ISO.match(rest)
            if match:
                wall = self._iso(match.group(1))
                raw = match.group(1)
                rest = rest[match.end() :]
                zone = _ZONE_WORD.match(rest)
                if zone and wall is not None and (named := _named_zone(zone["zone"])) is not None:
                    wall = _in_zone(wall, named)
                    rest = rest[zone.end() :]
                rest, ident, host, pid = self._after_date(rest, tagless_is_host=False)
            elif (match := _UNIX.match(rest)) is not None:
                wall = datetime.fromtimestamp(float(match.group(1)), self.zone)
                raw = match.group(1)
                rest, ident, host, pid = _syslog_rest(rest[match.end() :], tagless_is_host=True)
            elif (match := _UPTIME_NO_BRACKET.match(rest)) is not None:
                return self._after_uptime(rest, match)
            elif (match := _LOGCAT.match(rest)) is not None:
                wall = self._logcat(match)
                if wall is not None:
                    raw = match.group(0).strip()
                    rest, ident, host, pid = self._after_date(rest[match.end() :], tagless_is_host=False)
            elif (match := _CLOCK_ONLY.match(rest)) is not None:
                return self._clock_only(rest, match)
        if wall is None and head.isalpha():
            match = _LOGCAT_BRIEF.match(rest)
            if match:
                return _Split(self._previous, match["tag"], None, int(match["pid"]), match["msg"], True)
            match = _WEEKDAY_FIRST.match(rest)
            if match and month_number(match.group(2)) is not None:
                wall = self._weekday_first(match)
                if wall is not None:
                    raw = match.group(0).strip()
                    rest, ident, host, pid = _syslog_rest(rest[match.end() :], tagless_is_host=True)
        if wall is None and (head.isalpha() or head.isdigit()):
            # Month first ("Nov 14", "Dez 14"); CJK locales print "11月 14".
            match = _SYSLOG.match(rest)
            if match:
                wall = self._syslog(match)
                if wall is not None:
                    raw = match.group(0).strip()
                    rest, ident, host, pid = _syslog_rest(rest[match.end() :], tagless_is_host=True)
            if wall is None and head.isalpha():
                match = _KERNEL_ONLY.match(rest)
                if match:
                    rest = rest[match.end() :]
                    ident = "kernel"
        if wall is None and ident is None:
            if priority:
                # /proc/kmsg and `dmesg -r` without times: `<4>msg`.
                return _Split(self._previous, "kernel", None, None, rest, True)
            return None
        if ident == "kernel" and (match := _UPTIME.match(rest)) is not None:
            # rsyslog's kern.log: the kernel's own `[ uptime] ` after the daemon's stamp and host.
            return _Split(self._stamp(wall, raw, match), ident, host, pid, rest[match.end() :], True)
        if wall is None:
            return _Split(self._remember(NO_STAMP), ident, host, pid, rest, True)
        return _Split(self._stamp(wall, raw), ident, host, pid, rest, True)

    def _after_date(
        self, rest: str, *, tagless_is_host: bool
    ) -> tuple[str, str | None, str | None, int | None]:
        """What follows a numeric date: syslog's host and tag, or logcat's pid, tid, level and tag."""
        logcat = _LOGCAT_REST.match(rest)
        if logcat:
            return logcat["msg"], logcat["tag"] or None, None, int(logcat["pid"])
        return _syslog_rest(rest, tagless_is_host=tagless_is_host)

    def _after_uptime(self, rest: str, match: re.Match[str]) -> _Split:
        rest = rest[match.end() :]
        ident: str | None = "kernel"
        host: str | None = None
        pid: int | None = None
        if _tagged_after_uptime(rest):
            rest, ident, host, pid = _syslog_rest(rest, tagless_is_host=False)
        return _Split(self._stamp(None, "", match), ident, host, pid, rest, True)

    def _stamp(self, wall: datetime | None, raw: str, uptime: re.Match[str] | None = None) -> Stamp:
        """The stamp of a wall time printed as `raw` and of the `_UPTIME` match after it if any
        (kern.log's; its boot counted), remembered for the lines after."""
        if uptime is None:
            return self._remember(Stamp(wall, None, raw, self._boot))
        seconds = float(uptime.group(1))
        raw = f"{raw} {uptime.group(0).strip()}".strip()
        return self._remember(Stamp(wall, seconds, raw, self._boot_for(seconds)))

    def _clock_only(self, rest: str, match: re.Match[str]) -> _Split:
        """A bare time of day: a stamp with a clock reading and no date (none is invented). A
        line of nothing but the stamp (a write-up split stamp and message) stamps the next."""
        message, ident, host, pid = _syslog_rest(rest[match.end() :], tagless_is_host=False)
        return _Split(self._clock_stamp(match), ident, host, pid, message, True)

    def _clock_stamp(self, match: re.Match[str]) -> Stamp:
        """The stamp of a time of day (groups h, m, s, f): seconds since the source's first
        midnight, a day later each time the clock goes back by more than half a day."""
        seconds = int(match["h"]) * 3600 + int(match["m"]) * 60 + int(match["s"])
        reading = seconds + (float(match["f"].replace(",", ".")) if match["f"] else 0.0)
        if self._last_clock is not None:
            days = self._last_clock // 86400
            reading += days * 86400
            if reading < self._last_clock - _NEXT_DAY_S:
                reading += 86400
        self._last_clock = reading
        return self._remember(Stamp(None, None, match.group(0).strip(), self._boot, reading))

    def _remember(self, stamp: Stamp) -> Stamp:
        self._previous = stamp
        return stamp

    def _boot_for(self, uptime: float | None) -> int:
        if uptime is None:
            return self._boot
        if self._last_uptime is not None and uptime < self._last_uptime - _BOOT_JUMP_S:
            self._boot += 1
        self._last_uptime = uptime
        return self._boot

    def _weekday_first(self, match: re.Match[str]) -> datetime | None:
        """`Sat Nov 14 13:12:12 2026`, bracketed (dmesg -T) or not (OpenWrt logread): groups
        weekday, month, day, hour, minute, second, year."""
        month = month_number(match.group(2))
        if month is None:
            return None
        day, hour, minute, second, year = (int(match.group(i)) for i in range(3, 8))
        return _local(year, month, day, hour, minute, second, 0, self.zone)

    def _iso(self, text: str) -> datetime | None:
        wall = _parse_iso(text)
        if wall is not None and wall.tzinfo is None:
            wall = wall.replace(tzinfo=self.zone)
        return wall

    def _dmesg_human(self, rest: str) -> _Split | None:
        """dmesg -H: a minute stamp, or the time since the line before."""
        match = _DMESG_HUMAN.match(rest)
        if match and (month := month_number(match["mon"])) is not None:
            year = self.year if self.year is not None else self._infer_year(month, int(match["day"]))
            wall = _local(year, month, int(match["day"]), int(match["h"]), int(match["m"]), 0, 0, self.zone)
            if wall is not None:
                stamp = Stamp(wall, None, match.group(0).strip(), self._boot)
                return _Split(self._remember(stamp), "kernel", None, None, rest[match.end() :], True)
        match = _DMESG_DELTA.match(rest)
        if match:
            previous = self._previous
            wall = previous.wall + timedelta(seconds=float(match["d"])) if previous.wall is not None else None
            stamp = Stamp(wall, None, match.group(0).strip(), self._boot) if wall is not None else NO_STAMP
            return _Split(self._remember(stamp), "kernel", None, None, rest[match.end() :], True)
        return None

    def _logcat(self, match: re.Match[str]) -> datetime | None:
        month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 6))
        micros = int(match.group(6).ljust(6, "0"))
        year = self.year if self.year is not None else self._infer_year(month, day)
        return _local(year, month, day, hour, minute, second, micros, self.zone)

    def _syslog(self, match: re.Match[str]) -> datetime | None:
        month = month_number(match.group(1))
        if month is None:
            return None
        day, hour, minute, second = (int(match.group(i)) for i in range(2, 6))
        fraction = match.group(6)
        micros = round(float(fraction) * 1_000_000) if fraction else 0
        year = self.year if self.year is not None else self._infer_year(month, day)
        return _local(year, month, day, hour, minute, second, micros, self.zone)

    def _infer_year(self, month: int, day: int) -> int:
        reference = self.reference
        # A stamp later in the calendar than the reference belongs to the year before:
        # a kern.log written across New Year has December lines from last year.
        if (month, day) > (reference.month, reference.day + 1):
            return reference.year - 1
        return reference.year

    def _split_json(self, line: str, line_no: int) -> list[Record] | None:
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):  # 100,000 nested brackets: not an entry, a line
            return None
        if not isinstance(entry, dict):
            return None
        if "MESSAGE" in entry and self.json_shape is None:
            records = journal_records(entry, self.source, line_no, self._boot_ids, self.zone, raw=line)
        else:
            found = jsonshapes.read(entry, self.json_shape)
            if found is None:
                self.unknown_json += 1
                return None
            records = [self._from_fields(fields, line_no) for fields in found]
        if records:
            self._previous = records[-1].stamp
        return records

    def _from_fields(self, fields: jsonshapes.Fields, line_no: int) -> Record:
        """One exported message: its own prefix where it kept one (a kern.log line shipped
        whole), else the export's time, host and program."""
        message = fields.message.rstrip("\n")
        split = self._split_prefixes(message)
        wall = fields.time.astimezone(self.zone) if fields.time else None
        if split.prefixed:
            stamp = split.stamp
            if stamp.wall is None and wall is not None:
                stamp = Stamp(wall, stamp.uptime, wall.isoformat(), stamp.boot)
            host = split.host or fields.host
            return Record(
                self.source,
                line_no,
                message,
                split.message,
                stamp,
                split.ident,
                host,
                0,
                split.pid,
                separate=True,
            )
        stamp = Stamp(wall, None, wall.isoformat(), self._boot) if wall else self._previous
        raw = f"{stamp.raw or '-'} {fields.host or '-'} {fields.ident or 'kernel'}: {message}"
        return Record(self.source, line_no, raw, message, stamp, fields.ident, fields.host, separate=True)


def _tagged_after_uptime(rest: str) -> bool:
    """Does what follows an uptime begin with a host and a tag `_after_uptime` reads (journalctl
    -o short-monotonic: `[ 5864.708440] host kernel: msg`, `host tag[pid]: msg`)?"""
    head = rest[:120]
    if " kernel:" not in head and "]: " not in head:
        return False  # plain dmesg lines far outnumber these: the cheap test first
    tagged = _SYSLOG_REST.match(rest)
    return bool(tagged and tagged.group("host") and (tagged.group("tag") == "kernel" or tagged.group("pid")))


def _learnable(prefix: str) -> bool:
    """Can a prefix be cut off the lines after it with a slice? It ends in a space (the
    grammar's optional one) and is ASCII: `_plain_message` tests the message alone."""
    return prefix[-1:] == " " and prefix.isascii() and ">" not in prefix[:4]


def _learnt_prefix(prefix: str, split: _Split) -> _Learnt | None:
    """What `split` learns of a line's prefix, a `_LEARNABLE` shape that the grammar read as
    that shape reads (this host, this stamp as printed), or None."""
    shape = _LEARNABLE.fullmatch(prefix) if _learnable(prefix) else None
    if shape is None:
        return None
    date, host, uptime = shape["date"] or "", shape["host"], shape["uptime"]
    if split.host != host or (date and split.stamp.wall is None):
        return None
    if (uptime is None) != (split.stamp.uptime is None):
        return None
    if split.stamp.raw != f"{date} {(uptime or '').strip()}".strip():
        return None
    tag = prefix[len(date) : len(prefix) - len(uptime or "")]
    return _Learnt(prefix, split.stamp, host, date, tag, uptime is not None)


def _plain_message(message: str) -> bool:
    """Would the full reading of a line, this message after a learnt prefix, give the same
    split as cutting the prefix off (the same stamp, nothing more to cut)? Each test stands for
    a step of `split` and `_split_prefixes` that could read the line otherwise; each looks at
    the message alone, as the prefix (a `_LEARNABLE` shape, ASCII) changes none of them.
    A crash loop repeats its report lines word for word: those are answered once."""
    return _plain_seen(message) if len(message) <= _PLAIN_LONGEST else _plain(message)


_PLAIN_LONGEST = 512


def _plain(message: str) -> bool:
    if not message or not message.isascii():
        return False
    if "\\" in message or "=3D" in message or message[-1] in _MARKS:
        return False  # _undecorate would change it
    if _tagged_after_uptime(message):
        return False  # _after_uptime would read a tag
    if " kernel: " in message:
        return False  # `_glued` may split a syslog line there: another line's prefix after it
    if message[:1] == "[" and _UPTIME.match(message):
        return False  # after `kernel: `, `_known` reads it as kern.log's uptime
    # `_glued` of the line: what it cuts at depends on the message and the space before it.
    if "[" in message and _split_at_uptimes(" " + message, 1) is not None:
        return False
    return not message_start(message)


_plain_seen = lru_cache(maxsize=4096)(_plain)


def _holds_joined_lines(line: str) -> bool:
    """Several log lines pasted onto one, their line breaks turned into spaces?"""
    return len(line) > 160 and "  " in line and _JOINED_AT.search(line) is not None


def _glued(line: str) -> list[str] | None:
    """The messages of a line that holds two or more, each with its own prefix, or None."""
    first = line[:1]
    if first.isalpha() and line.count(" kernel: ") > 1 and _SYSLOG.match(line):
        pattern = _GLUED_SYSLOG
    elif first.isdigit() and line.count(" kernel: ") > 1 and _ISO.match(line):
        pattern = _GLUED_ISO
    elif first in "[<" and line.find("[", 12) > 0 and (stamp := _STARTS_UPTIME.match(line)) is not None:
        return _split_at_uptimes(line, stamp.end())
    else:
        return None
    pieces = pattern.split(line)
    return pieces if len(pieces) > 1 else None


def _split_at_uptimes(line: str, start: int) -> list[str] | None:
    """A dmesg line split where another `[ 1234.567890] ` stamp follows a message's last
    character with no space between (`...order=0[ 5864.708440] Out of memory: ...`)."""
    pieces = []
    begin = 0
    at = line.find("[", start)
    while at > 0:
        if _LATER_UPTIME.match(line, at):
            cut = at
            if line[at - 1] == ">" and (priority := _PRIORITY_BEFORE.search(line, begin, at)) is not None:
                cut = priority.start()  # `...order=0<4>[ 5864.708440] ...`
            if cut > begin and line[cut - 1] not in " \t":
                pieces.append(line[begin:cut])
                begin = cut
        at = line.find("[", at + 1)
    if not pieces:
        return None
    pieces.append(line[begin:])
    return pieces


def _microseconds(value: object) -> int | None:
    """A journal stamp field: ASCII digits that fit 64 bits (not "¹²³", not 400 digits)."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 19:
        return int(value)
    return None


def journal_records(
    entry: dict[str, object],
    source: str,
    number: int,
    boot_ids: dict[str, int],
    zone: tzinfo,
    raw: str | None = None,
) -> list[Record]:
    """Records of one journal entry given as export/JSON string fields (journalctl -o json, or
    systemd-python with string converters): both journal sources use this, so they agree."""
    message = _json_message(entry.get("MESSAGE"))
    ident = _clean(entry.get("SYSLOG_IDENTIFIER"))
    if entry.get("_TRANSPORT") == "kernel":
        ident = "kernel"
    host = _clean(entry.get("_HOSTNAME"))
    wall = None
    stamp_text = ""
    realtime = _microseconds(entry.get("__REALTIME_TIMESTAMP"))
    if realtime is not None:
        try:
            wall = datetime.fromtimestamp(realtime / 1_000_000, zone)
            stamp_text = wall.isoformat()
        except (OverflowError, ValueError, OSError):  # a stamp past year 9999: no time, still read
            wall = None
    uptime = None
    monotonic = _microseconds(entry.get("_SOURCE_MONOTONIC_TIMESTAMP") or entry.get("__MONOTONIC_TIMESTAMP"))
    if monotonic is not None:
        uptime = monotonic / 1_000_000
    boot_id = entry.get("_BOOT_ID")
    boot = boot_ids.setdefault(boot_id, len(boot_ids)) if isinstance(boot_id, str) else 0
    stamp = Stamp(wall, uptime, stamp_text, boot)
    if raw is None:
        # What `journalctl -o short-iso` would print: quotable evidence, not a JSON blob.
        raw = f"{stamp_text} {host or '-'} {ident or '-'}: {message}"
    return [
        Record(source, number, raw, part, stamp, ident, host, separate=True) for part in message.split("\n")
    ]


class _Learnt(Frozen):
    """A prefix `split` learnt (a `_LEARNABLE` shape), and what the full grammar reads it as."""

    prefix: str
    stamp: Stamp
    host: str | None
    """The syslog host (`gb10` of `Nov 28 08:01:40 gb10 kernel: `); None for dmesg's."""
    date: str
    """The syslog stamp as printed (`Nov 28 08:01:40`), where the stamp's `raw` begins; "" for dmesg."""
    tag: str
    """What follows the date up to the uptime or the message (` gb10 kernel: `; "" for dmesg)."""
    uptime: bool
    """The prefix ends in an `[ uptime] ` (dmesg's, kern.log's), of which each line has its own."""


class _Split(Frozen):
    """A line cut into its prefix's parts and its message."""

    stamp: Stamp
    ident: str | None
    host: str | None
    pid: int | None
    message: str
    prefixed: bool


def _syslog_rest(rest: str, *, tagless_is_host: bool) -> tuple[str, str | None, str | None, int | None]:
    """Cut "host tag[pid]: " off what follows a stamp; returns (message, ident, host, pid)."""
    match = _SYSLOG_REST.match(rest)
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


def _named_zone(name: str) -> tzinfo | None:
    if name in ("UTC", "GMT", "Z"):
        return UTC
    if name in _ZONE_NAMES:
        return _ZONE_NAMES[name]
    from dateutil import tz

    return tz.gettz(name)


def _in_zone(wall: datetime, zone: tzinfo) -> datetime:
    """A wall time read without a zone, placed in the zone printed after it."""
    naive = wall.replace(tzinfo=None)
    offset = naive.replace(tzinfo=zone).utcoffset() or timedelta(0)
    return naive.replace(tzinfo=timezone(offset))


def _stamp_words(head: str) -> str:
    """The date-time in a prefix and nothing around it, for dateutil, which reads any word it
    can: a host `gpu07` as the year 2007, `gpu-07` as a zone seven hours off. The clock, what
    may follow it (fraction, zone, year), and the date words just before it."""
    clock = _CLOCK.search(head)
    if clock is None:
        return head
    tail = _CLOCK_TAIL.match(head, clock.end())
    end = tail.end() if tail else clock.end()
    words = head[: clock.start()].split()
    date: list[str] = []
    for word in reversed(words[-4:]):
        if not _DATE_WORD.fullmatch(word):
            break
        date.insert(0, word)
    return " ".join([*date, head[clock.start() : end]])


def _fuzzy_time(text: str, zone: tzinfo) -> datetime | None:
    """A date-time in a prefix of no known shape, as dateutil reads it (None when it cannot or
    the year is implausible)."""
    from dateutil.parser import ParserError
    from dateutil.parser import parse as parse_date

    try:
        wall = parse_date(text, fuzzy=True, tzinfos=_ZONE_NAMES)
    except (ParserError, ValueError, ArithmeticError):  # dateutil: OverflowError, decimal errors
        return None
    if not 1990 <= wall.year <= 2100:
        return None
    if wall.tzinfo is None:
        wall = wall.replace(tzinfo=zone)
    try:
        offset = wall.utcoffset() or timedelta(0)
    except ValueError:  # dateutil read "+9999" as an offset of days: no zone a clock has
        return None
    return wall.replace(tzinfo=timezone(offset))


def _clean(value: object) -> str | None:
    """A JSON string without lone surrogates (\\ud800 escapes), which no output could encode."""
    if not isinstance(value, str):
        return None
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def journal_message(value: object) -> str:
    """A journal MESSAGE as text: journald exports non-UTF-8 messages as an array of bytes."""
    return _json_message(value)


def _json_message(value: object) -> str:
    if isinstance(value, str):
        return _clean(value) or ""
    if isinstance(value, list):
        # journald exports non-UTF-8 or binary messages as an array of byte values.
        return bytes(v for v in value if isinstance(v, int) and 0 <= v < 256).decode("utf-8", "replace")
    return ""


@lru_cache(maxsize=4096)
def _parse_iso(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        pass
    from dateutil.parser import isoparse  # forms fromisoformat refuses: "2026-11-14T08:00:03,1"

    try:
        return isoparse(text.replace(" ", "T", 1))
    except ValueError:
        return None


def _local(
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
