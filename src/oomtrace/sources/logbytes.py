"""A log's bytes as UTF-8 with LF line ends: opened, decompressed, transcoded, refused if not a log.

The bottom of the file readers: every path (line by line, the chunk scan, a server log, a
`watch --record` file) opens a log here. It imports only the byte-level helpers beside it
(base, compressed, sniff), never a reader.
"""

from __future__ import annotations

import io
import os
import stat
import sys

from oomtrace.errors import InputError
from oomtrace.sources.compressed import Decompressed, compression_of, untrusted
from oomtrace.sources.sniff import ByteStream, CrEnded, Head, Transcoded, cr_ended, encoding_of, looks_binary

_JOURNAL_MAGIC = b"LPKSHHRH"
# Every path reads a log in pieces this big, so that a damaged compressed file gives the same
# lines on each (BoundedLines.byte_lines). 8 KiB reads kept up to ~60 KiB more before the damage
# but made a 1 GiB .gz 50% slower to read.
READ_BYTES = 1 << 16


class LogBytes:
    """A log's bytes as UTF-8 with LF line ends: the file, decompressed, transcoded, its CRs made
    LFs, as its first MiB says it needs."""

    def __init__(
        self, stream: ByteStream, raw: io.BufferedReader, transformed: bool, opened_size: int | None = None
    ) -> None:
        self.stream = stream
        self.raw = raw
        self.transformed = transformed
        """Do the bytes differ from the file's (then it cannot be read at offsets of its own)?"""
        self.opened_size = opened_size
        """The file's size when it was opened (None: standard input, a pipe, a device)."""

    def shrank(self, name: str, read_to: int | None = None, lines: int | None = None) -> str | None:
        """What to say when the file is smaller than when it was opened and reading ended short
        of that size: logrotate's copytruncate (or anyone) cut it while it was read. `read_to`
        is how far reading came (bytes of the file; default: this stream's position). `lines`:
        say how far as the lines read instead, where the bytes are not known exactly (the chunk
        scan's threads read ahead of the lines it has counted)."""
        if self.opened_size is None:
            return None
        try:
            now = os.fstat(self.raw.fileno()).st_size
        except (OSError, ValueError):
            return None
        read = self.position() if read_to is None else read_to
        if now >= self.opened_size or read >= self.opened_size:
            return None  # not smaller now, or read whole before it shrank: no loss
        how_far = f"line {lines:,}" if lines is not None else f"byte {read:,}"
        return (
            f"{name} shrank from {self.opened_size:,} to {now:,} bytes while it was read (logrotate's "
            f"copytruncate does this): read up to {how_far}; lines after it may be missing"
        )

    def read1(self, size: int = -1, /) -> bytes:
        return self.stream.read1(size)

    def position(self) -> int:
        """Bytes read so far of the file itself (compressed: of the compressed file)."""
        try:
            return self.raw.tell()
        except (OSError, ValueError):
            return 0

    def close(self) -> None:
        self.stream.close()
        self.raw.close()

    def __enter__(self) -> LogBytes:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def open_bytes(path: str, what: str = "kernel log") -> LogBytes:
    """The bytes of a log file or `-`, decompressed and as UTF-8, refusing journals and binaries."""
    name = "<stdin>" if path == "-" else path
    raw = _open_binary(path)
    opened_size = _regular_size(raw)
    try:
        magic = raw.peek(8)[:8]
    except OSError as error:  # /proc/self/mem, a device that cannot be read
        raw.close()
        raise InputError(f"cannot read {name}: {error.strerror or error}") from None
    compression = compression_of(magic)
    stream: ByteStream = Decompressed(raw, compression) if compression is not None else raw
    head = Head(stream, READ_BYTES)
    try:
        return _judged(head, raw, name, what, compression is not None, opened_size)
    except BaseException:
        raw.close()
        raise


