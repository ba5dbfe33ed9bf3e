"""Live followers of the kernel log: the journal (systemd-python, else `journalctl -f`) and
`/dev/kmsg`. Each hands the watcher records as they arrive, with a cursor to resume after."""

from __future__ import annotations

import fcntl
import os
import subprocess
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo

from oomtrace.errors import InputError
from oomtrace.jsonshapes import load_object
from oomtrace.prefixes import journal_records
from oomtrace.records import Record, Stamp
from oomtrace.sources.journal import (
    JournalQuery,
    _add_matches,
    _entry,
    _journalctl,
    _matches_argv,
    _open_reader,
)

KMSG = "/dev/kmsg"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
# A kmsg record is at most this long (printk's record, its prefix and dictionary).
_KMSG_READ = 16 * 1024


@dataclass(frozen=True, slots=True)
class Batch:
    """What one read gave: records in order, where to resume after them, and what was lost."""

    records: tuple[Record, ...]
    cursor: str | None
    lost: int = 0
    """Records the source says were lost before these (kmsg overwritten, a vacuumed cursor)."""
    lost_why: str = ""


class Follower(ABC):
    kind: str
    """"journal" or "kmsg": what the cursor file says its cursor is for."""
    name: str
    """The source name the records carry, as reports print it."""
    description: str
    """What is followed and how, for the start-up line."""

    @abstractmethod
    def fileno(self) -> int:
        """A descriptor that becomes readable when there is something to read."""

    @abstractmethod
    def read(self) -> Batch:
        """Whatever has arrived, without blocking."""

    def close(self) -> None:
        return None

    def boot_id(self) -> str | None:
        return None


def current_boot_id() -> str | None:
    try:
        with open(BOOT_ID, encoding="ascii") as boot:
            return boot.read().strip().replace("-", "")
    except OSError:
        return None


class KmsgFollower(Follower):
    """`/dev/kmsg`: each read() is one record `prio,seq,usec,flags;text`; EPIPE means the
    ring buffer overwrote records before they were read (the next sequence number tells how many)."""

    kind = "kmsg"

    def __init__(self, zone: tzinfo, resume: str | None = None, path: str = KMSG) -> None:
        self.zone = zone
        self.path = path
        self.name = path
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except PermissionError:
            raise InputError(
                f"cannot read {path}: permission denied",
                hint="run as root or give the watcher CAP_SYSLOG (kernel.dmesg_restrict=1 here)",
            ) from None
        except OSError as error:
            raise InputError(f"cannot open {path}: {error.strerror}") from None
        self._boot = current_boot_id()
        self._after = -1
        saved_boot, _, saved_seq = (resume or "").partition(":")
        if resume and saved_boot == self._boot and saved_seq.isdigit():
            self._after = int(saved_seq)  # same boot: read the ring buffer from the start, skip to it
            self.description = f"{path}, after record {saved_seq} of this boot"
        elif resume:
            self.description = f"{path}, from the start of this boot (the cursor was of another boot)"
        else:
            os.lseek(self.fd, 0, os.SEEK_END)  # no cursor: only what comes from now on
            self.description = f"{path}, from now on"
        self._last_seq: int | None = self._after if self._after >= 0 else None
        # Uptime stamps become wall time by the realtime-monotonic offset, measured now.
        self._offset = time.time() - time.monotonic()
        self._line = 0

    def fileno(self) -> int:
        return self.fd

    def boot_id(self) -> str | None:
        return self._boot

    def read(self) -> Batch:
        records: list[Record] = []
        lost = 0
        overrun = False
        while True:
            try:
                chunk = os.read(self.fd, _KMSG_READ)
            except BlockingIOError:
                break
            except BrokenPipeError:  # EPIPE
                overrun = True  # records were overwritten: the next read gives the oldest left
                continue
            if not chunk:
                break
            parsed = self._parse(chunk)
            if parsed is None:
                continue
            seq, record = parsed
            if seq <= self._after:
                continue
            if self._last_seq is not None and seq > self._last_seq + 1:
                lost += seq - self._last_seq - 1
            self._last_seq = seq
            records.append(record)
        why = "the kernel ring buffer overwrote them before they were read" if (lost or overrun) else ""
        return Batch(tuple(records), self.cursor(), lost, why)

    def cursor(self) -> str | None:
        if self._boot is None or self._last_seq is None:
            return None
        return f"{self._boot}:{self._last_seq}"

    def _parse(self, chunk: bytes) -> tuple[int, Record] | None:
        head, _, rest = chunk.partition(b";")
        fields = head.split(b",")
        if len(fields) < 3:
            return None
        try:
            # The priority is checked, not used: see the facility below.
            _, seq, usec = int(fields[0]), int(fields[1]), int(fields[2])
        except ValueError:
            return None
        # Continuation lines (" KEY=value") carry the device dictionary, not the message.
        message = rest.split(b"\n", 1)[0].decode("utf-8", "replace")
        message = _unescape(message)
        uptime = usec / 1_000_000
        wall = datetime.fromtimestamp(self._offset + uptime, UTC).astimezone(self.zone)
        self._line += 1
        raw = f"[{uptime:12.6f}] {message}"
        # Facility 0 is the kernel; lines written to /dev/kmsg by a program are facility 1 and
        # up (the kernel enforces it), and are read the same way: a driver shim may log so.
        stamp = Stamp(wall, uptime, wall.isoformat())
        return seq, Record(self.path, self._line, raw, message, stamp, "kernel")

    def close(self) -> None:
        os.close(self.fd)


