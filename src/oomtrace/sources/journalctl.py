"""The journal read through `journalctl -o json`, for machines without systemd-python."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Generator, Iterator
from datetime import datetime
from typing import Any

from dateutil.parser import ParserError
from dateutil.parser import parse as parse_date

from oomtrace.errors import InputError, UsageError
from oomtrace.frozen import replace
from oomtrace.jsonshapes import load_object
from oomtrace.prefilter import Prefilter, holds_anchor
from oomtrace.prefixes import journal_message, journal_records
from oomtrace.records import Record
from oomtrace.sources.journalbase import LOOK_BACK, BaseJournalSource
from oomtrace.sources.journalfiles import KernelTail
from oomtrace.sources.journalquery import (
    IDENTIFIERS,
    PERMISSION_HINT,
    Boot,
    JournalQuery,
    numbered_boots,
    realtime_of,
    resolve_boot,
    wanted_entry,
)


class JournalctlSource(BaseJournalSource):
    """The journal through `journalctl -o json`, for machines without systemd-python."""

    def records(self) -> Iterator[Record]:
        self._number = 0
        self._boot_ids: dict[str, int] = {}
        reads = self._merged_reads()
        boot = self._boot_argv(len(reads) > 1)
        range_argv = time_range_argv(self.query.since, self.query.until)
        for whole in reads:
            command = [
                *journalctl_argv(whole),
                *_JSON_ARGV,
                *matches_argv(self.query.host),
                *boot,
                *range_argv,
            ]
            before = self._number
            last = yield from self._run(command, whole, None)
            self._said_unreached(self._files_of(whole), last, _boot_id(boot))
            if self._number > before:
                self._merge_spans(self._host_spans(whole, boot))
        boot_id = None
        for file, path in self._apart():
            last = None
            if path is not None:
                if self.query.boot and boot_id is None:
                    boot_id = resolve_boot(self.query, list_boots_journalctl(self.query))
                command = [*journalctl_argv(JournalQuery(files=(path,))), *_JSON_ARGV, *range_argv]
                last = yield from self._run(command, JournalQuery(files=(file.path,)), boot_id or "")
            self._said_cut(file, last)
            self._said_unreached([file], last, boot_id)
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
            if wanted_entry(prefilter, number - start, "kernel" if kernel else "", text):
                taken = number
                yield from journal_records(entry, self.name, number, self._boot_ids, self.zone)
        if apart is None and number > start:
            # journalctl prints in time order: its last entry is the last time read.
            stamp = str((load_object(last) or {}).get("__REALTIME_TIMESTAMP", ""))
            last_us = int(stamp) if stamp.isdigit() else None
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
            return ["-b", resolve_boot(self.query, list_boots_journalctl(self.query))]
        return ["-b", self.query.boot] if self.query.boot else []

    def _host_spans(self, whole: JournalQuery, boot: list[str]) -> dict[str, tuple[datetime, datetime]]:
        """Each host's first and last entry among those read: journalctl's first line each way."""
        if self.query.host:
            hosts = [self.query.host]
        else:
            listed = subprocess.run(
                [*journalctl_argv(whole), "-F", "_HOSTNAME"],
                capture_output=True,
                text=True,
                errors="replace",
                check=False,
            )
            hosts = sorted(h for h in listed.stdout.splitlines() if h)
        spans = {}
        for host in hosts:
            command = [*journalctl_argv(whole), "-o", "json", "--output-fields=__REALTIME_TIMESTAMP"]
            command += matches_argv(host) + boot + time_range_argv(self.query.since, self.query.until)
            first, last = _time_of(_first_line(command)), _time_of(_first_line([*command, "--reverse"]))
            if first is not None and last is not None:
                spans[host] = (first.astimezone(self.zone), last.astimezone(self.zone))
        return spans

    def _hosts_of(self, path: str) -> list[str]:
        command = [*journalctl_argv(JournalQuery(files=(path,))), "-F", "_HOSTNAME"]
        done = subprocess.run(command, capture_output=True, text=True, errors="replace", check=False)
        return [host for host in done.stdout.splitlines() if host]

    def _kernel_tail(self, path: str) -> KernelTail | None:
        """As _kernel_tail_python, with journalctl: the last kernel entry of a walk back from
        the tail, then the first entry from its cursor matching _TRANSPORT=kernel."""
        base = [*journalctl_argv(JournalQuery(files=(path,))), "-o", "json"]
        fields = "--output-fields=_TRANSPORT,SYSLOG_IDENTIFIER,_HOSTNAME"
        last = _first_line([*base, fields, "--reverse"], _kernel_line, LOOK_BACK)
        entry = load_object(last) if last is not None else None
        if entry is None or not str(entry.get("__REALTIME_TIMESTAMP", "")).isdigit():
            return None  # no kernel entry near the tail: nothing to hold the index against
        cursor = str(entry.get("__CURSOR"))
        tail = KernelTail(
            int(entry["__REALTIME_TIMESTAMP"]),
            str(entry.get("_HOSTNAME", "")),
            str(entry.get("_BOOT_ID", "")),
        )
        found = _first_line([*base, fields, f"--cursor={cursor}", "_TRANSPORT=kernel"])
        return tail if found is not None and _cursor(found) == cursor else replace(tail, indexed=False)


def _boot_id(boot: list[str]) -> str | None:
    """The boot id a read's `-b` names, when it names one (not a number like -1)."""
    named = boot[1] if len(boot) == 2 else ""
    return named if len(named) == 32 and all(c in "0123456789abcdef" for c in named) else None


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
    return realtime_of(load_object(line)) if line else None


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
    # Who wrote a killer's record (prefixes.journal.sender_of): fields its sender cannot set.
    "_UID",
    "_COMM",
    "_PID",
    "_SYSTEMD_UNIT",
)
_JSON_ARGV = ("-o", "json", f"--output-fields={','.join(_OUTPUT_FIELDS)}", "--no-pager")


