"""What the splitter learns of a source's prefix, to cut it off the lines after with a slice.

A report's lines share one prefix, or one of its shape with a stamp of its own: in
fixtures/seed000_llama_server_gb10/kernel.log,

    Nov 14 12:58:03 spark-01 kernel: audit: type=1400 audit(1794661083.118:212): apparmor="STATUS" ...

teaches `Nov 14 12:58:03 spark-01 kernel: ` (dmesg's lines teach `[ 5864.708440] `). A prefix
is learnt when the full grammar read it as one of the shapes here and nothing more; a line
after it takes the slice only when its message alone shows that the full grammar would read it
the same (`plain_message`).
"""

from __future__ import annotations

from functools import lru_cache

from oomtrace.frozen import Frozen
from oomtrace.lazyregex import lazy_compile
from oomtrace.messages import message_start
from oomtrace.prefixes.cut import Split
from oomtrace.prefixes.dmesg import UPTIME, tagged_after_uptime
from oomtrace.prefixes.glued import split_at_uptimes
from oomtrace.prefixes.undecorate import MARKS
from oomtrace.records import Stamp

# A prefix `split` may learn, to cut it off the lines after it with a slice: dmesg's `[ uptime] `,
# `journalctl -k`'s stamp, host and `kernel: `, or rsyslog kern.log's both. The stamp in English
# (`Nov  8 08:01:40`), the host of plain name characters: shapes the grammar reads one way.
_LEARNABLE = lazy_compile(
    r"(?:(?P<date>[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}) (?P<host>[\w.-]+) kernel: )?"
    r"(?P<uptime>\[\s*\d+\.\d+\] )?"
)
# The time of day in a learnt prefix's date (`Nov 28 08:01:40`), from its eighth character.
SYSLOG_CLOCK = lazy_compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})")


class Learnt(Frozen):
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


def learnable(prefix: str) -> bool:
    """Can a prefix be cut off the lines after it with a slice? It ends in a space (the
    grammar's optional one) and is ASCII: `plain_message` tests the message alone."""
    return prefix[-1:] == " " and prefix.isascii() and ">" not in prefix[:4]


def learnt_prefix(prefix: str, split: Split) -> Learnt | None:
    """What `split` learns of a line's prefix, a `_LEARNABLE` shape that the grammar read as
    that shape reads (this host, this stamp as printed), or None."""
    shape = _LEARNABLE.fullmatch(prefix) if learnable(prefix) else None
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
    return Learnt(prefix, split.stamp, host, date, tag, uptime is not None)


def plain_message(message: str) -> bool:
    """Would the full reading of a line, this message after a learnt prefix, give the same
    split as cutting the prefix off (the same stamp, nothing more to cut)? Each test stands for
    a step of `split` and `split_prefixes` that could read the line otherwise; each looks at
    the message alone, as the prefix (a `_LEARNABLE` shape, ASCII) changes none of them.
    A crash loop repeats its report lines word for word: those are answered once."""
    return _plain_seen(message) if len(message) <= _PLAIN_LONGEST else _plain(message)


_PLAIN_LONGEST = 512


def _plain(message: str) -> bool:
    if not message or not message.isascii():
        return False
    if "\\" in message or "=3D" in message or message[-1] in MARKS or message[-1] in "=> \t":
        return False  # undecorate would change it
    if tagged_after_uptime(message):
        return False  # after_uptime would read a tag
    if " kernel: " in message:
        return False  # `glued_lines` may split a syslog line there: another line's prefix after it
    if message[:1] == "[" and UPTIME.match(message):
        return False  # after `kernel: `, `known` reads it as kern.log's uptime
    # `glued_lines` of the line: what it cuts at depends on the message and the space before it.
    if "[" in message and split_at_uptimes(" " + message, 1) is not None:
        return False
    return not message_start(message)


_plain_seen = lru_cache(maxsize=4096)(_plain)
