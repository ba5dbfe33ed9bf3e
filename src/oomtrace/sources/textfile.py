"""A saved kernel log: dmesg output, journalctl text or JSON, kern.log; plain or compressed."""

from __future__ import annotations

import io
import os
import re
import stat
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, tzinfo

from oomtrace.errors import InputError, UsageError
from oomtrace.jsonshapes import Shape
from oomtrace.prefixes import LineSplitter
from oomtrace.records import Record
from oomtrace.sources.base import DAMAGED, Source
from oomtrace.sources.compressed import Decompressed, compression_of, untrusted
from oomtrace.sources.sniff import ByteStream, CrEnded, Head, Transcoded, cr_ended, encoding_of, looks_binary

_JOURNAL_MAGIC = b"LPKSHHRH"


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
        if _scanner_importable() if self.path == "-" else _big_file(self.path):
            from oomtrace.sources.bigfile import big_file_records

            yield from big_file_records(self, splitter)
            self._unknown_json(splitter)
            self._refuse_empty()
            return
        line_no = 0
        with self._open() as text:
            try:
                for raw, count in text.line_runs():
                    line_no += count
                    # A run of empty lines (60 MB of newlines) is one record, and a last one:
                    # they say nothing, and the file's last line ends the span it states.
                    yield from splitter.split(raw.decode("utf-8", "replace"), line_no - count + 1)
                    if count > 1 and text.at_end():
                        yield from splitter.split("", line_no)
                    if line_no & ~0xFFFF != (line_no - count) & ~0xFFFF:
                        self._report(text.position())
            except DAMAGED as error:
                refusal = untrusted(self.name, error)
                if refusal is not None:
                    raise refusal from None
                # A rotated log copied while being written, a disk that filled up: keep every
                # line before the damage and say where reading stopped.
                if line_no == 0:
                    raise InputError(f"cannot decompress {self.name}: {error}") from None
                self.problem = f"cut short after line {line_no} ({error})"
            self.add_problem(text.note())
        self._unknown_json(splitter)
        self.lines_read = line_no  # rsyslog's #012 makes several records of one line
        self._refuse_empty()

    def _refuse_empty(self) -> None:
        # Empty standard input is the command line's to refuse (exit 3: no evidence of "no kills").
        if not self.lines_read and self.path != "-":
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
# A JSON line may be longer, still bounded: an OpenTelemetry Collector's file export writes one
# request a line, hundreds of records (372 KB lines seen; its batches reach a few MB).
MAX_JSON_LINE_BYTES = 8 << 20
# No line break in this many bytes at the start: not a log (/dev/zero, a gzip of zeros).
NO_LINE_BREAK_BYTES = 1 << 20
# Every path reads a log in pieces this big, so that a damaged compressed file gives the same
# lines on each (BoundedLines.byte_lines). 8 KiB reads kept up to ~60 KiB more before the damage
# but made a 1 GiB .gz 50% slower to read.
READ_BYTES = 1 << 16
# The first byte of a line that is not an empty one.
_NOT_BLANK = re.compile(rb"[^\r\n]")


_LF_BLOCK = b"\n" * 4096
_CRLF_BLOCK = b"\r\n" * 2048


def _blank_end(data: bytes, position: int) -> int | None:
    """The first byte from `position` that is neither CR nor LF, if there is one. Whole blocks of
    newlines are passed by comparing them (memcmp): the regex alone took 2.4 s on 200 MB."""
    for block in (_LF_BLOCK, _CRLF_BLOCK):
        while data.startswith(block, position):
            position += len(block)
    found = _NOT_BLANK.search(data, position)
    return found.start() if found else None


def line_bound(start: bytes) -> int:
    """How long the line that starts with these bytes may be."""
    return MAX_JSON_LINE_BYTES if start[:1] == b"{" else MAX_LINE_BYTES


def bound_note(cut_lines: int, cut_json: int, skipped_bytes: int) -> str | None:
    """What was cut, for a source's summary."""
    if not cut_lines:
        return None
    lines = "1 line" if cut_lines == 1 else f"{cut_lines:,} lines"
    bound = _size(MAX_LINE_BYTES)
    if cut_json:
        bound += f" ({_size(MAX_JSON_LINE_BYTES)} for a JSON line: {cut_json:,} such, their records lost)"
    return f"{lines} longer than {bound} cut to it while reading ({skipped_bytes:,} bytes skipped)"


