"""The systemd journal: live, copied (-D / --file), multi-boot and multi-host.

Read through systemd-python when it is installed (the `journal` extra), else through
`journalctl -o json`; both turn each entry into the same records.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable, Generator, Iterator
from datetime import datetime, timedelta, tzinfo
from typing import Any

from dateutil.parser import ParserError
from dateutil.parser import parse as parse_date

from oomtrace.errors import InputError, UsageError
from oomtrace.frozen import Frozen, replace
from oomtrace.jsonshapes import load_object
from oomtrace.prefilter import Prefilter, holds_anchor
from oomtrace.prefixes import journal_message, journal_records
from oomtrace.records import Record
from oomtrace.sources.base import Source
from oomtrace.sources.journalfiles import (
    JournalFile,
    host_groups,
    journal_files_under,
    journal_paths,
    mended_copy,
    survey,
)
from oomtrace.units import clock_time

# Besides the kernel's records, these identifiers say why a process died.
IDENTIFIERS = ("systemd", "systemd-oomd", "earlyoom", "nohang", "lmkd", "systemd-journald")
SYSTEM_JOURNALS = ("/var/log/journal", "/run/log/journal")
PERMISSION_HINT = (
    "add yourself to the systemd-journal (or adm) group: sudo usermod -aG systemd-journal $USER, "
    "then log in again; or run with sudo"
)


class JournalQuery(Frozen):
    """Which journal, and which part of it."""

    directory: str | None = None
    files: tuple[str, ...] = ()
    host: str | None = None
    boot: str | None = None
    """"0" this boot, "-1" the one before, or a boot id."""
    since: datetime | None = None
    until: datetime | None = None

    @property
    def name(self) -> str:
        if self.files:
            return "journal " + ", ".join(self.files)
        if self.directory:
            return f"journal {self.directory}"
        return "system journal"


class Boot(Frozen):
    index: int
    """0 for the newest, -1 for the one before, as journalctl -b counts."""
    boot_id: str
    first: datetime | None
    last: datetime | None


def system_journal_present() -> bool:
    return any(glob.glob(os.path.join(root, "**", "*.journal"), recursive=True) for root in SYSTEM_JOURNALS)


def journal_folders(directory: str | None, files: tuple[str, ...]) -> dict[str, Iterator[str]]:
    """The folders a read of this journal opens files in, by how they were named (`-D DIR`, or
    the system journal when neither -D nor --journal-file is given), each with the files a reader
    may open there (walked only when asked for): inputs an output must not be."""
    if directory:
        return {f"-D {directory}": journal_files_under(directory)}
    if files:
        return {}
    return {"the system journal": (p for root in SYSTEM_JOURNALS for p in journal_files_under(root))}


def journal_source(query: JournalQuery, zone: tzinfo, prefer: str = "auto") -> Source:
    """systemd-python's reader when it can be imported, else journalctl."""
    _check_readable(query)
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


def _check_readable(query: JournalQuery) -> None:
    paths = list(query.files)
    if query.directory:
        try:
            # stat, not isdir: a folder behind one we may not enter must say "permission denied".
            is_dir = stat.S_ISDIR(os.stat(query.directory).st_mode)
        except PermissionError:
            raise InputError(
                f"cannot read {query.directory}: permission denied", hint=PERMISSION_HINT
            ) from None
        except OSError:
            raise InputError(f"cannot read {query.directory}: no such directory") from None
        if not is_dir:
            raise InputError(
                f"cannot read {query.directory}: not a directory",
                hint="pass the folder that holds *.journal files",
            )
        paths += glob.glob(os.path.join(query.directory, "**", "*.journal*"), recursive=True)
        if not paths:
            raise InputError(f"{query.directory} holds no *.journal files")
    elif not query.files:
        for root in SYSTEM_JOURNALS:
            paths += glob.glob(os.path.join(root, "**", "*.journal"), recursive=True)
    for path in query.files:
        if not os.path.exists(path):
            raise InputError(f"cannot read {path}: no such file")
    if paths and not any(os.access(p, os.R_OK) for p in paths):
        raise InputError(f"cannot read the {query.name}: permission denied", hint=PERMISSION_HINT)


