"""The systemd journal: live, copied (-D / --file), multi-boot and multi-host.

Read through systemd-python when it is installed (the `journal` extra), else through
`journalctl -o json`; both turn each entry into the same records.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import shutil
import stat
import struct
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any

from dateutil.parser import ParserError
from dateutil.parser import parse as parse_date

from oomtrace.errors import InputError, UsageError
from oomtrace.jsonshapes import load_object
from oomtrace.prefilter import Prefilter, holds_anchor
from oomtrace.prefixes import journal_message, journal_records
from oomtrace.records import Record
from oomtrace.sources.base import Source

# Besides the kernel's records, these identifiers say why a process died.
IDENTIFIERS = ("systemd", "systemd-oomd", "earlyoom", "nohang", "lmkd", "systemd-journald")
SYSTEM_JOURNALS = ("/var/log/journal", "/run/log/journal")
PERMISSION_HINT = (
    "add yourself to the systemd-journal (or adm) group: sudo usermod -aG systemd-journal $USER, "
    "then log in again; or run with sudo"
)


_JOURNAL_SIGNATURE = b"LPKSHHRH"


@dataclass(frozen=True, slots=True)
class JournalQuery:
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


@dataclass(frozen=True, slots=True)
class Boot:
    index: int
    """0 for the newest, -1 for the one before, as journalctl -b counts."""
    boot_id: str
    first: datetime | None
    last: datetime | None


def system_journal_present() -> bool:
    return any(glob.glob(os.path.join(root, "**", "*.journal"), recursive=True) for root in SYSTEM_JOURNALS)


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
    """What both journal readers share: the query, the zone, and the count of entries read."""

    kind = "journal"
    lines_read: int | None = None
    """Entries read (the prefilter lets only some through as records)."""

    def __init__(self, query: JournalQuery, zone: tzinfo) -> None:
        self.query = query
        self.zone = zone
        self.name = query.name
        # Both readers skip a damaged file without a word: say which ones, before reading.
        for problem in file_problems(query):
            self.add_problem(problem)


# A journal file's header: its size at byte 88 and its arena's at 96 (systemd's journal-def.h).
_HEADER = struct.Struct("<8s80xQQ")


def file_problems(query: JournalQuery) -> list[str]:
    """What is wrong with the journal files a query reads (a directory's or the ones named):
    unreadable, not a journal, or cut short (smaller than its header says). A file found
    damaged is still read as far as systemd reads it; the problem goes to the summary."""
    if query.files:
        paths = list(query.files)
    elif query.directory:
        paths = sorted(
            glob.glob(os.path.join(glob.escape(query.directory), "**", "*.journal*"), recursive=True)
        )
    else:
        return []
    problems = []
    for path in paths:
        name = os.path.basename(path)
        try:
            with open(path, "rb") as file:
                head = file.read(_HEADER.size)
                size = os.fstat(file.fileno()).st_size
        except OSError as error:
            problems.append(f"{name} skipped: {error.strerror or error}")
            continue
        if len(head) < _HEADER.size or not head.startswith(_JOURNAL_SIGNATURE):
            problems.append(f"{name} skipped: not a journal file")
            continue
        _, header_size, arena_size = _HEADER.unpack(head)
        if size < header_size + arena_size:
            problems.append(
                f"{name} is cut short ({size:,} of {header_size + arena_size:,} bytes): "
                "its entries past the cut are lost"
            )
    return problems


class JournalReaderSource(_JournalSource):
    """The journal through systemd-python's Reader, with matches so unrelated entries stay encoded."""

    def records(self) -> Iterator[Record]:
        reader = _open_reader(self.query)
        boot_id = _resolve_boot(self.query, list_boots_python(self.query)) if self.query.boot else None
        _add_matches(reader, self.query, boot_id)
        if self.query.since is not None:
            reader.seek_realtime(self.query.since)
        until_us = int(self.query.until.timestamp() * 1_000_000) if self.query.until else None
        boot_ids: dict[str, int] = {}
        prefilter = Prefilter()
        number = 0
        taken = 0
        damaged = [0]
        # _next/_get read one field without decoding the entry: most kernel entries are noise.
        past_until = False
        while reader._next():
            if until_us is not None and reader._get_realtime() > until_us:
                past_until = True
                break
            number += 1
            if not number & 0xFFFF:
                self._report(number)
            if _wanted(prefilter, number, _field(reader, "_TRANSPORT"), _field(reader, "MESSAGE")):
                taken = number
                yield from journal_records(_entry(reader, damaged), self.name, number, boot_ids, self.zone)
        if number and taken != number:
            # The last entry too, so the span the report states is the journal's whole span. At
            # the end, libsystemd stays on the last entry and a step back would go one too far.
            if past_until:
                reader._previous()
            else:
                reader.seek_tail()
                reader._previous()
            yield from journal_records(_entry(reader, damaged), self.name, number, boot_ids, self.zone)
        self.lines_read = number
        self.host_spans = _host_spans_python(reader, self.query, boot_id, self.zone)
        reader.close()
        if damaged[0]:
            self.add_problem(f"{damaged[0]:,} entries with a damaged field were read without it")


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
        _add_matches(reader, dataclasses.replace(query, host=host), boot_id)
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
    """The first entry, every userspace record (they are few), and kernel lines the prefilter keeps."""
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
        fields = ",".join(_OUTPUT_FIELDS)
        command = [*_journalctl(self.query), "-o", "json", f"--output-fields={fields}", "--no-pager"]
        boot = self._boot_argv()
        command += _matches_argv(self.query.host) + boot + _range_argv(self.query.since, self.query.until)
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace"
        )
        assert process.stdout is not None and process.stderr is not None
        boot_ids: dict[str, int] = {}
        prefilter = Prefilter()
        number = 0
        taken = 0
        last = ""
        for line in process.stdout:
            number += 1
            last = line
            if not number & 0xFFFF:
                self._report(number)
            kernel = _KERNEL_FIELD in line
            # An entry with no anchor anywhere in its JSON has none in its message either: skip
            # it before parsing, unless a report is open (then the prefilter must see it).
            if kernel and number > 1 and not prefilter.in_region and not holds_anchor(line):
                continue
            entry = load_object(line)
            if entry is None:
                continue
            text = journal_message(entry.get("MESSAGE"))
            if _wanted(prefilter, number, "kernel" if kernel else "", text):
                taken = number
                yield from journal_records(entry, self.name, number, boot_ids, self.zone)
        if number and taken != number:
            entry = load_object(last)
            if entry is not None:
                yield from journal_records(entry, self.name, number, boot_ids, self.zone)
        self.lines_read = number
        error = process.stderr.read()
        code = process.wait()
        if code != 0 and number == 0:
            _journalctl_failed(self.query, error)
        if number:
            self.host_spans = self._host_spans(boot)
        # A damaged entry ("Invalid field.") ends journalctl's output: what followed is lost.
        # A cut file it ignores is said already (file_problems).
        for complaint in error.splitlines():
            if complaint.strip() and "ignoring file" not in complaint:
                self.add_problem(
                    f"journalctl: {complaint.strip()} (after entry {number:,}; what followed is lost)"
                )


    def _boot_argv(self) -> list[str]:
        if self.query.boot and self.query.host and self.query.boot.lstrip("-").isdigit():
            # `-b -1` counts the boots of every host in the store: resolve it among this host's.
            return ["-b", _resolve_boot(self.query, list_boots_journalctl(self.query))]
        return ["-b", self.query.boot] if self.query.boot else []

    def _host_spans(self, boot: list[str]) -> dict[str, tuple[datetime, datetime]]:
        """Each host's first and last entry among those read: journalctl's first line each way."""
        if self.query.host:
            hosts = [self.query.host]
        else:
            listed = subprocess.run(
                [*_journalctl(self.query), "-F", "_HOSTNAME"],
                capture_output=True,
                text=True,
                errors="replace",
                check=False,
            )
            hosts = sorted(h for h in listed.stdout.splitlines() if h)
        spans = {}
        for host in hosts:
            command = [*_journalctl(self.query), "-o", "json", "--output-fields=__REALTIME_TIMESTAMP"]
            command += _matches_argv(host) + boot + _range_argv(self.query.since, self.query.until)
            first, last = _first_entry(command), _first_entry([*command, "--reverse"])
            if first is not None and last is not None:
                spans[host] = (first.astimezone(self.zone), last.astimezone(self.zone))
        return spans


def _first_entry(command: list[str]) -> datetime | None:
    """The time of the first entry journalctl prints; it is stopped there."""
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace"
    ) as process:
        assert process.stdout is not None
        line = process.stdout.readline()
        process.kill()
    entry = load_object(line) if line.startswith("{") else None
    return _realtime(entry)


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
    except (ParserError, ValueError, OverflowError):
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