def _size(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


class BoundedLines:
    """A log's lines as they are read, each at most MAX_LINE_BYTES (MAX_JSON_LINE_BYTES for a
    JSON line): memory stays bounded whatever the input. Only \n ends a line (a log with no LF in
    its first MiB has its CRs made LFs: sniff.CrEnded); a lone \r inside a name stays in it."""

    def __init__(self, raw: ByteStream, name: str, what: str = "kernel log") -> None:
        self.buffer = raw
        self.name = name
        self.what = what
        self.cut_lines = 0
        self.cut_json = 0
        self.skipped_bytes = 0
        self.consumed = 0
        """Bytes read so far, the skipped ones too."""
        self._data = b""
        self._next = 0
        self._ahead = b""  # a piece at_end read

    @property
    def rest(self) -> bytes:
        """What was read past the last line yielded, for a reader that takes over
        (sources/bigfile.py). Cut only when asked: a copy of it at every line cost a copy of
        the read piece a line (60 MB of newlines took minutes)."""
        return self._data[self._next :] + self._ahead

    def at_end(self) -> bool:
        """Was the last line yielded the last of the log? (Asked after a run of empty lines.)"""
        if self._next < len(self._data) or self._ahead:
            return False
        self._ahead = self.buffer.read1(READ_BYTES)
        self.consumed += len(self._ahead)
        return not self._ahead

    def position(self) -> int:
        """Bytes read so far of the file itself (compressed: of the compressed file)."""
        return self.buffer.position() if isinstance(self.buffer, LogBytes) else self.consumed

    def __enter__(self) -> BoundedLines:
        return self

    def __exit__(self, *_: object) -> None:
        self.buffer.close()

    def __iter__(self) -> Iterator[str]:
        for line in self.byte_lines():
            yield line.decode("utf-8", "replace")

    def byte_lines(self) -> Iterator[bytes]:
        """Each line with its newline (the last may lack one). After a line is yielded, `rest`
        holds the bytes read past it."""
        for line, _ in self.line_runs(collapse=False):
            yield line

    def line_runs(self, collapse: bool = True) -> Iterator[tuple[bytes, int]]:
        """Each line with its newline, and how many times it comes: a run of empty lines is
        yielded once, with its length (with `collapse`). Read in READ_BYTES pieces, as the
        big-file scan reads a stream: a damaged compressed file then yields the same lines on
        both paths, all those before the damage."""
        pending = b""  # the start of a line whose end is not read yet
        skipping = False  # inside an overlong line, after the part kept of it
        any_line = False
        blank, blanks = b"", 0  # a run of empty lines that reached the end of a piece
        while piece := self._read():
            if skipping:
                newline = piece.find(b"\n")
                self.skipped_bytes += len(piece) if newline < 0 else newline
                if newline < 0:
                    self._check_is_a_log(any_line)
                    continue
                piece, skipping = piece[newline:], False  # its newline ends the kept part
            data = pending + piece if pending else piece
            self._data = data
            start = 0
            while (newline := data.find(b"\n", start)) >= 0:
                any_line = True
                if collapse and newline - start <= 1 and (newline == start or data[start] == 13):
                    found = _blank_end(data, newline)
                    end = data.rfind(b"\n", start, len(data) if found is None else found) + 1
                    blank = blank or data[start : newline + 1]
                    blanks += data.count(b"\n", start, end)
                    start = self._next = end
                    if found is not None:
                        yield blank, blanks
                        blank, blanks = b"", 0
                    continue  # else the run may go on in the next piece
                self._next = newline + 1
                if blanks:
                    self._next = start
                    yield blank, blanks
                    blank, blanks = b"", 0
                    self._next = newline + 1
                yield data[start : newline + 1], 1
                start = newline + 1
            pending = data[start:]
            self._data = b""
            if len(pending) > MAX_LINE_BYTES and len(pending) > line_bound(pending):
                self.skipped_bytes += len(pending) - line_bound(pending)
                self.cut_json += line_bound(pending) > MAX_LINE_BYTES
                pending, skipping = pending[: line_bound(pending)], True
                self.cut_lines += 1
                self._check_is_a_log(any_line)
        if blanks:
            yield blank, blanks
        if pending:
            yield pending, 1

    def _read(self) -> bytes:
        """The next piece: what `at_end` read ahead, if it did."""
        if self._ahead:
            piece, self._ahead = self._ahead, b""
            return piece
        piece = self.buffer.read1(READ_BYTES)
        self.consumed += len(piece)
        return piece

    def _check_is_a_log(self, any_line: bool) -> None:
        if not any_line and self.consumed >= NO_LINE_BREAK_BYTES:
            raise InputError(
                f"{self.name} has no line break in its first {NO_LINE_BREAK_BYTES >> 20} MiB: "
                f"not a text {self.what}",
                hint=_hint(self.what),
            )

    def note(self) -> str | None:
        """What was cut, for the source's summary."""
        return bound_note(self.cut_lines, self.cut_json, self.skipped_bytes)


class LogBytes:
    """A log's bytes as UTF-8 with LF line ends: the file, decompressed, transcoded, its CRs made
    LFs, as its first MiB says it needs."""

    def __init__(self, stream: ByteStream, raw: io.BufferedReader, transformed: bool) -> None:
        self.stream = stream
        self.raw = raw
        self.transformed = transformed
        """Do the bytes differ from the file's (then it cannot be read at offsets of its own)?"""

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
    try:
        magic = raw.peek(8)[:8]
    except OSError as error:  # /proc/self/mem, a device that cannot be read
        raw.close()
        raise InputError(f"cannot read {name}: {error.strerror or error}") from None
    compression = compression_of(magic)
    stream: ByteStream = Decompressed(raw, compression) if compression is not None else raw
    head = Head(stream, READ_BYTES)
    try:
        return _judged(head, raw, name, what, transformed=compression is not None)
    except BaseException:
        raw.close()
        raise


def _judged(head: Head, raw: io.BufferedReader, name: str, what: str, transformed: bool) -> LogBytes:
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
            hint=f"export it with: journalctl --file {name} -k -o short-precise > kern.txt",
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
            hint=_hint(what),
        )
    return LogBytes(stream, raw, transformed)


