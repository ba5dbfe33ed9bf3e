"""The grammar: which family a line's prefix is, tried in a fixed order, and what it cuts off.

Each family (dmesg.py, weekday.py, iso.py, syslog.py, logcat.py, clock.py) knows its shapes and
how its stamp reads; `known` is the table that tries them, first by the line's first character
(a `[`, a digit, a letter), so a line costs the tests of the shapes it could be. The order is
the rule where two families would read a line: keep it when adding one. `split_prefixes` reads a
line the long way: undecorated, a family's prefix at its start or further in (after a prefix of
its own: a console's name, a shell prompt), else a known message behind some prefix, else none.

Why `known` is one function of branches, not a loop over family objects each asked "is this
yours?": the families share steps around their stamps (a `<level>`, `dmesg -x` or weekday lead
cut first; the host and tag after the stamp; kern.log's `[ uptime] ` after `kernel: `), and the
first character already rules most of them out; a loop would ask every family of every line.
"""

from __future__ import annotations

from datetime import datetime

from oomtrace.lazyregex import lazy_compile
from oomtrace.messages import begins_known, message_start
from oomtrace.prefixes.clock import BRACKETED, CLOCK_ONLY, clock_only, undated_dmesg_t, undated_syslog
from oomtrace.prefixes.cut import Split
from oomtrace.prefixes.dmesg import (
    DMESG_X,
    PRIORITY,
    UPTIME,
    UPTIME_NO_BRACKET,
    after_uptime,
    dmesg_human,
)
from oomtrace.prefixes.glued import syslog_after_junk
from oomtrace.prefixes.iso import ISO, UNIX, WEEKDAY_ISO, ZONE_WORD, iso_wall
from oomtrace.prefixes.logcat import LOGCAT, LOGCAT_BRIEF, after_date, logcat_wall
from oomtrace.prefixes.stamps import (
    AMBIGUOUS_ZONES,
    CLOCK,
    fuzzy_time,
    in_zone,
    month_number,
    named_month,
    stamp_words,
    zone_at,
)
from oomtrace.prefixes.state import ReadState
from oomtrace.prefixes.syslog import KERNEL_ONLY, SYSLOG, syslog_rest, syslog_wall
from oomtrace.prefixes.undecorate import quoted_printable_in, undecorate
from oomtrace.prefixes.weekday import DMESG_T, WEEKDAY_FIRST, weekday_first
from oomtrace.prefixes.years import year_for
from oomtrace.records import NO_STAMP, Stamp

# Where a stamp the grammar reads may begin inside a line, after a prefix of its own (a VM
# console's name, a shell prompt, a test driver's column).
_STAMP_START = lazy_compile(
    r"<\d{1,3}>\[|\[\s*\d{1,10}\.\d{3,9}\]|(?<![\w.])\d{1,10}\.\d{6,9}\]"
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}"
    # logcat's threadtime behind a collector's token (`M01EECC 12-25 14:53:54.854 326 326 I ...`).
    r"|(?<![\w-])\d{2}-\d{2}\s+\d{1,2}:\d{2}:\d{2}\.\d{3}"
    r"|\[\S{1,10}\s+\S{1,10}\s+\d{1,2}\s+\d{1,2}:\d{2}:\d{2}\s+\d{4}\]"
    # After a space, or the `file:` that `grep -r` over rotated logs puts first
    # (`/var/log/messages-20150510:May  9 23:40:38 host kernel: ...`).
    r"|(?<![^\s:])\S{3,5}\s+\d{1,2}\s+\d{1,2}:\d{2}:\d{2}\s"
)


# A four-digit year among a stamp's words (`2025-09-13 20:46:45`, `Jun 12 06:39:26 2025`).
_YEAR = lazy_compile(r"(?<!\d)\d{4}(?!\d)")


