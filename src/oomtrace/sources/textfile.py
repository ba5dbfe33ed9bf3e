"""A saved kernel log: dmesg output, journalctl text or JSON, kern.log; plain or compressed."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import stat
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, tzinfo
from typing import Any

from oomtrace.errors import InputError, UsageError
from oomtrace.jsonshapes import Shape
from oomtrace.prefixes import LineSplitter
from oomtrace.records import Record
from oomtrace.sources.base import DAMAGED, Source

_JOURNAL_MAGIC = b"LPKSHHRH"
_COMPRESSED: tuple[tuple[bytes, Callable[..., Any]], ...] = (
    (b"\x1f\x8b", gzip.open),
    (b"\xfd7zXZ\x00", lzma.open),
    (b"BZh", bz2.open),
)
# Share of NUL and other control bytes in the first block above which a file is binary.
_BINARY_SHARE = 0.10


class KernelLogFile(Source):
    """A file (or `-` for standard input) holding kernel log lines in any of the known shapes."""

    kind = "file"

    def __init__(
        self,
        path: str,
        zone: tzinfo,
        year: int | None = None,
        boot_time: datetime | None = None,
        json_shape: Shape | None = None,
    ) -> None:
        self.path = path
        self.json_shape = json_shape
        self.name = "<stdin>" if path == "-" else path
        self.zone = zone
        self.year = year
        self._boot_time = boot_time

    def boot_time(self) -> datetime | None:
        return self._boot_time

    lines_read: int | None = None
    """Lines in the file, when the fast path read only some of them (else each was a record)."""

    def records(self) -> Iterator[Record]:
        splitter = LineSplitter(
            self.name,
            zone=self.zone,
            reference=self._reference_time(),
            year=self.year,
            json_shape=self.json_shape,
        )
        # Standard input is streamed through the chunk scan as a decompressor is: a pipe cannot be
        # read at offsets, and read line by line a big one is a hundred times slower.
        big = "compressed" if self.path == "-" and _scanner_importable() else _big_file(self.path)
        if big is not None:
            from oomtrace.sources.bigfile import big_file_records

            yield from big_file_records(self, splitter, compressed=big == "compressed")
            self._unknown_json(splitter)
            return
        line_no = 0
        with self._open() as text:
            try:
                for line_no, line in enumerate(text, start=1):
                    yield from splitter.split(line, line_no)
                    if not line_no & 0xFFFF:
                        self._report(_position(text))
            except DAMAGED as error:
                # A rotated log copied while being written, a disk that filled up: keep every
                # line before the damage and say where reading stopped.
                if line_no == 0:
                    raise InputError(f"cannot decompress {self.name}: {error}") from None
                self.problem = f"cut short after line {line_no} ({error})"
            self.add_problem(text.note())
        self._unknown_json(splitter)
        self.lines_read = line_no  # rsyslog's #012 makes several records of one line
        if line_no == 0:
            raise InputError(
                f"{self.name} is empty",
                hint="nothing was captured; for the boot that crashed try: journalctl -k -b -1 > kern.txt",
            )

    def _unknown_json(self, splitter: LineSplitter) -> None:
        if splitter.unknown_json:
            self.add_problem(
                f"{splitter.unknown_json:,} JSON line(s) of a shape not recognised were read as text, "
                "without their time or host: name their fields with --jsonl-fields "
                "message=PATH,time=PATH,host=PATH"
            )

    def size(self) -> int | None:
        try:
            return os.path.getsize(self.path) if self.path != "-" else None
        except OSError:
            return None

    def _reference_time(self) -> datetime:
        """Syslog stamps carry no year: the file's modification time supplies it."""
        if self.path != "-":
            try:
                return datetime.fromtimestamp(os.stat(self.path).st_mtime, UTC)
            except OSError:
                pass
        return datetime.now(UTC)

    def _open(self) -> BoundedLines:
        return open_text(self.path)


def open_text(path: str, what: str = "kernel log") -> BoundedLines:
    """The lines of a log file or `-`, decompressed, refusing journals and binaries."""
    name = "<stdin>" if path == "-" else path
    return BoundedLines(open_bytes(path, what), name, what)


# A line longer than this is cut while it is read (the rest skipped, counted): printk's own
# limit is 1 KiB, and one 1 GiB line must not cost 1 GiB.
MAX_LINE_BYTES = 64 * 1024
# No line break in this many bytes at the start: not a log (/dev/zero, a gzip of zeros).
NO_LINE_BREAK_BYTES = 1 << 20
# Every path reads a log in pieces this big, so that a damaged compressed file gives the same
# lines on each (BoundedLines.byte_lines). 8 KiB reads kept up to ~60 KiB more before the damage
# but made a 1 GiB .gz 50% slower to read.
READ_BYTES = 1 << 16


