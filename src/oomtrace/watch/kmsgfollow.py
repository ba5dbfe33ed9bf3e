"""Following `/dev/kmsg`: the ring buffer record by record, its sequence numbers the cursor."""

from __future__ import annotations

import os
import re
import time
from datetime import datetime, tzinfo

from oomtrace.errors import InputError
from oomtrace.prefilter import Prefilter
from oomtrace.records import Record, Stamp
from oomtrace.watch.batch import Batch, Follower, current_boot_id

KMSG = "/dev/kmsg"
# A kmsg record is at most this long (printk's record, its prefix and dictionary).
_KMSG_READ = 16 * 1024
# Records read into one batch at most (about a megabyte): a flood faster than the reads is left
# for the next batch (the poll wakes at once), not gathered without bound.
_KMSG_BATCH = 10_000


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
