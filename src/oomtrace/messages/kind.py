"""What every message kind declares (MessageKind), and the helpers several families share."""

from __future__ import annotations

import re
from collections.abc import Callable

from oomtrace import events as ev
from oomtrace.frozen import Frozen
from oomtrace.lazyregex import lazy_compile
from oomtrace.records import Record

Matcher = Callable[[Record, str], ev.Event | None]


class MessageKind(Frozen):
    name: str
    """For warnings, the warning kind of the JSON contract (`nvrm-no-memory`)."""
    anchors: tuple[str, ...]
    """Literals one of which every message of this kind holds."""
    match: Matcher
    label: str
    example: str
    """One real line of this kind (from the corpus or the fixtures), message only."""
    origin: str = "kernel"
    """"kernel": only kernel records; "any": any record (the body alone is distinctive);
    otherwise the syslog identifier the message must come with (its body says too little)."""
    begins: tuple[str, ...] = ()
    """Literals the message starts with: where it begins in a line whose prefix is unknown."""
    after_name: str = ""
    """For a message that begins with a process or unit name (`java invoked oom-killer`), the
    literal that follows the name: where the name ends in a line whose prefix is unknown."""
    name_is_comm: bool = False
    """The name before `after_name` is a task's comm, which may hold spaces, tabs, `: ` or `# `
    (`Web Content`): the whole text before `after_name` is the name when it fits a comm
    (registry.fits_comm), and only a longer run is cut at a separator, as a prefix no grammar read."""
    warning: bool = False
    """Its events are warnings collapsed into runs (the label says what they mean)."""
    opens_report: bool = False
    """The lines after it (Mem-Info counters, tasks rows) hold no anchor of their own."""
    in_report: bool = False
    """It stands only inside a report another kind opened: the big-file prefilter, which reads
    every line of a report, need not search for it."""


# printk cuts a record at 1024 bytes; anything longer is not one kernel line, and cutting it
# keeps every regex below linear in the input however hostile the line.
MAX_MESSAGE = 4096

# Sizes as kernels print them, and as people retype them: `123kB`, `123 kB`, `1,234,567kB`.
_KB_NUMBER = r"-?\d{1,3}(?:,\d{3})+(?!\d)|-?\d{1,20}"
_KB_VALUE = lazy_compile(rf"([\w()-]+):\s*({_KB_NUMBER})\s*kB", re.IGNORECASE)


def kb_values(text: str) -> dict[str, int]:
    return {k.lower(): int(v.replace(",", "")) for k, v in _KB_VALUE.findall(text)}
