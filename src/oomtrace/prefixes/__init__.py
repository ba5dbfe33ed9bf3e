"""The line-prefix grammar: every way a kernel line reaches a file, cut off its message.

One module a prefix family, each with a real line in its docstring: dmesg.py (`[ uptime] `,
`<level>`, `-x`, `-H`), weekday.py (`dmesg -T`, OpenWrt logread), iso.py (short-iso,
short-full, Unix seconds), syslog.py (syslog, journalctl short), logcat.py, clock.py (a bare
time of day), journal.py and jsonlines.py (JSON lines, journalctl -o verbose); glued.py
(several lines on one) and undecorate.py (quoting, Markdown, colours) around them. grammar.py
tries the families in order; splitter.py's LineSplitter learns the prefix a file uses and cuts
it with a slice; state.py holds what reading leaves for the next line (the previous stamp, the
boot), stamps.py and years.py read date-times.

Imports only downward: messages (where a known message begins), records, jsonshapes, zones.
"""

from oomtrace.prefixes.journal import journal_message, journal_records
from oomtrace.prefixes.splitter import LineSplitter
from oomtrace.prefixes.stamps import month_number

__all__ = ["LineSplitter", "journal_message", "journal_records", "month_number"]
