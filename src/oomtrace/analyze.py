"""Runs sources through the parser and the episode builder."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from oomtrace.episodes import EpisodeBuilder
from oomtrace.errors import InputError
from oomtrace.frozen import replace
from oomtrace.model import Analysis, ProbeSample
from oomtrace.rejoin import parse_records
from oomtrace.sources.base import Source

if TYPE_CHECKING:
    from rich.progress import Progress


def analyze(
    sources: Iterable[Source],
    progress: Progress | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Analysis:
    """Every episode the sources hold; with since/until, kills far outside that range are
    dropped as they are read (select.between then cuts exactly)."""
    builder = EpisodeBuilder(since, until)
    samples: list[ProbeSample] = []
    for source in sources:
        if progress is not None:
            unit = "entries" if source.kind == "journal" else "bytes"
            task = progress.add_task(f"reading {source.name}", total=source.size(), unit=unit)
            source.progress = lambda done, task=task: progress.update(task, completed=done)
        builder.begin_source(source.name, source.kind, source.boot_time())
        blank = True  # only blank lines so far (`echo | oomtrace list`: no log was given)
        for record, event in parse_records(source.records()):
            builder.feed(record, event)
            if blank and (event is not None or record.message.strip()):
                blank = False
        lines = getattr(source, "lines_read", None)
        if lines is not None:
            # A prefiltered source read only some lines; the summary states them all.
            builder.set_record_count(source.name, lines)
        if blank and source.name == "<stdin>":
            # Blank lines are no log: said as an empty standard input is, not as "not a kernel log".
            builder.set_record_count(source.name, 0)
        if source.host_spans:
            builder.set_host_spans(source.host_spans)
        if source.host_damage:
            builder.set_host_damage(source.host_damage)
        if source.problem is not None:
            builder.set_problem(source.name, source.problem)
        samples.extend(source.samples)
    analysis = builder.finish()
    if samples:
        analysis = replace(analysis, samples=tuple(sorted(samples, key=lambda s: s.time)))
    for summary in analysis.sources:
        if summary.records and not summary.recognised and not summary.events:
            # What was cut while reading may be why (a JSON export's lines over their bound).
            cut = f" ({summary.problem})" if summary.problem else ""
            program = (
                f"; it looks like a program's own log (its out-of-memory error {summary.program_oom}): "
                "give it as --server-log FILE, beside the kernel log (-k) of the machine it ran on"
                if summary.program_oom
                else ""
            )
            raise InputError(
                f"{summary.name} holds no OOM kill and does not look like a kernel log: no line "
                f"has a known prefix and none is part of an OOM report{cut}{program}",
                hint=f"understood: {UNDERSTOOD}",
            )
    return analysis


UNDERSTOOD = (
    "dmesg (plain, -r, -T, --time-format iso), journalctl -k (short, short-precise, short-iso, "
    "short-monotonic, cat, -o json), /var/log/kern.log or /var/log/messages, and raw OOM reports"
)