def _unescape(message: str) -> str:
    """kmsg prints bytes outside printable ASCII as `\\xNN`; a backslash itself as `\\x5c`."""
    if "\\x" not in message:
        return message
    out = []
    index = 0
    while index < len(message):
        if message.startswith("\\x", index) and index + 4 <= len(message):
            try:
                out.append(chr(int(message[index + 2 : index + 4], 16)))
                index += 4
                continue
            except ValueError:
                pass
        out.append(message[index])
        index += 1
    return "".join(out)


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

    def _records(self, entry: dict[str, object]) -> list[Record]:
        self._number += 1
        return journal_records(entry, "journal", self._number, self._boot_ids, self.zone)

    def _batch(self, records: list[Record]) -> Batch:
        lost, why = self._lost, self._lost_why
        self._lost, self._lost_why = 0, ""
        return Batch(tuple(records), self._cursor, lost, why)


class JournalReaderFollower(_JournalFollower):
    """The journal through systemd-python's Reader: kernel entries and the userspace killers'."""

    def __init__(self, query: JournalQuery, zone: tzinfo, cursor: str | None = None) -> None:
        super().__init__(zone, cursor)
        self.reader = _open_reader(query)
        _add_matches(self.reader, query, None)
        self._pending = False
        """The reader stands on an entry not yet read (the first after a vacuumed cursor)."""
        resumed = False
        if cursor:
            try:
                self.reader.seek_cursor(cursor)
                # seek_cursor lands where the entry was; test_cursor says whether it is still there.
                if self.reader._next():
                    resumed = bool(self.reader.test_cursor(cursor))
                    self._pending = not resumed
            except OSError:
                self.reader.seek_head()
            if not resumed:
                missed = _entries_between(cursor, self.reader._get_cursor() if self._pending else None)
                self._lost = missed if missed is not None else -1
                self._lost_why = "the cursor's entry is gone (vacuumed or rotated away)"
        else:
            self.reader.seek_tail()
            # After seek_tail the reader sits past the end; without a step back it misses new entries.
            self.reader.get_previous()
        where = "from now on"
        if cursor:
            where = "after the saved cursor" if resumed else "from where the cursor was"
        self.description = f"the {query.name} through systemd-python, {where}"
        self.reader.get_events()  # sets up the inotify watches before the first poll

    def fileno(self) -> int:
        return int(self.reader.fileno())

    def read(self) -> Batch:
        self.reader.process()
        records: list[Record] = []
        while self._pending or self.reader._next():
            self._pending = False
            entry = _entry(self.reader)
            self._cursor = self.reader._get_cursor()
            records += self._records(entry)
        return self._batch(records)

    def close(self) -> None:
        self.reader.close()


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
            self._lost, self._lost_why = -1, "journalctl could not seek to the saved cursor"
            since = _cursor_time(cursor)
            self.process = self._start(["--since", f"@{since}"] if since else ["-n", "0"])
        how = "after the saved cursor" if cursor and not self._lost else "from now on"
        self.description = f"the {query.name} through journalctl -f, {how}"

    def _start(self, position: list[str]) -> subprocess.Popen[bytes]:
        command = [*_journalctl(self.query), "-f", "-o", "json", "--all", "--no-pager", *position]
        command += _matches_argv(self.query.host)
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
                if self.process.poll() is not None:
                    raise InputError(f"journalctl -f stopped (exit {self.process.returncode})")
                break
            self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        records: list[Record] = []
        for line in lines:
            entry = load_object(line)
            if entry is None:
                continue
            cursor = entry.get("__CURSOR")
            if isinstance(cursor, str):
                self._cursor = cursor
            records += self._records(entry)
        return self._batch(records)

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()


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


def _exits_soon(process: subprocess.Popen[bytes]) -> bool:
    try:
        return process.wait(timeout=0.5) != 0
    except subprocess.TimeoutExpired:
        return False


def _cursor_time(cursor: str) -> int | None:
    try:
        return int(_cursor_fields(cursor)["t"], 16) // 1_000_000
    except (KeyError, ValueError):
        return None
