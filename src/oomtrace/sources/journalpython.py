"""The journal read through systemd-python's Reader (the `journal` extra)."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from datetime import datetime, tzinfo
from typing import Any

from oomtrace.errors import InputError
from oomtrace.frozen import replace
from oomtrace.prefilter import Prefilter
from oomtrace.prefixes import journal_records
from oomtrace.records import Record
from oomtrace.sources.journalbase import LOOK_BACK, BaseJournalSource
from oomtrace.sources.journalfiles import KernelTail
from oomtrace.sources.journalquery import (
    IDENTIFIERS,
    PERMISSION_HINT,
    Boot,
    JournalQuery,
    is_kernel,
    numbered_boots,
    realtime_of,
    resolve_boot,
    wall_time,
    wanted_entry,
)


class JournalReaderSource(BaseJournalSource):
    """The journal through systemd-python's Reader, with matches so unrelated entries stay encoded."""

    def records(self) -> Iterator[Record]:
        boot_id = resolve_boot(self.query, list_boots_python(self.query)) if self.query.boot else None
        self._number = 0
        self._boot_ids: dict[str, int] = {}
        self._damaged = [0]
        for whole in self._merged_reads():
            reader = open_reader(whole)
            add_matches(reader, self.query, boot_id)
            last = yield from self._walk(reader, None)
            self._said_unreached(self._files_of(whole), last, boot_id)
            self._merge_spans(_host_spans_python(reader, whole, boot_id, self.zone))
            reader.close()
        for file, path in self._apart():
            last = None
            if path is not None:
                reader = open_reader(JournalQuery(files=(path,)))
                last = yield from self._walk(reader, boot_id or "")
                reader.close()
            self._said_cut(file, last)
            self._said_unreached([file], last, boot_id)
        self.lines_read = self._number
        self.host_spans = self._spans
        if self._damaged[0]:
            self.add_problem(f"{self._damaged[0]:,} entries with a damaged field were read without it")

    def _walk(self, reader: Any, apart: str | None) -> Generator[Record, None, int | None]:
        """One read, merged (apart None: the matches select) or of one file apart (every entry
        walked and selected here; `apart` the boot id asked for, or ""). Returns the time of
        the last entry read."""
        if self.query.since is not None:
            reader.seek_realtime(self.query.since)
        until_us = int(self.query.until.timestamp() * 1_000_000) if self.query.until else None
        prefilter = Prefilter()
        start = number = self._number
        taken = 0
        last_us = None
        pending = None
        past_until = False
        try:
            # _next/_get read one field without decoding the entry: most kernel entries are noise.
            while reader._next():
                realtime = reader._get_realtime()
                if until_us is not None and realtime > until_us:
                    past_until = True
                    break
                transport = entry_field(reader, "_TRANSPORT")
                if apart is not None:
                    host = entry_field(reader, "_HOSTNAME")
                    boot = entry_field(reader, "_BOOT_ID") if apart else ""
                    identifier = entry_field(reader, "SYSLOG_IDENTIFIER")
                    if not self._selected(transport, identifier, host, boot, apart or None):
                        continue
                    self._widen(host, realtime)
                    transport = "kernel" if is_kernel(transport, identifier) else transport
                number += 1
                last_us = realtime
                if not number & 0xFFFF:
                    self._report(number)
                if wanted_entry(prefilter, number - start, transport, entry_field(reader, "MESSAGE")):
                    taken = number
                    yield from journal_records(
                        current_entry(reader, self._damaged), self.name, number, self._boot_ids, self.zone
                    )
                elif apart is not None:
                    pending = reader._get_cursor()
        except OSError:
            pass  # a mended copy's last entries may point past the cut: read up to there
        self._number = number
        if number > start and taken != number and (apart is None or pending is not None):
            # The last entry too, so the span the report states is the journal's whole span. At
            # the end, libsystemd stays on the last entry and a step back would go one too far.
            if pending is not None:
                reader.seek_cursor(pending)
                reader._next()
            elif past_until:
                reader._previous()
            else:
                reader.seek_tail()
                reader._previous()
            yield from journal_records(
                current_entry(reader, self._damaged), self.name, number, self._boot_ids, self.zone
            )
        return last_us

    def _kernel_tail(self, path: str) -> KernelTail | None:
        return _kernel_tail_python(path)

    def _hosts_of(self, path: str) -> list[str]:
        from systemd import journal

        try:
            with journal.Reader(files=[path]) as reader:
                return [str(host) for host in reader.query_unique("_HOSTNAME")]
        except OSError:
            return []


def _kernel_tail_python(path: str) -> KernelTail | None:
    """The file's last kernel entry, found by walking back from its tail, and whether a read
    matching _TRANSPORT=kernel finds it by its cursor through the index (a broken index chain,
    or a damaged `_TRANSPORT=kernel` object, does not lead there)."""
    from systemd import journal

    try:
        walker = journal.Reader(files=[path])
    except OSError:
        return None  # not opened at all: the read says so
    with walker:
        walker.seek_tail()
        for _ in range(LOOK_BACK):
            if not walker._previous():
                return None
            if is_kernel(entry_field(walker, "_TRANSPORT"), entry_field(walker, "SYSLOG_IDENTIFIER")):
                last = walker._get_cursor()
                tail = KernelTail(
                    walker._get_realtime(), entry_field(walker, "_HOSTNAME"), entry_field(walker, "_BOOT_ID")
                )
                break
        else:
            return None  # no kernel entry near the tail: nothing to hold the index against
    with journal.Reader(files=[path]) as indexed:
        try:
            indexed.add_match(_TRANSPORT="kernel")
            indexed.seek_cursor(last)
            found = indexed._next() and indexed._get_cursor() == last
        except OSError:
            found = False
    return tail if found else replace(tail, indexed=False)