def journalctl_argv(query: JournalQuery) -> list[str]:
    binary = shutil.which("journalctl")
    if binary is None:
        raise InputError(
            "journalctl is not installed", hint="pip install 'oomtrace[journal]', or pass -k FILE"
        )
    # Absolute paths: `journalctl -f --file a.journal` (a bare name) fails "Failed to get journal
    # fd: Destination address required" and exits 0, as systemd-python's reader does (its watch
    # of the file's folder "" fails).
    command = [binary]
    if query.directory:
        command += ["-D", os.path.abspath(query.directory)]
    for path in query.files:
        command += ["--file", os.path.abspath(path)]
    return command


def time_range_argv(since: datetime | None, until: datetime | None) -> list[str]:
    """journalctl's --since/--until for a range, to the microsecond (`@EPOCH`)."""
    argv = ["--since", f"@{since.timestamp():.6f}"] if since is not None else []
    return argv + (["--until", f"@{until.timestamp():.6f}"] if until is not None else [])


def matches_argv(host: str | None) -> list[str]:
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
    command = [*journalctl_argv(query), "--list-boots", "--no-pager"]
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
        return numbered_boots(
            [(b.boot_id, *span) for b in boots if (span := _host_boot_span(query, b.boot_id)) is not None]
        )
    return boots


def _host_boot_span(query: JournalQuery, boot_id: str) -> tuple[datetime | None, datetime | None] | None:
    """The first and last entry time of one host in one boot, or None if it has none there."""
    times = []
    for order in (["--reverse"], []):
        command = [
            *journalctl_argv(query),
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
            times.append(realtime_of(json.loads(line[0])))
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


def unit_entries_journalctl(
    query: JournalQuery, field: str, unit: str, since: datetime | None, until: datetime | None
) -> Iterator[dict[str, Any]]:
    command = [*journalctl_argv(query), "-o", "json", "--no-pager", f"{field}={unit}"]
    if query.host:
        command.append(f"_HOSTNAME={query.host}")
    command += time_range_argv(since, until)
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
