"""Lines that hold several: line breaks a paste lost, turned into spaces or into nothing.

From the shapes the comments below quote (no paste of the corpus keeps one whole):

    ... kernel: Mem-Info:Nov 14 13:12:12 gpu-3 kernel: Out of memory: ...
    ...order=0[ 5864.708440] Out of memory: Killed process ...

each is split where the next line's own prefix begins, and each piece read as a line.
"""

from __future__ import annotations

from oomtrace.lazyregex import lazy_compile
from oomtrace.prefixes.iso import ISO
from oomtrace.prefixes.syslog import SYSLOG

# A line break lost in a paste: a run of spaces, then a stamp that starts a line of its own.
_JOINED_STAMP = (
    r"(?=\[\s*\d{1,10}\.\d{6}\]|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}"
    r"|\S{3,5}\s+\d{1,2}\s+\d{1,2}:\d{2}:\d{2}\s\S+ kernel:)"
)
JOINED = lazy_compile(r"\s{2,}" + _JOINED_STAMP)
# Whether `JOINED` cuts a line: the run's last two spaces before the stamp, found in a fifth of
# the time (`\s{2,}` tries each length of each run, and the run is in every padded `[  1.5] `).
_JOINED_AT = lazy_compile(r"\s\s" + _JOINED_STAMP)
# Two messages on one line with no space between: a syslog daemon (or a copy) lost a newline, and
# the second message's own prefix follows the first message's last character
# (`... kernel: Mem-Info:Nov 14 13:12:12 gpu-3 kernel: Out of memory: ...`). Split only where the
# line begins with a prefix of that shape too.
# A page that lost its line breaks joins the records with one space instead (a vendor's
# knowledge-base page: `... Killed process 2368 (jserver). Jul 19 05:19:24 asl131 kernel: ...`):
# the space goes with the break.
_GLUED_SYSLOG = lazy_compile(r"(?<=\S) ?(?=[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} [^\s:]+ kernel: )")
_GLUED_ISO = lazy_compile(r"(?<=\S) ?(?=\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\S* [^\s:]+ kernel: )")
# A later uptime stamp: found by its `[` (a literal the engine scans for fast), then checked to
# stand right after a character of the message (not a space: that is another shape).
_LATER_UPTIME = lazy_compile(r"\[ *\d{1,10}\.\d{6}\] ")
_PRIORITY_BEFORE = lazy_compile(r"<\d{1,3}>$")
_STARTS_UPTIME = lazy_compile(r"(?:<\d{1,3}>)?\[\s*\d{1,10}\.\d{6}\] ")


# A syslog line behind bytes glued before it: the NUL run an unclean shutdown leaves in kern.log
# (the file's size was written, its last blocks were not), or any bytes a copy left there
# (`\0\0\0May 15 23:01:53 host kernel: Killed process ...`). The stamp of the syslog prefix after
# them is the line's: read before, the uptime further in or a date read by guess took its place.
_SYSLOG_AFTER_JUNK = lazy_compile(r"[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} [^\s:]+ kernel: ")
_JUNK_SPAN = 200


def syslog_after_junk(line: str) -> int | None:
    """Where a syslog prefix begins after bytes glued before it, or None (also where the line
    begins with it: that is no junk)."""
    if " kernel: " not in line[: _JUNK_SPAN + 80]:
        return None
    found = _SYSLOG_AFTER_JUNK.search(line, 1, _JUNK_SPAN + 80)
    return found.start() if found is not None else None


# Lines ended by a lone CR (old Mac style, a serial console) in a file whose later lines end with
# LF: the first "line" holds many. Split at a CR only where a prefix of a line of its own follows,
# so that a CR inside a name (`x\ry`) stays in it.
_AFTER_CR = lazy_compile(
    r"\r(?=(?:<\d{1,3}>)?\[\s*\d{1,10}\.\d{6}\]|[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} "
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2})"
)


def cr_ended_lines(line: str) -> list[str] | None:
    """The lines of a line that holds several ended by a lone CR, or None."""
    pieces = _AFTER_CR.split(line)
    return pieces if len(pieces) > 1 else None


def holds_joined_lines(line: str) -> bool:
    """Several log lines pasted onto one, their line breaks turned into spaces?"""
    return len(line) > 160 and "  " in line and _JOINED_AT.search(line) is not None


def glued_lines(line: str) -> list[str] | None:
    """The messages of a line that holds two or more, each with its own prefix, or None."""
    first = line[:1]
    if first.isalpha() and line.count(" kernel: ") > 1 and SYSLOG.match(line):
        pattern = _GLUED_SYSLOG
    elif first.isdigit() and line.count(" kernel: ") > 1 and ISO.match(line):
        pattern = _GLUED_ISO
    elif first in "[<" and line.find("[", 12) > 0 and (stamp := _STARTS_UPTIME.match(line)) is not None:
        return split_at_uptimes(line, stamp.end())
    else:
        return None
    pieces = pattern.split(line)
    return pieces if len(pieces) > 1 else None


def split_at_uptimes(line: str, start: int) -> list[str] | None:
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
