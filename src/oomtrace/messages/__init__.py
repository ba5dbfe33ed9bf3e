"""The one registry of messages oomtrace knows, with the line grammar that reads each.

A message is recognised by its body, wherever it stands in a line: every kind declares the
literals one of which each such message holds (`anchors`: the parser's cheap filter and the
big-file prefilter's search), where such a message begins (`begins`, or `after_name` when a
process or unit name stands first), its matcher (a function from the record and its text
to an event), and its label. The kinds live by family (report.py, kills.py, early.py, boot.py,
units.py, userspace.py), each beside its matcher; registry.py assembles MESSAGES in the order
they are tried, so adding a message is one entry there and its kind in its family.
"""

from oomtrace.messages.kind import MAX_MESSAGE, Matcher, MessageKind
from oomtrace.messages.registry import (
    MESSAGE_KINDS,
    MESSAGES,
    WARNING_LABELS,
    begins_known,
    message_start,
    read_around,
    readme_table,
)
from oomtrace.messages.report import tasks_line

__all__ = [
    "MAX_MESSAGE",
    "MESSAGES",
    "MESSAGE_KINDS",
    "WARNING_LABELS",
    "Matcher",
    "MessageKind",
    "begins_known",
    "message_start",
    "read_around",
    "readme_table",
    "tasks_line",
]