class _JournalSource(Source):
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
        paths = journal_paths(query.directory, query.files)
        self.files = survey(paths, self._kernel_index_broken) if paths else ()
        # libsystemd skips or half-reads a damaged file without a word: say which, before reading.
        # A cut file's problem is said once read, with where it ends.
        for file in self.files:
            if file.problem is not None and not file.cut:
                self.add_problem(file.problem)

    def _kernel_index_broken(self, path: str) -> bool:
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
        if not _is_kernel(transport, identifier) and identifier not in IDENTIFIERS:
            return False
        return (not self.query.host or host == self.query.host) and (boot_id is None or boot == boot_id)

    def _widen(self, host: str, realtime_us: int) -> None:
        wall = _wall(realtime_us, self.zone)
        self._merge_spans({host: (wall, wall)})

    def _said_cut(self, file: JournalFile, last_us: int | None) -> None:
        if not file.cut:
            return
        if last_us is None:
            self.add_problem(f"{file.problem}: no whole entry in it could be read")
        else:
            end = clock_time(_wall(last_us, self.zone))
            self.add_problem(f"{file.problem}: read up to its last whole entry, {end}; what followed is lost")

    def _merge_spans(self, spans: dict[str, tuple[datetime, datetime]]) -> None:
        for host, (first, last) in spans.items():
            known = self._spans.get(host)
            self._spans[host] = (min(first, known[0]), max(last, known[1])) if known else (first, last)


# Entries looked at, from a file's tail, for its last kernel entry (to hold the index against).
LOOK_BACK = 10_000


class JournalReaderSource(_JournalSource):
    """The journal through systemd-python's Reader, with matches so unrelated entries stay encoded."""

    def records(self) -> Iterator[Record]:
        boot_id = _resolve_boot(self.query, list_boots_python(self.query)) if self.query.boot else None
        self._number = 0
        self._boot_ids: dict[str, int] = {}
        self._damaged = [0]
        for whole in self._merged_reads():
            reader = _open_reader(whole)
            _add_matches(reader, self.query, boot_id)
            yield from self._walk(reader, None)
            self._merge_spans(_host_spans_python(reader, whole, boot_id, self.zone))
            reader.close()
        for file, path in self._apart():
            last = None
            if path is not None:
                reader = _open_reader(JournalQuery(files=(path,)))
                last = yield from self._walk(reader, boot_id or "")
                reader.close()
            self._said_cut(file, last)
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
                transport = _field(reader, "_TRANSPORT")
                if apart is not None:
                    host = _field(reader, "_HOSTNAME")
                    boot = _field(reader, "_BOOT_ID") if apart else ""
                    identifier = _field(reader, "SYSLOG_IDENTIFIER")
                    if not self._selected(transport, identifier, host, boot, apart or None):
                        continue
                    self._widen(host, realtime)
                    transport = "kernel" if _is_kernel(transport, identifier) else transport
                number += 1
                last_us = realtime
                if not number & 0xFFFF:
                    self._report(number)
                if _wanted(prefilter, number - start, transport, _field(reader, "MESSAGE")):
                    taken = number
                    yield from journal_records(
                        _entry(reader, self._damaged), self.name, number, self._boot_ids, self.zone
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
                _entry(reader, self._damaged), self.name, number, self._boot_ids, self.zone
            )
        return last_us

    def _kernel_index_broken(self, path: str) -> bool:
        return _kernel_index_broken_python(path)

    def _hosts_of(self, path: str) -> list[str]:
        from systemd import journal

        try:
            with journal.Reader(files=[path]) as reader:
                return [str(host) for host in reader.query_unique("_HOSTNAME")]
        except OSError:
            return []


