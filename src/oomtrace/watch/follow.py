"""Live followers of the kernel log: the journal (systemd-python, else `journalctl -f`) and
`/dev/kmsg`. Each hands the watcher records as they arrive, with a cursor to resume after."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import subprocess
import time
from abc import ABC, abstractmethod
from datetime import UTC, datetime, tzinfo

from oomtrace.errors import InputError
from oomtrace.frozen import Frozen
from oomtrace.jsonshapes import load_object
from oomtrace.prefilter import Prefilter, anchored
from oomtrace.prefixes import journal_message, journal_records
from oomtrace.records import Record, Stamp
from oomtrace.sources.journalctl import journalctl_argv, matches_argv
from oomtrace.sources.journalpython import add_matches, current_entry, entry_field, open_reader
from oomtrace.sources.journalquery import JournalQuery

KMSG = "/dev/kmsg"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
# A kmsg record is at most this long (printk's record, its prefix and dictionary).
_KMSG_READ = 16 * 1024
# Records read into one batch at most (about a megabyte): a flood faster than the reads is left
# for the next batch (the poll wakes at once), not gathered without bound.
_KMSG_BATCH = 10_000


class Batch(Frozen):
    """What one read gave: the records that matter in order, where to resume after everything
    read (noise included), and what was lost."""

    records: tuple[Record, ...]
    cursor: str | None
    lost: int = 0
    """Records the source says were lost before these (kmsg overwritten, a vacuumed cursor)."""
    lost_why: str = ""
    cursors_before: tuple[str | None, ...] = ()
    """Where to resume to read each record again: the position just before it (one per record;
    empty: the batch before's `cursor`). The watcher saves no position past a record until
    every story that needs it is told."""


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
        self._lost, self._lost_why = 0, ""
        # The newest record's number: where "from now on" starts (so that a kill read first is
        # held behind it, and a watcher killed before telling it tells it after a restart).
        newest = _newest_seq(path)
        self._last_seq: int | None = newest
        saved_boot, _, saved_seq = (resume or "").partition(":")
        same_boot = bool(resume) and saved_boot == self._boot and saved_seq.isdigit()
        if same_boot and (newest is None or int(saved_seq) <= newest):
            self._after = self._last_seq = int(saved_seq)  # read the ring buffer, skip to it
            self.description = f"{path}, after record {saved_seq} of this boot"
        elif same_boot:
            # A record this boot has not logged yet: the cursor is not this log's (copied from
            # another machine, or edited). Skipping to it would hide every record until then.
            os.lseek(self.fd, 0, os.SEEK_END)
            self._lost = -1
            self._lost_why = (
                f"the saved cursor (record {saved_seq} of this boot) is past the newest record "
                f"({newest}), so it is not this log's: started from now"
            )
            self.description = f"{path}, from now on (the saved cursor was invalid)"
        elif resume:
            self._last_seq = None  # the whole ring buffer, numbered from its first record
            self.description = f"{path}, from the start of this boot (the cursor was of another boot)"
        else:
            os.lseek(self.fd, 0, os.SEEK_END)  # no cursor: only what comes from now on
            self.description = f"{path}, from now on"
        # Uptime stamps become wall time by the realtime-monotonic offset, measured now.
        self._offset = time.time() - time.monotonic()
        self._line = 0
        self._prefilter = Prefilter()

    def fileno(self) -> int:
        return self.fd

    def boot_id(self) -> str | None:
        return self._boot

    def read(self) -> Batch:
        """Every record the ring buffer holds past the last read, one os.read() each (/dev/kmsg
        gives one record a read); only those the prefilter wants become records. A noise line
        costs its read and its share of one anchor scan over the batch, nothing more."""
        chunks, overrun = self._drain()
        lost, said = self._lost, self._lost_why
        self._lost, self._lost_why = 0, ""
        if self._after >= 0:
            chunks = self._past_resume(chunks)
        records: list[Record] = []
        befores: list[str | None] = []
        first_line = self._line
        for index in self._prefilter.candidates(chunks):
            parsed = self._parse(chunks[index], first_line + index + 1)
            if parsed is not None and self._prefilter.wants(parsed[1].message):
                seq, record = parsed
                records.append(record)
                befores.append(self._position(seq - 1))
        self._line = first_line + len(chunks)
        lost += self._count(chunks)
        why = said or (
            "the kernel ring buffer overwrote them before they were read" if (lost or overrun) else ""
        )
        return Batch(tuple(records), self.cursor(), lost, why, tuple(befores))

    def _drain(self) -> tuple[list[bytes], bool]:
        """The records there are now, and whether the ring buffer overwrote some while they
        were read (EPIPE: the next read gives the oldest left)."""
        chunks: list[bytes] = []
        overrun = False
        read, fd = os.read, self.fd
        while len(chunks) < _KMSG_BATCH:
            try:
                chunk = read(fd, _KMSG_READ)
            except BlockingIOError:
                break
            except BrokenPipeError:  # EPIPE
                overrun = True
                continue
            if not chunk:
                break
            chunks.append(chunk)
        return chunks, overrun

    def _past_resume(self, chunks: list[bytes]) -> list[bytes]:
        """The records after the saved cursor's (a restart reads the ring buffer from its start).
        Numbers only rise, so once one past it is read the rest are too."""
        for index, chunk in enumerate(chunks):
            seq = _seq(chunk)
            if seq is not None and seq > self._after:
                self._after = -1
                return chunks[index:]
        return []

    def _count(self, chunks: list[bytes]) -> int:
        """Records lost before or between these: the kernel numbers its records one by one, so
        those missing are the rise in number less the records read."""
        if not chunks:
            return 0
        last = next((s for s in map(_seq, reversed(chunks)) if s is not None), None)
        if last is None:
            return 0
        before = self._last_seq
        if before is None:  # the first read of a whole ring buffer: numbered from its first
            before = next(s for s in map(_seq, chunks) if s is not None) - 1
        self._last_seq = last
        return max(last - before - len(chunks), 0)

    def cursor(self) -> str | None:
        return self._position(self._last_seq)

    def _position(self, seq: int | None) -> str | None:
        """The cursor past record `seq` of this boot."""
        if self._boot is None or seq is None:
            return None
        return f"{self._boot}:{seq}"

    def _parse(self, chunk: bytes, line_no: int) -> tuple[int, Record] | None:
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
        message = _unescape(rest.split(b"\n", 1)[0])
        uptime = usec / 1_000_000
        wall = datetime.fromtimestamp(self._offset + uptime, self.zone)
        raw = f"[{uptime:12.6f}] {message}"
        # Facility 0 is the kernel; lines written to /dev/kmsg by a program are facility 1 and
        # up (the kernel enforces it), and are read the same way: a driver shim may log so.
        stamp = Stamp(wall, uptime, wall.isoformat())
        return seq, Record(self.path, line_no, raw, message, stamp, "kernel")

    def close(self) -> None:
        os.close(self.fd)


def _unescape(message: bytes) -> str:
    """kmsg prints each byte outside printable ASCII as `\\xNN` (a backslash itself as `\\x5c`):
    the bytes are put back first and decoded after, so UTF-8 (`caf\\xc3\\xa9`) is `café`."""
    return _KMSG_ESCAPE.sub(lambda hit: bytes([int(hit[1], 16)]), message).decode("utf-8", "replace")


_KMSG_ESCAPE = re.compile(rb"\\x([0-9a-fA-F]{2})")


def _seq(chunk: bytes) -> int | None:
    """A kmsg record's sequence number (`prio,seq,usec,flags;text`), None if it is not one."""
    fields = chunk.partition(b";")[0].split(b",", 2)
    return int(fields[1]) if len(fields) > 2 and fields[1].isdigit() else None


def _newest_seq(path: str) -> int | None:
    """The sequence number of the newest record in the ring buffer, read to its end."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    newest = None
    try:
        while True:
            try:
                chunk = os.read(fd, _KMSG_READ)
            except BlockingIOError:
                break
            except BrokenPipeError:
                continue
            if not chunk:
                break
            seq = _seq(chunk)
            newest = newest if seq is None else seq
    finally:
        os.close(fd)
    return newest


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
                if self.process.poll() is not None:
                    raise InputError(f"journalctl -f stopped (exit {self.process.returncode})")
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
