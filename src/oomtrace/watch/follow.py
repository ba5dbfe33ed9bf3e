"""Live followers of the kernel log: the journal (systemd-python, else `journalctl -f`) and
`/dev/kmsg`. Each hands the watcher records as they arrive, with a cursor to resume after.

The journal's two followers live here; the kmsg follower in kmsgfollow.py, and Batch and the
Follower seam in batch.py, re-exported here for older imports.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import subprocess
import time
from datetime import UTC, datetime, tzinfo

from oomtrace.errors import InputError
from oomtrace.jsonshapes import load_object
from oomtrace.prefilter import Prefilter, anchored
from oomtrace.prefixes import journal_message, journal_records
from oomtrace.records import Record
from oomtrace.sources.journalctl import journalctl_argv, matches_argv
from oomtrace.sources.journalpython import add_matches, current_entry, entry_field, open_reader
from oomtrace.sources.journalquery import JournalQuery
from oomtrace.watch.batch import BOOT_ID, Batch, Follower, current_boot_id
from oomtrace.watch.kmsgfollow import KMSG, KmsgFollower

__all__ = [
    "BOOT_ID",
    "KMSG",
    "Batch",
    "Follower",
    "JournalReaderFollower",
    "JournalctlFollower",
    "KmsgFollower",
    "current_boot_id",
]


class _JournalFollower(Follower):
    """What both journal readers keep: the entries' numbering and boots, the cursor of the last
    entry read, and the gap to say once, in the next batch."""

    kind = "journal"
    name = "journal"

    def __init__(self, zone: tzinfo, cursor: str | None) -> None:
        self.zone = zone
        self._cursor = cursor
        self._boot_ids: dict[str, int] = {}
        self._number = 0
        self._lost, self._lost_why = 0, ""

        self._records: list[Record] = []
        self._befores: list[str | None] = []
        self._prefilter = Prefilter()

    def _wanted(self, kernel: bool, message: str) -> bool:
        """Every userspace entry (they are few); kernel lines the prefilter keeps."""
        return not kernel or self._prefilter.wants(message)

    def _skip(self, cursor: str | None) -> None:
        """An entry the prefilter does not want: numbered and passed, never decoded whole."""
        self._number += 1
        self._cursor = cursor or self._cursor

    def _add(self, entry: dict[str, object], cursor: str | None) -> None:
        """The entry's records, each to be read again from the position before the entry."""
        self._number += 1
        records = journal_records(entry, "journal", self._number, self._boot_ids, self.zone)
        self._records += records
        self._befores += [self._cursor] * len(records)
        self._cursor = cursor or self._cursor

    def _batch(self) -> Batch:
        lost, why = self._lost, self._lost_why
        self._lost, self._lost_why = 0, ""
        records, befores = tuple(self._records), tuple(self._befores)
        self._records, self._befores = [], []
        return Batch(records, self._cursor, lost, why, befores)


class JournalReaderFollower(_JournalFollower):
    """The journal through systemd-python's Reader: kernel entries and the userspace killers'."""

    def __init__(self, query: JournalQuery, zone: tzinfo, cursor: str | None = None) -> None:
        super().__init__(zone, cursor)
        self.reader = open_reader(query)
        add_matches(self.reader, query, None)
        self._pending = False
        """The reader stands on an entry not yet read (the first after a vacuumed cursor)."""
        resumed = rejected = False
        if cursor:
            try:
                self.reader.seek_cursor(cursor)
                # seek_cursor lands where the entry was; test_cursor says whether it is still there.
                if self.reader._next():
                    resumed = bool(self.reader.test_cursor(cursor))
                    self._pending = not resumed
            except ValueError:  # "Invalid cursor": not a cursor sd_journal can parse
                rejected = True
            except OSError:
                self.reader.seek_head()
            if rejected:
                self._cursor = None
                self._seek_now()
                self._lost = -1
                self._lost_why = "the journal rejects the saved cursor as invalid: started from now"
            elif not resumed:
                missed = _entries_between(cursor, self.reader._get_cursor() if self._pending else None)
                self._lost = missed if missed is not None else -1
                self._lost_why = "the cursor's entry is gone (vacuumed or rotated away)"
        else:
            self._seek_now()
        where = "from now on"
        if rejected:
            where = "from now on (the saved cursor was invalid)"
        elif cursor:
            where = "after the saved cursor" if resumed else "from where the cursor was"
        self.description = f"the {query.name} through systemd-python, {where}"
        self.reader.get_events()  # sets up the inotify watches before the first poll

    def _seek_now(self) -> None:
        self.reader.seek_tail()
        # After seek_tail the reader sits past the end; without a step back it misses new entries.
        # The entry stepped back to is where the position starts (a kill read first is held
        # behind it, so a watcher killed before telling it tells it after a restart).
        if self.reader.get_previous():
            with contextlib.suppress(OSError):
                self._cursor = self.reader._get_cursor()

    def fileno(self) -> int:
        return int(self.reader.fileno())

    def read(self) -> Batch:
        reader = self.reader
        reader.process()
        # _next/_get read one field without decoding the entry: most kernel entries are noise.
        while self._pending or reader._next():
            self._pending = False
            kernel = entry_field(reader, "_TRANSPORT") == "kernel"
            if self._wanted(kernel, entry_field(reader, "MESSAGE")):
                self._add(current_entry(reader), reader._get_cursor())
            else:
                self._skip(reader._get_cursor())
        return self._batch()

    def close(self) -> None:
        self.reader.close()