def _kernel_index_broken_python(path: str) -> bool:
    """Whether a read matching _TRANSPORT=kernel misses the file's last kernel entry: found by
    walking back from its tail, then sought by its cursor through the index (a broken index
    chain, or a damaged `_TRANSPORT=kernel` object, does not lead there)."""
    from systemd import journal

    try:
        walker = journal.Reader(files=[path])
    except OSError:
        return False  # not opened at all: the read says so
    with walker:
        walker.seek_tail()
        for _ in range(LOOK_BACK):
            if not walker._previous():
                return False
            if _is_kernel(_field(walker, "_TRANSPORT"), _field(walker, "SYSLOG_IDENTIFIER")):
                last = walker._get_cursor()
                break
        else:
            return False  # no kernel entry near the tail: nothing to hold the index against
    with journal.Reader(files=[path]) as indexed:
        try:
            indexed.add_match(_TRANSPORT="kernel")
            indexed.seek_cursor(last)
            return not (indexed._next() and indexed._get_cursor() == last)
        except OSError:
            return True


def _is_kernel(transport: str, identifier: str) -> bool:
    """A kernel entry; one whose _TRANSPORT object is damaged (so the field reads as absent) by
    the identifier the kernel's entries carry."""
    return transport == "kernel" or (not transport and identifier == "kernel")


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
        _add_matches(reader, replace(query, host=host), boot_id)
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
        spans[host] = (_wall(first, zone), _wall(reader._get_realtime(), zone))
    return spans


def _wall(realtime_us: int, zone: tzinfo) -> datetime:
    return datetime.fromtimestamp(realtime_us / 1_000_000, zone)


def _field(reader: Any, name: str) -> str:
    try:
        value = reader._get(name)
    except KeyError:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _entry(reader: Any, damaged: list[int] | None = None) -> dict[str, Any]:
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


def _wanted(prefilter: Prefilter, number: int, transport: str, message: str) -> bool:
    """The first entry of a read (`number` counts within it), every userspace record (they are
    few), and kernel lines the prefilter keeps."""
    if transport != "kernel":
        return True
    wanted = prefilter.wants(message)
    return wanted or number == 1


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


def _open_reader(query: JournalQuery) -> Any:
    from systemd import journal

    try:
        if query.files:
            return journal.Reader(files=list(query.files), converters=_CONVERTERS)
        if query.directory:
            return journal.Reader(path=query.directory, converters=_CONVERTERS)
        return journal.Reader(flags=journal.SYSTEM, converters=_CONVERTERS)
    except PermissionError:
        raise InputError(f"cannot read the {query.name}: permission denied", hint=PERMISSION_HINT) from None
    except OSError as error:
        raise InputError(f"cannot open the {query.name}: {error.strerror or error}") from None


def _add_matches(reader: Any, query: JournalQuery, boot_id: str | None) -> None:
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
    reader = _open_reader(query)
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
            found.append((boot_id, _realtime(first), _realtime(last)))
    reader.close()
    return _numbered_boots(found)


def _realtime(entry: dict[str, Any] | None) -> datetime | None:
    if not entry or not str(entry.get("__REALTIME_TIMESTAMP", "")).isdigit():
        return None
    return datetime.fromtimestamp(int(entry["__REALTIME_TIMESTAMP"]) / 1_000_000).astimezone()


def _numbered_boots(found: list[tuple[str, datetime | None, datetime | None]]) -> list[Boot]:
    ordered = sorted(found, key=lambda b: b[1].timestamp() if b[1] else 0.0)
    count = len(ordered)
    return [Boot(i - count + 1, boot_id, first, last) for i, (boot_id, first, last) in enumerate(ordered)]


def _resolve_boot(query: JournalQuery, boots: list[Boot]) -> str:
    wanted = (query.boot or "").replace("-", "") if not (query.boot or "").lstrip("-").isdigit() else None
    for boot in boots:
        if wanted is not None and boot.boot_id == wanted.lower():
            return boot.boot_id
        if wanted is None and query.boot is not None and boot.index == int(query.boot):
            return boot.boot_id
    known = ", ".join(f"{b.index} ({b.boot_id[:8]})" for b in boots) or "none"
    raise UsageError(
        f"no boot {query.boot!r} in the {query.name}", hint=f"boots there: {known}; see list --boots"
    )


