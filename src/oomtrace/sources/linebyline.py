"""Reading a log line by line: every line reaches the grammar.

One of the two reading paths textfile.KernelLogFile chooses between (the other, for big files,
is bigfile.py), taken for small logs and where the chunk scan's libraries are missing. It only
reads, and never imports the chooser.
"""

from __future__ import annotations

from collections.abc import Generator

from oomtrace.prefixes import LineSplitter
from oomtrace.records import Record
from oomtrace.sources.base import DAMAGED, Source
from oomtrace.sources.compressed import cut_short
from oomtrace.sources.lines import open_text
from oomtrace.sources.logbytes import LogBytes


def line_by_line_records(source: Source, path: str, splitter: LineSplitter) -> Generator[Record, None, int]:
    """Every line of the log at `path` (or `-`) split into records; returns how many lines it
    held. Progress, and where reading stopped early, are told to `source`."""
    line_no = 0
    with open_text(path) as text:
        try:
            for raw, count in text.line_runs():
                line_no += count
                # A run of empty lines (60 MB of newlines) is one record, and a last one:
                # they say nothing, and the file's last line ends the span it states.
                yield from splitter.split(raw.decode("utf-8", "replace"), line_no - count + 1)
                if count > 1 and text.at_end():
                    yield from splitter.split("", line_no)
                if line_no & ~0xFFFF != (line_no - count) & ~0xFFFF:
                    source._report(text.position())
        except DAMAGED as error:
            source.problem = cut_short(source.name, error, line_no)
        source.add_problem(text.note())
        if isinstance(text.buffer, LogBytes):
            source.add_problem(text.buffer.shrank(source.name))
    return line_no  # rsyslog's #012 makes several records of one line
