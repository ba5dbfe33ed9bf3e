"""Read a run's sources into one analysis: the files and journal its settings name, in range.

Owns the sources a run reads, the progress bar a person at a terminal sees while they are read,
and the redactor a run's inputs call for. Says what it must on stderr through `say`.
"""

from __future__ import annotations

import io
import os
import select
import stat
import sys
from collections.abc import Callable

from rich.console import Console

from oomtrace.analyze import analyze
from oomtrace.errors import EmptyInputError
from oomtrace.model import Analysis
from oomtrace.redact import Redactor
from oomtrace.select import between
from oomtrace.sources.base import Source
from oomtrace.sources.textfile import KernelLogFile
from oomtrace.sources.watchrecord import WatchRecordFile
from oomtrace.usecases.settings import Settings, future_note

Say = Callable[[str], None]
"""Where a use case's notes to the person go (a line on stderr, from the CLI)."""


# How long a pipe on standard input may stay silent before oomtrace says it is waiting on it.
STDIN_QUIET_S = 2.0


def _say_if_stdin_is_silent(settings: Settings, say: Say) -> None:
    """`ssh host oomtrace why x`, a cron job: a pipe left open on standard input, nothing in it.
    oomtrace waits for it as grep would, but says so once on stderr with the way out, rather than
    hang without a word."""
    if not settings.stdin_implied:
        return
    try:
        ready, _, _ = select.select([sys.stdin.fileno()], [], [], STDIN_QUIET_S)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return
    if not ready:
        say(
            "oomtrace: waiting for a kernel log on standard input (it is a pipe); to read this "
            "machine's journal instead, run it with < /dev/null"
        )


def _refuse_empty_stdin(settings: Settings, analysis: Analysis) -> None:
    """Piped input that held nothing is no evidence of "no kills": `true | oomtrace list` must not
    say 0 episodes of a machine whose journal holds seven."""
    if "-" not in settings.kernel_logs:
        return
    if any(source.name == "<stdin>" and not source.records for source in analysis.sources):
        if settings.stdin_implied:
            raise EmptyInputError(
                "standard input was empty (or blank lines only): no kernel log was read",
                hint="it was piped in, so it was read instead of the journal; to read this "
                "machine's journal, run without the pipe or with < /dev/null",
            )
        raise EmptyInputError(
            "standard input (-k -) was empty (or blank lines only): no kernel log was read",
            hint=_empty_stdin_hint(),
        )


def _empty_stdin_hint() -> str:
    """Why standard input held nothing, by what it is: a pipe's writer, a file, /dev/null."""
    pipe = "the command before the pipe wrote no log: did it fail?"
    if sys.stdin is not sys.__stdin__:
        return pipe  # a stream put in its place (a test's): what a pipe gives
    try:
        mode = os.fstat(0).st_mode  # sys.stdin is closed once read; its descriptor 0 is not
    except OSError:
        return pipe
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return pipe
    if stat.S_ISREG(mode):
        return "the file given as standard input is empty"
    return "standard input is a device that gave nothing (such as /dev/null): name the log with -k FILE"


def _sources(settings: Settings) -> list[Source]:
    """-k files and a journal as asked; with neither, the system journal, else dmesg."""
    sources: list[Source] = [
        KernelLogFile(path, settings.zone, settings.year, settings.boot_time, settings.json_shape)
        for path in settings.kernel_logs
    ]
    if settings.journal is not None:
        from oomtrace.sources.journal import journal_source

        sources.append(journal_source(settings.journal, settings.zone, settings.journal_reader))
    if not sources:
        from oomtrace.sources.dmesg import RingBuffer

        sources.append(RingBuffer(settings.zone))
    return sources + [WatchRecordFile(path, settings.zone) for path in settings.records]


def read(settings: Settings, say: Say) -> tuple[Analysis, int]:
    """Read every source, then keep what lies within --since/--until."""
    sources = _sources(settings)
    _say_if_stdin_is_silent(settings, say)
    if (note := future_note(settings)) is not None:
        say(note)
    if not _show_progress(settings):
        analysis = analyze(sources, None, settings.since, settings.until)
        _refuse_empty_stdin(settings, analysis)
        return between(analysis, settings.since, settings.until)
    from rich.progress import (  # only for a person at a terminal
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),
        MofNCompleteColumn(),  # "done/total", "done/?" when the size is unknown (a pipe)
        TextColumn("{task.fields[unit]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        analysis = analyze(sources, progress, settings.since, settings.until)
    _refuse_empty_stdin(settings, analysis)
    return between(analysis, settings.since, settings.until)


def _show_progress(settings: Settings) -> bool:
    """A progress bar only for a person at a terminal: never in JSON or piped output."""
    return (
        settings.format != "json" and settings.output is None and sys.stderr.isatty() and sys.stdout.isatty()
    )


def redactor(settings: Settings, analysis: Analysis, server_logs: tuple[str, ...] = ()) -> Redactor:
    if not settings.redact:
        return Redactor.disabled()
    # The input files' names may hold a host's name too (`spark-01-kern.log`).
    paths = [*settings.kernel_logs, *settings.records, *server_logs, *(s.name for s in analysis.sources)]
    return Redactor(analysis.hosts, paths=paths)
