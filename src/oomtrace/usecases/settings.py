"""The options every reading command shares, checked and resolved into one value (`Settings`).

Owns what an option means (a zone, a boot time, a range, whether piped standard input is the
log, which journal); no click, no reading, no output. The CLI checks outputs against the
inputs named here before anything is read.
"""

from __future__ import annotations

import io
import os
import stat
import sys
from datetime import datetime, tzinfo
from typing import TYPE_CHECKING

from oomtrace import jsonshapes
from oomtrace.errors import UsageError
from oomtrace.frozen import Frozen, replace
from oomtrace.jsonshapes import Shape
from oomtrace.timerange import parse_when
from oomtrace.zones import local_zone, named_zone

if TYPE_CHECKING:
    from oomtrace.sources.journal import JournalQuery


class Settings(Frozen):
    kernel_logs: tuple[str, ...]
    zone: tzinfo
    boot_time: datetime | None
    year: int | None
    format: str
    output: str | None
    since: datetime | None
    until: datetime | None
    redact: bool
    journal: JournalQuery | None
    """The journal to read, when one was named or the machine has one and no -k was given."""
    journal_reader: str
    records: tuple[str, ...] = ()
    """`watch --record` files, read after the logs."""
    json_shape: Shape | None = None
    """`--jsonl-fields` / `--host-label`: how to read JSON lines; None: by their content."""
    stdin_implied: bool = False
    """Standard input is read because it was piped in, not because `-k -` said so."""


def settle(
    kernel_logs: tuple[str, ...],
    journal_dir: str | None,
    journal_files: tuple[str, ...],
    host: str | None,
    jsonl_fields: str | None,
    host_label: str | None,
    records: tuple[str, ...],
    boot: str | None,
    journal_reader: str,
    zone_name: str | None,
    boot_time: str | None,
    year: int | None,
    output_format: str,
    output: str | None,
    since: str | None,
    until: str | None,
    redact: bool,
    read_piped: bool = True,
) -> Settings:
    """The options checked and resolved. read_piped: whether piped standard input is the log to
    read without `-k -` (`list`, `why`, `report`, as grep reads it); `check` and `export` run
    unattended, where a pipe on standard input is whatever cron or ssh left open, not a log."""
    zone: tzinfo | None = local_zone()
    if zone_name:
        zone = named_zone(zone_name)
    if year is not None and not 1970 <= year <= 9999:
        raise UsageError(
            f"--year {year if year < 10**12 else 'that long'} is not a year a log can hold",
            hint="use a year from 1970 to 9999",
        )
    assert zone is not None
    # A time given is read as --since and --until are (@EPOCH too, and only times a log can
    # hold: 0001-01-01 or 9999-12-31 23:59 is a typo, not a boot); an empty one is refused.
    booted = _when("--boot-time", boot_time, zone)
    since_time = _when("--since", since, zone)
    until_time = _when("--until", until, zone)
    if since_time and until_time and since_time > until_time:
        raise UsageError(f"--since {since!r} is after --until {until!r}")
    implied = read_piped and not kernel_logs and not journal_dir and not journal_files and _stdin_is_data()
    if implied:
        # `cat kern.log | oomtrace why x`: what is piped in is the log to read.
        kernel_logs = ("-",)
    journal = None
    # The journal's module only where a journal may be read: `-k FILE` runs start faster.
    if journal_dir or journal_files or (not kernel_logs and _system_journal_present()):
        from oomtrace.sources.journal import JournalQuery

        journal = JournalQuery(journal_dir, journal_files, host, boot, since_time, until_time)
    elif boot is not None:
        raise UsageError(
            "--boot needs a journal",
            hint="pass --journal-dir or --journal-file, or run where the system journal is",
        )
    return Settings(
        _once(kernel_logs),
        zone,
        booted,
        year,
        output_format,
        output,
        since_time,
        until_time,
        redact,
        journal,
        journal_reader,
        records,
        _json_shape(jsonl_fields, host_label),
        implied,
    )


def _once(paths: tuple[str, ...]) -> tuple[str, ...]:
    """Each file read once: `-k x -k x` (or `-k x -k ./x`, a link to x) is x, not its every kill
    and warning counted twice. A name that cannot be looked at is kept for its reader to refuse."""
    seen: set[object] = set()
    kept: list[str] = []
    for path in paths:
        try:
            info = os.stat(path) if path != "-" else None
        except (OSError, ValueError):
            info = None
        identity: object = (info.st_dev, info.st_ino) if info is not None else path
        if identity not in seen:
            seen.add(identity)
            kept.append(path)
    return tuple(kept)


def _json_shape(spec: str | None, host_label: str | None) -> Shape | None:
    shape = jsonshapes.custom(spec) if spec else None
    if host_label:
        if shape is None:
            return jsonshapes.with_host_label(host_label)
        return replace(shape, host=(f"labels.{host_label}",))
    return shape


def _system_journal_present() -> bool:
    from oomtrace.sources.journal import system_journal_present

    return system_journal_present()


def _stdin_is_data() -> bool:
    """Is standard input a pipe or a file (not a terminal, not absent, not /dev/null)?"""
    try:
        info = os.fstat(sys.stdin.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False
    return stat.S_ISFIFO(info.st_mode) or (stat.S_ISREG(info.st_mode) and info.st_size > 0)


def _when(option: str, value: str | None, zone: tzinfo) -> datetime | None:
    if value is None:
        return None
    if not value.strip():
        raise UsageError(f"{option} is empty", hint="give a time, or leave the option out")
    try:
        return parse_when(value, zone)
    except UsageError as error:
        # parse_when speaks of "the time": say which option held it.
        raise UsageError(f"{option}: {error.message}", hint=error.hint) from None


def future_note(settings: Settings, now: datetime | None = None) -> str | None:
    """A --since after now selects nothing any log holds yet: said, not refused (a clock set
    wrong, or a zone: `--since 14:00` read in UTC at 13:30 local)."""
    if settings.since is None:
        return None
    now = now or datetime.now(settings.zone)
    if settings.since <= now:
        return None
    return (
        f"oomtrace: note: --since {settings.since.isoformat(sep=' ', timespec='seconds')} is in the "
        f"future (it is {now.isoformat(sep=' ', timespec='seconds')} now): no log holds a time after now"
    )


def ranged(settings: Settings, since: datetime, until: datetime) -> Settings:
    journal = replace(settings.journal, since=since, until=until) if settings.journal else None
    return replace(settings, since=since, until=until, journal=journal)