def _hint(what: str) -> str:
    if what == "kernel log":
        return "pass dmesg, journalctl or /var/log/kern.log output"
    return "pass the server's own log (its captured stdout/stderr)"


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


# Files at least this big are scanned in chunks first (OOMTRACE_FAST_MIN_BYTES overrides it): the
# size from which the chunk scan stops losing. Its start (numpy, Hyperscan, the threads) costs
# about 0.1 s; reading every line costs 0.11 to 0.18 s a MiB of noise with reports. `list -k`,
# seconds through the chunk scan / line by line, medians of 5 to 7 alternated pairs on 2 noisy
# cores (2026-12-02, bench/make_log.py):
#                                       128 KiB    512 KiB    1 MiB      2 MiB      4 MiB      16 MiB
#   journalctl -k, a report a 512 KiB   0.30/0.20  0.27/0.27  0.28/0.36  0.33/0.55  0.32/0.90  0.38/2.72
#   journalctl -k, a report a 44 KiB                          0.30/0.36  0.36/0.54  0.40/0.90
#   dmesg, Xid chatter, a report a 512K 0.31/0.19  0.31/0.24  0.26/0.29  0.31/0.41  0.33/0.63  0.37/1.77
#   crash loop (--kills), dmesg         0.31/0.18  0.31/0.22  0.36/0.27  0.51/0.36  0.75/0.71  1.86/1.76
#   crash loop (--kills), journalctl    0.30/0.20  0.38/0.25  0.42/0.35  0.63/0.55  0.99/0.95  3.01/3.16
# A crash loop's every line is a report's, read either way: it loses the start below about 4 MiB.
FAST_MIN_BYTES = 1024 * 1024
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
            hint="unset it, or give a whole number such as 1048576",
        ) from None


def _big_file(path: str) -> bool:
    """Is the file worth the chunk scan (big, with the scanning libraries installed)?"""
    if path == "-":
        return False
    minimum = _fast_min_bytes()
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            return False  # a pipe (`-k <(journalctl -k)`): peeking at it would eat its first lines
        with open(path, "rb") as probe:
            head = probe.read(8)
    except OSError:
        return False
    size = info.st_size * (COMPRESSION_GUESS if compression_of(head) is not None else 1)
    return size >= minimum and _scanner_importable()


def _scanner_importable() -> bool:
    """Are hyperscan, numpy and stringzilla there? Imported only now: most logs are small, and
    numpy alone takes longer to import than reading a small log."""
    try:
        from oomtrace.sources import chunks  # noqa: F401
    except ImportError:  # no wheel for this platform: every line is read, same answers
        return False
    return True