def known(state: ReadState, line: str) -> Split | None:
    """The prefix as one of the known grammars reads it, or None."""
    rest = line
    match = PRIORITY.match(rest)
    priority = match is not None
    if match:
        rest = rest[match.end() :]
    elif (match := DMESG_X.match(rest)) is not None:
        rest = rest[match.end() :]
        priority = True
    elif (match := WEEKDAY_ISO.match(rest)) is not None:
        rest = rest[match.end() :]
    wall: datetime | None = None
    raw = ""
    ident: str | None = None
    host: str | None = None
    pid: int | None = None
    head = rest[:1]
    if head == "[":
        match = UPTIME.match(rest)
        if match:
            return after_uptime(state, rest, match)
        match = DMESG_T.match(rest)
        if match:
            wall = weekday_first(match, state.zone)
            if wall is not None:
                raw = match.group(0)[1:].rstrip()[:-1]
                rest = rest[match.end() :]
                ident = "kernel"
            elif month_number(match.group(2)) is None and (undated := undated_dmesg_t(state, rest, match)):
                return undated
        if wall is None:
            human = dmesg_human(state, rest)
            if human is not None:
                return human
        if wall is None:
            match = BRACKETED.match(rest)
            if match and (clock := CLOCK_ONLY.fullmatch(match.group(1).strip())) is not None:
                # `[13:12:12]`: a time of day, no date.
                stamp = state._clock_stamp(clock)
                message, ident, host, pid = syslog_rest(rest[match.end() :], tagless_is_host=False)
                return Split(stamp, ident, host, pid, message, True)
            if match:
                wall = dated_time(state, stamp_words(match.group(1)))
                if wall is not None:
                    raw = match.group(1)
                    rest, ident, host, pid = syslog_rest(rest[match.end() :], tagless_is_host=False)
    elif head.isdigit() or head == " ":
        match = ISO.match(rest)
        if match:
            wall = iso_wall(match.group(1), state.zone)
            raw = match.group(1)
            rest = rest[match.end() :]
            zone = ZONE_WORD.match(rest)
            if zone and wall is not None:
                named = zone_at(zone["zone"], wall, state.zone)
                if named is not None:
                    wall = in_zone(wall, named)
                    rest = rest[zone.end() :]
                elif zone["zone"] in AMBIGUOUS_ZONES:
                    wall = None  # a clock in one of several offsets: no instant (stamps.zone_at)
                    rest = rest[zone.end() :]
            rest, ident, host, pid = after_date(rest, tagless_is_host=False)
        elif (match := UNIX.match(rest)) is not None:
            wall = datetime.fromtimestamp(float(match.group(1)), state.zone)
            raw = match.group(1)
            rest, ident, host, pid = syslog_rest(rest[match.end() :], tagless_is_host=True)
        elif (match := UPTIME_NO_BRACKET.match(rest)) is not None:
            return after_uptime(state, rest, match)
        elif (match := LOGCAT.match(rest)) is not None:
            wall = logcat_wall(state, match)
            if wall is not None:
                raw = match.group(0).strip()
                rest, ident, host, pid = after_date(rest[match.end() :], tagless_is_host=False)
        elif (match := CLOCK_ONLY.match(rest)) is not None:
            return clock_only(state, rest, match)
    if wall is None and head.isalpha():
        match = LOGCAT_BRIEF.match(rest)
        if match:
            return Split(state._previous, match["tag"], None, int(match["pid"]), match["msg"], True)
        match = WEEKDAY_FIRST.match(rest)
        if match and month_number(match.group(2)) is not None:
            wall = weekday_first(match, state.zone)
            if wall is not None:
                raw = match.group(0).strip()
                rest, ident, host, pid = syslog_rest(rest[match.end() :], tagless_is_host=True)
    if wall is None and head == " " and rest[2:3] in ("月", "월"):
        # ja_JP and ko_KR pad `%b` to two columns: journalctl prints " 1月 02 10:11:12 host".
        rest = rest[1:]
        head = rest[:1]
    if wall is None and (head.isalpha() or head.isdigit()):
        # Month first ("Nov 14", "Dez 14"); CJK locales print "11月 14".
        match = SYSLOG.match(rest)
        if match:
            wall = syslog_wall(state, match)
            if wall is not None:
                raw = match.group(0).strip()
                rest, ident, host, pid = syslog_rest(rest[match.end() :], tagless_is_host=True)
            elif month_number(match.group(1)) is None and (undated := undated_syslog(state, rest, match)):
                return undated
        if wall is None and head.isalpha():
            match = KERNEL_ONLY.match(rest)
            if match:
                rest = rest[match.end() :]
                ident = "kernel"
    if wall is None and ident is None:
        if priority:
            # /proc/kmsg and `dmesg -r` without times: `<4>msg`.
            return Split(state._previous, "kernel", None, None, rest, True)
        return None
    if ident == "kernel" and (match := UPTIME.match(rest)) is not None:
        # rsyslog's kern.log: the kernel's own `[ uptime] ` after the daemon's stamp and host.
        return Split(state._stamp(wall, raw, match), ident, host, pid, rest[match.end() :], True)
    if wall is None:
        return Split(state._remember(NO_STAMP), ident, host, pid, rest, True)
    return Split(state._stamp(wall, raw), ident, host, pid, rest, True)