class JournalctlSource(_JournalSource):
    """The journal through `journalctl -o json`, for machines without systemd-python."""

    def records(self) -> Iterator[Record]:
        self._number = 0
        self._boot_ids: dict[str, int] = {}
        reads = self._merged_reads()
        boot = self._boot_argv(len(reads) > 1)
        range_argv = _range_argv(self.query.since, self.query.until)
        for whole in reads:
            command = [*_journalctl(whole), *_JSON_ARGV, *_matches_argv(self.query.host), *boot, *range_argv]
            before = self._number
            yield from self._run(command, whole, None)
            if self._number > before:
                self._merge_spans(self._host_spans(whole, boot))
        boot_id = None
        for file, path in self._apart():
            last = None
            if path is not None:
                if self.query.boot and boot_id is None:
                    boot_id = _resolve_boot(self.query, list_boots_journalctl(self.query))
                command = [*_journalctl(JournalQuery(files=(path,))), *_JSON_ARGV, *range_argv]
                last = yield from self._run(command, JournalQuery(files=(file.path,)), boot_id or "")
            self._said_cut(file, last)
        self.lines_read = self._number
        self.host_spans = self._spans

    def _run(
        self, command: list[str], query: JournalQuery, apart: str | None
    ) -> Generator[Record, None, int | None]:
        """One journalctl read, merged (apart None: its matches select) or of one file apart
        (every entry selected here; `apart` the boot id asked for, or ""). Returns the time of
        the last entry read."""
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace"
        )
        assert process.stdout is not None and process.stderr is not None
        prefilter = Prefilter()
        start = number = self._number
        taken = 0
        last = ""
        last_us = None
        for line in process.stdout:
            kernel = _KERNEL_FIELD in line
            if apart is not None:
                entry = load_object(line)
                if entry is None or not self._selected(
                    str(entry.get("_TRANSPORT", "")),
                    str(entry.get("SYSLOG_IDENTIFIER", "")),
                    host := str(entry.get("_HOSTNAME", "")),
                    str(entry.get("_BOOT_ID", "")),
                    apart or None,
                ):
                    continue
                if str(entry.get("__REALTIME_TIMESTAMP", "")).isdigit():
                    last_us = int(entry["__REALTIME_TIMESTAMP"])
                    self._widen(host, last_us)
            number += 1
            last = line
            if not number & 0xFFFF:
                self._report(number)
            # An entry with no anchor anywhere in its JSON has none in its message either: skip
            # it before parsing, unless a report is open (then the prefilter must see it).
            if kernel and number > start + 1 and not prefilter.in_region and not holds_anchor(line):
                continue
            entry = load_object(line)
            if entry is None:
                continue
            text = journal_message(entry.get("MESSAGE"))
            if _wanted(prefilter, number - start, "kernel" if kernel else "", text):
                taken = number
                yield from journal_records(entry, self.name, number, self._boot_ids, self.zone)
        if number > start and taken != number:
            entry = load_object(last)
            if entry is not None:
                yield from journal_records(entry, self.name, number, self._boot_ids, self.zone)
        self._number = number
        error = process.stderr.read()
        code = process.wait()
        if code != 0 and number == start and query == self.query:
            _journalctl_failed(query, error)
        # A damaged entry ("Invalid field.") ends journalctl's output: what followed is lost.
        # A file it ignores is said already (journalfiles.survey). One read of several is named.
        where = f"after entry {number:,}"
        if query != self.query:
            where = (
                f"in {', '.join(os.path.basename(f) for f in query.files)}, after {number - start:,} entries"
            )
        for complaint in error.splitlines():
            if complaint.strip() and "ignoring file" not in complaint:
                self.add_problem(f"journalctl: {complaint.strip()} ({where}; what followed is lost)")
        return last_us

    def _boot_argv(self, in_parts: bool) -> list[str]:
        if self.query.boot and (self.query.host or in_parts) and self.query.boot.lstrip("-").isdigit():
            # `-b -1` counts the boots of every host in the store (or of the files in one read):
            # resolve it among this host's, or the whole store's.
            return ["-b", _resolve_boot(self.query, list_boots_journalctl(self.query))]
        return ["-b", self.query.boot] if self.query.boot else []

    def _host_spans(self, whole: JournalQuery, boot: list[str]) -> dict[str, tuple[datetime, datetime]]:
        """Each host's first and last entry among those read: journalctl's first line each way."""
        if self.query.host:
            hosts = [self.query.host]
        else:
            listed = subprocess.run(
                [*_journalctl(whole), "-F", "_HOSTNAME"],
                capture_output=True,
                text=True,
                errors="replace",
                check=False,
            )
            hosts = sorted(h for h in listed.stdout.splitlines() if h)
        spans = {}
        for host in hosts:
            command = [*_journalctl(whole), "-o", "json", "--output-fields=__REALTIME_TIMESTAMP"]
            command += _matches_argv(host) + boot + _range_argv(self.query.since, self.query.until)
            first, last = _time_of(_first_line(command)), _time_of(_first_line([*command, "--reverse"]))
            if first is not None and last is not None:
                spans[host] = (first.astimezone(self.zone), last.astimezone(self.zone))
        return spans

    def _hosts_of(self, path: str) -> list[str]:
        command = [*_journalctl(JournalQuery(files=(path,))), "-F", "_HOSTNAME"]
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", check=False)
        return [host for host in done.stdout.splitlines() if host]

    def _kernel_index_broken(self, path: str) -> bool:
        """As _kernel_index_broken_python, with journalctl: the last kernel entry of a walk back
        from the tail, then the first entry from its cursor matching _TRANSPORT=kernel."""
        base = [*_journalctl(JournalQuery(files=(path,))), "-o", "json"]
        fields = "--output-fields=_TRANSPORT,SYSLOG_IDENTIFIER"
        last = _first_line([*base, fields, "--reverse"], _kernel_line, LOOK_BACK)
        if last is None:
            return False  # no kernel entry near the tail: nothing to hold the index against
        cursor = _cursor(last)
        found = _first_line([*base, fields, f"--cursor={cursor}", "_TRANSPORT=kernel"])
        return found is None or _cursor(found) != cursor