class FollowerEnded(InputError):
    """The program a follower reads ended. `by_signal`: killed by a signal, as `systemctl stop`
    and Ctrl-C end the whole group at once, so the watcher's own signal may be a moment behind."""

    def __init__(self, message: str, by_signal: bool) -> None:
        super().__init__(message)
        self.by_signal = by_signal


class JournalctlFollower(_JournalFollower):
    """`journalctl -f -o json --all` (`-o json` drops fields over 4 KiB without `--all`), for
    machines without systemd-python."""

    def __init__(self, query: JournalQuery, zone: tzinfo, cursor: str | None = None) -> None:
        super().__init__(zone, cursor)
        self.query = query
        self._buffer = b""
        self.process = self._start(["--after-cursor", cursor] if cursor else ["-n", "0"])
        if cursor and _exits_soon(self.process):
            # A cursor journalctl cannot seek to: resume at its time (cursors carry it as t=).
            since = _cursor_time(cursor)
            at = datetime.fromtimestamp(since, UTC).isoformat(timespec="seconds") if since else ""
            where = f"resumed at its time, {at}" if since else "started from now"
            self._lost, self._lost_why = -1, f"journalctl could not seek to the saved cursor: {where}"
            self.process = self._start(["--since", f"@{since}"] if since else ["-n", "0"])
        how = "after the saved cursor" if cursor and not self._lost else "from now on"
        self.description = f"the {query.name} through journalctl -f, {how}"

    def _start(self, position: list[str]) -> subprocess.Popen[bytes]:
        command = [*journalctl_argv(self.query), "-f", "-o", "json", "--all", "--no-pager", *position]
        command += matches_argv(self.query.host)
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert process.stdout is not None
        flags = fcntl.fcntl(process.stdout, fcntl.F_GETFL)
        fcntl.fcntl(process.stdout, fcntl.F_SETFL, flags | os.O_NONBLOCK)
        return process

    def fileno(self) -> int:
        assert self.process.stdout is not None
        return self.process.stdout.fileno()

    def read(self) -> Batch:
        assert self.process.stdout is not None
        while True:
            try:
                chunk = os.read(self.fileno(), 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                if (code := self.process.poll()) is not None:
                    raise FollowerEnded(f"journalctl -f stopped (exit {code})", by_signal=code < 0)
                break
            self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        found = anchored(lines) if lines else set()
        for index, line in enumerate(lines):
            if index not in found and not self._prefilter.in_region and _KERNEL_FIELD in line:
                # No anchor anywhere in its JSON, none in its message: passed without parsing
                # (unless the message is an array of bytes, whose anchors only decoding shows).
                cursor = _json_cursor(line)
                if cursor is not None and _BYTES_MESSAGE not in line:
                    self._skip(cursor)
                    continue
            entry = load_object(line)
            if entry is None:
                continue
            cursor = entry.get("__CURSOR")
            cursor = cursor if isinstance(cursor, str) else None
            kernel = entry.get("_TRANSPORT") == "kernel"
            if self._wanted(kernel, journal_message(entry.get("MESSAGE"))):
                self._add(entry, cursor)
            else:
                self._skip(cursor)
        return self._batch()

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()


# journalctl -o json's fields as they print, without spaces: the transport of a kernel entry, a
# MESSAGE journald keeps as bytes (not UTF-8), and the cursor, printed first.
_KERNEL_FIELD = b'"_TRANSPORT":"kernel"'
_BYTES_MESSAGE = b'"MESSAGE":['
_CURSOR_FIELD = b'"__CURSOR":"'


def _json_cursor(line: bytes) -> str | None:
    """An entry's cursor read from its JSON line without parsing it (cursors hold no quote)."""
    start = line.find(_CURSOR_FIELD)
    if start < 0:
        return None
    start += len(_CURSOR_FIELD)
    end = line.find(b'"', start)
    return line[start:end].decode("ascii", "replace") if end > start else None


def _entries_between(gone: str, found: str | None) -> int | None:
    """Journal entries (of any kind) between a vacuumed cursor and the first entry left after
    it, by their sequence numbers; None when the two are of different journals (rotated anew)."""
    old, new = _cursor_fields(gone), _cursor_fields(found or "")
    if "i" not in old or "i" not in new or old.get("s") != new.get("s"):
        return None
    try:
        return max(int(new["i"], 16) - int(old["i"], 16) - 1, 0)
    except ValueError:
        return None


def _cursor_fields(cursor: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in cursor.split(";") if "=" in part)


def _exits_soon(process: subprocess.Popen[bytes], timeout: float = 3.0) -> bool:
    """Did journalctl refuse its position (exit non-zero) before printing anything? It refuses a
    cursor it cannot seek to at once, but "at once" took over half a second on a loaded machine;
    an entry printed, or the time passing with none, means it is following."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        if process.poll() is not None:
            return process.returncode != 0
        readable, _, _ = select.select([process.stdout], [], [], min(left, 0.1))
        if readable:  # an entry, or the end of its output as it exits
            try:
                return process.wait(timeout=0.2) != 0
            except subprocess.TimeoutExpired:
                return False
    return process.poll() not in (None, 0)


def _cursor_time(cursor: str) -> int | None:
    try:
        return int(_cursor_fields(cursor)["t"], 16) // 1_000_000
    except (KeyError, ValueError):
        return None