REPEATED = "message repeated "


def _in_a_message(text: str, at: int) -> bool:
    """Does a known message begin before `at`, so that a stamp there is its text, no prefix?"""
    if begins_known(text):
        return True
    start = message_start(text)
    return 0 < start < at


def split_prefixes(state: ReadState, line: str) -> Split:
    """The prefix grammars first; then a stamp or a known message further in the line, the
    text before it being a prefix of its own; else no prefix (a continuation)."""
    if not state._quoted_printable and quoted_printable_in(line):
        state._quoted_printable = True
    text = undecorate(line, state._decoration, quoted_printable=state._quoted_printable)
    if not state._quoted_printable and quoted_printable_in(text):
        # A soft line break inside the paste's own marks (a Markdown code span of a raw mail).
        state._quoted_printable = True
        text = undecorate(line, state._decoration, quoted_printable=True)
    split = known(state, text)
    if split is None and (junk := syslog_after_junk(text)) is not None:
        # Bytes glued before a syslog line (a NUL run): not a prefix the next lines share.
        split = known(state, text[junk:])
    if split is None:
        for found in _STAMP_START.finditer(text, 1, 200):
            if _in_a_message(text, found.start()):
                break  # a time a message quotes (`Active: failed (…) since Sat 2025-10-04 …`)
            split = known(state, text[found.start() :])
            if split is not None:
                state._learn(text[: found.start()])
                break
    if split is None:
        start = message_start(text)
        if start:
            state._learn(text[:start])
            stamp = stamp_in(state, text[:start])
            if stamp is NO_STAMP:
                # Nothing datable before it: the rest of a wrapped line, or a paste of
                # messages behind a name (`[pod/x] Out of memory: ...`). Inherit the stamp.
                return Split(state._previous, None, None, None, text[start:], False)
            return Split(stamp, None, None, None, text[start:], True)
        # No prefix at all: a continuation line (journalctl indents them, rsyslog and dmesg -T
        # pastes leave them bare) or a raw report. Inherit the stamp.
        return Split(state._previous, None, None, None, text, False)
    if split.ident in ("kernel", None) and split.message:
        start = message_start(split.message)
        # rsyslog's `message repeated 3 times: [ NVRM: ...]` is not a prefix: parse.py reads the count.
        if start and not split.message.startswith(REPEATED):
            head = split.message[:start]
            stamp = split.stamp
            if stamp.uptime is None and (inner := UPTIME.search(head)):
                uptime = float(inner.group(1))
                stamp = state._remember(
                    Stamp(
                        stamp.wall,
                        uptime,
                        f"{stamp.raw} {inner.group(0).strip()}".strip(),
                        state._boot_for(uptime),
                    )
                )
            return Split(stamp, split.ident, split.host, split.pid, split.message[start:], True)
    return split


def dated_time(state: ReadState, words: str) -> datetime | None:
    """dateutil's reading of a stamp, with the year inferred as syslog's is (--year, or the
    file's time) where the stamp gives none: dateutil fills in the current year, and a log of
    June read in December was dated in the wrong year."""
    named = named_month(words)
    if named is None:
        # `29 01:00:04` (a quote cut the month off), `лис 02 10:11:12` (a month no table
        # holds): dateutil would skip the word and take this month.
        return None
    wall = fuzzy_time(named, state.zone)
    if wall is None or _YEAR.search(named):
        return wall
    try:
        return wall.replace(year=year_for(state.year, state.reference, wall.month, wall.day))
    except ValueError:  # 29 February in a year that has none
        return None


def stamp_in(state: ReadState, head: str) -> Stamp:
    """A stamp in a prefix no grammar read: an uptime, or a date-time dateutil reads."""
    uptime_match = UPTIME.search(head) or UPTIME_NO_BRACKET.search(head)
    words = stamp_words(head) if CLOCK.search(head) else ""
    if not uptime_match and (clock := CLOCK_ONLY.fullmatch(words)) is not None:
        # `node-1 | 13:12:12 | msg`: a time of day, no date; dateutil would make it today.
        stamp = state._clock_stamp(clock)
        return state._remember(Stamp(None, None, head.strip(), stamp.boot, stamp.clock))
    wall = dated_time(state, words) if words else None
    uptime = float(uptime_match.group(1)) if uptime_match else None
    if wall is None and uptime is None:
        return NO_STAMP
    return state._remember(Stamp(wall, uptime, head.strip(), state._boot_for(uptime)))