def _kernel_line(line: str) -> bool:
    return _KERNEL_FIELD in line or ('"_TRANSPORT"' not in line and '"SYSLOG_IDENTIFIER":"kernel"' in line)


def _first_line(
    command: list[str], wanted: Callable[[str], bool] = lambda line: True, at_most: int = 1
) -> str | None:
    """The first of journalctl's first `at_most` lines that is wanted; journalctl is stopped there."""
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace"
    ) as process:
        assert process.stdout is not None
        found = None
        for count, line in enumerate(process.stdout, start=1):
            if wanted(line):
                found = line
                break
            if count >= at_most:
                break
        process.kill()
    return found


def _time_of(line: str | None) -> datetime | None:
    return _realtime(load_object(line)) if line else None


def _cursor(line: str) -> str | None:
    entry = load_object(line)
    return str(entry.get("__CURSOR")) if entry is not None else None


_KERNEL_FIELD = '"_TRANSPORT":"kernel"'
# What the records need; journalctl adds __REALTIME_TIMESTAMP, __MONOTONIC_TIMESTAMP and _BOOT_ID.
_OUTPUT_FIELDS = (
    "MESSAGE",
    "_TRANSPORT",
    "SYSLOG_IDENTIFIER",
    "_HOSTNAME",
    "_BOOT_ID",
    "_SOURCE_MONOTONIC_TIMESTAMP",
)
_JSON_ARGV = ("-o", "json", f"--output-fields={','.join(_OUTPUT_FIELDS)}", "--no-pager")


def _journalctl(query: JournalQuery) -> list[str]:
    binary = shutil.which("journalctl")
    if binary is None:
        raise InputError(
            "journalctl is not installed", hint="pip install 'oomtrace[journal]', or pass -k FILE"
        )
    command = [binary]
    if query.directory:
        command += ["-D", query.directory]
    for path in query.files:
        command += ["--file", path]
    return command


def _range_argv(since: datetime | None, until: datetime | None) -> list[str]:
    """journalctl's --since/--until for a range, to the microsecond (`@EPOCH`)."""
    argv = ["--since", f"@{since.timestamp():.6f}"] if since is not None else []
    return argv + (["--until", f"@{until.timestamp():.6f}"] if until is not None else [])