class BoundedLines:
    """A log's lines as they are read, each at most MAX_LINE_BYTES: memory stays bounded
    whatever the input. Only \n ends a line: a lone \r inside a name stays in it (shown inert)."""

    def __init__(self, raw: LogBytes, name: str, what: str = "kernel log") -> None:
        self.buffer = raw
        self.name = name
        self.what = what
        self.cut_lines = 0
        self.skipped_bytes = 0
        self.consumed = 0
        """Bytes read so far, the skipped ones too."""
        self.rest = b""
        """What was read past the last line yielded."""

    def __enter__(self) -> BoundedLines:
        return self

    def __exit__(self, *_: object) -> None:
        self.buffer.close()

    def __iter__(self) -> Iterator[str]:
        for line in self.byte_lines():
            yield line.decode("utf-8", "replace")

    def byte_lines(self) -> Iterator[bytes]:
        """Each line with its newline (the last may lack one). Read in READ_BYTES pieces, as the
        big-file scan reads a stream: a damaged compressed file then yields the same lines on
        both paths, all those before the damage. After a line is yielded, `rest` holds the
        bytes read past it, for a reader that takes over (sources/bigfile.py)."""
        pending = b""  # the start of a line whose end is not read yet
        skipping = False  # inside an overlong line, after the part kept of it
        any_line = False
        while piece := self.buffer.read1(READ_BYTES):
            self.consumed += len(piece)
            if skipping:
                newline = piece.find(b"\n")
                self.skipped_bytes += len(piece) if newline < 0 else newline
                if newline < 0:
                    self._check_is_a_log(any_line)
                    continue
                piece, skipping = piece[newline:], False  # its newline ends the kept part
            data = pending + piece if pending else piece
            start = 0
            while (newline := data.find(b"\n", start)) >= 0:
                self.rest = data[newline + 1 :]
                any_line = True
                yield data[start : newline + 1]
                start = newline + 1
            pending = data[start:]
            if len(pending) > MAX_LINE_BYTES:
                self.skipped_bytes += len(pending) - MAX_LINE_BYTES
                pending, skipping = pending[:MAX_LINE_BYTES], True
                self.cut_lines += 1
                self._check_is_a_log(any_line)
        if pending:
            self.rest = b""
            yield pending

    def _check_is_a_log(self, any_line: bool) -> None:
        if not any_line and self.consumed >= NO_LINE_BREAK_BYTES:
            raise InputError(
                f"{self.name} has no line break in its first {NO_LINE_BREAK_BYTES >> 20} MiB: "
                f"not a text {self.what}",
                hint="pass dmesg, journalctl or /var/log/kern.log output"
                if self.what == "kernel log"
                else "pass the server's own log (its captured stdout/stderr)",
            )

    def note(self) -> str | None:
        """What was cut, for the source's summary."""
        if not self.cut_lines:
            return None
        lines = "1 line" if self.cut_lines == 1 else f"{self.cut_lines:,} lines"
        return (
            f"{lines} longer than {MAX_LINE_BYTES >> 10} KiB cut to it while reading "
            f"({self.skipped_bytes:,} bytes skipped)"
        )


# A log's bytes: a buffered file, or a decompressor (itself buffered: no second buffer over it,
# whose read() would drop the lines before a cut along with the error).
LogBytes = io.BufferedReader | gzip.GzipFile | lzma.LZMAFile | bz2.BZ2File


def open_bytes(path: str, what: str = "kernel log") -> LogBytes:
    """The bytes of a log file or `-`, decompressed, refusing journals and binaries."""
    name = "<stdin>" if path == "-" else path
    raw: LogBytes = _open_binary(path)
    try:
        head = raw.peek(8192)[:8192]
    except OSError as error:  # /proc/self/mem, a device that cannot be read
        raw.close()
        raise InputError(f"cannot read {name}: {error.strerror or error}") from None
    for magic, opener in _COMPRESSED:
        if head.startswith(magic):
            raw = opener(raw, "rb")
            head = _safe_peek(raw, name)
            break
    if head.startswith(_JOURNAL_MAGIC):
        raw.close()
        raise InputError(
            f"{name} is a binary systemd journal file, not a text log",
            hint=f"export it with: journalctl --file {name} -k -o short-precise > kern.txt",
        )
    if _looks_binary(head):
        raw.close()
        raise InputError(
            f"{name} looks binary, not a text {what}",
            hint="pass dmesg, journalctl or /var/log/kern.log output"
            if what == "kernel log"
            else "pass the server's own log (its captured stdout/stderr)",
        )
    return raw