def _host_spans_python(
    reader: Any, query: JournalQuery, boot_id: str | None, zone: tzinfo
) -> dict[str, tuple[datetime, datetime]]:
    """Each host's first and last entry among those read: one seek to each end per host (the
    read itself decoded only the entries the prefilter wanted, so it saw few of each host's)."""
    hosts = [query.host] if query.host else sorted(str(h) for h in reader.query_unique("_HOSTNAME"))
    until_us = int(query.until.timestamp() * 1_000_000) if query.until is not None else None
    spans = {}
    for host in hosts:
        reader.flush_matches()
        add_matches(reader, replace(query, host=host), boot_id)
        if query.since is not None:
            reader.seek_realtime(query.since)
        else:
            reader.seek_head()
        if not reader._next() or (until_us is not None and reader._get_realtime() > until_us):
            continue
        first = reader._get_realtime()
        if until_us is not None:
            reader.seek_realtime(until_us + 1)  # the last entry at or before --until
        else:
            reader.seek_tail()
        reader._previous()
        spans[host] = (wall_time(first, zone), wall_time(reader._get_realtime(), zone))
    return spans


def entry_field(reader: Any, name: str) -> str:
    try:
        value = reader._get(name)
    except KeyError:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def current_entry(reader: Any, damaged: list[int] | None = None) -> dict[str, Any]:
    """The current entry with every field as the string journalctl -o json prints. An entry
    with a damaged field name (bytes overwritten) is read field by field, without that one,
    and counted in `damaged`."""
    fields: dict[str, Any] = {}
    try:
        every = reader._get_all()
    except UnicodeDecodeError:
        if damaged is not None:
            damaged[0] += 1
        every = {}
        for name in _CONVERTERS:
            if name.startswith("__"):
                continue  # not fields: the stamps, set below from the entry itself
            try:
                every[name] = reader._get(name)
            except (KeyError, ValueError):  # absent, or itself the damaged one
                continue
    for key, value in every.items():
        convert = _CONVERTERS.get(key, _string)
        fields[key] = convert(value) if isinstance(value, bytes) else value
    fields["__REALTIME_TIMESTAMP"] = str(reader._get_realtime())
    fields["__MONOTONIC_TIMESTAMP"] = str(reader._get_monotonic()[0])
    return fields


def _string(value: bytes) -> str:
    return value.decode("utf-8", "replace")


# Every field as the string journalctl -o json prints, so both readers build the same records.
_CONVERTERS: dict[str, Any] = {
    "__REALTIME_TIMESTAMP": str,
    "__MONOTONIC_TIMESTAMP": lambda value: str(value[0]),
    "_BOOT_ID": _string,
    "_SOURCE_MONOTONIC_TIMESTAMP": _string,
    "MESSAGE": _string,
    "_HOSTNAME": _string,
    "SYSLOG_IDENTIFIER": _string,
    "_TRANSPORT": _string,
}


def open_reader(query: JournalQuery) -> Any:
    from systemd import journal

    try:
        # Absolute paths: sd_journal_get_fd() watches each file's folder, and for a bare name
        # (`--journal-file a.journal`) that folder is "" and the watch fails (EDESTADDRREQ).
        if query.files:
            return journal.Reader(files=[os.path.abspath(f) for f in query.files], converters=_CONVERTERS)
        if query.directory:
            return journal.Reader(path=os.path.abspath(query.directory), converters=_CONVERTERS)
        return journal.Reader(flags=journal.SYSTEM, converters=_CONVERTERS)
    except PermissionError:
        raise InputError(f"cannot read the {query.name}: permission denied", hint=PERMISSION_HINT) from None
    except OSError as error:
        raise InputError(f"cannot open the {query.name}: {error.strerror or error}") from None


def add_matches(reader: Any, query: JournalQuery, boot_id: str | None) -> None:
    reader.add_match(_TRANSPORT="kernel")
    reader.add_disjunction()
    for ident in IDENTIFIERS:
        reader.add_match(SYSLOG_IDENTIFIER=ident)
    if query.host:
        reader.add_conjunction()
        reader.add_match(_HOSTNAME=query.host)
    if boot_id:
        reader.add_conjunction()
        reader.add_match(_BOOT_ID=boot_id)


def list_boots_python(query: JournalQuery) -> list[Boot]:
    reader = open_reader(query)
    found = []
    for boot_id in reader.query_unique("_BOOT_ID"):
        reader.flush_matches()
        reader.add_match(_BOOT_ID=boot_id)
        if query.host:
            reader.add_match(_HOSTNAME=query.host)
        reader.seek_head()
        first = reader.get_next()
        reader.seek_tail()
        last = reader.get_previous()
        if first:
            found.append((boot_id, realtime_of(first), realtime_of(last)))
    reader.close()
    return numbered_boots(found)


def unit_entries_python(
    query: JournalQuery, field: str, unit: str, since: datetime | None, until: datetime | None
) -> Iterator[dict[str, Any]]:
    reader = open_reader(query)
    try:
        reader.add_match(**{field: unit})
        if query.host:
            reader.add_match(_HOSTNAME=query.host)
        if since is not None:
            reader.seek_realtime(since)
        last = int(until.timestamp() * 1_000_000) if until is not None else None
        while reader._next():
            if last is not None and reader._get_realtime() > last:
                break
            yield current_entry(reader)
    finally:
        reader.close()