def _matches_argv(host: str | None) -> list[str]:
    """journalctl's match syntax: terms in a group are ANDed, `+` ORs the groups."""
    scope = [f"_HOSTNAME={host}"] if host else []
    return [*scope, "_TRANSPORT=kernel", "+", *scope, *(f"SYSLOG_IDENTIFIER={i}" for i in IDENTIFIERS)]


def _journalctl_failed(query: JournalQuery, error: str) -> None:
    reason = error.strip().splitlines()[-1] if error.strip() else "failed"
    if "No journal files were found" in error or "No entries" in error:
        return
    if "ermission" in error:
        raise InputError(f"cannot read the {query.name}: {reason}", hint=PERMISSION_HINT)
    if "boot" in reason.lower():
        raise UsageError(f"journalctl: {reason}", hint="see oomtrace list --boots")
    raise InputError(f"journalctl failed: {reason}")


def list_boots_journalctl(query: JournalQuery) -> list[Boot]:
    command = [*_journalctl(query), "--list-boots", "--no-pager"]
    done = subprocess.run(command, capture_output=True, text=True, errors="replace", check=False)
    if done.returncode != 0:
        _journalctl_failed(query, done.stderr)
        return []
    boots = []
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) < 2 or not parts[0].lstrip("-").isdigit():
            continue
        index, boot_id = int(parts[0]), parts[1]
        rest = " ".join(parts[2:])
        first, last = _boot_span(rest)
        boots.append(Boot(index, boot_id, first, last))
    if query.host:
        # --list-boots takes no matches: keep the boots the host has entries in, numbered among
        # themselves, as the python reader does.
        return _numbered_boots(
            [(b.boot_id, *span) for b in boots if (span := _host_boot_span(query, b.boot_id)) is not None]
        )
    return boots


def _host_boot_span(query: JournalQuery, boot_id: str) -> tuple[datetime | None, datetime | None] | None:
    """The first and last entry time of one host in one boot, or None if it has none there."""
    times = []
    for order in (["--reverse"], []):
        command = [
            *_journalctl(query),
            "-o",
            "json",
            "-n",
            "1",
            *order,
            "--output-fields=__REALTIME_TIMESTAMP",
        ]
        command += [f"_BOOT_ID={boot_id}", f"_HOSTNAME={query.host}"]
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", check=False)
        line = done.stdout.strip().splitlines()[:1]
        if done.returncode != 0 or not line:
            return None
        try:
            times.append(_realtime(json.loads(line[0])))
        except ValueError:
            return None
    return times[0], times[1]


def _boot_span(text: str) -> tuple[datetime | None, datetime | None]:
    # "Sat 2026-11-14 12:58:03 UTC Sat 2026-11-14 13:14:02 UTC" (or with an em dash between).
    halves = text.replace("—", " ").split()
    if len(halves) < 8:
        return None, None
    try:
        return parse_date(" ".join(halves[1:4])), parse_date(" ".join(halves[5:8]))
    except (ParserError, ValueError, ArithmeticError):  # dateutil: OverflowError, decimal errors
        return None, None


def list_boots(query: JournalQuery) -> list[Boot]:
    _check_readable(query)
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
        _unit_entries_python(query, field, unit, since, until)
        if python
        else _unit_entries_journalctl(query, field, unit, since, until)
    )
    for entry in entries:
        for record in journal_records(entry, unit, 0, {}, zone):
            yield record.message, record.stamp.wall


def _unit_entries_python(
    query: JournalQuery, field: str, unit: str, since: datetime | None, until: datetime | None
) -> Iterator[dict[str, Any]]:
    reader = _open_reader(query)
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
            yield _entry(reader)
    finally:
        reader.close()


def _unit_entries_journalctl(
    query: JournalQuery, field: str, unit: str, since: datetime | None, until: datetime | None
) -> Iterator[dict[str, Any]]:
    command = [*_journalctl(query), "-o", "json", "--no-pager", f"{field}={unit}"]
    if query.host:
        command.append(f"_HOSTNAME={query.host}")
    command += _range_argv(since, until)
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace"
    )
    assert process.stdout is not None
    try:
        for line in process.stdout:
            entry = load_object(line) if line.startswith("{") else None
            if entry is not None:
                yield entry
    finally:
        process.stdout.close()
        process.wait()