def _open_binary(path: str) -> io.BufferedReader:
    if path == "-":
        if sys.stdin is None:  # `<&-`: Python has no standard input to give
            raise InputError("cannot read -k -: standard input is closed", hint="pipe the log in, or name it")
        # peek() needs a BufferedReader; CliRunner and pipes may hand over other streams.
        stream = sys.stdin.buffer
        return stream if isinstance(stream, io.BufferedReader) else io.BufferedReader(stream)  # type: ignore[arg-type]
    if _is_kmsg(path):
        # Read as a file, /dev/kmsg blocks at the end of the ring buffer for the next record.
        raise InputError(
            f"{path} is the kernel's live log: read as a file it never ends",
            hint="leave out -k to read this machine's ring buffer through dmesg, "
            "or follow it with `oomtrace watch --source kmsg`",
        )
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError(f"cannot read {path}: no such file") from None
    except IsADirectoryError:
        raise InputError(
            f"cannot read {path}: it is a directory",
            hint="pass a log file such as /var/log/kern.log",
        ) from None
    except PermissionError:
        raise InputError(
            f"cannot read {path}: permission denied",
            hint="run with sudo, or copy the file somewhere readable",
        ) from None
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror or error}") from None


def _is_kmsg(path: str) -> bool:
    """/dev/kmsg, or a node of it (character device 1,11)."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISCHR(info.st_mode) and (os.major(info.st_rdev), os.minor(info.st_rdev)) == (1, 11)


def _position(text: BoundedLines) -> int:
    """Bytes read so far from the file under a text stream (compressed: of the compressed file)."""
    return bytes_position(getattr(text, "buffer", None))


def bytes_position(buffer: Any) -> int:
    """Bytes read so far from the file under a byte stream (compressed: of the compressed file)."""
    raw = getattr(buffer, "raw", buffer)
    inner = getattr(raw, "fileobj", None) or getattr(raw, "_fp", None) or raw
    try:
        return int(inner.tell()) if inner is not None else 0
    except (OSError, ValueError, AttributeError):
        return 0


def _safe_peek(raw: LogBytes, name: str) -> bytes:
    try:
        return raw.peek(8192)[:8192]
    except DAMAGED as error:
        raise InputError(f"cannot decompress {name}: {error}") from None


def _looks_binary(head: bytes) -> bool:
    """Binary, not a log with a run of NULs (what a crash leaves in a file being appended to)."""
    # NULs are left out of the count: a crash can leave any amount of them in a text log, and a
    # file of nothing else is refused later as holding no log lines.
    text = head.replace(b"\x00", b"")
    if not text:
        return False
    control = sum(1 for b in text if b < 9 or 13 < b < 32)
    return control / len(text) > _BINARY_SHARE


# Files at least this big are scanned in chunks first (OOMTRACE_FAST_MIN_BYTES overrides it).
FAST_MIN_BYTES = 64 * 1024 * 1024
# A compressed kernel log holds about this many times its size (gzip makes them 8 to 12 times
# smaller): the size the rule above applies to.
COMPRESSION_GUESS = 8


def _fast_min_bytes() -> int:
    given = os.environ.get("OOMTRACE_FAST_MIN_BYTES")
    if given is None:
        return FAST_MIN_BYTES
    try:
        return int(given)
    except ValueError:
        raise UsageError(
            f"OOMTRACE_FAST_MIN_BYTES={given!r} is not a number of bytes",
            hint="unset it, or give a whole number such as 67108864",
        ) from None


def _big_file(path: str) -> str | None:
    """Is the file worth the chunk scan (big, with the scanning libraries installed)? Then
    "plain" or "compressed"; None to read it line by line."""
    if path == "-":
        return None
    minimum = _fast_min_bytes()
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            return None  # a pipe (`-k <(journalctl -k)`): peeking at it would eat its first lines
        with open(path, "rb") as probe:
            head = probe.read(8192)
    except OSError:
        return None
    compressed = any(head.startswith(magic) for magic, _ in _COMPRESSED)
    size = info.st_size * (COMPRESSION_GUESS if compressed else 1)
    if size < minimum or not _scanner_importable():
        return None
    if not compressed and (head.startswith(_JOURNAL_MAGIC) or _looks_binary(head)):
        return None  # refused with its reason by the line-by-line reader
    return "compressed" if compressed else "plain"


def _scanner_importable() -> bool:
    """Are hyperscan, numpy and stringzilla there? Imported only now: most logs are small, and
    numpy alone takes longer to import than reading a small log."""
    try:
        from oomtrace.sources import chunks  # noqa: F401
    except ImportError:  # no wheel for this platform: every line is read, same answers
        return False
    return True
