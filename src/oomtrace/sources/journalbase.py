"""What both journal readers share: the query, the files checked one by one, the spans of each host."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from datetime import datetime, tzinfo

from oomtrace.frozen import replace
from oomtrace.sanitize import inert
from oomtrace.sources.base import Source
from oomtrace.sources.journalfiles import (
    JournalFile,
    KernelTail,
    entry_out_of_order,
    host_groups,
    journal_paths,
    mended_copy,
    survey,
)
from oomtrace.sources.journalquery import (
    IDENTIFIERS,
    JournalQuery,
    is_kernel,
    wall_time,
)
from oomtrace.units import clock_time

# Entries looked at, from a file's tail, for its last kernel entry (to hold the index against).
LOOK_BACK = 10_000


class BaseJournalSource(Source):
    """What both journal readers share: the query, the zone, the files checked one by one, and
    the count of entries read."""

    kind = "journal"
    lines_read: int | None = None
    """Entries read (the prefilter lets only some through as records)."""

    def __init__(self, query: JournalQuery, zone: tzinfo) -> None:
        self.query = query
        self.zone = zone
        self.name = query.name
        self._spans: dict[str, tuple[datetime, datetime]] = {}
        self._damage: dict[str, tuple[str, datetime | None]] = {}
        self.host_damage = self._damage
        paths = journal_paths(query.directory, query.files)
        self.files = survey(paths, self._kernel_tail) if paths else ()
        # libsystemd skips or half-reads a damaged file without a word: say which, before reading.
        # A cut file's problem is said once read, with where it ends.
        for file in self.files:
            if file.problem is not None and not file.cut:
                self.add_problem(file.problem)

    def _kernel_tail(self, path: str) -> KernelTail | None:
        raise NotImplementedError

    def _hosts_of(self, path: str) -> list[str]:
        raise NotImplementedError

    def _merged_reads(self) -> list[JournalQuery]:
        """The merged reads: the query as given when its files are sound and share their hosts,
        else one read per group of sound files that share a host (journalfiles.host_groups)."""
        sound = [f.path for f in self.files if not (f.apart or f.skipped)]
        groups = host_groups(sound, self._hosts_of) if len(sound) > 1 else [sound] if sound else []
        if not self.files or (len(groups) == 1 and len(sound) == len(self.files)):
            return [self.query]
        return [replace(self.query, directory=None, files=tuple(group)) for group in groups]

    def _apart(self) -> Iterator[tuple[JournalFile, str | None]]:
        """Each file read on its own, and the path to read it at (a cut file's mended copy, None
        when nothing of it can be read); the copies go when the read is done."""
        apart = [f for f in self.files if f.apart]
        if not apart:
            return
        with tempfile.TemporaryDirectory(prefix="oomtrace-journal-") as folder:
            for file in apart:
                yield file, (mended_copy(file.path, folder) if file.cut else file.path)

    def _selected(self, transport: str, identifier: str, host: str, boot: str, boot_id: str | None) -> bool:
        """What the matches select, for a file read apart with none: the kernel's and the
        killers' entries, of the host and boot asked for."""
        if not is_kernel(transport, identifier) and identifier not in IDENTIFIERS:
            return False
        return (not self.query.host or host == self.query.host) and (boot_id is None or boot == boot_id)

    def _widen(self, host: str, realtime_us: int) -> None:
        wall = wall_time(realtime_us, self.zone)
        self._merge_spans({host: (wall, wall)})

    def _said_cut(self, file: JournalFile, last_us: int | None) -> None:
        if not file.cut:
            return
        if last_us is None:
            self.add_problem(f"{file.problem}: no whole entry in it could be read")
        else:
            end = clock_time(wall_time(last_us, self.zone))
            self.add_problem(f"{file.problem}: read up to its last whole entry, {end}; what followed is lost")

    def _files_of(self, read: JournalQuery) -> list[JournalFile]:
        """The surveyed files one merged read walks."""
        if read is self.query:
            return [f for f in self.files if not (f.apart or f.skipped)]
        return [f for f in self.files if f.path in read.files]

    def _said_unreached(self, files: list[JournalFile], last_us: int | None, boot_id: str | None) -> None:
        """Say each file whose last kernel entry a read did not reach, though the query selects
        it: a damaged entry (its sequence number or time overwritten) ends libsystemd's walk of
        that file there, and journalctl's too, with exit code 0 and not a word."""
        since = self.query.since.timestamp() * 1_000_000 if self.query.since is not None else None
        until = self.query.until.timestamp() * 1_000_000 if self.query.until is not None else None
        for file in files:
            tail = file.tail
            if (
                tail is None
                or (self.query.host and tail.host != self.query.host)
                or (self.query.boot and tail.boot != boot_id)
                or (until is not None and tail.realtime_us > until)
                or (since is not None and tail.realtime_us < since)
                or (last_us is not None and last_us >= tail.realtime_us)
            ):
                continue
            end = clock_time(wall_time(tail.realtime_us, self.zone))
            read_to = wall_time(last_us, self.zone) if last_us is not None else None
            self._damage[tail.host] = (file.name, read_to)
            read = (
                f"read only up to {clock_time(read_to)}"
                if read_to is not None
                else "none of its entries could be read"
            )
            where = entry_out_of_order(file.path)
            at = f" (its first entry out of order is at byte {where:,})" if where is not None else ""
            self.add_problem(
                f"{file.name} (host {inert(tail.host) or '?'}) is damaged{at}: {read}, short of its last "
                f"kernel entry of {end}; the entries between could not be read, and a kill there is not "
                f"in this read (`journalctl --verify --file {file.name}` checks the file)"
            )

    def _merge_spans(self, spans: dict[str, tuple[datetime, datetime]]) -> None:
        for host, (first, last) in spans.items():
            known = self._spans.get(host)
            self._spans[host] = (min(first, known[0]), max(last, known[1])) if known else (first, last)
