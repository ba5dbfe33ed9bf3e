"""The systemd journal: live, copied (-D / --file), multi-boot and multi-host.

Read through systemd-python when it is installed (the `journal` extra), else through
`journalctl -o json`; both turn each entry into the same records. This module chooses the
reader once; the readers live apart (journalpython.py, journalctl.py), on what they share
(journalbase.py: the files checked one by one; journalquery.py: the query, the boots and the
rules that select entries), and never import this module.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, tzinfo

from oomtrace.errors import InputError
from oomtrace.prefixes import journal_records
from oomtrace.sources.base import Source
from oomtrace.sources.journalctl import (
    JournalctlSource,
    list_boots_journalctl,
    unit_entries_journalctl,
)
from oomtrace.sources.journalpython import (
    JournalReaderSource,
    list_boots_python,
    unit_entries_python,
)
from oomtrace.sources.journalquery import (
    Boot,
    JournalQuery,
    check_readable,
    journal_folders,
    system_journal_present,
)

__all__ = [
    "Boot",
    "JournalQuery",
    "JournalReaderSource",
    "JournalctlSource",
    "journal_folders",
    "journal_source",
    "list_boots",
    "system_journal_present",
    "unit_log",
]


def journal_source(query: JournalQuery, zone: tzinfo, prefer: str = "auto") -> Source:
    """systemd-python's reader when it can be imported, else journalctl."""
    check_readable(query)
    if prefer in ("auto", "python"):
        try:
            from systemd import journal  # noqa: F401
        except ImportError:
            if prefer == "python":
                raise InputError(
                    "systemd-python is not installed", hint="pip install 'oomtrace[journal]'"
                ) from None
        else:
            return JournalReaderSource(query, zone)
    return JournalctlSource(query, zone)


def list_boots(query: JournalQuery) -> list[Boot]:
    check_readable(query)
    try:
        from systemd import journal  # noqa: F401
    except ImportError:
        return list_boots_journalctl(query)
    return list_boots_python(query)


# How much of a unit's own log `why` reads around its kill: the day before (its start and what
# it said it would hold) and the hour after (whether it went on writing).
UNIT_LOG_BEFORE = timedelta(hours=24)
UNIT_LOG_AFTER = timedelta(hours=1)


def unit_log(
    query: JournalQuery, unit: str, zone: tzinfo, prefer: str = "auto", around: datetime | None = None
) -> Iterator[tuple[str, datetime | None]]:
    """The records a unit itself wrote (its stdout and stderr): its own log, when it ran under
    systemd; with `around` (the kill), only from UNIT_LOG_BEFORE it to UNIT_LOG_AFTER it. Streamed:
    a unit's journal of 300,000 lines is never held whole."""
    field = "_SYSTEMD_USER_UNIT" if "/user@" in unit or unit.startswith("app-") else "_SYSTEMD_UNIT"
    since = around - UNIT_LOG_BEFORE if around is not None else None
    until = around + UNIT_LOG_AFTER if around is not None else None
    try:
        from systemd import journal  # noqa: F401

        python = prefer != "journalctl"
    except ImportError:
        python = False
    entries = (
        unit_entries_python(query, field, unit, since, until)
        if python
        else unit_entries_journalctl(query, field, unit, since, until)
    )
    for entry in entries:
        for record in journal_records(entry, unit, 0, {}, zone):
            yield record.message, record.stamp.wall