def _regular_size(raw: io.BufferedReader) -> int | None:
    try:
        info = os.fstat(raw.fileno())
    except (OSError, ValueError):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _judged(
    head: Head, raw: io.BufferedReader, name: str, what: str, transformed: bool, opened_size: int | None
) -> LogBytes:
    """The stream, once its first MiB is judged (the first MiB after decompressing)."""
    if head.error is not None:
        if not head.sample:
            raise InputError(f"cannot decompress {name}: {head.error}")
        refusal = untrusted(name, head.error)
        if refusal is not None:
            raise refusal
    if head.sample.startswith(_JOURNAL_MAGIC):
        raise InputError(
            f"{name} is a binary systemd journal file, not a text log",
            hint=f"read it with --journal-file {name} (oomtrace reads journal files itself)",
        )
    stream: ByteStream = head
    encoding = encoding_of(head.sample)
    if encoding is not None:
        stream = head = Head(Transcoded(head, encoding, READ_BYTES), READ_BYTES)
        transformed = True
    if cr_ended(head.sample):
        stream, transformed = CrEnded(stream), True
    if looks_binary(head.sample):
        raise InputError(
            f"{name} looks binary, not a text {what}",
            hint=not_a_log_hint(what),
        )
    return LogBytes(stream, raw, transformed, opened_size)


def not_a_log_hint(what: str) -> str:
    if what == "kernel log":
        return "pass dmesg, journalctl or /var/log/kern.log output"
    return "pass the server's own log (its captured stdout/stderr)"


def _open_binary(path: str) -> io.BufferedReader:
    if path == "-":
        if sys.stdin is None:  # `<&-`: Python has no standard input to give
            raise InputError("cannot read -k -: standard input is closed", hint="pipe the log in, or name it")
        _refuse_live_log("-k - (standard input)", _stdin_identity())
        # peek() needs a BufferedReader; CliRunner and pipes may hand over other streams.
        stream = sys.stdin.buffer
        return stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(stream)  # type: ignore[arg-type]
    _refuse_live_log(path, _path_identity(path))
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError(f"cannot read {path}: no such file") from None
    except IsADirectoryError:
        journals = _holds_journal_files(path)
        raise InputError(
            f"cannot read {path}: it is a directory",
            hint=f"a folder of journal files is read with -D {path}"
            if journals
            else "pass a log file such as /var/log/kern.log",
        ) from None
    except PermissionError:
        raise InputError(
            f"cannot read {path}: permission denied",
            hint="run with sudo, or copy the file somewhere readable",
        ) from None
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}") from None


_LIVE_LOG_HINT = (
    "leave out -k to read this machine's ring buffer through dmesg, or follow it with "
    "`oomtrace watch --source kmsg`"
)


def _refuse_live_log(name: str, identity: tuple[os.stat_result | None, str]) -> None:
    """The kernel's live logs are not files to read to their end. /dev/kmsg (or a node of it,
    character device 1,11) blocks at the end of the ring buffer for the next record; /proc/kmsg
    blocks too, and each read takes the records away from the syslog daemon that reads it."""
    info, real = identity
    if (
        info is not None
        and stat.S_ISCHR(info.st_mode)
        and (os.major(info.st_rdev), os.minor(info.st_rdev)) == (1, 11)
    ):
        raise InputError(
            f"{name} is the kernel's live log (/dev/kmsg): read as a file it never ends",
            hint=_LIVE_LOG_HINT,
        )
    if real == "/proc/kmsg":
        raise InputError(
            f"{name} is the kernel's log as syslog daemons consume it (/proc/kmsg): it never ends, and "
            "reading it takes the kernel's records from the daemon that reads them",
            hint=_LIVE_LOG_HINT,
        )


def _path_identity(path: str) -> tuple[os.stat_result | None, str]:
    try:
        return os.stat(path), os.path.realpath(path)
    except (OSError, ValueError):
        return None, path


def _stdin_identity() -> tuple[os.stat_result | None, str]:
    """What standard input is (`-k - < /dev/kmsg`): its stat, and the file /proc says it is."""
    try:
        fd = sys.stdin.fileno()
        info = os.fstat(fd)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):  # CliRunner, closed
        return None, ""
    try:
        return info, os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return info, ""


def _holds_journal_files(path: str) -> bool:
    """Does a folder hold systemd journal files (at most a level down, as /var/log/journal's
    machine-id folders do)?"""
    import glob

    return bool(
        glob.glob(os.path.join(glob.escape(path), "*.journal*"))
        or glob.glob(os.path.join(glob.escape(path), "*", "*.journal*"))
    )
